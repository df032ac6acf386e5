"""Input files for ``sectorflow run``: JSON lines and CSV built in, task-specific formats from the task spec.

Every reader yields ``(row_number, record)`` pairs, rows counted from 1 (a CSV header is not a row), so that bad
rows can be reported by number. A row that cannot even be parsed into a record (a line that is not JSON, ...) is
yielded as ``(row_number, problem)`` where ``problem`` is an :class:`InvalidInputError` whose ``details`` name the
row: ``sectorflow run --on-error skip`` then reports and skips that row, ``--on-error reject`` raises it. (This
extends the ``Reader`` type in ``spec.py``, which names only the dict case.) Readers should not raise for one bad
row, so that the rest of the file can still be processed in skip mode. Files ending in ``.gz`` are decompressed on the fly; ``-`` is standard input.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import ConfigError, InvalidInputError
from .spec import Reader, TaskSpec


@contextmanager
def open_text(source: str | Path) -> Iterator[IO[str]]:
    """Open a path (``.gz`` transparently) or ``-`` (standard input) as UTF-8 text.

    A leading byte-order mark (Excel's "CSV UTF-8" writes one) is dropped: the encoding is ``utf-8-sig``.
    """
    if str(source) == "-":
        yield io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig")
        return
    path = Path(source)
    if path.is_dir():
        raise ConfigError(f"Input {source} is a directory; give a file (JSON lines, CSV, ...) inside it.")
    if not path.is_file():
        raise ConfigError(f"Input file {source} does not exist.")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:  # type: ignore[operator]
        yield handle


def read_jsonl(source: str | Path) -> Iterator[tuple[int, dict[str, Any] | InvalidInputError]]:
    """One JSON object per line; blank lines are skipped but counted.

    A line that is not a JSON object is yielded as ``(row, InvalidInputError)`` (see the module docstring).
    """
    with open_text(source) as handle:
        for row, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield row, InvalidInputError(f"Row {row} is not valid JSON: {exc.msg}.",
                                             details=[{"row": row, "field": None, "reason": f"not JSON: {exc.msg}"}])
                continue
            if not isinstance(record, dict):
                kind = type(record).__name__
                yield row, InvalidInputError(f"Row {row} is a JSON {kind}, not an object.",
                                             details=[{"row": row, "field": None, "reason": f"a JSON {kind}, not an object"}])
                continue
            yield row, record


def read_csv(source: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """CSV with a header row; empty cells are left out of the record (so model defaults apply)."""
    with open_text(source) as handle:
        for row, record in enumerate(csv.DictReader(handle), start=1):
            yield row, {k: v for k, v in record.items() if k is not None and v not in ("", None)}


BUILTIN_READERS: dict[str, Reader] = {"jsonl": read_jsonl, "csv": read_csv}


def whole_file_reader(what: str) -> Reader:
    """A reader for a task whose item is one text (``TextItem``): the whole file is one item, ``(1, {"text": ...})``;
    an empty or blank file is one bad row whose message asks for ``what`` ("the contract text"). UTF-8, ``.gz`` and
    ``-`` as for the built-in formats. Plugins register it as their ``txt`` format."""

    def read_txt(source: Any) -> Iterator[tuple[int, dict[str, Any] | InvalidInputError]]:
        with open_text(source) as handle:
            text = handle.read()
        if not text.strip():
            yield 1, InvalidInputError(f"Input file {source} is empty: put {what} in it.",
                                       details=[{"row": 1, "field": "text", "reason": "empty file"}])
            return
        yield 1, {"text": text}

    return read_txt  # type: ignore[return-value]


def guess_format(source: str | Path) -> str:
    """``csv`` for ``*.csv[.gz]``, else ``jsonl``."""
    name = str(source).lower().removesuffix(".gz")
    return "csv" if name.endswith(".csv") else "jsonl"


def reader_for(spec: TaskSpec, fmt: str | None, source: str | Path) -> Reader:
    """The reader for ``fmt`` (task-specific formats first), or the guess from the file name: the task's own format
    whose name is the file's suffix (``.gz`` ignored), else ``csv`` for ``*.csv``, else ``jsonl``.

    Raises:
        ConfigError: an unknown format; the message lists the ones this task reads.
    """
    readers = {**BUILTIN_READERS, **spec.readers}
    if fmt is None:
        # A file named after one of the task's own formats (report.txt for a task with a "txt" reader) is read in
        # that format; otherwise csv or jsonl by name.
        suffix = Path(str(source).lower().removesuffix(".gz")).suffix.lstrip(".")
        fmt = suffix if suffix in spec.readers else guess_format(source)
    if fmt not in readers:
        raise ConfigError(f"Task {spec.name!r} reads the formats {', '.join(sorted(readers))}; not {fmt!r}.")
    return checked_reader(readers[fmt])


def checked_reader(reader: Reader) -> Reader:
    """Wrap ``reader`` so that a file that cannot be decoded raises :class:`InvalidInputError`, not a traceback.

    Translated: ``UnicodeDecodeError`` (not UTF-8 text, e.g. a binary or UTF-16 file), ``gzip.BadGzipFile`` and
    ``zlib.error`` (a ``.gz`` name on a file that is not gzip, or corrupt data), ``EOFError`` (a truncated gzip
    file). The message names the file (``name``, if given, else ``source``) and the last row read before the
    failure. Applies to every reader,
    built in or a plugin's, because it wraps the iteration itself.
    """

    @functools.wraps(reader)
    def read(source: Any, *, name: str | None = None) -> Iterator[tuple[int, Any]]:
        row, shown = 0, name or source
        try:
            for row, record in reader(source):
                yield row, record
        except UnicodeDecodeError as exc:
            raise _unreadable(shown, row, "is not UTF-8 text (save it as UTF-8, e.g. Excel's 'CSV UTF-8')",
                              f"{exc.encoding} cannot decode byte {exc.object[exc.start:exc.start + 1]!r}") from exc
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise _unreadable(shown, row, "is not a valid gzip file", str(exc)) from exc
        except EOFError as exc:
            raise _unreadable(shown, row, "is truncated (the gzip file ends early)", str(exc)) from exc

    return read


def _unreadable(source: Any, row: int, what: str, reason: str) -> InvalidInputError:
    where = f" after row {row}" if row else ""
    return InvalidInputError(f"Input file {source} {what}: {reason}{where}.")  # one line: no per-row details
