"""Reading the operator's tables (FAQ entries, intent examples): CSV/TSV with a header, JSON lines or a JSON array.

CSV: comma, semicolon or tab between fields (the header's most frequent of the three; ``.tsv``: tab), quoted cells
may hold line breaks (Excel writes them). JSON: one object a line (``.jsonl``, ``.ndjson``, ``.json``) or one array
of objects (``.json``). UTF-8 with or without a byte-order mark, or GBK/GB18030/UTF-16 (detected, ``sectorflow.read_text``); ``.gz`` read transparently (``sectorflow.open_text``).
Every error is a :class:`~sectorflow.ConfigError` that names the file, the line and what to do.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from sectorflow import ConfigError, read_text

LANGS = {"zh": "zh", "en": "en", "chinese": "zh", "english": "en", "中文": "zh", "英文": "en", "cn": "zh"}
"""``lang`` values of a row and the language they mean; BCP 47 tags with a region or script (``zh-CN``,
``zh_Hant_TW``, ``en-GB``) are read by their first part."""


def lang_code(value: object, where: str) -> str | None:
    """``zh``, ``en``, or None for an empty value.

    Raises:
        ConfigError: any other value (``where`` names the row).
    """
    raw = str(value or "").strip()
    if not raw:
        return None
    key = raw.lower()
    lang = LANGS.get(key) or LANGS.get(key.replace("_", "-").split("-")[0])
    if lang is None:
        raise ConfigError(f"{where} has lang={raw!r}: give zh or en (zh-CN, zh-TW, en-US ... also do), or leave it "
                          f"empty.")
    return lang


def text_fields(where: str, row: object, names: Sequence[str], what: str) -> tuple[str, ...]:
    """The values of ``names`` in ``row`` (one row of :func:`read_rows`, placed by ``where``), stripped.

    Raises:
        ConfigError: the row is not an object (a JSON list or string), or a value is missing, not text or blank;
            ``what`` names the missing part in the message ("text or label").
    """
    if not isinstance(row, dict):
        raise ConfigError(f"{where} is a JSON {type(row).__name__}, not an object with {' and '.join(names)}.")
    values = [row.get(name) for name in names]
    if any(not isinstance(v, str) or not v.strip() for v in values):
        got = ", ".join(f"{name}={v!r}" for name, v in zip(names, values))
        raise ConfigError(f"{where} lacks {what} (both must be non-empty text; got {got}).")
    return tuple(v.strip() for v in values)  # type: ignore[union-attr]


def read_rows(path: str | Path, what: str, required: Sequence[str]) -> list[tuple[str, object]]:
    """``(where, row)`` for each row of a table file; ``where`` ("FAQ file x.csv line 3") names it in errors.

    Args:
        path: the file.
        what: what the file is, for messages ("FAQ file").
        required: the columns a CSV header must have (JSON rows are checked by the caller).

    Raises:
        ConfigError: a folder or missing file, not UTF-8, empty, a header without ``required``, invalid JSON.
    """
    path = Path(path)
    need = " and ".join(required)
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give the path of a .csv or .jsonl file inside it.")
    if not path.is_file():
        raise ConfigError(f"{what} {path} not found (give the path of a .csv or .jsonl file with {need}).")
    try:
        text = read_text(path, what, error=ConfigError)  # UTF-8, GBK/GB18030, UTF-16: detected
    except ConfigError:
        raise
    except Exception as exc:  # open_text raises typed errors; re-word them for the option
        raise ConfigError(f"{what} {path} cannot be read: {exc}") from exc
    suffix = Path(path.name.lower().removesuffix(".gz")).suffix
    if suffix == ".json" and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{what} {path} is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
        return [(f"{what} {path} entry {n}", row) for n, row in enumerate(data, 1)]
    if suffix in (".jsonl", ".json", ".ndjson"):
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"{what} {path} line {n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{what} {path} line {n} is not JSON: {exc.msg}") from exc
        return rows
    header = text.splitlines()[0] if text.strip() else ""
    if not header.strip():
        raise ConfigError(f"{what} {path} is empty: it needs a header line with {need} columns, then one row each.")
    delimiter = "\t" if suffix == ".tsv" else max(",;\t", key=header.count)
    # a quoted field may hold line breaks ("How do I\nchange my PIN?"): csv reads the text, not its split lines
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    fields = [(f or "").strip().lower() for f in reader.fieldnames or []]
    if not set(required) <= set(fields):
        raise ConfigError(f"{what} {path} needs a header with {need} columns (has {reader.fieldnames}); the "
                          f"delimiter may be a comma, a semicolon or a tab.")
    # reader.line_num: the line the row ends on (header = line 1)
    return [(f"{what} {path} line {reader.line_num}", {(k or "").strip().lower(): v for k, v in r.items()})
            for r in reader]
