"""Input files for ``sectorflow run``: JSON lines and CSV built in, task-specific formats from the task spec.

Every reader yields ``(row_number, record)`` pairs, a row numbered by the file line it begins on (a CSV's header is
line 1, so its first row is row 2; a JSON-lines row is its line), as an editor or a spreadsheet shows it, so that
bad rows can be reported by a number the user finds in the file (before 1 Dec 2026 CSV rows were counted from 1
after the header). A row that cannot even be parsed into a record (a line that is not JSON, ...) is
yielded as ``(row_number, problem)`` where ``problem`` is an :class:`InvalidInputError` whose ``details`` name the
row: ``sectorflow run --on-error skip`` then reports and skips that row, ``--on-error reject`` raises it. (This
extends the ``Reader`` type in ``spec.py``, which names only the dict case.) Readers should not raise for one bad
row, so that the rest of the file can still be processed in skip mode. Files ending in ``.gz`` are decompressed on the fly; ``-`` is standard input.

Column mapping (``sectorflow run --column FIELD=COLUMN --default FIELD=VALUE``): a format with a reader factory
(``InputFormat.factory`` in ``TaskSpec.formats``; the built-in ``csv`` and ``jsonl`` here) makes a reader that renames columns to input
fields and fills absent fields; :func:`reader_for` checks the field names against the task's input model first.

Input context: a reader factory that declares a keyword parameter named ``context`` (see :func:`takes_context`) is
called with the task's validation context (:attr:`TaskSpec.input_context` of the run's options, ``{}`` for a task
without one; read-only), so that its reader knows how the caller's options read raw rows (aml's ``input_timezone``).
Factories without the parameter are called exactly as before.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import gzip
import io
import logging
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any

from .encodings import INPUT_ENCODING, SAMPLE_BYTES, decode_problem, resolve
from .encodings import check as check_encoding
from .errors import ConfigError, InvalidInputError, SectorflowError
from .input_damage import GZIP_ERRORS, gzip_problem, raw_cause, read_problem
from .jsonlines import parse_json_line
from .spec import InputFormat, Reader, ReaderFactory, TaskSpec, takes_context  # noqa: F401 (takes_context: public here)

log = logging.getLogger("sectorflow")


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip member (RFC 1952, ID1 ID2)."""


def gzip_on_stdin() -> InvalidInputError:
    """The error for gzip data on standard input, which is read as text (only a path ending in ``.gz`` is
    decompressed): it says to give the ``.gz`` path or to decompress first, instead of "not UTF-8 text"."""
    return InvalidInputError("Input standard input is gzip-compressed (it begins with gzip's bytes 1f 8b) and standard "
                             "input is read as text: give the .gz file's path instead of - (a path ending in .gz is "
                             "decompressed as it is read), or decompress first, e.g. zcat FILE.gz | sectorflow run "
                             "TASK - --format FORMAT.", details={"source": "-"})


def open_text(source: str | Path, encoding: str | None = None) -> contextlib.AbstractContextManager[IO[str]]:
    """Open a path (``.gz`` transparently) or ``-`` (standard input) as text, in ``encoding``.

    ``encoding``: a Python codec name (``gbk``, ``gb18030``, ``utf-16``, ...); ``None`` or ``"auto"``: the one set
    for this run (``sectorflow run --encoding``, :data:`sectorflow.encodings.INPUT_ENCODING`), else detected from
    the first 64 KiB (UTF-8, a UTF-8 or UTF-16 byte-order mark, else charset-normalizer's guess, GB18030 for
    Chinese text; :func:`sectorflow.encodings.resolve`, which says a non-UTF-8 choice once per file). UTF-8 is read
    as ``utf-8-sig``: a leading byte-order mark (Excel's "CSV UTF-8" writes one) is dropped.

    A file that cannot be read through raises :class:`InvalidInputError` where the reading fails, inside the
    ``with`` block (:mod:`sectorflow.input_damage`): a byte that does not decode (the message names the file's
    line and the byte and points to ``--encoding``, :func:`sectorflow.encodings.decode_problem`), a ``.gz`` file
    that is not gzip, is corrupt or is truncated (the message names the lines and bytes that could be read and says
    to copy the file again). Its ``__cause__`` is Python's exception (``UnicodeDecodeError``, ``gzip.BadGzipFile``,
    ``zlib.error``, ``EOFError``). Before 2 Dec 2026 these escaped as tracebacks, and a truncated ``.gz`` given to
    ``sectorflow aml train`` / ``evaluate`` / ``cases`` was reported as "stopped by SIGINT" (exit 130).

    Raises:
        ConfigError: ``source`` is a directory, does not exist, or is not a regular file (a named pipe such as
            bash's ``<(...)``, a device): ``sectorflow run --state`` hashes its input and reads it again to resume,
            and to stdout checks it before running, which a pipe cannot give; standard input (``-``) is kept in a
            temporary file for that. An unknown ``encoding``.
        InvalidInputError: standard input begins with gzip's magic bytes (``1f 8b``, RFC 1952): it is read as text,
            not decompressed (:func:`gzip_on_stdin`). While reading: a damaged ``.gz`` file or undecodable text
            (above).
    """
    return _opened(source, encoding)


