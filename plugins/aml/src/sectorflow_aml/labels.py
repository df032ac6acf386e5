"""Account labels for training and evaluating the account risk model.

Formats read by :func:`read_labels` (``.gz`` allowed; the format is told by the header):

- an account-level CSV ``account_id,label[,typology]``: ``label`` is 1 (laundering / a case confirmed suspicious)
  or 0 (legitimate); ``typology`` optional (several joined with ``;``), used for recall per typology;
- AMLGentex ``accounts.csv.gz`` (``ACCOUNT_ID,...,IS_SAR,...[,sar_typologies]``; ``IS_SAR`` is ``True``/``False``);
- AMLSim ``nodes.csv.gz`` (``nodeid,isFraud``);
- analysts' case dispositions (:data:`DISPOSITION_COLUMNS`; what the workbench exports): a CSV with the header
  ``case_id,account_id,period,disposition,reason,decided_by,decided_at``, or JSON lines, one object per line with
  the same keys (told by a first non-blank character ``{``). See :func:`read_dispositions`.

Labels are for accounts, not transactions: a laundering account is positive on every day it is scored. Dispositions
are turned into account labels too (not period-aware: an account with a confirmed case is positive on every row,
also in the months no case was raised; see :func:`read_dispositions`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sectorflow import InvalidInputError, csv_file_records, open_text, parse_json_line

_TRUE = {"1", "true", "t", "yes", "y", "1.0"}
_FALSE = {"0", "false", "f", "no", "n", "0.0"}

_LAYOUTS = (
    ("account_id", "label", "typology"),
    ("ACCOUNT_ID", "IS_SAR", "sar_typologies"),
    ("nodeid", "isFraud", None),
)


DISPOSITION_COLUMNS = ("case_id", "account_id", "period", "disposition", "reason", "decided_by", "decided_at")
"""Columns (CSV header, or JSON keys) of a case-dispositions file, as the analyst workbench writes them."""

DISPOSITIONS: dict[str, int | None] = {"true_positive": 1, "str_approved": 1, "false_positive": 0,
                                       "escalated": None}
"""Disposition -> label: a confirmed case (``true_positive``) or an approved suspicious-transaction report
(``str_approved``) is laundering (1), a ``false_positive`` is legitimate (0), an ``escalated`` case is undecided
(no label: skipped and counted in a warning)."""

_PERIOD = re.compile(r"\d{4}-(\d{2}|W\d{2}|\d{2}-\d{2})")  # the case book's month, ISO week or day labels


class LabelsError(InvalidInputError):
    """A labels file that cannot be read: unknown header, a bad label value, a repeated account (says which row)."""


@dataclass
class Labels:
    """Account labels: ``label[account]`` in {0, 1}; ``typologies[account]`` (possibly empty) per positive account."""

    label: dict[str, int] = field(default_factory=dict)
    typologies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""
    skipped: int = 0
    """Rows read but giving no label (``escalated`` dispositions)."""

    @property
    def positives(self) -> int:
        return sum(self.label.values())

    def __len__(self) -> int:
        return len(self.label)


def read_labels(path: str | Path) -> Labels:
    """Read an account labels file (see the module docstring for the formats); a case-dispositions file (its CSV
    header, or JSON lines) goes to :func:`read_dispositions`.

    Raises:
        LabelsError: a missing or empty file, a header that is none of the formats, a label that is not 0/1/true/
            false, an empty or repeated account id (the row is named), or no labelled account at all.
    """
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"Labels file {path} does not exist: give a CSV account_id,label[,typology].",
                          details={"source": str(path)})
    if _first_char(path) == "{":
        return read_dispositions(path)
    out = Labels(source=str(path))
    with open_text(path) as handle:
        records = csv_file_records(path, handle)
        header: tuple[str, ...] | None = None
        cols: tuple[int, int, int | None] | None = None
        for line, cells in records:
            if isinstance(cells, InvalidInputError):
                raise LabelsError(f"{path}: line {line}: {cells.details[0]['reason']}.", details={"line": line})
            if header is None:
                header = tuple(c.strip().removeprefix("\ufeff") for c in cells)
                if set(DISPOSITION_COLUMNS) <= set(header):
                    break
                for acc, lab, typ in _LAYOUTS:
                    if acc in header and lab in header:
                        cols = (header.index(acc), header.index(lab),
                                header.index(typ) if typ is not None and typ in header else None)
                        break
                if cols is None:
                    raise LabelsError(f"{path}: header {','.join(header)!r} is not a labels file: give columns "
                                      "account_id,label[,typology] (or AMLGentex accounts.csv ACCOUNT_ID,IS_SAR, "
                                      "AMLSim nodes.csv nodeId,isFraud, or case dispositions "
                                      f"{','.join(DISPOSITION_COLUMNS)}).", details={"line": line})
                continue
            if not any(c.strip() for c in cells):
                continue
            assert cols is not None
            width = max(i for i in cols if i is not None) + 1
            cells = [c.strip() for c in cells] + [""] * max(0, width - len(cells))
            account, raw = cells[cols[0]], cells[cols[1]].lower()
            if not account:
                raise LabelsError(f"{path}: line {line}: empty account id.", details={"line": line})
            if raw in _TRUE:
                value = 1
            elif raw in _FALSE:
                value = 0
            else:
                raise LabelsError(f"{path}: line {line}: label {cells[cols[1]]!r} of account {account} is not 0 or 1 "
                                  "(true/false also accepted).", details={"line": line, "account": account})
            if account in out.label:
                raise LabelsError(f"{path}: line {line}: account {account} is labelled twice.",
                                  details={"line": line, "account": account})
            out.label[account] = value
            typ = cells[cols[2]] if cols[2] is not None else ""
            out.typologies[account] = tuple(t.strip() for t in typ.split(";") if t.strip()) if value else ()
    if header is not None and set(DISPOSITION_COLUMNS) <= set(header):
        return read_dispositions(path)
    if header is None:
        raise LabelsError(f"Labels file {path} is empty: give a header account_id,label[,typology] and one row per "
                          "account.", details={"source": str(path)})
    if not out.label:
        raise LabelsError(f"Labels file {path} labels no account.", details={"source": str(path)})
    return out


def _first_char(path: Path) -> str:
    """The first non-blank character of a text file (``""`` when there is none); a byte-order mark is skipped."""
    with open_text(path) as handle:
        for text in handle:
            text = text.lstrip("\ufeff \t\r\n")
            if text:
                return text[0]
    return ""


def _disposition_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(line, {column: value})`` of a dispositions file, CSV or JSON lines.

    Raises:
        LabelsError: a CSV line that cannot be parsed or has another number of cells than the header, a JSON line that
            is not an object.
    """
    fix = ("each line must hold one JSON object with the keys " + ", ".join(DISPOSITION_COLUMNS) +
           "; fix the line or delete it")
    with open_text(path) as handle:
        if _first_char(path) == "{":
            for line, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    yield line, parse_json_line(text, path, line, fix=fix)
                except InvalidInputError as exc:
                    raise LabelsError(f"{path}: {exc.details[0]['reason']}.", details={"line": line}) from None
            return
        header: list[str] | None = None
        for line, cells in csv_file_records(path, handle):
            if isinstance(cells, InvalidInputError):
                raise LabelsError(f"{path}: line {line}: {cells.details[0]['reason']}.", details={"line": line})
            if header is None:
                header = [c.strip().removeprefix("\ufeff") for c in cells]
                continue
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise LabelsError(f"{path}: line {line}: {len(cells)} cells, the header has {len(header)} "
                                  f"({','.join(header)}); quote a reason that holds a comma.", details={"line": line})
            yield line, dict(zip(header, cells))


