"""Governing law on the annotated clauses of CUAD contracts whose text is not shipped (development pool).

Usage (from the repository root)::

    .venv/bin/python benchmarks/legal_eval_clauses.py [--split train|validation] [--show N]

master_clauses.csv has 510 contracts; 302 have their text under ``contracts/`` and make up the project's
train/validation/test splits (``benchmarks/legal_eval.py``). The other 208 still have their annotated Governing Law
clauses and normalised answers. Those whose name falls in the train or validation split (``cuad.split_of``; 162 of
them, 159 with a governing-law answer) are a second development pool for the governing-law rules: the rule runs on
the annotated clause text (clauses joined by blank lines) and its value is compared with the answer exactly as
``legal_eval.py`` does. The test split is refused: those contracts are never used for development.
Data: ../shared/data/cuad (CC BY 4.0), read in place.
"""

from __future__ import annotations

import argparse
import ast
import csv
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cuad"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["train", "validation", "both"], default="both")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", type=int, default=0, help="print up to N misses")
    args = parser.parse_args(argv)
    if not (args.data / "master_clauses.csv").is_file():
        print(f"CUAD not found at {args.data}", file=sys.stderr)
        return 2
    from sectorflow_legal_extraction import cuad
    from sectorflow_legal_extraction.rules_en.law import governing_law
    from sectorflow_legal_extraction.text import segments

    splits = {"train", "validation"} if args.split == "both" else {args.split}
    csv.field_size_limit(1 << 30)
    shipped = {cuad._key(p.name) for p in (args.data / "contracts").glob("*.txt")}
    ok = total = 0
    misses = []
    with open(args.data / "master_clauses.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if cuad._key(row["Filename"]) in shipped or cuad.split_of(row["Filename"]) not in splits:
                continue
            gold = row["Governing Law-Answer"].strip()
            if not gold:
                continue
            text = "\n\n".join(str(c) for c in ast.literal_eval(row["Governing Law"] or "[]"))
            found = governing_law(text, segments(text, "en"))
            got = found[0].value if found else None
            good = bool(got) and re.sub(r"\s*,\s*", ", ", got.lower()) == re.sub(r"\s*,\s*", ", ", gold.lower())
            ok, total = ok + good, total + 1
            if not good:
                misses.append(f"{row['Filename'][:50]}: gold {gold!r} got {got!r}")
    print(f"CUAD annotated governing-law clauses, contracts without text, split {args.split}: "
          f"{ok} / {total} = {ok / total:.1%} exact")
    for line in misses[:args.show]:
        print(f"  miss: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
