"""Transaction readers: CSV, JSON lines and Parquet with a column mapping, plus AMLSim and AMLworld adapters.

Every reader has the core reader signature ``reader(source) -> Iterator[(row_number, record)]``: a CSV or JSON-lines
row is numbered by the file line it begins on (the header is line 1; Parquet rows and AMLSim/AMLworld rows, whose ids
are made from it, are counted from 1 after the header) and each record is a raw dict with :class:`~sectorflow_aml.schema.Transaction` field
names. Readers never judge values: a negative amount, an unknown currency or an unparsable time is passed on as
found, so that validation against ``Transaction`` (by ``sectorflow run`` or :func:`load_transactions`) reports it
with its row number and skips or rejects it as the caller chose. A row that cannot be read at all (broken CSV
quoting, a line that is not one JSON object) or whose id is stored as a float or a boolean is yielded as ``(row,
InvalidInputError)``, the core's reader convention, to be skipped or rejected the same way.

Formats (``READERS`` keys, also ``sectorflow run aml FILE --format NAME``):

- ``csv`` / ``jsonl`` / ``parquet``: columns named like ``Transaction`` fields, or renamed with ``mapping``.
- ``amlsim`` / ``amlworld`` / ``amlgentex``: the fixed-column CSV files of IBM AMLSim, AMLworld and AMLGentex; their
  readers live in
  :mod:`sectorflow_aml.formats` (importable from here as well).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from sectorflow import (ConfigError, InvalidInputError, check_columns_and_defaults, csv_file_records, csv_records,
                        open_text, parse_json_line)

from .formats import (  # noqa: F401 (names of sectorflow_aml.loaders before these readers moved)
    AMLSIM_BASE_DATE,
    AMLSIM_HEADER,
    AMLWORLD_CHANNELS,
    AMLWORLD_CURRENCIES,
    AMLWORLD_HEADER,
    AMLGENTEX_COLUMNS,
    Reader,
    Record,
    _broken,
    _header,
    amlgentex_reader,
    amlsim_reader,
    amlworld_reader,
)
from .schema import Transaction, input_context

log = logging.getLogger("sectorflow_aml")

FIELDS = tuple(Transaction.model_fields)

ID_FIELDS = ("transaction_id", "sender_account", "receiver_account", "sender_bank", "receiver_bank")
"""``Transaction`` fields that are identifiers: an integer there (a Parquet ``int64`` column, a JSON number) is read
as its decimal text; a float or a boolean is a bad row (:func:`_id_problem`)."""


def _remap(record: Mapping[str, Any], mapping: Mapping[str, str] | None,
           defaults: Mapping[str, Any] | None) -> Record:
    """Rename source columns to ``Transaction`` fields; keep only those fields; drop empty cells; add defaults.

    Floats are read through their shortest text (``49999.99`` stays exact), except in :data:`ID_FIELDS`, where an
    integer (not a boolean) becomes its decimal text and a float or boolean is kept as found for
    :func:`_id_problem`.
    """
    out: Record = dict(defaults or {})
    sources = {field: (mapping or {}).get(field, field) for field in FIELDS}
    for field, column in sources.items():
        value = record.get(column)
        if value is None or value == "":
            continue
        if field in ID_FIELDS:
            out[field] = str(value) if type(value) is int else value  # bool is an int subclass: not an id
            continue
        out[field] = repr(value) if isinstance(value, float) else value  # floats: shortest exact decimal text
    return out


class _JsonFloat(str):
    """The text of a JSON number written with a fraction or an exponent (``1003.0``, ``1e3``): what the JSON-lines
    reader's ``parse_float`` makes, so that decimal text stays exact for amounts while an id written as such a number
    is told apart from the same characters written as a JSON string (``"1003.0"``) and refused (:func:`_id_problem`).
    Its repr is the number as written."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)


