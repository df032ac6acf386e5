"""How laundering accounts of the AMLSim sample runs meet in the transaction graph (docs/aml.md, "AMLSim"; the
module docstring of ``sectorflow_aml.case_graph``): distinct sender-receiver pairs joining two laundering accounts
against random pairing, laundering accounts without a planted (small, under 100) transfer, and normal accounts with a
laundering counterparty.

    .venv/bin/python benchmarks/aml_graph_facts.py

Counts, so machine and load do not matter. Data: ``../shared/data/amlsim_sample`` (IBM AMLSim, Apache-2.0).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "amlsim_sample"
RUNS = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")


def main() -> int:
    for run in RUNS:
        with gzip.open(DATA / run / "nodes.csv.gz", "rt", newline="") as f:
            label = {r["nodeid"]: r["isFraud"].strip() == "1" for r in csv.DictReader(f)}
        pairs: set[tuple[str, str]] = set()
        small: set[str] = set()
        with gzip.open(DATA / run / "transactions.csv.gz", "rt", newline="") as f:
            for r in csv.DictReader(f):
                s, d = r["sourceNodeId"], r["targetNodeId"]
                if s != d:
                    pairs.add((s, d))
                if float(r["value"]) < 100:
                    small.update((s, d))
        pos = {a for a, v in label.items() if v}
        both = sum(1 for s, d in pairs if s in pos and d in pos)
        expected = len(pairs) * (len(pos) / len(label)) ** 2
        mixed = {x for s, d in pairs if (s in pos) != (d in pos) for x in (s, d)}
        normal_with_pos = sum(1 for a in mixed if not label.get(a, False))
        print(f"{run}: {len(label):,} accounts, {len(pos):,} laundering; {len(pairs):,} distinct pairs, {both:,} join two "
              f"laundering accounts (random pairing: {expected:.0f}, ratio {both / expected:.1f}); laundering accounts "
              f"without a transfer under 100: {len(pos - small):,}; normal accounts with a laundering counterparty: "
              f"{normal_with_pos:,} of {len(label) - len(pos):,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
