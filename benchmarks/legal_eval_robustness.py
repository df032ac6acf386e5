"""How the English extraction rules stand up to re-written contract text (a development check, no figure of record).

Usage (from the repository root)::

    .venv/bin/python benchmarks/legal_eval_robustness.py [--split train|validation|more] [--show N]

The rules were written on 238 CUAD train/validation contracts and generalise worse to unseen ones than those
figures say (docs/legal-extraction.md). This script asks a narrower, general question on train or validation
contracts, or on the development pool ``more`` (contracts_more/), only (the test split is refused): when a field
(parties, agreement date, governing law) is right on a contract, does it stay right after a rewrite that changes
how the text is written but not what it says? Each rewrite touches the whole text:

- ``wrap``: the text re-flowed to lines of about 60 characters (PDF-to-text line breaks in other places);
- ``unwrap``: single line breaks inside paragraphs joined to spaces;
- ``curly`` / ``straight``: straight quotes made typographic (“Company”) / typographic quotes made straight;
- ``upper``: the preamble in capitals (many contracts write their parties' names in capitals);
- ``spaces``: every space doubled (OCR output and justified text);
- ``among``: "between" written "among" and "by and between" written "by and among";
- ``noterms``: no defined terms (every parenthesis with a quoted term dropped: ``Acme Inc. ("Acme")`` -> ``Acme Inc.``);
- ``unquoted``: defined terms without quotes (``(the "Company")`` -> ``(the Company)``);
- ``british`` / ``ordinal``: "March 1, 2005" written "1 March 2005" / "the 1th day of March, 2005" (the ordinal suffix
  is always "th": the date parser reads it the same).

Prints, per rewrite and field, how many contracts that were right stay right, and with ``--show`` the ones that
broke (the field's value before and after). Data: ../shared/data/cuad (CC BY 4.0), read in place.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from legal_eval import DATA, date_match, gold_parties, parties_match  # noqa: E402

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"

def _wrap(head: str) -> str:
    return "\n\n".join("\n".join(textwrap.wrap(p, 60)) for p in re.split(r"\n\s*\n", head))


def _curly(head: str) -> str:
    out, opened = [], False
    for ch in head:
        if ch == '"':
            out.append("”" if opened else "“")
            opened = not opened
        else:
            out.append("’" if ch == "'" else ch)
    return "".join(out)


REWRITES = {
    "wrap": _wrap,
    "unwrap": lambda h: re.sub(r"(?<=\S)[ \t]*\n(?![ \t]*\n)[ \t]*(?=\S)", " ", h),
    "curly": _curly,
    "straight": lambda h: h.translate(str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})),
    "upper": str.upper,
    "spaces": lambda h: h.replace(" ", "  "),
    "among": lambda h: re.sub(r"\bbetween\b", "among", re.sub(r"\bBETWEEN\b", "AMONG", h)),
    "noterms": lambda h: re.sub(r"\s*\((?:[^()]{0,80}?)[\"“][^()]{0,80}\)", "", h),
    "unquoted": lambda h: re.sub(r"\(([^()\"“”]{0,40}?)[\"“]([^()\"“”]{1,40})[\"”]\)", r"(\1\2)", h),
    "british": lambda h: re.sub(rf"\b({_MONTHS})\s+(\d{{1,2}}),\s+(\d{{4}})", r"\2 \1 \3", h),
    "ordinal": lambda h: re.sub(rf"\b({_MONTHS})\s+(\d{{1,2}}),\s+(\d{{4}})", r"the \2th day of \1, \3", h),
}


def _fields(tf, text: str) -> dict:
    f = tf({"text": text, "language": "en"}).fields
    return {"date": f["Agreement Date"][0].value if f["Agreement Date"] else None,
            "parties": [e.value["name"] for e in f["Parties"]],
            "law": f["Governing Law"][0].value if f["Governing Law"] else None}


def _right(field: str, got, contract) -> bool:
    if field == "date":
        return bool(contract.answers["Agreement Date"]) and date_match(got, contract.answers["Agreement Date"])
    if field == "law":
        gold = contract.answers["Governing Law"]
        return bool(gold and got) and re.sub(r"\s*,\s*", ", ", got.lower()) == re.sub(r"\s*,\s*", ", ", gold.lower())
    gold = gold_parties(contract.answers["Parties"])
    tp, npred, ngold = parties_match(got, gold)
    return bool(gold) and tp == npred == ngold


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="train", choices=["train", "validation", "more"],
                        help="more: the 207 contracts of contracts_more/ (development pool, never test)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", nargs="*", choices=sorted(REWRITES), help="run only these rewrites")
    parser.add_argument("--show", type=int, default=0, help="print up to N broken contracts per rewrite and field")
    args = parser.parse_args(argv)
    if not (args.data / "master_clauses.csv").is_file():
        print(f"CUAD not found at {args.data}", file=sys.stderr)
        return 2
    from sectorflow import Taskflow
    from sectorflow_legal_extraction import cuad

    contracts = [c for c in cuad.load(args.data, more=args.split == "more") if c.split == args.split]
    tf = Taskflow("legal_extraction", schema=["Parties", "Agreement Date", "Governing Law"])
    base = {c.filename: _fields(tf, c.text) for c in contracts}
    print(f"CUAD {args.split} split: {len(contracts)} contracts; per rewrite, right before -> still right after")
    for name in args.only or REWRITES:
        rewrite = REWRITES[name]
        kept = {"date": [0, 0], "parties": [0, 0], "law": [0, 0]}
        broken: dict[str, list[str]] = {"date": [], "parties": [], "law": []}
        for c in contracts:
            after = _fields(tf, rewrite(c.text))
            for field in kept:
                if not _right(field, base[c.filename][field], c):
                    continue
                ok = _right(field, after[field], c)
                kept[field][0] += ok
                kept[field][1] += 1
                if not ok:
                    broken[field].append(f"{c.filename[:50]}: {base[c.filename][field]!r} -> {after[field]!r}")
        print(f"  {name:9s} date {kept['date'][0]:4d} / {kept['date'][1]:4d}   "
              f"parties {kept['parties'][0]:4d} / {kept['parties'][1]:4d}   law {kept['law'][0]:4d} / {kept['law'][1]:4d}")
        for field, lines in broken.items():
            for line in lines[:args.show]:
                print(f"    broke {field}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