def _id_problem(source: Any, row: int, record: Record) -> InvalidInputError | None:
    """A bad row for an id stored as a float (``1.0``, or ``1.2345678901234568e+18`` for an integer that lost its
    last digits: pandas turns an integer column with a missing value into float64), a JSON number with a fraction or
    an exponent (``1003.0``, ``1e3``: :class:`_JsonFloat`) or a boolean; ``None`` if none."""
    for field in ID_FIELDS:
        value = record.get(field)
        if isinstance(value, (float, bool, _JsonFloat)):
            kind = "a boolean" if isinstance(value, bool) else "a floating-point number"
            reason = (f"{field} is {kind} ({value!r}), not an id: store ids as text or whole numbers (a float keeps "
                      "about 16 digits: an integer column with a missing value, which pandas turns into float64, "
                      "loses the last digits of long ids)")
            return InvalidInputError(f"{source}: row {row}: {reason}.",
                                     details=[{"row": row, "field": field, "reason": reason}])
    return None


_DATETIME = TypeAdapter(datetime)  # pydantic's own parser, the one validating ``Transaction.timestamp`` uses


def _without_offset(value: Any) -> bool:
    """Whether ``value`` is a time ``Transaction`` validation reads without a UTC offset (so in ``input_timezone``).

    Decided by parsing it as validation does, not by its last characters: a date alone (``2026-11-07``, which ends in
    what looks like an offset ``-07``) is midnight local time without an offset; a value that does not parse
    (``yesterday``) is not counted here (validation rejects that row with its own message); Unix seconds are UTC.
    """
    if isinstance(value, datetime):
        return value.tzinfo is None
    if isinstance(value, date):  # a Parquet date32 column
        return True
    if not isinstance(value, str):
        return False
    try:
        return _DATETIME.validate_python(value.strip()).tzinfo is None
    except ValidationError:
        return False


_warned_naive: set[object] = set()


def _file_key(source: Any) -> object:
    """A file's identity for warning once: path, size and modification time (the source itself otherwise)."""
    try:
        stat = Path(source).stat()
        return (str(Path(source).resolve()), stat.st_size, stat.st_mtime_ns)
    except (TypeError, OSError):
        return id(source)


def _noting_naive_times(source: Any, rows: Iterator[tuple[int, Any]],
                        context: Mapping[str, Any] | None) -> Iterator[tuple[int, Any]]:
    """``rows`` unchanged; at the end, once per file, a line when timestamps carried no UTC offset.

    Bank exports often hold local times without an offset: in China 17:00 local read as UTC is 01:00 the next Beijing
    day, which moves same-day cash totals to other days. ``context`` is the validation context the caller reads the
    rows with (the core's input context, handed to the reader factory: ``sectorflow run``, :func:`load_transactions`,
    ``aml explain``), so the reader knows the zone:

    - ``input_timezone`` in it: an info line naming the zone (nothing to fix);
    - a context without it: a warning that they were read as UTC, and how to name their zone;
    - no context (``None``: a reader made without one, e.g. ``READERS["csv"]``): a warning that they are read in the
      zone ``input_timezone`` names, UTC when it is not given.
    """
    naive = total = 0
    first = None
    for row, record in rows:
        if isinstance(record, dict):
            value = record.get("timestamp")
            if value is not None:
                total += 1
                if _without_offset(value):
                    naive += 1
                    first = first or (row, value)
        yield row, record
    key = _file_key(source)
    if not naive or key in _warned_naive:  # once per file: the CLI's reject mode reads a file twice
        return
    _warned_naive.add(key)
    head = f"{source}: {naive} of {total} timestamps carry no UTC offset (e.g. row {first[0]}: {str(first[1])!r})"
    zone = context.get("input_timezone") if context is not None else None
    # One line each (it was 400 characters naming every API): the fix is the option; docs/aml.md names the rest.
    if zone is not None:
        log.info("%s: read as local times in %s (input_timezone).", head, zone)
    elif context is not None:
        log.warning("%s: read as UTC; if local, give -O input_timezone=ZONE (sectorflow run) or --input-timezone ZONE "
                    "(sectorflow aml commands), e.g. Asia/Shanghai.", head)
    else:
        log.warning("%s: read in the zone input_timezone names, else UTC; if local, give input_timezone=ZONE (e.g. "
                    "Asia/Shanghai).", head)