@contextmanager
def _opened(source: str | Path, encoding: str | None = None, what: str = "Input file",
            error: type[SectorflowError] = InvalidInputError) -> Iterator[IO[str]]:
    """:func:`open_text`, with ``what`` and ``error`` for the errors of a damaged or undecodable file (as
    :func:`read_text` gives them)."""
    if str(source) == "-":
        peek = getattr(sys.stdin.buffer, "peek", None)  # a BufferedReader shows its next bytes without taking them
        head = peek(SAMPLE_BYTES) if peek is not None else b""
        if head[:2] == GZIP_MAGIC:
            raise gzip_on_stdin()
        yield io.TextIOWrapper(sys.stdin.buffer, encoding=resolve(source, encoding, sample=head))
        return
    path = Path(source)
    if path.is_dir():
        raise ConfigError(f"Input {source} is a directory; give a file (JSON lines, CSV, ...) inside it.")
    if not path.is_file():
        if path.exists():  # a pipe (bash's <(zcat x.gz) is /dev/fd/63) or a device: --state needs to reread it
            raise ConfigError(f"Input file {source} is not a regular file (a pipe or a device): give a file, or pipe "
                              "the data to standard input and give - as the input (e.g. zcat x.gz | sectorflow run "
                              "TASK - --format jsonl).", details={"source": str(source)})
        raise ConfigError(f"Input file {source} does not exist.")
    opener = gzip.open if path.suffix == ".gz" else open
    chosen: str | None = None
    try:
        chosen = resolve(path, encoding)  # reads the first 64 KiB when detecting: a damaged .gz can fail here
        with opener(path, "rt", encoding=chosen, newline="") as handle:  # type: ignore[operator]
            yield handle
    except (UnicodeDecodeError, *GZIP_ERRORS) as exc:  # raised by the handle while the caller read it
        problem = read_problem(source, exc, chosen, what=what, error=error)
        if problem is None:  # not about this file (the caller's own decoding of something else)
            raise
        raise problem from exc


def read_text(source: str | Path, what: str = "Input file", *, encoding: str | None = None,
              error: type[SectorflowError] = InvalidInputError) -> str:
    """The whole text of ``source``, opened by :func:`open_text` (``.gz``, ``-``, ``encoding`` or detection), for a
    file read at once (an FX rate table, an account list, a contract). ``what`` names the file in errors ("FX rate
    file").

    Raises:
        SectorflowError: ``error`` (default :class:`InvalidInputError`; :class:`ConfigError` for a file that a task
            option names) for a byte the encoding cannot decode, naming the file's line and the byte
            (:func:`sectorflow.encodings.decode_problem`); :class:`ConfigError` from :func:`open_text`.
    """
    with _opened(source, encoding, what, error) as handle:
        return handle.read()


