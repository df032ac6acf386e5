"""AML across banks: federated training vs each bank alone vs pooled (centralised) training.

Banks are built from ``../shared/data/amlsim_sample`` by ``sectorflow_aml.trainable`` (disjoint account sets, each
bank dominated by a different AMLSim run, i.e. typology mix; a bank sees the transactions its accounts send). All
models are the AML risk-scorer MLP. Account-level F1 on the test accounts (a seeded 20 % of every run's accounts,
never trained or tuned on); each model's decision threshold is chosen on validation accounts: the pooled and the
federated model on all banks' validation accounts, a bank alone on its own.

- centralised: one model on all banks' training rows pooled (what the banks cannot do: share data);
- alone: each bank trains on its own rows only, evaluated on its own test accounts and on all banks' test accounts;
- federated: FedAvg (or --strategy) through Flower's simulation engine, one virtual SuperNode per bank, the
  standardisation kept local (FedBN).

Usage (about 10 minutes on 2 shared cores the first time: each bank's view is replayed and cached)::

    .venv/bin/python benchmarks/federated_aml.py [--banks 3] [--rounds 8] [--local-epochs 2] [--epochs 12]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"


def f1_of(models_views: list[tuple[np.ndarray, np.ndarray]], threshold: float) -> dict:
    from sectorflow_aml.training import prf

    scores = np.concatenate([s for s, _ in models_views])
    truth = np.concatenate([t for _, t in models_views])
    return prf(scores >= threshold, truth)


def views(trainable, weights, stats, split):
    """(scores, truth) of ``trainable``'s bank in ``split`` under a model's weights (and standardisation)."""
    own_stats = trainable.standardisation()
    trainable.set_weights(weights)
    if stats is not None:
        trainable.set_standardisation(*stats)
    out = trainable.account_view(split)
    trainable.set_standardisation(*own_stats)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--banks", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--local-epochs", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=12, help="epochs of the centralised and bank-alone models")
    parser.add_argument("--strategy", default="fedavg", choices=["fedavg", "fedprox", "fedadam"])
    parser.add_argument("--max-transactions", type=int, default=None, help="first N transactions per run (quick)")
    parser.add_argument("--seed", type=int, default=20211)
    parser.add_argument("--own-run-weight", type=float, default=4.0,
                        help="typology skew: a run's accounts go to 'its' bank with this weight, 1 to the others")
    args = parser.parse_args(argv)
    if not (args.data / "20K_cycle200").is_dir():
        print(f"AMLSim sample not found at {args.data}", file=sys.stderr)
        return 2

    from sectorflow.federated import parse_config, simulate
    from sectorflow_aml.trainable import AMLTrainable, best_threshold, build, merge_banks

    part = {"data": str(args.data), "num_banks": args.banks, "seed": args.seed, "own_run_weight": args.own_run_weight}
    if args.max_transactions:
        part["max_transactions"] = args.max_transactions
    start = time.perf_counter()
    banks = [build({**part, "bank": b}) for b in range(args.banks)]
    print(f"{args.banks} banks replayed/loaded in {time.perf_counter() - start:.1f} s")
    for b, t in enumerate(banks):
        print(f"  bank {b}: {len(t.data.src)} transactions, {int(t.data.own.sum())} accounts "
              f"({int((t.data.own & t.data.fraud).sum())} laundering), {len(t.train_rows)} training rows")

    def evaluate(weights, stats_for, threshold_banks):
        val = [views(t, weights, stats_for(i), "val") for i, t in enumerate(banks) if i in threshold_banks]
        thr = best_threshold(np.concatenate([s for s, _ in val]), np.concatenate([t for _, t in val]))
        tests = [views(t, weights, stats_for(i), "test") for i, t in enumerate(banks)]
        return thr, tests

    results: dict = {"banks": args.banks, "own_run_weight": args.own_run_weight, "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
                     "threads": 1}
    # Centralised: all rows pooled, pooled standardisation.
    t0 = time.perf_counter()
    pooled = AMLTrainable(merge_banks([t.data for t in banks]), seed=args.seed)
    pooled.fit(epochs=args.epochs)
    pw, pstats = pooled.get_weights(), pooled.standardisation()
    thr, tests = evaluate(pw, lambda i: pstats, set(range(args.banks)))
    results["centralised"] = {"f1": f1_of(tests, thr)["f1"], "threshold": thr,
                              "seconds": round(time.perf_counter() - t0, 1)}
    # Each bank alone: its own rows, its own standardisation and threshold.
    results["alone"] = []
    for b, t in enumerate(banks):
        alone = AMLTrainable(t.data, seed=args.seed)
        alone.fit(epochs=args.epochs)
        aw, astats = alone.get_weights(), alone.standardisation()
        thr, tests = evaluate(aw, lambda i: astats, {b})
        results["alone"].append({"bank": b, "f1_all_banks": f1_of(tests, thr)["f1"],
                                 "f1_own_bank": f1_of([tests[b]], thr)["f1"], "threshold": thr})
    # Federated.
    cfg = parse_config({"task": "aml", "rounds": args.rounds, "local_epochs": args.local_epochs, "seed": args.seed,
                        "strategy": {"name": args.strategy, "min_fit_clients": args.banks,
                                     "min_evaluate_clients": args.banks, "min_available_clients": args.banks,
                                     "fraction_evaluate": 0.0},
                        "institutions": [{**part, "bank": b} for b in range(args.banks)]})
    t0 = time.perf_counter()
    for attempt in range(3):  # Ray's node start times out (30 s, fixed in Ray) on an overloaded machine: retry
        try:
            report = simulate(cfg)
            break
        except RuntimeError as exc:
            if attempt == 2:
                raise
            print(f"simulation failed ({exc}); retrying", file=sys.stderr)
    fed_seconds = time.perf_counter() - t0
    names = sorted(banks[0].get_weights())
    fw = dict(zip(names, report.weights))
    thr, tests = evaluate(fw, lambda i: None, set(range(args.banks)))
    results["federated"] = {"strategy": args.strategy, "rounds": args.rounds, "local_epochs": args.local_epochs,
                            "f1": f1_of(tests, thr)["f1"], "threshold": thr, "model_sha256": report.model_sha256,
                            "f1_per_bank": [f1_of([tests[b]], thr)["f1"] for b in range(args.banks)],
                            "seconds": round(fed_seconds, 1)}
    fed, cen = results["federated"]["f1"], results["centralised"]["f1"]
    results["federated_over_centralised"] = round(fed / cen, 4) if cen else None
    results["federated_beats_every_bank_alone"] = {
        "all_banks_test": all(fed > a["f1_all_banks"] for a in results["alone"]),
        "own_bank_test": all(results["federated"]["f1_per_bank"][a["bank"]] > a["f1_own_bank"]
                             for a in results["alone"])}

    print(f"\naccount-level F1 on test accounts of all {args.banks} banks")
    print(f"  centralised (pooled data)      {cen:.4f}")
    print(f"  federated ({args.strategy}, {args.rounds}x{args.local_epochs} ep) {fed:.4f}  "
          f"= {results['federated_over_centralised']:.1%} of centralised (target >= 98%)")
    for a in results["alone"]:
        b = a["bank"]
        print(f"  bank {b} alone                   {a['f1_all_banks']:.4f}   own test accounts: alone "
              f"{a['f1_own_bank']:.4f} vs federated {results['federated']['f1_per_bank'][b]:.4f}")
    print("federated better than every bank alone:", results["federated_beats_every_bank_alone"])
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
