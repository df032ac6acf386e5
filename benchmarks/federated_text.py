"""A text model federated: the medical report span tagger (character BiGRU, anatomy/finding spans) across hospitals.

Each hospital holds reports in its own writing style (partition ``i`` of the medical_report plugin's generated
corpus, style ``i % 4``; no hospital sees another's reports). All models start from the same weights (the shipped
bundle by default: hospitals fine-tune it; ``--init random`` trains from scratch) and get the same number of passes
over each hospital's data: each hospital alone trains ``rounds x local_epochs`` epochs; the
federation runs ``rounds`` rounds of FedAvg with ``local_epochs`` each through Flower's simulation engine.
Figures: span F1 (the tagger's own metric) on every hospital's validation reports (mean over hospitals).

Usage::

    .venv/bin/python benchmarks/federated_text.py [--hospitals 4] [--rounds 3] [--local-epochs 1] [--reports 120]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hospitals", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--local-epochs", type=int, default=1)
    parser.add_argument("--reports", type=int, default=120, help="training reports per hospital")
    parser.add_argument("--init", choices=["bundle", "random"], default="bundle")
    args = parser.parse_args(argv)

    from sectorflow import ConfigError
    from sectorflow.federated import find_trainable, parse_config, simulate

    try:
        spec = find_trainable("medical_report")
    except ConfigError as exc:
        print(f"no text trainable installed: {exc}", file=sys.stderr)
        return 2
    n = args.hospitals
    parts = [{"partition_id": h, "num_partitions": n, "n_reports": args.reports, "init": args.init} for h in range(n)]
    hospitals = [spec.build(dict(p)) for p in parts]

    def mean_f1(weights) -> tuple[float, list[float]]:
        scores = []
        for h in hospitals:
            h.set_weights(weights)
            scores.append(h.evaluate()[2]["f1"])
        return sum(scores) / len(scores), scores

    start_f1, _ = mean_f1(hospitals[0].get_weights())
    alone = []
    for i, p in enumerate(parts):
        t = spec.build(dict(p))
        t.fit(epochs=args.rounds * args.local_epochs, lr=3e-3, batch_size=16, seed=0)
        own = t.evaluate()[2]["f1"]
        overall, _ = mean_f1(t.get_weights())
        alone.append({"hospital": i, "f1_own": own, "f1_all_hospitals": round(overall, 4)})
    cfg = parse_config({"task": "medical_report", "rounds": args.rounds, "local_epochs": args.local_epochs,
                        "lr": 3e-3, "batch_size": 16, "seed": 0,
                        "strategy": {"min_fit_clients": n, "min_evaluate_clients": n, "min_available_clients": n},
                        "institutions": parts})
    start = time.perf_counter()
    report = simulate(cfg, spec)
    seconds = time.perf_counter() - start
    names = sorted(hospitals[0].get_weights())
    fed, per = mean_f1(dict(zip(names, report.weights)))
    print(f"span F1 on all {n} hospitals' validation reports (mean), {args.rounds} rounds x {args.local_epochs} "
          f"epoch(s), {args.reports} reports each:")
    print(f"  starting weights ({args.init}) {start_f1:.4f}")
    print(f"  federated (FedAvg)   {fed:.4f}   per hospital {[round(x, 4) for x in per]}   ({seconds:.0f} s)")
    for a in alone:
        print(f"  hospital {a['hospital']} alone     {a['f1_all_hospitals']:.4f}   (own reports {a['f1_own']:.4f})")
    print(json.dumps({"init": args.init, "start": round(start_f1, 4), "federated": round(fed, 4), "per_hospital": per, "alone": alone, "seconds": round(seconds, 1),
                      "model_sha256": report.model_sha256}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