ID_COLUMN_FIX = ("map the file's transaction id column with --column transaction_id=COLUMN (mapping= in Python); "
                 "it cannot be given with --default: one value for every row makes each row after the first a "
                 "repeat of the first, not scored. A file without one needs an id column added (each row its own "
                 "value, unique across the files fed into one state, e.g. the export's date and row number)")
"""What to do about a file without a ``transaction_id`` column (the missing-column and the default's messages)."""


def _check_mapping(mapping: Mapping[str, str] | None, defaults: Mapping[str, Any] | None = None) -> None:
    """Refuse, before any row is read, ``--column``/``--default`` options as ``sectorflow run aml`` refuses them: a key
    that is not a :class:`Transaction` field, a default ``transaction_id``, one column read into two fields, a
    default value ``Transaction`` refuses (``--default currency=yen``: :func:`sectorflow.check_columns_and_defaults`,
    the check ``sectorflow run`` makes). Every reader factory calls it, so ``aml explain`` and ``aml train`` refuse them
    too (before 3 Dec 2026 they read every row and failed on each, or drew nothing).

    Raises:
        ConfigError: naming the option and the fix.
    """
    unknown = (set(mapping or {}) | set(defaults or {})) - set(FIELDS)
    if unknown:
        raise ConfigError(f"Column mapping and default keys must be Transaction fields ({', '.join(FIELDS)}); "
                          f"unknown: {', '.join(sorted(unknown))}.")
    if "transaction_id" in (defaults or {}):
        value = (defaults or {})["transaction_id"]
        raise ConfigError(f"A default transaction_id ({value!r}) would give every row the same id: {ID_COLUMN_FIX}.",
                          details={"field": "transaction_id"})
    check_columns_and_defaults(Transaction, mapping, defaults)


def csv_reader(mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None, *,
               context: Mapping[str, Any] | None = None) -> Reader:
    """A CSV reader (header row required). ``mapping`` is ``{transaction_field: source_column}``; ``defaults``
    fills fields the file lacks or leaves empty (e.g. ``{"currency": "USD"}``). Header names are read with
    surrounding spaces removed (``Txn Ref, Amt`` has the columns ``Txn Ref`` and ``Amt``). ``context`` is the
    validation context the caller will read the rows with (:func:`~sectorflow_aml.schema.input_context`; the core
    hands it to reader factories, see ``sectorflow.input_files.reader_for``): it only words the once-per-file line about
    timestamps without a UTC offset (:func:`_noting_naive_times`); ``None``: not known.

    Parsed by :func:`sectorflow.csv_records` (strict): blank lines are skipped and not counted. Bad rows, yielded as
    ``(row, InvalidInputError)`` for validation's caller to skip or reject: broken quoting (a quoted cell that is
    never closed, ``t1,"abc,...``, which before read the rest of the file as that cell; reading resumes on the next
    line), and surplus cells beyond the header that are not empty (an unquoted comma). Empty surplus cells (Excel's
    trailing commas, ``...,100.00,,``) are ignored.

    Raises (while iterating):
        ConfigError: the file is empty; the header lacks a mapped column or a required field's column
            (:func:`_check_header`), or it is an AMLSim or AMLworld header and no mapping was given.
        InvalidInputError: the header line has broken quoting.
    """
    _check_mapping(mapping, defaults)

    def read_csv(source: Any) -> Iterator[tuple[int, Record | InvalidInputError]]:
        with open_text(source) as handle:
            records = csv_file_records(source, handle)
            header, first = _header(source, records)
            if not first:  # an empty file: no rows, as an empty JSON-lines file
                return
            if mapping is None and (header[:4] == AMLSIM_HEADER or header == AMLWORLD_HEADER):
                fmt = "amlsim" if header[:4] == AMLSIM_HEADER else "amlworld"
                raise ConfigError(f"{source} is an {'AMLSim' if fmt == 'amlsim' else 'AMLworld'} file, not a CSV "
                                  f"with Transaction columns: read it with --format {fmt} (format={fmt!r}).")
            _check_header(source, header, mapping, defaults)
            width = len(header)
            for line, cells in records:
                row = line  # numbered by the file line the row begins on, as an editor or a spreadsheet shows it
                if isinstance(cells, InvalidInputError):
                    yield row, _broken(source, row, cells)
                    continue
                surplus = cells[width:]
                if any(surplus):  # empty surplus cells (Excel's trailing commas: "...,100.00,,") hold nothing
                    reason = (f"line {line}: {len(cells)} cells but the header has {width} columns (surplus: "
                              f"{', '.join(map(repr, surplus))}); quote a cell that holds a comma (\"a, b\")")
                    yield row, InvalidInputError(f"Row {row}: {reason}.",
                                                 details=[{"row": row, "field": None, "reason": reason}])
                    continue
                yield row, _remap(dict(zip(header, cells)), mapping, defaults)  # keyed by the stripped names

    return lambda source: _noting_naive_times(source, read_csv(source), context)


