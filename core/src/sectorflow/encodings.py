"""Text encodings of input files: which one a file is read in, and where a byte that does not decode sits.

Chinese bank exports, spreadsheets and contracts arrive in GBK or GB18030 (Windows' code page 936 and its national
standard superset, GB 18030-2005) or UTF-16 (Excel's "Unicode text"), as well as UTF-8. :func:`open_text
<sectorflow.open_text>` reads every input file of every reader (``sectorflow run``'s csv and jsonl, the task
formats, text tasks, FAQ and intent tables, FX rate files) through :func:`resolve`, so all of them take an encoding:

* the ``encoding`` argument of ``open_text``, else the one set for the current run (:data:`INPUT_ENCODING`, which
  ``sectorflow run --encoding`` sets through :func:`sectorflow.input_files.reader_for`), else
* detection (``auto``): a byte-order mark says UTF-8 or UTF-16; otherwise the first :data:`SAMPLE_BYTES` bytes are
  UTF-8 if they decode as UTF-8, else GB18030 (the superset of GB2312 and GBK) if they decode as GB18030 into
  mostly Chinese characters (Big5 if the charset-normalizer detector says Big5 rather than GB18030), else the
  encoding the detector names (:func:`detect`).

A detected encoding other than UTF-8 is said once per file (a warning on the ``sectorflow`` logger), so a wrong
guess is seen. A byte that the encoding cannot decode is reported by :func:`decode_problem` with the file's line.
"""

from __future__ import annotations

import codecs
import gzip
import logging
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .errors import ConfigError, InvalidInputError, SectorflowError

log = logging.getLogger("sectorflow")

AUTO = "auto"
INPUT_ENCODING: ContextVar[str | None] = ContextVar("sectorflow_input_encoding", default=None)
"""The encoding of the input files read in this context (``None``: detect). Set around each step of a reader by
:func:`sectorflow.input_files.checked_reader` when ``reader_for(..., encoding=)`` was given one."""

SAMPLE_BYTES = 64 * 1024
"""How much of a file detection reads (64 KiB: thousands of rows of a bank export)."""

_announced: set[tuple[str, str]] = set()


def check(name: str | None) -> str | None:
    """``name`` (``--encoding``) as a codec name Python knows (``None`` or ``auto``: ``None``, detect).

    Raises:
        ConfigError: an encoding Python does not know; the message lists the usual ones.
    """
    if name is None or name.strip().lower() == AUTO:
        return None
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        raise ConfigError(f"--encoding {name!r} is not an encoding Python knows; give one of auto (the default: "
                          "detect), utf-8, utf-8-sig, utf-16, gbk, gb18030, big5, latin-1, cp1252.") from None


def detect(sample: bytes, complete: bool = False) -> str:
    """The Python codec to read a file beginning with ``sample`` in (``complete``: ``sample`` is the whole file).

    ``utf-8-sig`` for a UTF-8 byte-order mark, bytes that decode as UTF-8 (plain ASCII included) or UTF-8 text with
    a few stray bytes (which are then reported with their line), ``utf-16`` for a
    UTF-16 byte-order mark (either byte order; the codec reads the mark), ``utf-32`` likewise; ``gb18030`` for bytes
    that decode as GB18030 into mostly CJK characters (``big5`` where they also decode as Big5 and the
    charset-normalizer detector, asked to choose between the two, says Big5); else the detector's answer
    (``gb18030`` where it has none), except that bytes with NUL bytes the detector does not call UTF-16 or UTF-32
    are binary data, "read" as UTF-8 so that the reader reports the first byte that does not decode.
    """
    if sample.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if sample.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if _decodes(sample, "utf-8", complete) or _mostly_utf8(sample):
        return "utf-8-sig"
    from charset_normalizer import from_bytes  # imported only for a file that is not UTF-8

    if _decodes(sample, "gb18030", complete) and _mostly_cjk(sample.decode("gb18030", "ignore")):
        # Chinese text: GB18030 (GB2312 and GBK are subsets), unless it is Big5 (Traditional; Big5 bytes decode as
        # GB18030 too, into the wrong characters): the detector chooses between the two only (on a short sample it
        # named cp874, Thai, for GB18030 text).
        if not _decodes(sample, "big5", complete):
            return "gb18030"
        best = from_bytes(sample, cp_isolation=["gb18030", "big5"]).best()
        return "big5" if best is not None and codecs.lookup(best.encoding).name == "big5" else "gb18030"
    best = from_bytes(sample).best()
    guess = codecs.lookup(best.encoding).name.replace("-", "_") if best is not None else None
    if b"\x00" in sample and not (guess or "").startswith(("utf_16", "utf_32")):
        return "utf-8-sig"  # NUL bytes and no UTF-16: binary data, reported as not UTF-8 with the line of the byte
    return guess or "gb18030"


