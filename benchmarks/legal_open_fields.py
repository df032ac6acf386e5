"""Open-schema legal extraction on contract snippets the rules never saw (docs/legal-extraction.md, "Open schema").

Usage (from the repository root)::

    .venv/bin/python benchmarks/legal_open_fields.py [--data benchmarks/data/legal_open_fields.jsonl] [--show]
        [--encoder e5] [--json out.json]

Each line of the data file is ``{"id", "field", "text", "gold"}``: a Chinese or English snippet written for this
benchmark (not copied from any data set), a field name that :data:`schema.FIELDS` does not define (rent, deposit,
penalty rate, warranty period, payment account, ...), and the normalised value expected, or ``null`` when the snippet
does not hold the field. ``Taskflow("legal_extraction", schema=[field])`` runs on each snippet (the type is inferred
from the name: no type or alias is declared). Figures:

- field-level exact match over the snippets that hold the field: the first extraction's value equals the gold value
  (a gold dict: every key it gives has that value, e.g. ``{"amount": "5000.00", "currency": "CNY"}``; a gold string:
  equal after trimming);
- invented values: snippets without the field (gold ``null``) for which anything was extracted (the target is 0);
- seconds per snippet.

``--encoder e5`` adds the multilingual-e5-small sentence encoder of the customer_service plugin (the ``encoder``
option) to the n-gram similarity; it is imported here, in the benchmark, never by the legal plugin.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "legal_open_fields.jsonl"


def matches(value: Any, gold: Any) -> bool:
    """Whether an extracted value equals the gold one (see the module docstring)."""
    if isinstance(gold, dict):
        return isinstance(value, dict) and all(value.get(k) == v for k, v in gold.items())
    if isinstance(value, dict):
        return False
    return isinstance(value, str) and value.strip() == str(gold).strip()


def evaluate(rows: list[dict[str, Any]], encoder: Any = None) -> dict[str, Any]:
    """Run every row and score it: ``{"exact": [hits, total], "invented": [n, total], "misses": [...], ...}``."""
    from sectorflow import Taskflow

    exact = [0, 0]
    invented = [0, 0]
    misses = []
    start = time.perf_counter()
    flows: dict[str, Any] = {}
    for row in rows:
        if row["field"] not in flows:
            options = {"encoder": encoder} if encoder is not None else {}
            flows[row["field"]] = Taskflow("legal_extraction", schema=[row["field"]], **options)
        found = flows[row["field"]](row["text"]).fields[row["field"]]
        value = found[0].value if found else None
        if row["gold"] is None:
            invented[1] += 1
            if found:
                invented[0] += 1
                misses.append(f"{row['id']} {row['field']}: invented {value!r} ({found[0].source})")
        else:
            exact[1] += 1
            ok = bool(found) and matches(value, row["gold"])
            exact[0] += ok
            if not ok:
                misses.append(f"{row['id']} {row['field']}: gold {row['gold']!r} got {value!r}"
                              f"{' (' + found[0].source + ')' if found else ''}")
    seconds = time.perf_counter() - start
    return {"snippets": len(rows), "exact": exact, "invented": invented, "seconds": round(seconds, 2),
            "ms_per_snippet": round(1000 * seconds / max(1, len(rows)), 1), "misses": misses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--encoder", choices=["none", "e5"], default="none")
    parser.add_argument("--show", action="store_true", help="print every miss")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    encoder = None
    if args.encoder == "e5":
        from sectorflow_customer_service.e5 import E5Encoder  # the benchmark wires it in; the plugin never imports it

        encoder = E5Encoder(num_threads=2)
    report = evaluate(rows, encoder)
    hits, total = report["exact"]
    bad, absent = report["invented"]
    languages = {r["id"][:2] for r in rows}
    print(f"open-schema snippets: {len(rows)} ({', '.join(sorted(languages))}), encoder={args.encoder}, "
          f"{report['seconds']} s ({report['ms_per_snippet']} ms per snippet)")
    print(f"  field-level exact match        {hits:3d} / {total:3d} = {hits / max(1, total):.1%}")
    print(f"  invented values (field absent) {bad:3d} / {absent:3d}")
    for line in report["misses"] if args.show else []:
        print(f"  miss {line}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