REQUIRED = tuple(name for name, f in Transaction.model_fields.items() if f.is_required())
"""``Transaction`` fields without a default: a CSV must have a column for each (or a mapping or a default)."""


def _check_header(source: Any, header: tuple[str, ...], mapping: Mapping[str, str] | None,
                  defaults: Mapping[str, Any] | None, what: str = "CSV header") -> None:
    """One error for a header that lacks a mapped column (a typo in ``--column``) or a required field's column (a
    wrong delimiter, another file), instead of the same 'missing' reason on every row.

    Raises:
        ConfigError: naming each absent column (and the field it was mapped to), the header found, and the fix;
            ``details`` ``{"missing": [column, ...], "header": [...]}``.
    """
    mapping = mapping or {}
    absent: list[str] = []
    shown: list[str] = []
    unmapped = False  # a required field without a column, a mapping or a default (not a --column typo)
    for field in FIELDS:
        column = mapping.get(field, field)
        if column in header:
            continue
        if field in mapping:
            close = [h for h in header if h.casefold() == column.casefold()] or difflib.get_close_matches(
                column, header, n=1, cutoff=0.6)
            absent.append(column)
            shown.append(f"{column!r} (mapped to {field}" + (f"; did you mean {close[0]!r}?)" if close else ")"))
        elif field in REQUIRED and field not in (defaults or {}):
            absent.append(column)
            shown.append(column)
            unmapped = True
    if not absent:
        return
    hint = ""
    joined = ",".join(header)
    for delimiter, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
        if delimiter in joined:
            hint = (f" The header looks separated by {name}: save the file with commas (the CSV reader reads "
                    f"comma-separated files).")
            break
    if not unmapped:
        fix = (" Fix the mapping (--column FIELD=COLUMN on the command line, mapping= in Python) to name columns of "
               "the file; names are case-sensitive.")
    else:
        fix = (" Rename the columns, or map yours to Transaction fields: --column amount='Amount Paid' on the command "
               "line, csv_reader(mapping={'amount': 'Amount Paid', ...}) in Python; another field the file lacks "
               "(not transaction_id) can be given with --default FIELD=VALUE (defaults=).")
        if "transaction_id" in absent:
            fix += f" For transaction_id, {ID_COLUMN_FIX}."
    raise ConfigError(f"The {what} of {source} lacks the column(s) {', '.join(shown)} (found: "
                      f"{', '.join(header) or 'no header'}).{hint}{fix}",
                      details={"missing": absent, "header": list(header)})


