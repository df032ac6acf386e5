"""Reading CUAD v1 in place (``../shared/data/cuad``; CC BY 4.0, The Atticus Project; Hendrycks et al. 2021,
"CUAD: An Expert-Annotated NLP Dataset for Legal Contract Review") and the project's contract-level split.

Used by the classifier's training script and ``benchmarks/legal_eval.py``; never at serving time.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

SPLIT_SEED = "cuad-split-2026"
"""Salt of the contract-level split: a contract's split is a function of its file name and this salt only."""

SPLIT_SHARES = (("train", 0.6), ("validation", 0.2), ("test", 0.2))


@dataclass
class CuadContract:
    """One contract of master_clauses.csv whose text is present: ``clauses`` maps each of the 41 categories to its
    annotated clause texts, ``answers`` to its normalised ``-Answer`` column (``""`` when none)."""

    filename: str
    path: Path
    clauses: dict[str, list[str]]
    answers: dict[str, str]
    split: str
    _text: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.path.read_text(encoding="utf-8", errors="replace")
        return self._text


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().rsplit(".", 1)[0])


def split_of(filename: str, seed: str = SPLIT_SEED) -> str:
    """``train``, ``validation`` or ``test`` for a contract, from a SHA-256 of its normalised name and the seed."""
    digest = hashlib.sha256(f"{seed}:{_key(filename)}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64
    total = 0.0
    for name, share in SPLIT_SHARES:
        total += share
        if point < total:
            return name
    return SPLIT_SHARES[-1][0]


def categories(folder: Path) -> list[str]:
    """The 41 CUAD categories, in master_clauses.csv's column order."""
    with open(folder / "master_clauses.csv", encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    return [c for c in header[1:] if not re.search(r"-\s*Answer$", c)]


MORE = "more"
"""The split of the contracts of ``contracts_more/`` (the other 207 CUAD texts, added later): a development pool,
never test. The train/validation/test split of ``contracts/`` is unchanged by them."""


def load(folder: Path, seed: str = SPLIT_SEED, more: bool = False) -> list[CuadContract]:
    """Every master_clauses.csv row whose contract text is in ``folder/contracts`` (302 of the 303 files here;
    file names are matched after lower-casing and dropping everything but letters and digits); with ``more``, also
    those of ``folder/contracts_more`` (split :data:`MORE`)."""
    csv.field_size_limit(1 << 30)
    files = {_key(p.name): p for p in (folder / "contracts").glob("*.txt")}
    extra = {_key(p.name): p for p in (folder / "contracts_more").glob("*.txt")} if more else {}
    cats = categories(folder)
    out = []
    with open(folder / "master_clauses.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            path = files.get(_key(row["Filename"]))
            split = split_of(row["Filename"], seed) if path is not None else MORE
            path = path or extra.get(_key(row["Filename"]))
            if path is None:
                continue
            clauses = {c: [str(x) for x in ast.literal_eval(row[c] or "[]")] for c in cats}
            answers = {c: next((row[k] for k in row if k and re.fullmatch(re.escape(c) + r"-\s*Answer", k)), "")
                       .strip() for c in cats}
            out.append(CuadContract(row["Filename"], path, clauses, answers, split))
    return out
