"""Legal extraction figures on held-out CUAD contracts (docs/benchmarks/legal.md).

Usage (from the repository root)::

    .venv/bin/python benchmarks/legal_eval.py [--split test] [--json out.json]

Runs ``Taskflow("legal_extraction")`` on every CUAD contract of the split (``test``: the 20 % of contracts never
used to write the rules or to train/tune the classifier; ``train``/``validation`` for development; ``more``: the 207
contracts of ``contracts_more/``, a development pool added later, never test; ``dev``: train + validation + more)
and compares
with master_clauses.csv's normalised ``-Answer`` columns:

- governing law: exact match (case-insensitive) of the normalised place, over contracts whose answer names a place
  (an answer without a letter, CUAD's redacted "[* * *]" or an empty "[]", names none and is left out; counted as
  ``governing_law_answer_names_no_place``; ``governing_law_exact_every_answer`` keeps the previous rule, every
  non-empty answer counted);
- governing law, same places (reported beside the exact match, not instead of it): CUAD writes one law several
  ways ("England and Wales, UK", "England, United Kingdom; Wales, United Kingdom" and "England; Wales" for the same
  "laws of England and Wales"; "British Columbia,Canada"), so the answer and the value are also compared as sets of
  places: split at ";", "," and " and ", lower case, the country names "United Kingdom"/"UK"/"Canada"/"USA" dropped
  when another place remains;
- governing law, same jurisdiction (reported beside the exact match, not instead of it): the places compared as
  jurisdictions, as a lawyer reads them: "State of" / "Commonwealth of" / "Province of" / "Republic of" / "Federal
  Republic of" before a place name no other jurisdiction ("Province of Ontario, Canada" = "Ontario, Canada",
  "Republic of Colombia" = "Colombia"), "PRC" / "People's Republic of China" = "China" (but "Republic of China" is
  Taiwan), and "England" = "England and Wales" (one legal jurisdiction: English law is the law of England and
  Wales); two different states stay different;
- agreement date: the ISO date equals the answer's m/d/yy; when the answer leaves parts blank (``[]/[]/2020``) only
  the given parts are compared (a year given in part, ``19[]`` or ``200[]``, by its given digits); an answer that
  lists two dates ("07/31/2000; 07/[]/2000") is matched by either; over contracts whose answer gives at least one
  digit (``[]/[]/[][]`` gives none and is left out; ``agreement_date_exact_every_answer`` keeps the previous
  denominator, every non-empty answer);
- effective date: scored like the agreement date (``date_match`` against the ``Effective Date`` answer, over
  contracts whose answer gives at least one digit: recall); ``effective_date_precision``: the right ones over every
  effective date given on a contract whose answer is a date or empty (one given where CUAD has none counts wrong);
  ``effective_date_absent_when_no_answer``: contracts without an answer where none is given;
- parties: micro F1 of party names; a predicted name matches a gold name when their normalised forms (lower case,
  letters and digits only, legal-form words such as Inc./Corp./LLC dropped) are equal, one contains the other, or
  they are 90 % similar (difflib ratio: the answers have typos such as "Mount Kowledge"); gold entries that only
  list defined terms ("Company and Consultant", "collectively the Parties") are not names and are left out;
- renewal term and notice period: the ISO duration equals the answer's (``successive 1 year`` -> P1Y, successive);
  the notice compared is the one the extractor says applies to renewal (CUAD's column is the notice to terminate
  renewal; a notice to terminate is reported too, with ``applies_to: termination``);
  reported over contracts with an answer, and the share of contracts without one where the extractor stays absent.

Prints a table and writes JSON with ``--json``. Data: ../shared/data/cuad (CC BY 4.0), read in place.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "cuad"

_FORMS = {"inc", "incorporated", "corp", "corporation", "co", "company", "llc", "ltd", "limited", "lp", "llp", "plc",
          "the", "sa", "nv", "bv", "ag", "gmbh", "pty", "lc", "pc"}


def name_key(name: str) -> str:
    words = re.findall(r"[a-z0-9]+", name.lower())
    return "".join(w for w in words if w not in _FORMS)


def gold_parties(answer: str) -> list[str]:
    out = []
    for part in answer.split(";"):
        part = re.sub(r"\((?:[^()]*[\"“”][^()]*)\)|[\"“][^\"“”]*[\"”]", "", part)  # defined terms ("Company")
        part = re.sub(r"\((?:formerly|collectively|each|together|hereinafter)[^()]*\)", "", part, flags=re.I)
        part = part.strip(" ,.")
        if re.search(r"collectively|referred\s+to|individually", part, re.I) or re.fullmatch(r"\w+ and \w+", part):
            continue  # a list of defined terms, not a party's name
        if name_key(part):
            out.append(part)
    return out


_COUNTRY_SUFFIXES = {"united kingdom", "uk", "u.k", "canada", "usa", "u.s.a", "united states"}


def law_places(answer: str) -> frozenset[str]:
    """The set of places a governing-law answer names (see the module docstring)."""
    parts = {p.strip(" .").lower() for p in re.split(r";|,|\s+and\s+", answer) if p.strip(" .")}
    return frozenset(parts - _COUNTRY_SUFFIXES or parts)


_JURISDICTION_PREFIX = re.compile(r"^(?:the\s+)?(?:state|commonwealth|province|federal\s+republic|republic|kingdom)"
                                  r"\s+of\s+(?:the\s+)?")
_SAME_JURISDICTION = {"prc": "china", "p.r.c": "china", "people's republic of china": "china",
                      "peoples republic of china": "china", "republic of china": "taiwan", "r.o.c": "taiwan",
                      "roc": "taiwan", "wales": "england"}


def law_jurisdictions(answer: str) -> frozenset[str]:
    """The jurisdictions a governing-law answer names (see the module docstring): :func:`law_places`, each place
    without a "State of"-style prefix, with the aliases of ``_SAME_JURISDICTION`` (England and Wales one)."""
    out = set()
    for place in law_places(answer.replace("’", "'")):
        alias = _SAME_JURISDICTION.get(place)
        out.add(alias or _JURISDICTION_PREFIX.sub("", place))
    return frozenset(out)


def names_a_place(answer: str) -> bool:
    """Whether a governing-law answer names a place at all (CUAD's "[* * *]" and "[]" name none)."""
    return bool(re.search(r"[A-Za-z]", answer))


def gives_a_date(answer: str) -> bool:
    """Whether an agreement-date answer gives at least one digit (``[]/[]/[][]`` gives none)."""
    return bool(re.search(r"\d", answer))


def parties_match(pred: list[str], gold: list[str]) -> tuple[int, int, int]:
    """(true positives, predicted, gold) with one-to-one matching."""
    free = [name_key(g) for g in gold]
    tp = 0
    for p in pred:
        key = name_key(p)
        for i, g in enumerate(free):
            if g and key and (key == g or (min(len(key), len(g)) >= 4 and (key in g or g in key))
                              or difflib.SequenceMatcher(None, key, g).ratio() >= 0.9):
                tp += 1
                free[i] = ""
                break
    return tp, len(pred), len(gold)


def date_match(iso: str | None, answer: str) -> bool:
    """Whether ``iso`` (``YYYY[-MM[-DD]]``) agrees with a CUAD answer ``m/d/yy`` in the parts the answer gives; an
    answer listing several dates ("07/31/2000; 07/[]/2000") agrees when one of them does."""
    if ";" in answer:
        return any(date_match(iso, part) for part in answer.split(";") if part.strip())
    match = re.fullmatch(r"(\d+|\[\])/(\d+|\[\])/(\d+|\d*\[\]|\[\])", answer.strip())
    if not match or iso is None:
        return False
    month, day, year = match.groups()
    parts = iso.split("-")
    if re.fullmatch(r"\d+\[\]", year) and not parts[0].startswith(year[:-2]):
        return False  # "19[]": only the century is given
    if year.isdigit():
        y = int(year)
        y = y + (1900 if y >= 50 else 2000) if y < 100 else y
        if int(parts[0]) != y:
            return False
    if month.isdigit() and (len(parts) < 2 or int(parts[1]) != int(month)):
        return False
    if day.isdigit() and (len(parts) < 3 or int(parts[2]) != int(day)):
        return False
    return True


def gold_duration(answer: str) -> tuple[str, bool] | None:
    from sectorflow_legal_extraction.normalize import parse_duration

    first = answer.split(";")[0].strip().lower().replace("successine", "successive").replace(")", "")
    if not first or first.startswith("perpetual"):
        return None
    parsed = parse_duration(first)
    return (parsed["iso"], first.startswith("successive")) if parsed else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="test", choices=["train", "validation", "test", "more", "dev"],
                        help="more: the 207 contracts of contracts_more/ (development pool); dev: train + validation "
                             "+ more")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show", type=int, default=0, help="print up to N misses per field")
    parser.add_argument("--limit", type=int, default=0, help="only the first N contracts of the split (a smoke run)")
    args = parser.parse_args(argv)
    if not (args.data / "master_clauses.csv").is_file():
        print(f"CUAD not found at {args.data}", file=sys.stderr)
        return 2
    from sectorflow import Taskflow
    from sectorflow_legal_extraction import cuad

    wanted = {"train", "validation", "more"} if args.split == "dev" else {args.split}
    contracts = [c for c in cuad.load(args.data, more=True) if c.split in wanted]
    contracts = contracts[:args.limit] if args.limit > 0 else contracts
    tf = Taskflow("legal_extraction", schema=["Parties", "Agreement Date", "Effective Date", "Governing Law",
                                              "Renewal Term", "Notice Period"])
    counts = {k: [0, 0] for k in ("governing_law", "governing_law_every_answer", "governing_law_places",
                                  "governing_law_jurisdictions", "agreement_date", "agreement_date_every_answer",
                                  "effective_date", "effective_date_precision", "effective_date_absent",
                                  "renewal",
                                  "renewal_absent", "notice",
                                  "notice_absent", "renewal_successive")}
    ptp = ppred = pgold = 0
    misses: dict[str, list[str]] = {k: [] for k in counts}
    misses["parties"] = []
    no_place = no_date = 0
    start = time.perf_counter()
    for contract in contracts:
        out = tf({"text": contract.text, "language": "en"})
        f = out.fields
        gov = contract.answers["Governing Law"]
        if gov:
            got = f["Governing Law"][0].value if f["Governing Law"] else None
            ok = bool(got) and re.sub(r"\s*,\s*", ", ", got.lower()) == re.sub(r"\s*,\s*", ", ", gov.lower())
            counts["governing_law_every_answer"][0] += ok
            counts["governing_law_every_answer"][1] += 1
            if names_a_place(gov):
                counts["governing_law"][0] += ok
                counts["governing_law"][1] += 1
                counts["governing_law_places"][0] += bool(got) and law_places(got) == law_places(gov)
                counts["governing_law_places"][1] += 1
                same = bool(got) and law_jurisdictions(got) == law_jurisdictions(gov)
                counts["governing_law_jurisdictions"][0] += same
                counts["governing_law_jurisdictions"][1] += 1
                if not ok:
                    misses["governing_law"].append(f"{contract.filename[:50]}: gold {gov!r} got {got!r}")
                if not same:
                    misses["governing_law_jurisdictions"].append(f"{contract.filename[:50]}: gold {gov!r} got {got!r}")
            else:
                no_place += 1
        date = contract.answers["Agreement Date"]
        if date:
            got = f["Agreement Date"][0].value if f["Agreement Date"] else None
            ok = date_match(got, date)
            counts["agreement_date_every_answer"][0] += ok
            counts["agreement_date_every_answer"][1] += 1
            if gives_a_date(date):
                counts["agreement_date"][0] += ok
                counts["agreement_date"][1] += 1
                if not ok:
                    misses["agreement_date"].append(f"{contract.filename[:50]}: gold {date!r} got {got!r}")
            else:
                no_date += 1
        effective = contract.answers["Effective Date"]
        got = f["Effective Date"][0].value if f["Effective Date"] else None
        got = got if isinstance(got, str) else None  # an event's anchor is no date
        if gives_a_date(effective):
            ok = date_match(got, effective)
            counts["effective_date"][0] += ok
            counts["effective_date"][1] += 1
            if not ok:
                misses["effective_date"].append(f"{contract.filename[:50]}: gold {effective!r} got {got!r}")
        if gives_a_date(effective) or not effective:
            if got is not None:
                counts["effective_date_precision"][0] += date_match(got, effective)
                counts["effective_date_precision"][1] += 1
        if not effective:
            counts["effective_date_absent"][0] += got is None
            counts["effective_date_absent"][1] += 1
            if got is not None:
                misses["effective_date_precision"].append(f"{contract.filename[:50]}: no answer, got {got!r}")
        gold = gold_parties(contract.answers["Parties"])
        if gold:
            pred = [e.value["name"] for e in f["Parties"]]
            tp, npred, ngold = parties_match(pred, gold)
            ptp, ppred, pgold = ptp + tp, ppred + npred, pgold + ngold
            if tp < max(npred, ngold):
                misses["parties"].append(f"{contract.filename[:50]}: gold {gold} got {pred}")
        for key, field, column in (("renewal", "Renewal Term", "Renewal Term"),
                                   ("notice", "Notice Period", "Notice Period To Terminate Renewal")):
            expected = gold_duration(contract.answers[column])
            found = [e for e in f[field] if key == "renewal" or e.value.get("applies_to") == "renewal"]
            got = found[0].value["iso"] if found else None
            if expected:
                ok = got == expected[0]
                counts[key][0] += ok
                counts[key][1] += 1
                if key == "renewal" and ok:
                    counts["renewal_successive"][0] += found[0].value["successive"] == expected[1]
                    counts["renewal_successive"][1] += 1
                if not ok:
                    misses[key].append(f"{contract.filename[:50]}: gold {contract.answers[column]!r} got {got!r}")
            elif not contract.answers[column]:
                counts[f"{key}_absent"][0] += got is None
                counts[f"{key}_absent"][1] += 1
    seconds = time.perf_counter() - start
    precision = ptp / ppred if ppred else 0.0
    recall = ptp / pgold if pgold else 0.0
    report = {
        "split": args.split, "contracts": len(contracts), "seconds": round(seconds, 1),
        "governing_law_exact": counts["governing_law"], "governing_law_same_places": counts["governing_law_places"],
        "governing_law_same_jurisdiction": counts["governing_law_jurisdictions"],
        "governing_law_exact_every_answer": counts["governing_law_every_answer"],
        "governing_law_answer_names_no_place": no_place,
        "agreement_date_exact": counts["agreement_date"],
        "agreement_date_exact_every_answer": counts["agreement_date_every_answer"],
        "agreement_date_answer_gives_no_date": no_date,
        "effective_date_exact": counts["effective_date"],
        "effective_date_precision": counts["effective_date_precision"],
        "effective_date_absent_when_no_answer": counts["effective_date_absent"],
        "parties": {"precision": round(precision, 4), "recall": round(recall, 4),
                    "f1": round(2 * precision * recall / (precision + recall), 4) if ptp else 0.0,
                    "tp": ptp, "predicted": ppred, "gold": pgold},
        "renewal_term_exact": counts["renewal"], "renewal_successive_agrees": counts["renewal_successive"],
        "renewal_absent_when_no_answer": counts["renewal_absent"],
        "notice_period_exact": counts["notice"], "notice_absent_when_no_answer": counts["notice_absent"],
    }
    print(f"CUAD {args.split} split: {len(contracts)} contracts, {seconds:.1f} s")
    for key, value in report.items():
        if isinstance(value, list):
            share = value[0] / value[1] if value[1] else 0.0
            print(f"  {key:34s} {value[0]:4d} / {value[1]:4d} = {share:.1%}")
    print(f"  answers left out (no place / no date): {no_place} / {no_date}")
    print(f"  parties P/R/F1                     {precision:.1%} / {recall:.1%} / {report['parties']['f1']:.1%}")
    for key, lines in misses.items():
        for line in lines[:args.show]:
            print(f"  miss {key}: {line}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
