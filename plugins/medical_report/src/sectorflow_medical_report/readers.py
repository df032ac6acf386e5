"""Plain-text inputs for ``sectorflow run medical_report FILE --format txt|lines``.

``jsonl`` and ``csv`` (one report per row, with a ``text`` column or key) are built into the core. Radiology
systems usually export a report as a plain text file, so the plugin adds:

- ``txt``: the whole file is one report (row 1);
- ``lines``: one report per non-empty line (rows are line numbers).

Both read UTF-8 (``.gz`` and ``-`` for standard input work as for the built-in formats).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sectorflow import open_text, whole_file_reader

read_txt = whole_file_reader("the report text")
"""The whole file as one report: ``(1, {"text": ...})``; an empty file is one bad row."""


def read_lines(source: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """One report per non-empty line: ``(line_number, {"text": line})``."""
    with open_text(source) as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, {"text": line.rstrip("\r\n")}


READERS = {"txt": read_txt, "lines": read_lines}