def read_jsonl(source: str | Path, *, mapping: Mapping[str, str] | None = None,
               defaults: Mapping[str, Any] | None = None, encoding: str | None = None
               ) -> Iterator[tuple[int, dict[str, Any] | InvalidInputError]]:
    """One JSON object per line; blank lines are skipped but counted. ``encoding`` as for :func:`open_text`.
    ``mapping`` and ``defaults`` as for :func:`remap` (a mapped key absent from a line is simply absent: JSON lines have no header to check). A
    byte-order mark at the start of any line is dropped, as at the start of the file: files concatenated with
    ``cat`` carry one where each began.

    A line that is not a JSON object, whose values nest too deeply for Python's JSON parser (a ``RecursionError``),
    or that holds an integer longer than Python reads (4,300 digits), is yielded as ``(row, InvalidInputError)``
    (see the module docstring).

    Raises (while iterating):
        InvalidInputError: the first non-blank line is not JSON and reads as a CSV header (two or more cells): every
            row would fail as "not JSON", so the file is refused whole, naming ``--format csv``. The first line opens a JSON array (``[``): the file is one JSON array (a ``.json`` export,
            pretty-printed or on one line), not JSON lines; read line by line, some of its objects would pass and
            the rest fail, so the file is refused whole, with the way to convert it.
    """
    first = True
    with open_text(source, encoding) as handle:
        for row, line in enumerate(handle, start=1):
            line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            if first and line.lstrip().startswith("["):
                raise InvalidInputError(
                    f"Input file {source} holds one JSON array (line {row} begins with '['), not JSON lines: write "
                    "one JSON object per line, e.g. jq -c '.[]' FILE.json > FILE.jsonl.",
                    details={"source": str(source), "line": row})
            try:
                record = parse_json_line(line, source, row)
            except InvalidInputError as problem:  # a bad row, not a bad file: --on-error skip goes on
                if first and not line.lstrip().startswith("{") and "," in line:
                    header = next(csv.reader([line]), [])
                    if len(header) >= 2:  # every row would be "not JSON": the fix is the format, not --on-error skip
                        raise InvalidInputError(
                            f"Input file {source} looks like CSV, not JSON lines: line {row} reads as a CSV header "
                            f"({line.strip()[:60]!r}). Read it with --format csv, or the task's own format for "
                            "this export (sectorflow tasks lists them).",
                            details={"source": str(source), "line": row, "format": "csv"}) from None
                first = False
                yield row, problem
                continue
            first = False
            yield row, remap(record, mapping, defaults)


def read_csv(source: str | Path, *, mapping: Mapping[str, str] | None = None,
             defaults: Mapping[str, Any] | None = None, encoding: str | None = None
             ) -> Iterator[tuple[int, dict[str, Any] | InvalidInputError]]:
    """CSV with a header row; empty cells are left out of the record (so model defaults apply, then ``defaults``).
    ``mapping`` and ``defaults`` as for :func:`remap`. Parsed by :func:`csv_file_records` (Python's :mod:`csv`, strict):
    blank lines are skipped; a row is numbered by the file line it begins on (the header is line 1). ``encoding``:
    as for :func:`open_text` (``None``: the run's, else detected).

    Bad rows, yielded as ``(row, InvalidInputError)`` (see the module docstring): broken quoting (a quoted cell
    that is never closed, text after a closing quote; :func:`csv_records`), and more cells than the header has
    columns where a surplus cell is not empty (an unquoted comma in a text; these cells were dropped without a word).

    Raises (while iterating):
        ConfigError: a column named in ``mapping`` is not in the header (the message names it and the header), or
            the header names a column twice (columns without a name, as Excel's trailing commas make, may repeat).
        InvalidInputError: the header line itself has broken quoting (the message names the file and line).
    """
    if csv.field_size_limit() < CSV_FIELD_LIMIT:  # the default, 131,072 characters, is a contract or a long report
        csv.field_size_limit(CSV_FIELD_LIMIT)
    with open_text(source, encoding) as handle:
        records = csv_file_records(source, handle, encoding)
        header: list[str] = []
        for line, first in records:
            if isinstance(first, InvalidInputError):
                reason = first.details[0]["reason"]
                raise InvalidInputError(f"The CSV header of {source} cannot be read: {reason}.",
                                        details={"source": str(source), "line": line})
            header = first
            break
        # Unnamed columns (Excel's trailing commas: "text,,") are not refused as repeated: they hold no field, and a
        # value under one is named in known_fields_only's warning as the column ''.
        repeated = sorted({name for name in header if header.count(name) > 1 and name.strip()})
        if repeated:  # a dict of the row would keep the last column of a name and drop the others without a word
            raise ConfigError(f"The CSV header of {source} names {', '.join(map(repr, repeated))} more than once; "
                              "rename or drop the extra column(s) (only one can be read as a field).",
                              details={"repeated": repeated, "header": list(header)})
        absent = [f"{column!r} (for {field})" for field, column in (mapping or {}).items() if column not in header]
        if absent:
            raise ConfigError(f"The CSV header of {source} lacks the mapped column(s) {', '.join(absent)}; found: "
                              f"{', '.join(map(repr, header)) or 'no header'}. Fix --column FIELD=COLUMN to name a "
                              "column of the file (column names are case- and space-sensitive).",
                              details={"missing": [c for c in (mapping or {}).values() if c not in header],
                                       "header": list(header)})
        for line, cells in records:
            row = line  # numbered by the file line the row begins on, as an editor or a spreadsheet shows it
            if isinstance(cells, InvalidInputError):
                problem = cells.details[0]
                yield row, InvalidInputError(f"{source}: row {row}: {problem['reason']}.",
                                             details=[{**problem, "row": row}])
                continue
            surplus = cells[len(header):]
            if any(surplus):
                reason = (f"line {line}: {len(cells)} cells but the header has {len(header)} columns (surplus: "
                          f"{', '.join(map(repr, surplus))}); quote a cell that holds a comma (\"a, b\")")
                yield row, InvalidInputError(f"{source}: row {row}: {reason}.",
                                             details=[{"row": row, "line": line, "field": None, "reason": reason}])
                continue
            cells_by_name = {name: value for name, value in zip(header, cells) if value != ""}
            yield row, remap(cells_by_name, mapping, defaults)


