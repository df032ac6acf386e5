"""Account-level AML evaluation on the three IBM AMLSim sample runs, leave-one-run-out.

For each run: train the risk scorer on the other two runs and the generated everyday banks of ``--everyday``
(``sectorflow_aml.training.fit``, the code of ``plugins/aml/scripts/train_scorer.py``; its threshold is chosen on
held-out accounts of those runs and banks), then feed
the held-out run through ``Taskflow("aml", task_path=<that bundle>)`` and score accounts:

- rules only: an account is flagged when it is named in an alert raised by a typology rule;
- model only: an account is flagged when a transaction it sends or receives has ``model_score >= threshold``;
- combined: an account is flagged when a transaction it sends or receives has ``alert == True`` (the pipeline's
  decision on the combined ``risk_score``) or it is named in any alert.

Accounts never seen in a transaction count as not flagged. Labels: ``isFraud`` of ``nodes.csv.gz``.

Usage::

    .venv/bin/python benchmarks/aml_eval.py [--config default|amlsim] [--runs 20K_cycle200 ...] [--batch-size 1024]
    .venv/bin/python benchmarks/aml_eval.py --ablate s_out_over_in r_out_over_in   # model only, features zeroed
    .venv/bin/python benchmarks/aml_eval.py --ablate                                # the same path, nothing zeroed

Data: ../shared/data/amlsim_sample (IBM/AMLSim, Apache-2.0; Suzumura & Kanezashi 2021).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["OMP_NUM_THREADS"] = "1"  # one math thread: bundles are byte-reproducible only at a fixed thread count

import numpy as np
from sectorflow import SectorflowError, Taskflow, write_manifest
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.training import EVERYDAY_SEEDS, RUNS, SEED, fit, prf, replay, replay_everyday

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"


def account_ids(names: list[str] | set[str], n: int) -> np.ndarray:
    """Boolean mask over AMLSim node ids for a set of account-id strings."""
    mask = np.zeros(n, dtype=bool)
    for name in names:
        if name.isdigit() and int(name) < n:
            mask[int(name)] = True
    return mask


def rule_configs() -> dict[str, tuple[float, dict]]:
    """Rule configurations (lookback days, ``rules=`` option) of ``benchmarks/aml_rules_eval.py``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from aml_rules_eval import CONFIGS

    return CONFIGS


def run_pipeline(bundle: Path, folder: Path, batch_size: int, threshold: float, rules: dict) -> dict[str, Any]:
    """Feed a run through ``Taskflow("aml")`` and collect the flagged accounts of the three decisions."""
    txns, problems = load_transactions(folder / "transactions.csv.gz", "amlsim")
    if problems:
        raise SystemExit(f"{folder}: {len(problems)} unreadable rows, e.g. {problems[:3]}")
    tf = Taskflow("aml", task_path=bundle, batch_size=batch_size, num_threads=1, rules=rules)
    start = time.perf_counter()
    results = tf(txns)
    seconds = time.perf_counter() - start
    rules, model, combined = set(), set(), set()
    by_typology: dict[str, set[str]] = {}
    for txn, res in zip(txns, results):
        pair = (txn.sender_account, txn.receiver_account)
        if res.model_score is not None and res.model_score >= threshold:
            model.update(pair)
        if res.flagged:  # a rule or the model fired (until 1 Dec 2026 this was `alert`)
            combined.update(pair)
        for alert in res.alerts:
            combined.update(alert.accounts)
            if not alert.fired_by.startswith("model"):
                rules.update(alert.accounts)
                by_typology.setdefault(alert.typology, set()).update(alert.accounts)
    return {"rules": rules, "model": model, "combined": combined, "by_typology": by_typology, "seconds": seconds,
            "n_tx": len(txns)}