_ONE_OBJECT = ('each line must hold one JSON object, e.g. {"transaction_id": "T1", "timestamp": '
               '"2026-01-31T10:00:00", "sender_account": "A", "receiver_account": "B", "amount": "100.00"}; fix the '
               'line or delete it')


def jsonl_reader(mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None, *,
                 context: Mapping[str, Any] | None = None) -> Reader:
    """A JSON-lines reader (one object per line; blank lines counted but skipped). Same ``mapping``, ``defaults``
    and ``context`` as :func:`csv_reader`.

    A line that is not a JSON object, whose values nest too deeply for Python's JSON parser (``RecursionError``), or
    that holds an integer of more than 4,300 digits (Python's limit) is yielded as ``(row, InvalidInputError)`` (the
    core's reader convention; these guards are :func:`sectorflow.parse_json_line`'s), so that skip mode reports it
    and goes on; so is a line with an id that is a boolean or a JSON number with a fraction or an exponent
    (``1003.0``, ``1e3``, ``1.2345678901234567e+19``: two long ids a float64 made equal would otherwise be one id and
    the second a duplicate), while an integer id is read as its decimal text (:data:`ID_FIELDS`). A byte-order mark at the start of any line is dropped (``cat`` of two files that each began
    with one). JSON lines have no header: a mapped key absent from a line is reported
    by validation as that field missing (if it is required), row by row.
    """
    _check_mapping(mapping, defaults)

    def read_jsonl(source: Any) -> Iterator[tuple[int, Record | InvalidInputError]]:
        first = True
        with open_text(source) as handle:
            for row, line in enumerate(handle, start=1):
                line = line.removeprefix("\ufeff")  # files joined with cat carry a byte-order mark where each began
                if not line.strip():
                    continue
                try:  # decimal text kept exact; guards: too deep, too long a number, not an object
                    record = parse_json_line(line, source, row, fix=_ONE_OBJECT, parse_float=_JsonFloat)
                except InvalidInputError as problem:  # a bad row, not a bad file: --on-error skip goes on
                    if first:
                        _refuse_csv_header(source, row, line)
                    first = False
                    yield row, problem
                    continue
                first = False
                out = _remap(record, mapping, defaults)
                problem = _id_problem(source, row, out)  # an id written 1003.0 or 1e3 is a float, not text
                if problem is not None:
                    yield row, problem
                    continue
                for field, value in out.items():  # other numbers: their exact decimal text, as plain str
                    if type(value) is _JsonFloat:
                        out[field] = str.__str__(value)
                yield row, out

    return lambda source: _noting_naive_times(source, read_jsonl(source), context)


def _refuse_csv_header(source: Any, row: int, line: str) -> None:
    """Refuse a file read as JSON lines whose first line is a CSV header (``--format jsonl`` on an AMLSim export):
    every row would fail as "not JSON", and the fix is the format, not ``--on-error skip``.

    Raises:
        InvalidInputError: ``line`` is not JSON and parses as two or more CSV cells; the message names the format
            to give (``amlsim``, ``amlworld`` for their headers, else ``csv``).
    """
    if line.lstrip().startswith(("{", "[")):
        return
    _, cells = next(csv_records([line], source), (0, []))
    if not isinstance(cells, list) or len(cells) < 2:
        return
    header = tuple(cell.strip() for cell in cells)
    fmt = "amlsim" if header[:4] == AMLSIM_HEADER else "amlworld" if header == AMLWORLD_HEADER else "csv"
    kind = {"amlsim": "AMLSim's header", "amlworld": "AMLworld's header"}.get(fmt, "a CSV header")
    raise InvalidInputError(f"Input file {source} is CSV, not JSON lines: line {row} is {kind} "
                            f"({line.strip()[:60]!r}). Read it with --format {fmt} (format={fmt!r}).",
                            details={"source": str(source), "line": row, "format": fmt})