class _Lines:
    """The lines of a text handle, remembering those read since :attr:`kept` was last cleared, with lines pushed
    back (:attr:`back`) read first: :func:`csv_records` re-reads the lines a broken record swallowed."""

    def __init__(self, handle: Iterable[str]) -> None:
        self._handle = iter(handle)
        self.back: deque[str] = deque()
        self.kept: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.back.popleft() if self.back else next(self._handle)
        self.kept.append(line)
        return line


def _quote_problem(exc: csv.Error, kept: list[str], line: int) -> str:
    """What is wrong with the record that began on ``line`` and what to do, from the ``csv`` module's error."""
    opening = kept[0].rstrip("\r\n") if kept else ""
    excerpt = repr(opening[:60]) + ("..." if len(opening) > 60 else "")
    message = str(exc)
    if message == "unexpected end of data":
        return (f"line {line} ({excerpt}) opens a quoted cell that is never closed, so the rest of the file would "
                "be read as that one cell; add the closing quote, and write a quote that is part of the text as "
                'two quotes ("")')
    if "expected after" in message:
        end = line + len(kept) - 1
        if end == line:
            return (f"line {line} ({excerpt}) has text after the closing quote of a quoted cell; quote the whole "
                    'cell and write each quote inside it as two quotes ("a ""b"" c")')
        return (f"line {line} ({excerpt}) opens a quoted cell that is not closed on that line: the next quote, on "
                f"line {end}, is followed by text; add the closing quote on line {line}, and write a quote that is "
                'part of the text as two quotes ("")')
    return f"line {line} ({excerpt}) is not valid CSV: {message}"


def csv_records(handle: Iterable[str], source: Any) -> Iterator[tuple[int, list[str] | InvalidInputError]]:
    """The records of CSV text ``handle`` (opened with ``newline=""``, as :func:`open_text` does; RFC 4180 quoting,
    commas), as ``(line, cells)``: ``line`` is the 1-based line of the file on which the record begins (a quoted
    cell may hold line breaks), ``cells`` the record's cells as text. Blank lines are skipped. The header, if the
    file has one, is the first record. Parsed by :mod:`csv` in strict mode.

    A record whose quoting is broken is yielded as ``(line, InvalidInputError)`` (``details``: one ``{"row": None,
    "line", "field": None, "reason"}``, the reason naming the line, an excerpt and the fix), and parsing goes on at
    the line after the one it began on, so the rows after it are still read. Broken is what ``csv`` refuses in
    strict mode: a quoted cell that is never closed (``1,"abc,2``, which without strict mode silently ran to the end
    of the file as one cell, swallowing every later row), and text after a closing quote (``"ab"c``). A quote
    inside an unquoted cell (``5" disk``) is text, as in Excel.
    """
    lines = _Lines(handle)
    start = 1  # the line the next record begins on
    while True:
        reader = csv.reader(lines, strict=True)
        while True:
            lines.kept.clear()
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                reason = _quote_problem(exc, lines.kept, start)
                yield start, InvalidInputError(f"{source}: {reason}.", details=[
                    {"row": None, "line": start, "field": None, "reason": reason}])
                lines.back.extendleft(reversed(lines.kept[1:]))  # read again from the next line, in a new reader
                start += 1
                break
            if cells:
                yield start, cells
            start += len(lines.kept)


