"""Train the shipped account risk model and add it to the shipped bundle, beside the per-transaction scorer.

Usage (from the repository root; run after ``train_scorer.py``, which rewrites the bundle folder)::

    .venv/bin/python plugins/aml/scripts/train_account_model.py

Training data (all the project has, labelled by account): AMLGentex ``dev_s101``, ``dev_s202``, ``dev3b_s404``
(``accounts.csv.gz`` ``IS_SAR``), the three AMLSim sample runs (``nodes.csv.gz`` ``isFraud``) and the generated
everyday banks of :mod:`sectorflow_aml.everyday` (seeds 101-104, every account normal). A seeded quarter of each
set's accounts is held out for early stopping and Platt calibration. Reported, never trained or tuned on: AMLGentex
``dev_s303`` (account-level AP, precision at K, recall at 1 % FPR) and everyday bank seed 7 (how many of its accounts
score at or above the validation threshold of best F1). Writes ``account_model.txt`` and ``account_model.json`` into
``plugins/aml/src/sectorflow_aml/bundle/`` and rewrites its manifest with an ``account_model`` section (metrics,
data provenance with sha256 of each set as read, the command).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from sectorflow import write_manifest
from sectorflow_aml.account_training import (DEFAULT_POINTS, POINTS, account_scores, evaluate_replay, replay,
                                             train)
from sectorflow_aml.everyday import everyday_bank
from sectorflow_aml.labels import Labels, read_labels
from sectorflow_aml.learn_cli import FITTED_ON, MODEL_FILE
from sectorflow_aml.account_scorer import ACCOUNT_CONFIG
from sectorflow_aml.account_features import ACCOUNT_FEATURES
from sectorflow_aml.loaders import load_transactions

PLUGIN = Path(__file__).resolve().parents[1]
REPO = PLUGIN.parents[1]
DATA = REPO.parent / "shared" / "data"
BUNDLE = PLUGIN / "src" / "sectorflow_aml" / "bundle"
GENTEX_TRAIN = ("dev_s101", "dev_s202", "dev3b_s404")
GENTEX_TEST = "dev_s303"
AMLSIM_RUNS = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")
EVERYDAY_TRAIN = (101, 102, 103, 104)
EVERYDAY_TEST = 7
SEED = 20211
LOOKBACK_DAYS = 30.0


def everyday_labels(txns) -> Labels:
    out = Labels(source="sectorflow_aml.everyday (every account normal)")
    for t in txns:
        out.label[t.sender_account] = 0
        out.label[t.receiver_account] = 0
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=BUNDLE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--points", choices=POINTS, default=DEFAULT_POINTS,
                        help="training and scoring points (sectorflow_aml.account_training.POINTS)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    reps, labels, datasets = [], [], []
    for name in GENTEX_TRAIN:
        folder = DATA / "amlgentex_dev" / name
        txns, _ = load_transactions(folder / "transactions.csv.gz", format="amlgentex")
        reps.append(replay(txns, LOOKBACK_DAYS, name=f"amlgentex_dev/{name}"))
        labels.append(read_labels(folder / "accounts.csv.gz"))
    for name in AMLSIM_RUNS:
        folder = DATA / "amlsim_sample" / name
        txns, _ = load_transactions(folder / "transactions.csv.gz", format="amlsim")
        reps.append(replay(txns, LOOKBACK_DAYS, name=f"amlsim_sample/{name}"))
        labels.append(read_labels(folder / "nodes.csv.gz"))
    for seed in EVERYDAY_TRAIN:
        txns = everyday_bank(seed)
        reps.append(replay(txns, LOOKBACK_DAYS, name=f"everyday-{seed}"))
        labels.append(everyday_labels(txns))
    for rep, lab in zip(reps, labels):
        datasets.append({"name": rep.name, "role": "train (25 % of accounts held out for validation)",
                         "sha256_as_read": rep.digest, "transactions": rep.n_transactions,
                         "labelled_accounts": len(lab), "laundering_accounts": lab.positives})
        print(f"{rep.name}: {rep.n_transactions:,} transactions, {rep.x.shape[0]:,} rows ({rep.seconds:.1f} s)",
              flush=True)
    trained = train(reps, labels, seed=args.seed, log=lambda m: print(m, flush=True), points=args.points)
    threshold = trained.metrics["threshold_best_f1"]

    folder = DATA / "amlgentex_dev" / GENTEX_TEST
    txns, _ = load_transactions(folder / "transactions.csv.gz", format="amlgentex")
    test_rep = replay(txns, LOOKBACK_DAYS, name=f"amlgentex_dev/{GENTEX_TEST}")
    test = evaluate_replay(trained.model_text, trained.platt, test_rep, read_labels(folder / "accounts.csv.gz"),
                           args.points)
    txns = everyday_bank(EVERYDAY_TEST)
    every = replay(txns, LOOKBACK_DAYS, name=f"everyday-{EVERYDAY_TEST}")
    s = account_scores(trained.model_text, trained.platt, every, args.points)
    everyday = {"accounts": int(s.size), "at_or_above_threshold": int(np.sum(s >= threshold)),
                "max_score": round(float(s.max()), 4), "median_score": round(float(np.median(s)), 4)}
    datasets += [{"name": test_rep.name, "role": "test (never trained or tuned on)", "sha256_as_read": test_rep.digest,
                  "transactions": test_rep.n_transactions},
                 {"name": every.name, "role": "test (never trained or tuned on)", "sha256_as_read": every.digest,
                  "transactions": every.n_transactions}]
    print(f"test {GENTEX_TEST}: {test}", flush=True)
    print(f"everyday bank {EVERYDAY_TEST}: {everyday}", flush=True)

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_FILE).write_text(trained.model_text, encoding="utf-8")
    config = {"feature_names": list(ACCOUNT_FEATURES), "lookback_days": LOOKBACK_DAYS, "model_file": MODEL_FILE,
              "calibration": {"method": "platt", "a": trained.platt[0], "b": trained.platt[1],
                              "fitted_on": FITTED_ON[args.points]},
              "threshold": threshold, "num_trees": trained.num_trees, "training_points": args.points}
    (out / ACCOUNT_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {
        "task": "aml", "name": "aml-account-gbdt", "version": "1.0.0", "format": "lightgbm"}
    manifest.pop("files", None)
    manifest["account_model"] = {
        "name": "aml-account-gbdt", "version": "1.0.0", "format": "lightgbm text", "files": [MODEL_FILE, ACCOUNT_CONFIG],
        "metrics": {"validation": trained.metrics,
                    "test_amlgentex_dev_s303": test, f"test_everyday_{EVERYDAY_TEST}": everyday},
        "provenance": {"command": "python plugins/aml/scripts/train_account_model.py" + "".join(
            f" {a}" for a in (argv if argv is not None else sys.argv[1:])), "datasets": datasets,
            "script": "plugins/aml/scripts/train_account_model.py", "seed": args.seed,
            "params": {k: v for k, v in trained.params.items() if k != "verbose"},
            "citations": ["AMLGentex (arXiv:2506.13989), Apache-2.0", "IBM/AMLSim (Suzumura and Kanezashi 2021), "
                          "Apache-2.0", "sectorflow_aml.everyday (generated by the project)"],
            "seconds": round(time.perf_counter() - start, 1)}}
    write_manifest(out, **manifest)
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
