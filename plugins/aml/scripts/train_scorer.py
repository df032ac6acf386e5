"""Train the AML risk scorer on IBM AMLSim runs and write the shipped bundle.

Usage (from the repository root, about a minute on 2 cores)::

    .venv/bin/python plugins/aml/scripts/train_scorer.py \
        --train 20K_cycle200 20K_fanin200 --test 20K_fanin200cycle200

Trains on the ``--train`` runs (a held-out 20 % of their accounts picks the threshold), reports account-level
precision/recall/F1 on the ``--test`` run, and writes ``plugins/aml/src/sectorflow_aml/bundle/`` (``paddle.jit.save``
program, weights, ``scorer.json`` and ``manifest.json`` with metrics and provenance). See docs/aml.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"  # one math thread: bundles are byte-reproducible only at a fixed thread count

from sectorflow import write_manifest  # noqa: E402
from sectorflow_aml.training import (  # noqa: E402
    EVERYDAY_SEEDS,
    LOOKBACK_DAYS,
    RUNS,
    SEED,
    evaluate_files,
    fit,
    replay,
    replay_everyday,
)

PLUGIN = Path(__file__).resolve().parents[1]
REPO = PLUGIN.parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"
BUNDLE = PLUGIN / "src" / "sectorflow_aml" / "bundle"


def sha256sums(data: Path) -> dict[str, str]:
    """``SHA256SUMS`` of the AMLSim sample folder, as ``relative path -> hex``."""
    out = {}
    for line in (data / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.removeprefix("./")] = digest
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="amlsim_sample folder")
    parser.add_argument("--train", nargs="+", default=list(RUNS[:2]), help="runs to train on")
    parser.add_argument("--test", default=RUNS[2], help="run to report on (never trained or tuned on)")
    parser.add_argument("--out", type=Path, default=BUNDLE, help="bundle folder to (re)write")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--everyday", type=int, nargs="*", default=list(EVERYDAY_SEEDS),
                        help="seeds of generated everyday banks added as normal accounts (sectorflow_aml.everyday); "
                             "give none to train on AMLSim alone")
    args = parser.parse_args(argv)
    if args.test in args.train:
        parser.error("the test run must not be a training run")

    train = [replay(args.data / name) for name in args.train]
    test = replay(args.data / args.test)
    for run in (*train, test):
        print(f"replayed {run.name}: {len(run.src)} transactions, steps {run.meta['steps']}, {run.fraud.sum()} "
              f"laundering accounts, in {run.seconds:.1f} s")
    everyday = [replay_everyday(seed) for seed in args.everyday]
    for run in everyday:
        print(f"generated {run.name}: {len(run.src)} scored transactions, {len(run.fraud)} accounts (all normal), "
              f"in {run.seconds:.1f} s")
    train += everyday
    if args.out.exists():
        shutil.rmtree(args.out)
    result = fit(train, args.out, seed=args.seed, epochs=args.epochs)
    test_metrics = evaluate_files(test, args.out, result.threshold)
    print(f"trained on {result.n_train_tx} transactions ({result.n_pos_train_tx} positive) in {result.seconds:.1f} s")
    print("validation:", json.dumps(result.validation))
    print("test:", json.dumps(test_metrics))

    sums = sha256sums(args.data)
    used = [*args.train, args.test]
    command = "python plugins/aml/scripts/train_scorer.py " + " ".join(
        ["--train", *args.train, "--test", args.test, "--seed", str(args.seed), "--epochs", str(args.epochs),
         "--everyday", *map(str, args.everyday)])
    write_manifest(
        args.out, task="aml", name="aml-risk-mlp", version="2.1.0", format="paddle-inference", precision="fp32",
        model_prefix="model", labels=["laundering_risk"], cpu_onednn=False,
        metrics={"account_level": {"validation": result.validation, "test": test_metrics},
                 "decision": "an account is flagged when any transaction it sends or receives scores >= threshold",
                 "threshold": result.threshold},
        provenance={
            "datasets": [{"name": f"amlsim_sample/{run}", "role": "train" if run in args.train else "test",
                          "files": {k: v for k, v in sums.items() if k.startswith(run + "/")}} for run in used],
            "source": "IBM/AMLSim @ 7338a4bcb1af9bcfea2201ad7daccfe2a4d569ca, sample/*.tgz",
            "licence": "Apache-2.0",
            "citation": "Suzumura, T. and Kanezashi, H. (2021). Anti-Money Laundering Datasets: AMLSim. "
                        "https://github.com/IBM/AMLSim",
            "script": "plugins/aml/scripts/train_scorer.py",
            "command": command,
            "seed": args.seed,
            "lookback_days": LOOKBACK_DAYS,
            "transaction_label": "1 when sender and receiver are both laundering accounts (nodes.csv isFraud)",
            "class_imbalance": "positive weight n_neg / n_pos in binary cross-entropy",
            "everyday_banks": {"seeds": list(args.everyday), "module": "sectorflow_aml.everyday",
                               "role": "normal accounts (generated by the project: salaries, rent, utilities, "
                                       "card purchases, family and friends, savings) for training and the "
                                       "threshold's validation accounts"},
        })
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
