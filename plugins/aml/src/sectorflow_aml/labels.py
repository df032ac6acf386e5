"""Account labels for training and evaluating the account risk model.

Formats read by :func:`read_labels` (``.gz`` allowed; the format is told by the header):

- an account-level CSV ``account_id,label[,typology]``: ``label`` is 1 (laundering / a case confirmed suspicious)
  or 0 (legitimate); ``typology`` optional (several joined with ``;``), used for recall per typology;
- AMLGentex ``accounts.csv.gz`` (``ACCOUNT_ID,...,IS_SAR,...[,sar_typologies]``; ``IS_SAR`` is ``True``/``False``);
- AMLSim ``nodes.csv.gz`` (``nodeid,isFraud``).

Labels are for accounts, not transactions: a laundering account is positive on every day it is scored.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from sectorflow import InvalidInputError, csv_file_records, open_text

_TRUE = {"1", "true", "t", "yes", "y", "1.0"}
_FALSE = {"0", "false", "f", "no", "n", "0.0"}

_LAYOUTS = (
    ("account_id", "label", "typology"),
    ("ACCOUNT_ID", "IS_SAR", "sar_typologies"),
    ("nodeid", "isFraud", None),
)


class LabelsError(InvalidInputError):
    """A labels file that cannot be read: unknown header, a bad label value, a repeated account (says which row)."""


@dataclass
class Labels:
    """Account labels: ``label[account]`` in {0, 1}; ``typologies[account]`` (possibly empty) per positive account."""

    label: dict[str, int] = field(default_factory=dict)
    typologies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""

    @property
    def positives(self) -> int:
        return sum(self.label.values())

    def __len__(self) -> int:
        return len(self.label)


def read_labels(path: str | Path) -> Labels:
    """Read an account labels file (see the module docstring for the formats).

    Raises:
        LabelsError: a missing or empty file, a header that is none of the formats, a label that is not 0/1/true/
            false, an empty or repeated account id (the row is named), or no labelled account at all.
    """
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"Labels file {path} does not exist: give a CSV account_id,label[,typology].",
                          details={"source": str(path)})
    out = Labels(source=str(path))
    with open_text(path) as handle:
        records = csv_file_records(path, handle)
        header: tuple[str, ...] | None = None
        cols: tuple[int, int, int | None] | None = None
        for line, cells in records:
            if isinstance(cells, InvalidInputError):
                raise LabelsError(f"{path}: line {line}: {cells.details[0]['reason']}.", details={"line": line})
            if header is None:
                header = tuple(c.strip() for c in cells)
                for acc, lab, typ in _LAYOUTS:
                    if acc in header and lab in header:
                        cols = (header.index(acc), header.index(lab),
                                header.index(typ) if typ is not None and typ in header else None)
                        break
                if cols is None:
                    raise LabelsError(f"{path}: header {','.join(header)!r} is not a labels file: give columns "
                                      "account_id,label[,typology] (or AMLGentex accounts.csv ACCOUNT_ID,IS_SAR, or "
                                      "AMLSim nodes.csv nodeId,isFraud).", details={"line": line})
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
    if header is None:
        raise LabelsError(f"Labels file {path} is empty: give a header account_id,label[,typology] and one row per "
                          "account.", details={"source": str(path)})
    if not out.label:
        raise LabelsError(f"Labels file {path} labels no account.", details={"source": str(path)})
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
            "dataset? Accounts that do not appear count as scored 0.", found, len(labels),
            labels.source or "the labels", 100.0 * found / len(labels), data)
    return found