def csv_file_records(source: Any, handle: Iterator[str], encoding: str | None = None
                     ) -> Iterator[tuple[int, list[str] | InvalidInputError]]:
    """The records of the CSV file ``source`` read through ``handle`` (opened by :func:`open_text` on ``source``),
    exactly as :func:`csv_records` yields them, at the speed of Python's :mod:`csv` module: a file without broken
    quoting is parsed by ``csv.reader(strict=True)`` on ``handle`` directly (:func:`csv_records` keeps each record's
    lines for a re-read, which cost a typed reader about a sixth of its time); at the first ``csv.Error`` the file is
    opened again and :func:`csv_records` goes on from the record that failed (the records before it are the same
    strict parse). Standard input (``-``), which cannot be read twice, goes to :func:`csv_records` from the start.
    ``encoding``: the one ``handle`` was opened in, for the second opening (``None``: as :func:`open_text` chooses).

    Raises (while iterating): :class:`ConfigError` from :func:`open_text` if the file is gone when it is reopened.
    """
    if str(source) == "-":
        yield from csv_records(handle, source)
        return
    reader = csv.reader(handle, strict=True)
    done = 0  # the lines of the file read so far
    try:
        for cells in reader:
            line, done = done + 1, reader.line_num
            if cells:
                yield line, cells
        return
    except csv.Error:
        pass
    with open_text(source, encoding) as again:  # the record that begins on line done + 1 is broken: csv_records reports it
        for line, cells in csv_records(again, source):
            if line > done:
                yield line, cells


CSV_FIELD_LIMIT = 2**31 - 1
"""The largest CSV cell :func:`read_csv` reads (Python's default of 131,072 characters raised ``_csv.Error`` on a
contract in one cell); each task's input model still sets its own text length limit."""