def read_dispositions(path: str | Path) -> Labels:
    """Account labels from analysts' case dispositions (the workbench's export).

    Format: CSV with the header ``case_id,account_id,period,disposition,reason,decided_by,decided_at`` (other columns
    are ignored), or JSON lines, one object per line with those keys. ``period`` is a case-book period label
    (``2023-01``, ``2023-W05`` or ``2023-01-31``), ``decided_at`` an ISO 8601 time, ``disposition`` one of
    :data:`DISPOSITIONS`; ``reason`` and ``decided_by`` may be empty (they are the workbench's record, not read).

    Labels: ``true_positive`` and ``str_approved`` -> 1, ``false_positive`` -> 0, ``escalated`` -> no label (the
    row is skipped; their count is in ``Labels.skipped`` and a warning of logger ``sectorflow_aml``). A case decided
    more than once (the same ``case_id`` on several rows: escalated, then decided) counts by its latest
    ``decided_at`` (on a tie, the later line). **Account-level, not period-aware**: an account with any positive case
    is 1; else, with any ``false_positive`` case, 0. Its label then holds for all its rows in training and evaluation,
    also in months without a case (a period-aware label would need the case book's time zone and period kind in the
    trainer; not done).

    Raises:
        LabelsError: a missing or empty file, a missing column, an empty ``case_id`` or ``account_id``, a period or
            time that is not of the forms above, an unknown disposition (each names the line), or no labelled
            account at all (every case escalated).
    """
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"Dispositions file {path} does not exist.", details={"source": str(path)})
    latest: dict[str, tuple[datetime, int, str, int | None]] = {}  # case -> (decided_at, line, account, label)
    seen = False
    for line, row in _disposition_rows(path):
        seen = True
        missing = [c for c in DISPOSITION_COLUMNS if c not in row]
        if missing:
            raise LabelsError(f"{path}: line {line}: no {', '.join(missing)}: a dispositions file holds "
                              f"{','.join(DISPOSITION_COLUMNS)}.", details={"line": line})
        cell = {c: "" if row[c] is None else str(row[c]).strip() for c in DISPOSITION_COLUMNS}
        for c in ("case_id", "account_id"):
            if not cell[c]:
                raise LabelsError(f"{path}: line {line}: empty {c}.", details={"line": line})
        if not _PERIOD.fullmatch(cell["period"]):
            raise LabelsError(f"{path}: line {line}: period {cell['period']!r} is not a case period (2023-01, "
                              "2023-W05 or 2023-01-31).", details={"line": line})
        kind = cell["disposition"].lower()
        if kind not in DISPOSITIONS:
            raise LabelsError(f"{path}: line {line}: disposition {cell['disposition']!r} is not one of "
                              f"{', '.join(DISPOSITIONS)}.", details={"line": line})
        try:
            when = datetime.fromisoformat(cell["decided_at"].replace("Z", "+00:00"))
        except ValueError:
            raise LabelsError(f"{path}: line {line}: decided_at {cell['decided_at']!r} is not an ISO 8601 time "
                              "(2023-02-03T10:15:00+00:00).", details={"line": line}) from None
        if when.tzinfo is None:
            raise LabelsError(f"{path}: line {line}: decided_at {cell['decided_at']!r} has no UTC offset.",
                              details={"line": line})
        before = latest.get(cell["case_id"])
        if before is not None and before[2] != cell["account_id"]:
            raise LabelsError(f"{path}: line {line}: case {cell['case_id']} is of account {before[2]} on line "
                              f"{before[1]}, not {cell['account_id']}.", details={"line": line})
        if before is None or (when, line) >= before[:2]:
            latest[cell["case_id"]] = (when, line, cell["account_id"], DISPOSITIONS[kind])
    if not seen:
        raise LabelsError(f"Dispositions file {path} holds no case.", details={"source": str(path)})
    out = Labels(source=str(path))
    for _, _, account, value in latest.values():
        if value is None:
            out.skipped += 1
        elif value > out.label.get(account, -1):
            out.label[account] = value
            out.typologies[account] = ()
    if out.skipped:
        logging.getLogger("sectorflow_aml").warning(
            "%s: %d escalated case(s) skipped (not decided: no label).", path, out.skipped)
    if not out.label:
        raise LabelsError(f"Dispositions file {path} labels no account: every case is escalated (undecided).",
                          details={"source": str(path)})
    return out