def parquet_reader(mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
                   batch_rows: int = 65536, *, context: Mapping[str, Any] | None = None) -> Reader:
    """A Parquet reader (pyarrow), streaming ``batch_rows`` rows at a time. Same ``mapping``, ``defaults`` and
    ``context`` as :func:`csv_reader`. Integer ids (``int64`` columns) are read as their decimal text; an id that is
    a float or a boolean is a bad row, ``(row, InvalidInputError)`` (:data:`ID_FIELDS`).

    Raises:
        ConfigError: the file is a directory, does not exist, or is not Parquet; its columns lack a mapped column or
            a required field's column (:func:`_check_header`).
        InvalidInputError (while iterating): pyarrow fails part-way through (``ArrowInvalid``, an ``OSError``: a
            damaged page), naming the file and the last row read (``details["last_row"]``); the rows before it
            have been yielded.
    """
    _check_mapping(mapping, defaults)

    def read_parquet(source: Any) -> Iterator[tuple[int, Record | InvalidInputError]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if Path(source).is_dir():
            raise ConfigError(f"Input {source} is a directory; give a Parquet file inside it (a dataset written in "
                              "parts, as Spark does, is a folder of part files: give each part, or combine them).")
        if not Path(source).is_file():
            raise ConfigError(f"Input file {source} does not exist.")
        try:
            handle = pq.ParquetFile(source)
        except pa.ArrowInvalid as exc:
            raise ConfigError(f"{source} is not a Parquet file: {exc}.") from exc
        except (pa.ArrowException, OSError) as exc:
            raise ConfigError(f"{source} cannot be opened as a Parquet file: {exc}.") from exc
        _check_header(source, tuple(handle.schema_arrow.names), mapping, defaults, what="Parquet schema")
        row = 0
        batches = handle.iter_batches(batch_size=batch_rows)
        while True:
            try:  # a damaged page surfaces here, part-way through: ArrowInvalid (a ValueError) or OSError
                batch = next(batches, None)
                records = batch.to_pylist() if batch is not None else []
            except (pa.ArrowException, OSError) as exc:
                where = f"after row {row} (the last row read)" if row else "before its first row"
                hint = ("a column type pyarrow cannot read: convert that column" if
                        isinstance(exc, pa.ArrowNotImplementedError) else
                        "the file is damaged (a truncated copy, a corrupt page): write it again from its source")
                raise InvalidInputError(f"Parquet file {source} could not be read {where}: {exc}; {hint}.",
                                        details={"source": str(source), "last_row": row}) from exc
            if batch is None:
                return
            for record in records:
                row += 1
                out = _remap(record, mapping, defaults)
                yield row, _id_problem(source, row, out) or out

    return lambda source: _noting_naive_times(source, read_parquet(source), context)


READERS: dict[str, Reader] = {
    "amlsim": amlsim_reader(typed=True),
    "amlworld": amlworld_reader(),
    "amlgentex": amlgentex_reader(),
    "csv": csv_reader(),
    "jsonl": jsonl_reader(),
    "parquet": parquet_reader(),
}
"""The formats ``sectorflow run aml FILE --format NAME`` reads, with default settings."""

READER_FACTORIES: dict[str, Callable[..., Reader]] = {"csv": csv_reader, "jsonl": jsonl_reader,
                                                      "parquet": parquet_reader}
"""The formats whose columns ``sectorflow run aml FILE --format NAME --column FIELD=COLUMN --default FIELD=VALUE``
renames: ``factory(mapping=..., defaults=..., context=...)`` (the core's ``InputFormat.factory``; the core
hands ``context``, the run's input context, to every read of these formats, so they are read by the factory also
without ``--column``)."""

Format = Literal["amlsim", "amlworld", "amlgentex", "csv", "jsonl", "parquet"]


def guess_format(path: str | Path) -> str:
    """``parquet``, ``jsonl`` or ``csv`` from the file name; a CSV whose header is AMLSim's or AMLworld's is that."""
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    with open_text(path) as handle:
        _, first = next(csv_records(handle, path), (0, []))
        header = tuple(h.strip() for h in first) if isinstance(first, list) else ()  # broken: the reader says so
    if header[:4] == AMLSIM_HEADER:
        return "amlsim"
    if header == AMLWORLD_HEADER:
        return "amlworld"
    if set(AMLGENTEX_COLUMNS) <= set(header) and "nameOrig" in header:
        return "amlgentex"
    return "csv"


def load_transactions(path: str | Path, format: str | None = None, mapping: Mapping[str, str] | None = None,
                      on_error: Literal["skip", "reject"] = "skip", *, input_timezone: str | None = None,
                      **reader_options: Any) -> tuple[list[Transaction], list[dict[str, Any]]]:
    """Read and validate a transaction file.

    Args:
        path: the file (``.gz`` allowed).
        format: one of ``READERS`` (``None``: guessed by :func:`guess_format`).
        mapping: ``{transaction_field: source_column}`` for ``csv``, ``jsonl`` and ``parquet``.
        on_error: ``"skip"`` drops bad rows and returns them as problems; ``"reject"`` raises on any bad row.
        input_timezone: time zone of timestamps without a UTC offset (the ``aml`` option of the same name, e.g.
            ``"Asia/Shanghai"``); ``None``: UTC. Rows of the typed AMLSim reader carry UTC times already.
        reader_options: passed to the format's reader factory (e.g. ``defaults={"currency": "USD"}`` for csv, jsonl
            and parquet; ``base_date=``, ``currency=`` for AMLSim).

    Returns:
        ``(transactions, problems)``; a problem is ``{"row": int, "field": str | None, "reason": str}``.

    Raises:
        InvalidInputError: with ``on_error="reject"``, listing every bad row.
        ConfigError: unknown format, missing file, mapping for a fixed format, a bad ``on_error`` or
            ``input_timezone``.
    """
    if on_error not in ("skip", "reject"):
        raise ConfigError(f"on_error must be 'skip' or 'reject', not {on_error!r}.")
    context = input_context({"input_timezone": input_timezone})
    fmt = format or guess_format(path)
    factories: dict[str, Callable[..., Reader]] = {"csv": csv_reader, "jsonl": jsonl_reader,
                                                   "parquet": parquet_reader, "amlsim": amlsim_reader,
                                                   "amlworld": amlworld_reader, "amlgentex": amlgentex_reader}
    if fmt not in factories:
        raise ConfigError(f"Unknown transaction format {fmt!r}; use one of {', '.join(sorted(factories))}.")
    if mapping is not None:
        if fmt in ("amlsim", "amlworld", "amlgentex"):
            raise ConfigError(f"The {fmt} format has fixed columns; a column mapping applies to csv, jsonl, parquet.")
        reader_options["mapping"] = mapping
    if fmt == "amlsim":
        reader_options.setdefault("typed", True)
    if fmt in READER_FACTORIES:
        reader_options["context"] = context  # the zone validation reads naive times in, for the reader's note
    reader = factories[fmt](**reader_options)
    transactions: list[Transaction] = []
    problems: list[dict[str, Any]] = []
    for row, record in reader(path):
        if isinstance(record, Transaction):  # already checked by a typed reader
            transactions.append(record)
            continue
        if isinstance(record, InvalidInputError):
            problems.extend(record.details or [{"row": row, "field": None, "reason": str(record)}])
            continue
        try:
            transactions.append(Transaction.model_validate(record, context=context))
        except ValidationError as exc:
            problems.extend({"row": row, "field": ".".join(str(p) for p in e["loc"]) or None, "reason": e["msg"]}
                            for e in exc.errors())
    if problems and on_error == "reject":
        shown = "; ".join(f"row {p['row']}: " + (f"{p['field']}: " if p.get("field") else "") + str(p["reason"])
                          for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InvalidInputError(f"Invalid transactions in {path}: {shown}{more}.", details=problems)
    return transactions, problems

