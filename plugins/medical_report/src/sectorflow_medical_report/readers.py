"""Plain-text inputs for ``sectorflow run medical_report FILE --format txt|lines``.

``jsonl`` and ``csv`` (one report per row, with a ``text`` column or key) are built into the core. Radiology
systems usually export a report as a plain text file, so the plugin adds:

- ``txt``: the whole file is one report (row 1);
- ``lines``: one report per non-empty line (rows are line numbers).

Both read UTF-8 (``.gz`` and ``-`` for standard input work as for the built-in formats). Both take ``--default
FIELD=VALUE`` for the fields a plain text file cannot hold (``--default modality=CT --default patient_risk=low
--default age=60``: the same for every report of the file); ``--column`` does not apply (the text is the file or the
line) and ``--default text=...`` is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from collections.abc import Callable, Mapping

from sectorflow import ConfigError, open_text, whole_file_reader

read_txt = whole_file_reader("the report text")
"""The whole file as one report: ``(1, {"text": ...})``; an empty file is one bad row."""


def read_lines(source: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """One report per non-empty line: ``(line_number, {"text": line})``."""
    with open_text(source) as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, {"text": line.rstrip("\r\n")}


READERS = {"txt": read_txt, "lines": read_lines}


def _with_defaults(fmt: str, read: Callable[[Any], Iterator[tuple[int, Any]]]) -> Callable[..., Any]:
    """``factory(mapping=None, defaults=None) -> Reader`` (``InputFormat.factory``): ``read``'s records with
    ``defaults`` added (text values; the input model converts "60" or "true").

    Raises:
        ConfigError: a ``mapping`` (``--column``), or a default for ``text``.
    """

    def make(mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None) -> Any:
        if mapping:
            raise ConfigError(f"--format {fmt} reads the report text from the {'file' if fmt == 'txt' else 'line'}: "
                              "--column does not apply (use --default FIELD=VALUE for modality, patient_risk, age...; "
                              "or jsonl/csv for per-report values).")
        extra = dict(defaults or {})
        if "text" in extra:
            raise ConfigError(f"--format {fmt}: the text is the {'file' if fmt == 'txt' else 'line'}; "
                              "--default text=... does not apply.")

        def read_with_defaults(source: Any) -> Iterator[tuple[int, Any]]:
            for row, record in read(source):
                yield row, ({**extra, **record} if isinstance(record, dict) else record)

        return read_with_defaults

    return make


READER_FACTORIES = {fmt: _with_defaults(fmt, read) for fmt, read in READERS.items()}
"""``--default`` for ``txt`` and ``lines`` (see the module docstring)."""
