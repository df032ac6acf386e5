"""Errors for an input file that cannot be read through: a ``.gz`` file that is not gzip, corrupt or cut short,
and text that its encoding cannot decode.

:func:`sectorflow.open_text` (and so every reader and every ``sectorflow aml`` command that opens a file with it)
turns these into one :class:`~sectorflow.errors.InvalidInputError` naming the file, where it could be read up to
and what to do, instead of Python's ``gzip.BadGzipFile`` / ``EOFError`` / ``zlib.error`` / ``UnicodeDecodeError``
traceback. (An ``EOFError`` that escapes a typer command is turned by click into ``Abort``, which the CLI used to
report as "stopped by SIGINT" with exit 130: a truncated ``labels.csv.gz`` given to ``sectorflow aml train``.)
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from pathlib import Path
from typing import Any

from .encodings import decode_problem
from .errors import InvalidInputError, SectorflowError

GZIP_ERRORS: tuple[type[BaseException], ...] = (gzip.BadGzipFile, zlib.error, EOFError)
"""What Python's :mod:`gzip` raises while reading a damaged file: ``BadGzipFile`` (not gzip, a CRC or length that
does not match), ``zlib.error`` (corrupt deflate data), ``EOFError`` (the file ends before the end-of-stream
marker)."""

_CHUNK = 1 << 16


def readable_prefix(path: Path) -> tuple[int, int]:
    """``(complete lines, bytes)`` of the decompressed data of gzip file ``path`` that can be read before its
    damage (re-read from the start; called only once something failed)."""
    lines = size = 0
    try:
        with gzip.open(path, "rb") as handle:
            while block := handle.read1(_CHUNK):  # what decompressed so far: read() would fail whole
                lines += block.count(b"\n")
                size += len(block)
    except (*GZIP_ERRORS, OSError):
        pass
    return lines, size


def gzip_problem(path: str | Path, exc: BaseException, *, name: Any = None, row: int = 0, what: str = "Input file",
                 error: type[SectorflowError] = InvalidInputError) -> SectorflowError:
    """The error for gzip file ``path`` that raised ``exc`` (one of :data:`GZIP_ERRORS`) while being read.

    The message names the file (``name``, default ``path``), what is wrong with it (not gzip at all, damaged, or
    truncated), where it stops being readable (``row``: the last row a reader yielded, else the complete lines
    and decompressed bytes re-read from the file) and the fix; ``details``: ``source``, ``problem``
    (``not_gzip``, ``corrupt`` or ``truncated``), ``lines_readable``, ``bytes_readable`` and ``last_row`` where
    known. ``what`` begins the message ("Input file", "Labels file"); ``error`` is its class.
    """
    source, path = str(path), Path(path)
    shown = name or source
    reason = str(exc).rstrip(". ") or type(exc).__name__
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
    except OSError:
        magic = b""
    if isinstance(exc, gzip.BadGzipFile) and magic != b"\x1f\x8b":
        return error(f"{what} {shown} is not a valid gzip file ({reason}): its name ends in .gz but it is not "
                     "gzip-compressed. Rename it without .gz if it is plain text, or compress it with gzip.",
                     details={"source": source, "problem": "not_gzip"})
    lines, size = readable_prefix(path)
    details: dict[str, Any] = {"source": source, "lines_readable": lines, "bytes_readable": size}
    if row:
        details["last_row"] = row
    upto = f"row {row}" if row else f"line {lines:,}" if lines else "none of its lines"
    where = f"; it reads up to {upto} ({size:,} byte(s) decompressed)"
    if isinstance(exc, EOFError):
        details["problem"] = "truncated"
        return error(f"{what} {shown} is truncated (the gzip file ends early: {reason}){where}. It was probably cut "
                     "off while being copied, downloaded or written: copy or export it again (gzip -t FILE checks "
                     "a .gz file).", details=details)
    details["problem"] = "corrupt"
    return error(f"{what} {shown} is a damaged gzip file ({reason}){where}. Copy or export it again (gzip -t FILE "
                 "checks a .gz file).", details=details)


def same_codec(a: str | None, b: str | None) -> bool:
    """Whether two codec names name the same codec (``utf-8-sig`` and ``UTF_8_SIG``); ``utf-8-sig`` is ``utf-8``
    here, as its decoder reports its errors as ``utf-8``'s."""
    if not (a and b):
        return False
    try:
        names = [codecs.lookup(name).name.removesuffix("-sig") for name in (a, b)]
    except LookupError:
        return False
    return names[0] == names[1]


def read_problem(path: str | Path, exc: BaseException, encoding: str | None, *, what: str = "Input file",
                 error: type[SectorflowError] = InvalidInputError) -> SectorflowError | None:
    """The typed error for ``exc`` raised while file ``path`` was read as text in ``encoding``, or ``None`` when
    ``exc`` is not about the file (a ``UnicodeDecodeError`` of another codec: the caller's own decoding)."""
    if isinstance(exc, UnicodeDecodeError):
        if not same_codec(exc.encoding, encoding):
            return None
        return decode_problem(path, exc, what, error=error)
    if isinstance(exc, GZIP_ERRORS) and str(path).endswith(".gz"):
        return gzip_problem(path, exc, what=what, error=error)
    return None


def raw_cause(exc: SectorflowError, source: Any) -> BaseException | None:
    """The ``UnicodeDecodeError`` or gzip error behind ``exc`` when :func:`read_problem` made ``exc`` for file
    ``source``, so that a caller that knows more (the row a reader was at, the name to show for standard input)
    can word it again; else ``None``."""
    cause = exc.__cause__
    details = exc.details if isinstance(exc.details, dict) else {}
    if isinstance(cause, (UnicodeDecodeError, *GZIP_ERRORS)) and details.get("source") == str(source):
        return cause
    return None
