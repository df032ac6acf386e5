"""Account-level precision and recall of the typology rules alone (no model) on the three AMLSim sample runs.

An account counts as flagged when it is among the ``accounts`` of any rule alert; AMLSim labels accounts
(``nodes.csv``: ``isFraud``). Two configurations:

- ``default``: the shipped defaults (30-day window; thresholds meant for bank data in CNY/USD).
- ``amlsim``: settings chosen from how AMLSim plants its patterns, not tuned on labels: a 150-day window (AMLSim's
  planted fan-ins and cycles spread their hops over about 37 days each), fan-in of at least two senders that each
  split their payment (``min_txns_per_sender=2``; no peer test, no own-history or through-flow test: two senders
  are what the simulator plants, and its receivers keep what they get), loops
  whose every hop was split (``min_txns_per_hop=2``) and keeps its amount, in any time order (AMLSim's planted
  cycles are not time-ordered: ``ordered=False``, and its amounts are not in bank units: ``min_amount=0``), and
  the ``split`` structuring variant (three or more transfers to one payee on one day). It leans on a simulator
  trait: repeated same-day transfers between one pair occur only inside planted patterns in these runs.

Usage::

    .venv/bin/python benchmarks/aml_rules_eval.py [--runs 20K_fanin200 20K_cycle200 20K_fanin200cycle200]
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import itertools
import os
import platform
import sys
import time
from pathlib import Path

from sectorflow_aml.loaders import READERS
from sectorflow_aml.schema import Transaction
from sectorflow_aml.typologies import build_rules
from sectorflow_aml.window import TransactionWindow

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"
RUNS = ("20K_fanin200", "20K_cycle200", "20K_fanin200cycle200")

CONFIGS: dict[str, tuple[float, dict]] = {
    "default": (30.0, {}),
    "amlsim": (150.0, {
        "fan_in": {"days": None, "min_senders": 2, "min_txns_per_sender": 2, "peer_alpha": 1.0,
                   "burst_ratio": 0.0, "min_through_share": 0.0},
        "cycle": {"min_txns_per_hop": 2, "max_length": 8, "ordered": False, "min_amount": 0.0},
        "structuring": {"split_min_count": 3},
        "fan_out": False, "gather_scatter": False, "scatter_gather": False,
    }),
}


def labels(run: Path) -> set[str]:
    """Ids of the accounts AMLSim marks ``isFraud=1``."""
    with gzip.open(run / "nodes.csv.gz", "rt", newline="") as handle:
        return {row["nodeid"] for row in csv.DictReader(handle) if row["isFraud"].strip() == "1"}


def evaluate(txns: list[Transaction], fraud: set[str], lookback: float, config: dict) -> dict:
    """Replay ``txns`` through a window and the rules; return per-typology and overall account-level figures."""
    window = TransactionWindow(lookback)
    rules = build_rules(config)
    flagged: dict[str, set[str]] = collections.defaultdict(set)
    alerts = collections.Counter()
    start = time.perf_counter()
    for txn in txns:
        edge = window.add(txn)
        for rule in rules:
            for alert in rule.check(window, edge):
                key = alert.typology + (f".{alert.variant}" if alert.variant else "")
                alerts[key] += 1
                flagged[key].update(alert.accounts)
    seconds = time.perf_counter() - start
    every = set().union(*flagged.values()) if flagged else set()

    def figures(accounts: set[str]) -> dict:
        tp = len(accounts & fraud)
        p = tp / len(accounts) if accounts else 0.0
        r = tp / len(fraud)
        return {"flagged": len(accounts), "tp": tp, "precision": p, "recall": r,
                "f1": 2 * p * r / (p + r) if p + r else 0.0}

    return {"all": figures(every), "by": {k: (alerts[k], figures(v)) for k, v in sorted(flagged.items())},
            "rate": len(txns) / seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--runs", nargs="+", default=list(RUNS))
    parser.add_argument("--n", type=int, default=None, help="only the first N transactions of each run")
    args = parser.parse_args(argv)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"one thread, rules only (no model)")
    for name in args.runs:
        run = args.data / name
        rows = READERS["amlsim"](run / "transactions.csv.gz")
        txns = [Transaction.model_validate(r) for _, r in itertools.islice(rows, args.n)]
        fraud = labels(run)
        print(f"\n{name}: {len(txns)} transactions, {len(fraud)} laundering accounts of 20,000")
        for cname, (lookback, config) in CONFIGS.items():
            res = evaluate(txns, fraud, lookback, config)
            a = res["all"]
            print(f"  {cname:8s} lookback {lookback:g} d: flagged {a['flagged']:5d}  precision {a['precision']:.3f}  "
                  f"recall {a['recall']:.3f}  F1 {a['f1']:.3f}   ({res['rate']:,.0f} tx/s)")
            for key, (n, f) in res["by"].items():
                print(f"      {key:28s} alerts {n:6d}  accounts {f['flagged']:5d}  precision {f['precision']:.3f}  "
                      f"recall {f['recall']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
