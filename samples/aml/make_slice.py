"""Cut the small AMLSim slice in samples/aml/ from one run in ../shared/data/amlsim_sample (deterministic).

    .venv/bin/python samples/aml/make_slice.py [--run 20K_fanin200cycle200] [--normal 250] [--cycles 4] [--fanins 4]

Accounts: a few laundering groups of the run (cycles and fan-ins, found in the graph of transactions between
laundering accounts made on one of their ``fraudStep`` days) plus randomly chosen normal accounts (seed 0). Rows: every
transaction that a chosen account sends or receives, unchanged and in the original order. Writes
``transactions.csv.gz`` (AMLSim format), ``nodes.csv.gz`` (labels of every account in the slice) and
``patterns.csv`` (the planted groups). Source: IBM/AMLSim (Suzumura and Kanezashi, 2021), Apache-2.0.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
from pathlib import Path

import networkx as nx

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1].parent / "shared" / "data" / "amlsim_sample"


def _read(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", newline="") as handle:
        return list(csv.DictReader(handle))


def _write_gz(path: Path, header: list[str], rows: list[list[str]]) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as handle:
        handle.write(text.getvalue().encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--normal", type=int, default=250)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--fanins", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    txns = _read(SHARED / args.run / "transactions.csv.gz")
    nodes = {n["nodeid"]: n for n in _read(SHARED / args.run / "nodes.csv.gz")}
    step = {k: int(n["fraudStep"]) for k, n in nodes.items() if n["isFraud"] == "1"}

    laundering = nx.DiGraph()
    for t in txns:
        s, d, day = t["sourceNodeId"], t["targetNodeId"], int(t["time"])
        if s in step and d in step and day in (step[s], step[d]):
            laundering.add_edge(s, d)
    cycles, fanins = [], []
    for group in sorted(nx.weakly_connected_components(laundering), key=lambda g: sorted(g)):
        sub = laundering.subgraph(group)
        loops = [c for c in nx.simple_cycles(sub) if len(c) >= 3]
        hubs = [n for n in sub if sub.in_degree(n) >= 3]
        if loops and len(group) <= 8:
            cycles.append(sorted(group, key=int))
        elif hubs and not loops and len(group) <= 8:
            fanins.append(sorted(group, key=int))
    chosen = rng.sample(cycles, args.cycles) + rng.sample(fanins, args.fanins)
    planted = {a for g in chosen for a in g}
    normal = sorted((k for k, n in nodes.items() if n["isFraud"] == "0"), key=int)
    accounts = planted | set(rng.sample(normal, args.normal))

    rows = [[t["sourceNodeId"], t["targetNodeId"], t["value"], t["time"]] for t in txns
            if t["sourceNodeId"] in accounts or t["targetNodeId"] in accounts]
    seen = sorted({a for r in rows for a in r[:2]}, key=int)
    _write_gz(HERE / "transactions.csv.gz", ["sourceNodeId", "targetNodeId", "value", "time"], rows)
    _write_gz(HERE / "nodes.csv.gz", ["nodeid", "isFraud", "init_balance", "fraudStep"],
              [[nodes[a]["nodeid"], nodes[a]["isFraud"], nodes[a]["init_balance"], nodes[a]["fraudStep"]]
               for a in seen])
    with open(HERE / "patterns.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["pattern", "accounts"])
        for i, group in enumerate(chosen):
            writer.writerow(["cycle" if i < args.cycles else "fan_in", ";".join(group)])
    print(f"run {args.run}: {len(cycles)} cycle groups and {len(fanins)} fan-in groups found; "
          f"chose {args.cycles} + {args.fanins} ({len(planted)} accounts) and {args.normal} normal accounts; "
          f"{len(rows)} transactions touching {len(seen)} accounts.")


if __name__ == "__main__":
    main()
