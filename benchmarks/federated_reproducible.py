"""Is a federated simulation reproducible? The same federation (same seed, same data) run several times: each run's
per-round validation AP and final ``model_sha256``, and whether they are all equal.

Federation: the account MLP (``aml/account_mlp``) on the three banks of AMLGentex dev3b_s404 (``bank_a``, ``bank_b``,
``bank_c`` on one shared transaction file, as in docs/federated.md), cut to the first ``--transactions`` transactions
after the opening balances, ``--rounds`` rounds of FedAvg; ``--secagg`` adds SecAgg+ (no DP: a DP run's noise is
drawn fresh on purpose).

Usage::

    .venv/bin/python benchmarks/federated_reproducible.py [--runs 2] [--rounds 3] [--transactions 30000] [--secagg]

Prints one JSON line per run, then a summary line ``{"identical": true|false, ...}``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENTEX = REPO.parent / "shared" / "data" / "amlgentex_dev" / "dev3b_s404"
OPENING_BALANCES = 6000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transactions", type=int, default=30_000)
    parser.add_argument("--secagg", action="store_true")
    parser.add_argument("--seed", type=int, default=20211)
    args = parser.parse_args(argv)

    from sectorflow.federated import parse_config, simulate

    work = Path(tempfile.mkdtemp(prefix="fed-repro-"))
    head = work / "head.csv"
    with gzip.open(GENTEX / "transactions.csv.gz", "rt") as src, head.open("w") as dst:
        for i, line in enumerate(src):
            if i > OPENING_BALANCES + args.transactions:
                break
            if i == 0 or i > OPENING_BALANCES:
                dst.write(line)
    banks = [{"transactions": str(head), "format": "amlgentex", "labels": str(GENTEX / "accounts.csv.gz"),
              "bank": b, "cache_dir": str(work / "cache")} for b in ("bank_a", "bank_b", "bank_c")]
    cfg = parse_config({"task": "aml", "model": "account_mlp", "rounds": args.rounds, "seed": args.seed,
                        "strategy": {"min_fit_clients": 3, "min_evaluate_clients": 3, "min_available_clients": 3},
                        "secagg": {"enabled": args.secagg, "max_weight": 1e6}, "institutions": banks})
    runs = []
    for run in range(args.runs):
        start = time.perf_counter()
        report = simulate(cfg)
        row = {"run": run + 1, "seconds": round(time.perf_counter() - start, 1),
               "ap_per_round": [round(float(r.eval_metrics.get("average_precision", float("nan"))), 4)
                                for r in report.rounds],
               "round_sha256": [r.model_sha256[:12] for r in report.rounds], "model_sha256": report.model_sha256}
        runs.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"identical": len({r["model_sha256"] for r in runs}) == 1 and
                      len({tuple(r["ap_per_round"]) for r in runs}) == 1,
                      "runs": args.runs, "rounds": args.rounds, "transactions": args.transactions,
                      "secagg": args.secagg, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                      "load_average": [round(x, 1) for x in os.getloadavg()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