def _mostly_cjk(text: str) -> bool:
    """Whether most (four in five) non-ASCII characters of ``text`` are CJK ideographs, kana or CJK punctuation and
    full-width forms (U+3000-U+9FFF, U+F900-U+FAFF, U+FF00-U+FFEF, U+20000 and above)."""
    wide = [char for char in text if char > "\x7f"]
    cjk = sum(1 for char in wide if "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"
              or "\uff00" <= char <= "\uffef" or char >= "\U00020000")
    return bool(wide) and cjk * 5 >= len(wide) * 4


def _mostly_utf8(sample: bytes) -> bool:
    """Whether ``sample`` is UTF-8 text with a few stray bytes (more than twice as many decoded non-ASCII characters
    as bytes that do not decode): read as UTF-8, the stray byte is then reported with its line, where a guessed
    legacy encoding would read every Chinese character of the file wrong without a word. GBK text read as UTF-8 is
    mostly bytes that do not decode (a bank export's lines: 33 characters that happen to decode, 204 bytes that
    do not)."""
    text = sample.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    good = sum(1 for char in text if char > "\x7f") - bad
    return good > 2 * bad


def _decodes(sample: bytes, encoding: str, complete: bool) -> bool:
    """Whether ``sample`` decodes in ``encoding``; a sequence cut at the sample's end is not an error unless
    ``complete``."""
    try:
        codecs.getincrementaldecoder(encoding)().decode(sample, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def _sample(path: Path) -> tuple[bytes, bool]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        sample = handle.read(SAMPLE_BYTES)
        return sample, len(sample) < SAMPLE_BYTES or not handle.read(1)


def resolve(source: Any, encoding: str | None = None, *, sample: bytes | None = None) -> str:
    """The codec to read ``source`` in: ``encoding`` if given, else :data:`INPUT_ENCODING`'s, else :func:`detect`
    on the file's first bytes (``sample``: the first bytes of standard input, which cannot be read twice). A
    detected encoding other than UTF-8 is logged once per file."""
    chosen = check(encoding) or check(INPUT_ENCODING.get())
    if chosen is not None:
        return "utf-8-sig" if chosen == "utf-8" else chosen  # UTF-8 with or without Excel's byte-order mark
    if sample is None:
        sample, complete = _sample(Path(source))
    else:
        complete = False
    found = detect(sample, complete)
    if found != "utf-8-sig" and (str(source), found) not in _announced:
        _announced.add((str(source), found))
        log.warning("%s: read as %s (detected; give --encoding to read it in another encoding).", source,
                    found.upper().replace("_", "-"))
    return found


def decode_problem(source: Any, exc: UnicodeDecodeError, what: str = "Input file", name: Any = None,
                   error: type[SectorflowError] = InvalidInputError) -> SectorflowError:
    """The error for a byte of ``source`` that its encoding (``exc.encoding``) cannot decode: it names the file's
    line and column (re-read from the file) and the byte, and says how to give the encoding. ``what`` begins the
    message ("Input file", "FAQ file"); ``name`` is the file's name in it (default ``source``; "standard input"); ``error``: the class of
    the error (:class:`ConfigError` for a file a task option names)."""
    encoding = exc.encoding
    place = _bad_byte(source, encoding)
    bad = exc.object[exc.start:exc.end][:4]
    where = f" on line {place[0]} (byte {place[1]} of the line)" if place else ""
    shown = {"utf-8-sig": "UTF-8", "utf_8_sig": "UTF-8"}.get(encoding, encoding.upper().replace("_", "-"))
    return error(
        f"{what} {name or source} is not {shown} text: the byte(s) {bad!r}{where} cannot be read in {shown}. Give the file's "
        "encoding with --encoding (e.g. gbk, gb18030, utf-16, big5, cp1252), or save it as UTF-8 (Excel: CSV UTF-8; "
        "iconv -f GB18030 -t UTF-8 FILE).",
        details={"source": str(source), "encoding": shown, **({"line": place[0]} if place else {})})


def _bad_byte(source: Any, encoding: str) -> tuple[int, int] | None:
    """``(line, byte)`` (both 1-based) of the first byte of file ``source`` that ``encoding`` cannot decode, or
    ``None`` (standard input, a file gone, or every byte decodes)."""
    if str(source) == "-":
        return None
    path = Path(source)
    try:
        opener: Any = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            decoder = codecs.getincrementaldecoder(encoding)()
            line = 1
            for raw in handle:  # split at b"\n": a UTF-8 or GB18030 sequence never holds that byte
                try:
                    text = decoder.decode(raw)
                except UnicodeDecodeError as exc:
                    return line, exc.start + 1
                line += text.count("\n")
    except OSError:
        return None
    return None