def ablation(replayed: dict[str, Any], everyday: list[Any], args: argparse.Namespace, lookback: float) -> int:
    """Leave-one-run-out, model only, with the ``--ablate`` features set to 0 everywhere (none: the baseline of
    this path, which scores every transaction through the exported predictor, self-transfers included)."""
    from sectorflow_aml.features import FEATURE_NAMES
    from sectorflow_aml.training import evaluate_files

    cols = [FEATURE_NAMES.index(n) for n in args.ablate]
    for run in [*replayed.values(), *everyday]:
        run.x[:, cols] = 0.0
    print(f"model only, features set to 0: {', '.join(args.ablate) or 'none (baseline)'}")
    with tempfile.TemporaryDirectory() as tmp:
        for held_out in args.runs:
            train = [replayed[name] for name in RUNS if name != held_out] + everyday
            result = fit(train, Path(tmp) / held_out, seed=args.seed, lookback_days=lookback)
            m = evaluate_files(replayed[held_out], Path(tmp) / held_out, result.threshold)
            print(f"{held_out:22s} precision {m['precision']:.3f} recall {m['recall']:.3f} F1 {m['f1']:.3f} "
                  f"(TP {m['tp']}, FP {m['fp']}, FN {m['fn']}; threshold {result.threshold:.4f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--runs", nargs="+", default=list(RUNS))
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--ablate", nargs="*", default=None, metavar="FEATURE",
                        help="zero these features in training and test (model only, through the exported "
                             "predictor, not Taskflow): how much the model leans on them; with no names, the "
                             "same path with nothing zeroed (its baseline)")
    parser.add_argument("--everyday", type=int, nargs="*", default=list(EVERYDAY_SEEDS),
                        help="seeds of generated everyday banks added to each fold's training, as the shipped "
                             "scorer is trained (sectorflow_aml.everyday); give none for AMLSim alone")
    parser.add_argument("--config", default="default", choices=sorted(rule_configs()),
                        help="rule configuration and window lookback of benchmarks/aml_rules_eval.py (the model of "
                             "each fold is trained at the same lookback)")
    args = parser.parse_args(argv)
    lookback, rules = rule_configs()[args.config]
    if args.ablate:
        from sectorflow_aml.features import FEATURE_NAMES

        unknown = sorted(set(args.ablate) - set(FEATURE_NAMES))
        if unknown:  # before the replay, which takes a while
            raise SystemExit(f"unknown features {unknown}; choose from {', '.join(FEATURE_NAMES)}")

    replayed = {name: replay(args.data / name, lookback) for name in RUNS}
    everyday = [replay_everyday(seed, lookback) for seed in args.everyday]
    if args.ablate is not None:
        return ablation(replayed, everyday, args, lookback)
    rows = []
    typology_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for held_out in args.runs:
            train = [replayed[name] for name in RUNS if name != held_out] + everyday
            bundle = Path(tmp) / held_out
            result = fit(train, bundle, seed=args.seed, lookback_days=lookback)
            write_manifest(bundle, task="aml", name=f"aml-risk-mlp-loro-{held_out}", version="eval",
                           format="paddle-inference", precision="fp32", model_prefix="model",
                           labels=["laundering_risk"], metrics={"validation": result.validation},
                           provenance={"script": "benchmarks/aml_eval.py", "train": [r.name for r in train]})
            truth = replayed[held_out].fraud
            try:
                flagged = run_pipeline(bundle, args.data / held_out, args.batch_size, result.threshold, rules)
            except SectorflowError as exc:  # the pipeline is not there: report the model alone
                print(f"Taskflow('aml') unavailable ({type(exc).__name__}: {exc}); model-only figures from the "
                      f"exported predictor", file=sys.stderr)
                from sectorflow_aml.training import evaluate_files
                m = evaluate_files(replayed[held_out], bundle, result.threshold)
                rows.append((held_out, "model only (no pipeline)", m, result.threshold, float("nan")))
                continue
            speed = flagged["n_tx"] / flagged["seconds"]
            for kind in ("rules", "model", "combined"):
                m = prf(account_ids(flagged[kind], truth.shape[0]), truth)
                rows.append((held_out, kind, m, result.threshold, speed))
            for typology, accounts in sorted(flagged["by_typology"].items()):
                typology_rows.append((held_out, typology, prf(account_ids(accounts, truth.shape[0]), truth)))

    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; Taskflow num_threads=1, batch_size={args.batch_size}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; seed {args.seed}; rule config {args.config!r}, "
          f"lookback {lookback:g} days")
    print("account-level, each run held out (model trained on the other two runs)")
    print(f"{'held-out run':22s} {'decision':26s} {'precision':>9s} {'recall':>7s} {'F1':>6s} "
          f"{'TP':>5s} {'FP':>5s} {'FN':>5s} {'thr':>7s} {'tx/s':>7s}")
    for run, kind, m, thr, speed in rows:
        print(f"{run:22s} {kind:26s} {m['precision']:9.3f} {m['recall']:7.3f} {m['f1']:6.3f} {m['tp']:5d} "
              f"{m['fp']:5d} {m['fn']:5d} {thr:7.4f} {speed:7.0f}")
    if typology_rows:
        print("rules only, by typology (accounts named in that typology's alerts)")
        for run, typology, m in typology_rows:
            print(f"{run:22s} {typology:26s} {m['precision']:9.3f} {m['recall']:7.3f} {m['f1']:6.3f} "
                  f"{m['tp']:5d} {m['fp']:5d} {m['fn']:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
