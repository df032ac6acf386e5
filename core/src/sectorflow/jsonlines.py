"""One line of a JSON-lines file as a dict, with the guards a reader needs (:func:`parse_json_line`; re-exported by
:mod:`sectorflow.input_files` and as ``sectorflow.parse_json_line``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .errors import InvalidInputError


def parse_json_line(line: str, source: Any, row: int, *, fix: str | None = None,
                    parse_float: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """One line of a JSON-lines file (line number ``row`` of ``source``, which only words errors) as a dict, with
    the guards a reader needs so that one bad line is one bad row, not a traceback that stops the run: a byte-order
    mark at the start of the line is dropped (files joined with ``cat`` carry one where each began). The caller
    skips blank lines. ``parse_float`` as for :func:`json.loads` (``str`` keeps decimal text exact).

    ``fix``: what each line must hold, e.g. ``'each line must hold one JSON object, e.g. {"text": "..."}; fix the
    line or delete it'``. ``None`` (``sectorflow run``'s built-in ``jsonl``): short reasons (``not JSON: Expecting
    value``), under ``Row N ...`` messages; given (a plugin's reader): reasons that name the line, the column and an
    excerpt and end with ``fix``, under ``SOURCE: ...`` messages.

    Raises:
        InvalidInputError: the line is not valid JSON; its values nest too deeply for Python's parser (thousands of
            ``[`` or ``{``, a ``RecursionError``); it holds an integer of more than 4,300 digits (Python's limit,
            ``sys.get_int_max_str_digits``: a plain ``ValueError``); or it holds an array, a single value or
            ``null``, not an object. ``details`` is one ``{"row": row, "field": None, "reason": ...}``, so a reader
            yields it as ``(row, error)`` (see the module docstring).
    """
    line = line.removeprefix("\ufeff")
    try:
        record = json.loads(line, parse_float=parse_float)
    except json.JSONDecodeError as exc:
        if fix is None:
            raise _json_row(source, row, f"not JSON: {exc.msg}", fix,
                            f"Row {row} is not valid JSON: {exc.msg}.") from None
        raise _json_row(source, row, f"line {row} is not valid JSON ({exc.msg} at column {exc.colno}: "
                                     f"{_excerpt(line, exc.colno)}); {fix}", fix) from None
    except (RecursionError, ValueError) as exc:
        # json's C parser recurses once per nested [ or {; Python refuses to read an integer of more than 4,300
        # digits (sys.get_int_max_str_digits) with a plain ValueError
        text = str(exc)
        if isinstance(exc, RecursionError):
            reason = ("values nested too deeply to read (thousands of [ or {): flatten the line's values" if fix is None
                      else f"line {row} nests its values too deeply to read (thousands of [ or {{): {fix}")
        elif "integer string conversion" in text:
            reason = (f"a number too long to read ({text.split(':')[0]}): write it as a string" if fix is None else
                      f"line {row} holds a number too long to read ({text.split(':')[0]}): write it as a string, or "
                      "fix the line")
        else:
            reason = (f"not readable as JSON: {text}" if fix is None
                      else f"line {row} is not readable as JSON ({text}); {fix}")
        raise _json_row(source, row, reason, fix) from None
    if not isinstance(record, dict):
        if fix is None:
            kind = type(record).__name__
            raise _json_row(source, row, f"a JSON {kind}, not an object", fix,
                            f"Row {row} is a JSON {kind}, not an object.")
        kind = "an array" if isinstance(record, list) else "null" if record is None else "a single value"
        raise _json_row(source, row, f"line {row} holds {kind} ({_excerpt(line, 1)}), not a JSON object; {fix}",
                        fix)
    return record


def _json_row(source: Any, row: int, reason: str, fix: str | None, message: str | None = None) -> InvalidInputError:
    """The bad-row error of :func:`parse_json_line`: ``message``, by default ``Row N: reason.`` (no ``fix``) or
    ``SOURCE: reason.``"""
    message = message or (f"Row {row}: {reason}." if fix is None else f"{source}: {reason}.")
    return InvalidInputError(message, details=[{"row": row, "field": None, "reason": reason}])


def _excerpt(line: str, column: int, width: int = 30) -> str:
    """Up to ``width`` characters of ``line`` around 1-based ``column``, quoted, for an error message."""
    text = line.rstrip("\r\n")
    start = max(0, column - 1 - width // 2)
    piece = text[start:start + width]
    return ("..." if start else "") + repr(piece) + ("..." if start + width < len(text) else "")