MIN_LABEL_OVERLAP = 0.5
"""Below this share of labelled accounts found in the data, :func:`check_overlap` warns (labels of another set?)."""


def check_overlap(labels: Labels, accounts: Collection[str], data: str) -> int:
    """How many of ``labels``' accounts are among ``accounts`` (those that transact in ``data``, named in messages).

    Labels of another dataset (AMLSim's 20,000 nodes against an AMLGentex bank of 4,000) used to give a figure or a
    bundle without a word. Warns (logger ``sectorflow_aml``) when fewer than :data:`MIN_LABEL_OVERLAP` of the
    labelled accounts appear.

    Raises:
        LabelsError: no labelled account appears at all.
    """
    found = sum(1 for account in labels.label if account in accounts)
    if not found:
        raise LabelsError(f"None of the {len(labels):,} accounts of {labels.source or 'the labels'} appears in "
                          f"{data}: are these the labels of another dataset?",
                          details={"labelled": len(labels), "found": 0})
    if found < MIN_LABEL_OVERLAP * len(labels):
        logging.getLogger("sectorflow_aml").warning(
            "only %d of the %d labelled accounts of %s (%.0f %%) appear in %s: are these the labels of another "
            "dataset?", found, len(labels),
            labels.source or "the labels", 100.0 * found / len(labels), data)
    return found

