"""The customer_service intent head federated across branches, ending in the bundle the pipeline serves.

Branches hold disjoint slices of banking77 train (partition ``i`` of ``n``: every n-th row, minus the validation
slice; Casanueva et al. 2020, CC BY 4.0, ``../shared/data/banking77``). Every model is the banking77 head over the
shipped encoder's frozen un-normalised pooled vector (``sectorflow_customer_service.trainable``), started from the
same weights (``--init zeros``, the default here: a head learnt from scratch, the case where a federation has
something to learn; ``--init bundle`` starts from the shipped head, which was trained on these same rows) and given
the same passes over its data (``rounds x local_epochs`` epochs): (a) centralised on all branches' rows, (b) each
branch alone, (c) FedAvg over ``rounds`` rounds (Flower's simulation engine), whose bundle is then written and
served. Figures: accuracy on the whole banking77 validation slice (1,000 messages, 10 % of train, seed 13; never
the test split), the MiniLM head alone (``english_ensemble=False``), and the same for the shipped head.

Usage::

    .venv/bin/python benchmarks/federated_intents.py [--branches 3] [--rounds 10] [--local-epochs 5] [--lr 0.01]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

BANKING77 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "banking77"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--branches", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--local-epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--init", choices=["zeros", "bundle"], default="zeros")
    parser.add_argument("--max-examples", type=int, default=0, help="first N training rows per branch (smoke runs)")
    parser.add_argument("--data", type=Path, default=BANKING77)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not (args.data / "train.csv").is_file():
        print(f"banking77 not at {args.data}", file=sys.stderr)
        return 2

    import numpy as np

    from sectorflow import Taskflow
    from sectorflow.federated import parse_config, simulate
    from sectorflow.federated.runner import export_bundle
    from sectorflow_customer_service.datasets import banking77
    from sectorflow_customer_service.trainable import IntentHeadTrainable, trainable_spec

    began = time.perf_counter()
    n, epochs = args.branches, args.rounds * args.local_epochs
    fit = {"lr": args.lr, "batch_size": args.batch_size, "server_round": 1}
    extra = {"max_examples": args.max_examples} if args.max_examples else {}
    parts = [{"partition_id": b, "num_partitions": n, "banking77": str(args.data), "init": args.init, **extra}
             for b in range(n)]
    branches = [IntentHeadTrainable(p) for p in parts]  # encodes each branch's rows once (cached for the run)
    whole = IntentHeadTrainable(parts[0])  # then all branches' rows: (a) trains on them, every model is scored on
    whole.x_train = np.concatenate([b.x_train for b in branches])  # the union of their validation slices, which
    whole.y_train = np.concatenate([b.y_train for b in branches])  # is the whole validation slice
    whole.x_val = np.concatenate([b.x_val for b in branches])
    whole.y_val = np.concatenate([b.y_val for b in branches])
    start = whole.get_weights()

    def accuracy(weights) -> float:
        whole.set_weights(weights)
        return whole.evaluate()[2]["accuracy"]

    rows: dict[str, object] = {"start": round(accuracy(start), 4)}
    whole.set_weights(start)
    whole.fit(epochs=epochs, **fit)
    rows["centralised"] = round(whole.evaluate()[2]["accuracy"], 4)
    alone = []
    for branch in branches:
        branch.fit(epochs=epochs, **fit)
        alone.append(round(accuracy(branch.get_weights()), 4))
    rows["alone"] = alone
    cfg = parse_config({"task": "customer_service", "rounds": args.rounds, "local_epochs": args.local_epochs,
                        "lr": args.lr, "batch_size": args.batch_size, "keep": "last",
                        "strategy": {"min_fit_clients": n, "min_evaluate_clients": n, "min_available_clients": n},
                        "institutions": parts})
    spec = trainable_spec()
    t0 = time.perf_counter()
    report = simulate(cfg, spec)
    rows["federated_seconds"] = round(time.perf_counter() - t0, 1)
    names = sorted(whole.get_weights())
    kept = dict(zip(names, report.kept_weights()))
    rows["federated"] = round(accuracy(kept), 4)
    rows["federated_per_round"] = [round(float(r.eval_metrics.get("accuracy", float("nan"))), 4)
                                   for r in report.rounds]
    with tempfile.TemporaryDirectory() as tmp:  # the bundle the run ends in, served by the pipeline
        export_bundle(cfg, spec, report, Path(tmp) / "bundle", "benchmarks/federated_intents.py")
        split = banking77(args.data)["val"]
        texts, truth = [t for t, _ in split], [y for _, y in split]
        for key, path in (("served_federated_bundle", str(Path(tmp) / "bundle")), ("served_shipped_bundle", None)):
            flow = Taskflow("customer_service", task_path=path, english_ensemble=False)
            got = [r.top_k[0].label for r in flow(texts)]  # the head's top intent (before the out-of-scope rules)
            rows[key] = round(float(np.mean([g == y for g, y in zip(got, truth)])), 4)
    rows["seconds"] = round(time.perf_counter() - began, 1)
    rows["settings"] = {"branches": n, "rounds": args.rounds, "local_epochs": args.local_epochs, "lr": args.lr,
                        "batch_size": args.batch_size, "init": args.init, "max_examples": args.max_examples,
                        "train_rows": int(len(whole.y_train)), "validation_rows": int(len(whole.y_val))}
    print(f"banking77 validation accuracy ({len(whole.y_val)} messages), head over the frozen pooled MiniLM vector, "
          f"{n} branches, {epochs} epochs each way, init {args.init}:")
    print(f"  start {rows['start']:.4f} | (a) centralised {rows['centralised']:.4f} | (b) each branch alone "
          f"{' / '.join(f'{a:.4f}' for a in alone)} (mean {np.mean(alone):.4f}) | (c) FedAvg {rows['federated']:.4f}"
          f" ({args.rounds} rounds, {rows['federated_seconds']} s)")
    print(f"  served by the pipeline (MiniLM head alone, no out-of-scope fallback): federated bundle "
          f"{rows['served_federated_bundle']:.4f}, shipped bundle {rows['served_shipped_bundle']:.4f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