def remap(record: dict[str, Any], mapping: Mapping[str, str] | None,
          defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    """``record`` with source columns renamed to input fields.

    ``mapping`` is ``{input_field: source_column}``: the field takes the column's value; a mapped column is not kept
    under its own name, nor is a column named like a mapped field (the mapping says where that field comes from).
    Other columns pass through unchanged. ``defaults`` (``{input_field: value}``) fill fields that are still absent.
    """
    if not mapping and not defaults:
        return record
    mapping = mapping or {}
    taken = set(mapping) | set(mapping.values())
    out = {key: value for key, value in record.items() if key not in taken}
    out.update({field: record[column] for field, column in mapping.items() if column in record})
    for field, value in (defaults or {}).items():
        out.setdefault(field, value)
    return out


def _factory(read: Any) -> ReaderFactory:
    """``factory(mapping=None, defaults=None) -> Reader`` over a built-in ``read(source, mapping=, defaults=)``."""

    def make(mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None) -> Reader:
        options = {"mapping": dict(mapping or {}), "defaults": dict(defaults or {})}
        return functools.wraps(read)(functools.partial(read, **options))  # type: ignore[return-value]

    return make


BUILTIN_FORMATS: dict[str, InputFormat] = {"jsonl": InputFormat(read_jsonl, _factory(read_jsonl)),
                                           "csv": InputFormat(read_csv, _factory(read_csv))}
"""The built-in formats, with ``--column``/``--default`` (see :attr:`~sectorflow.spec.TaskSpec.formats`); a task's
own format of the same name replaces one whole."""


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


JSON_LINES_SUFFIXES = frozenset({"jsonl", "json", "ndjson", "jl"})
"""File suffixes read as JSON lines without ``--format``; a file without a suffix (or ``-``) is too. Any other
suffix that is neither ``csv`` nor one of the task's own formats needs ``--format`` (:func:`reader_for`)."""


def guess_format(source: str | Path) -> str:
    """``csv`` for ``*.csv[.gz]``, else ``jsonl``."""
    name = str(source).lower().removesuffix(".gz")
    return "csv" if name.endswith(".csv") else "jsonl"


def reader_for(spec: TaskSpec, fmt: str | None, source: str | Path, *, mapping: Mapping[str, str] | None = None,
               defaults: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
               encoding: str | None = None) -> Reader:
    """The reader for ``fmt`` (task-specific formats first), or the guess from the file name: the task's own format
    whose name is the file's suffix (``.gz`` ignored), else ``csv`` for ``*.csv``, else ``jsonl`` for a name ending in
    one of :data:`JSON_LINES_SUFFIXES` or without a suffix (``-``, standard input). Another suffix (``notes.txt`` for a
    task without a ``txt`` format) is a ``ConfigError`` asking for ``--format``: read as JSON lines, every row was
    "not JSON". ``plan_reader(...).make(context)``: the checks first (:func:`plan_reader`), then the reader.

    ``mapping`` (``{input_field: source_column}``, ``sectorflow run --column``) and ``defaults`` (``{input_field:
    value}``, ``--default``), when either is non-empty, are handed to the format's reader factory
    (:attr:`InputFormat.factory` of :attr:`TaskSpec.formats`; the built-in ``csv`` and ``jsonl`` have one).

    ``context`` is the task's input context (the validation context of raw items that the caller's options make,
    :meth:`TaskSpec.input_context`; ``{}`` for a task without one; ``sectorflow run`` gives it). When it is given and
    the format's factory takes it (:func:`takes_context`), the factory is called with ``context=`` (a read-only
    copy), also when neither ``mapping`` nor ``defaults`` is given (the format's plain reader in
    :attr:`InputFormat.read` is then not used: it cannot be told the context). ``None`` (the default): no factory is
    told anything, as before the parameter existed.

    ``encoding`` (``sectorflow run --encoding``): the text encoding the reader opens its file in (a Python codec
    name, e.g. ``gbk``, ``gb18030``, ``utf-16``); ``None`` or ``"auto"``: detected per file (:func:`open_text`).

    Raises:
        ConfigError: as :func:`plan_reader`; from the format's factory for a mapping it cannot apply.
    """
    return plan_reader(spec, fmt, source, mapping=mapping, defaults=defaults, encoding=encoding).make(context)


@dataclass(frozen=True)
class ReaderPlan:
    """A format chosen and checked for one file (:func:`plan_reader`), whose reader is made once the task's input
    context is known (:meth:`make`): ``sectorflow run`` plans every file's reader before the model loads, and makes
    the readers with the context ``Taskflow`` built."""

    spec: TaskSpec
    fmt: str
    mapping: Mapping[str, str] | None
    defaults: Mapping[str, Any] | None
    encoding: str | None

    def make(self, context: Mapping[str, Any] | None = None) -> Reader:
        """The reader (see :func:`reader_for` for ``context``).

        Raises:
            ConfigError: from the format's factory, for a mapping it cannot apply.
        """
        spec, mapping, defaults, encoding = self.spec, self.mapping, self.defaults, self.encoding
        fmt = _formats(spec)[self.fmt]
        builtin = fmt is BUILTIN_FORMATS.get(self.fmt)
        told = context is not None and fmt.factory is not None and fmt.takes_context
        extra = {"context": MappingProxyType(dict(context or {}))} if told else {}
        if not mapping and not defaults:
            if told:
                made = fmt.factory(**extra)  # type: ignore[misc]
            elif fmt.read is not None:
                made = fmt.read
            else:
                made = fmt.factory()  # type: ignore[misc]
        else:
            made = fmt.factory(mapping=dict(mapping) if mapping else None,  # type: ignore[misc]
                               defaults=dict(defaults) if defaults else None, **extra)
        return checked_reader(known_fields_only(made, spec) if builtin else made, encoding)


def _formats(spec: TaskSpec) -> dict[str, InputFormat]:
    """The formats ``spec`` reads: the built-in ones, then the task's own (which replace a built-in one whole)."""
    return {**BUILTIN_FORMATS, **spec.formats}


def plan_reader(spec: TaskSpec, fmt: str | None, source: str | Path, *, mapping: Mapping[str, str] | None = None,
                defaults: Mapping[str, Any] | None = None, encoding: str | None = None) -> ReaderPlan:
    """Choose and check the format of ``source`` for ``spec`` (see :func:`reader_for`), without making the reader.

    Raises:
        ConfigError: an unknown ``encoding``; an unknown format (the message lists the ones this task reads); ``mapping`` or ``defaults``
            naming a field the task's input model lacks (the message lists its fields); ``defaults`` for one of
            the task's :attr:`~TaskSpec.id_fields` (the message says to map the file's id column instead);
            ``mapping`` or ``defaults`` for a format without a factory (the message lists the formats that take
            them); ``mapping`` reading one column into two fields, a ``defaults`` value the input model refuses
            (:func:`check_mapping_and_defaults`).
    """
    encoding = check_encoding(encoding)
    known = _formats(spec)
    formats = set(known)
    if fmt is None:
        # A file named after one of the task's own formats (report.txt for a task with a "txt" reader) is read in
        # that format; otherwise csv or jsonl by name.
        suffix = Path(str(source).lower().removesuffix(".gz")).suffix.lstrip(".")
        fmt = suffix if suffix in spec.formats else guess_format(source)
        if fmt == "jsonl" and suffix and suffix not in JSON_LINES_SUFFIXES:
            # a .txt or .tsv read as JSON lines fails on every row with "not JSON": say so once, before any model loads
            raise ConfigError(f"Cannot tell the format of {source} from its name (.{suffix}): task {spec.name!r} "
                              f"reads {', '.join(sorted(formats))}. Give --format, e.g. --format jsonl for one JSON "
                              "object per line, or save it as .csv with a header row.",
                              details={"source": str(source), "formats": sorted(formats)})
    if fmt not in formats and fmt.strip().lower() in formats:
        fmt = fmt.strip().lower()  # --format CSV
    if fmt not in formats:
        close = difflib.get_close_matches(fmt.lower(), sorted(formats), n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"Task {spec.name!r} reads the formats {', '.join(sorted(formats))}; not {fmt!r}.{hint}")
    if mapping or defaults:
        fields = list(spec.input_model.model_fields)
        unknown = sorted((set(mapping or {}) | set(defaults or {})) - set(fields))
        if unknown:
            raise ConfigError(f"--column/--default: {', '.join(map(repr, unknown))} "
                              f"{'is not an input field' if len(unknown) == 1 else 'are not input fields'} of task "
                              f"{spec.name!r}; its input fields are: {', '.join(fields)}. Write --column FIELD=COLUMN "
                              "and --default FIELD=VALUE with FIELD one of these.",
                              details={"unknown": unknown, "fields": fields})
        constant = [name for name in spec.id_fields if name in (defaults or {})]
        if constant:
            raise ConfigError(id_default_problem(constant[0], spec.name), details={"field": constant[0]})
        check_mapping_and_defaults(spec, mapping or {}, defaults or {})
        if known[fmt].factory is None:
            takes = ", ".join(sorted(name for name, made in known.items() if made.factory is not None)) or "none"
            raise ConfigError(f"Format {fmt!r} of task {spec.name!r} has fixed columns: it takes no "
                              f"--column/--default. Formats that do: {takes}.")
    return ReaderPlan(spec, fmt, mapping, defaults, encoding)


def check_mapping_and_defaults(spec: TaskSpec, mapping: Mapping[str, str], defaults: Mapping[str, Any]) -> None:
    """:func:`check_columns_and_defaults` for ``spec``'s input model (``sectorflow run``'s check)."""
    check_columns_and_defaults(spec.input_model, mapping, defaults)


def check_columns_and_defaults(model: Any, mapping: Mapping[str, str] | None,
                               defaults: Mapping[str, Any] | None) -> None:
    """Refuse, once before any row is read, a ``--column`` mapping that reads one column into two fields, and a
    ``--default`` value that the input model ``model`` (a pydantic model class) refuses (``--default currency=yen``:
    before 2 Dec 2026 every row failed with the same error). Each default is validated alone by ``model`` (its field
    validators included; errors for the fields not given are ignored). Public (``sectorflow.check_columns_and_defaults``)
    so that a plugin's own commands that read input files as ``sectorflow run`` does (``sectorflow aml explain``,
    ``aml train``) refuse the same options the same way.

    Raises:
        ConfigError: naming both fields and the column, or the option, the field, the value and the model's reason.
    """
    fields_of: dict[str, list[str]] = {}
    for field, column in (mapping or {}).items():
        fields_of.setdefault(column, []).append(field)
    for column, fields in fields_of.items():
        if len(fields) > 1:
            raise ConfigError(f"--column maps the column {column!r} to {len(fields)} fields ("
                              f"{', '.join(f'{field}={column}' for field in fields)}): a column is read into one "
                              "field; map each field to its own column.", details={"column": column, "fields": fields})
    if not defaults:
        return
    from pydantic import ValidationError

    try:
        model.model_validate(dict(defaults))
    except ValidationError as exc:
        for problem in exc.errors():
            field = str(problem["loc"][0]) if problem.get("loc") else None
            if field in defaults and problem.get("type") != "missing":
                reason = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
                raise ConfigError(f"--default {field}={defaults[field]}: {reason}. Fix the value of --default "
                                  f"{field}=VALUE (it would be refused on every row that lacks {field}).",
                                  details={"option": "--default", "field": field, "value": defaults[field],
                                           "reason": reason}) from None


def id_default_problem(field: str, task: str) -> str:
    """Why ``--default FIELD=VALUE`` is refused for an identifying field of ``task`` (:attr:`TaskSpec.id_fields`),
    and what to do instead."""
    return (f"--default {field}=...: {field} identifies each item of task {task!r}, so one value for every row would "
            f"make each row after the first a repeat of the first (not processed again). Map the file's own id column "
            f"with --column {field}=COLUMN; a file without one needs an id column added (each row its own value, "
            "unique across the files fed into one state, e.g. the export's date and row number).")


def known_fields_only(reader: Reader, spec: TaskSpec) -> Reader:
    """Wrap a built-in ``csv``/``jsonl`` reader so that columns (keys) that are not input fields of ``spec`` are left
    out of each record, with one warning per file naming them.

    Exports carry columns a task does not read (a ticket number, an agent's name): a task whose input model refuses
    unknown keys (``TextItem``: a misspelt option must not pass silently through the API) would otherwise reject
    every row of such a file. The warning names the ignored columns, so a misspelt one is still seen. Models that
    keep extra keys (``extra="allow"``) get every column, as before.
    """
    if spec.input_model.model_config.get("extra") == "allow":
        return reader
    fields = set(spec.input_model.model_fields)
    warned: set[str] = set()  # a --state run to stdout reads a file twice (check, then run): one warning

    @functools.wraps(reader)
    def read(source: Any) -> Iterator[tuple[int, Any]]:
        ignored: dict[str, None] = {}
        for row, record in reader(source):
            if isinstance(record, dict) and not fields.issuperset(record):
                ignored.update(dict.fromkeys(key for key in record if key not in fields))
                record = {key: value for key, value in record.items() if key in fields}
            yield row, record
        if ignored and str(source) not in warned:
            warned.add(str(source))
            log.warning("%s: %s %s not %s of task %r: ignored (its input fields: %s). To read one as a field: "
                        "--column FIELD=COLUMN.", source, ", ".join(map(repr, ignored)),
                        "is" if len(ignored) == 1 else "are", "an input field" if len(ignored) == 1 else
                        "input fields", spec.name, ", ".join(spec.input_model.model_fields))

    return read  # type: ignore[return-value]


def checked_reader(reader: Reader, encoding: str | None = None) -> Reader:
    """Wrap ``reader`` so that a file that cannot be decoded raises :class:`InvalidInputError`, not a traceback, and
    so that it reads its file in ``encoding`` (``None``: detect; see :func:`open_text`).

    Translated: ``UnicodeDecodeError`` (a byte the file's encoding cannot decode: the message names the file's line
    and the byte and points to ``--encoding``, :func:`sectorflow.encodings.decode_problem`), ``gzip.BadGzipFile``
    and ``zlib.error`` (a ``.gz`` name on a file that is not gzip, or corrupt data), ``EOFError`` (a truncated gzip
    file), ``csv.Error`` (a CSV the ``csv`` module cannot parse), any other ``OSError`` while reading (pyarrow
    reports a Parquet file with corrupt compressed pages as one; a disk read error; a file without read access). The
    message names the file (``name``, if given, else ``source``) and the last row read before the failure. Applies
    to every reader, built in or a plugin's, because it wraps the iteration itself; ``encoding`` likewise reaches
    every reader that opens its file with :func:`open_text` (:data:`~sectorflow.encodings.INPUT_ENCODING` is set
    around each step of the iteration, and only then).
    """

    @functools.wraps(reader)
    def read(source: Any, *, name: str | None = None) -> Iterator[tuple[int, Any]]:
        row, shown = 0, name or source
        try:
            rows = iter(reader(source))
            while True:
                token = INPUT_ENCODING.set(encoding)
                try:
                    row, record = next(rows)
                except StopIteration:
                    return
                finally:
                    INPUT_ENCODING.reset(token)
                yield row, record
        except InvalidInputError as exc:  # open_text's error for this file: worded again with the row and name
            cause = raw_cause(exc, source)
            if cause is None:
                raise
            raise _reworded(source, cause, shown, row) from cause
        except (UnicodeDecodeError, *GZIP_ERRORS) as exc:  # a reader that opens its file itself
            raise _reworded(source, exc, shown, row) from exc
        except csv.Error as exc:  # a NUL byte, a broken quote in strict dialects: the file, not one row
            raise _unreadable(shown, row, "is not valid CSV", str(exc)) from exc
        except OSError as exc:  # corrupt compressed data in a Parquet file (pyarrow), a disk read error, no access
            raise _unreadable(shown, row, "could not be read", exc.strerror or str(exc) or type(exc).__name__) from exc

    return read


def _reworded(source: Any, exc: BaseException, shown: Any, row: int) -> SectorflowError:
    """The error for ``exc`` (a ``UnicodeDecodeError`` or one of :data:`~sectorflow.input_damage.GZIP_ERRORS`)
    raised while ``source`` was read, naming it ``shown`` and, for gzip damage, the last row read."""
    if isinstance(exc, UnicodeDecodeError):
        return decode_problem(source, exc, name=shown)
    if str(source).endswith(".gz"):
        return gzip_problem(source, exc, name=shown, row=row)
    return _unreadable(shown, row, "could not be decompressed", str(exc) or type(exc).__name__)


def _unreadable(source: Any, row: int, what: str, reason: str) -> InvalidInputError:
    where = f" after row {row}" if row else ""
    return InvalidInputError(f"Input file {source} {what}: {reason.rstrip('. ')}{where}.")  # one line: no per-row details
