"""Does the month-close account score hold beyond the split it was found on? (issue 21; docs/aml.md, "The case
score: highest or month close"; docs/benchmarks/aml.md, "Month-close score: checks beyond the validation split").

    nice -n 10 .venv/bin/python benchmarks/aml_month_close.py [--only gentex|amlsim] [--boot N] [--max-rows N]
        [--json OUT]

Two trainings of :func:`~sectorflow_aml.account_training.train` on the same files, seed and split, differing only in
``points``: ``daily`` (daily snapshot rows; account score = max over every row, the shipped scoring) and
``month_end`` (month-end rows; account score = max over the account's month-close scores, what ``sectorflow aml
evaluate --account-score close`` and the case book of such a bundle read). Each is scored as it is read
(:func:`~sectorflow_aml.account_training.account_scores`). Nothing here reads AMLGentex dev_s303 (the held-out
figure) or chooses anything:

- ``gentex``: trained on dev_s101 + dev_s202 (their validation accounts, where the month-close score was found, are
  printed for reference); checked on **dev3b_s404** (another AMLGentex configuration, three banks, never trained on
  here) and, on both, **with a warm window**: only rows from 30 days after each file's first transaction are scored
  (what a ``sectorflow run aml --history`` stream gives: every window full from its first output; the month-close
  rows are then the month-end rows after that day).
- ``amlsim``: AMLSim leave-one-run-out (train on two runs, test on the third, as benchmarks/aml_learning.py
  ``--only amlsim``): AP, precision at K, recall at 1 % FPR, and F1 at each model's own validation threshold of best
  F1; also with a warm window (the test run's rows from day 30 on).

Bootstrap: stratified paired resamples of the test accounts, the 95 % interval of AP(month_end) - AP(daily) and the
share of draws above 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import aml_learning as L  # noqa: E402
from sectorflow_aml.account_training import (account_max, labels_of, month_end_rows, ranking_metrics,  # noqa: E402
                                             replay, score_replay, split_accounts, train)
from sectorflow_aml.labels import read_labels  # noqa: E402
from sectorflow_aml.metrics import average_precision  # noqa: E402

SEED = L.SEED
POINTS = ("daily", "month_end")
WARM_DAYS = 30


def scores_at(model, rep, points: str, warm: bool = False) -> np.ndarray:
    """Account scores of ``rep`` under ``points`` (``-inf``: no scoring row); ``warm``: rows from day 30 on only."""
    rows = np.ones(rep.account.size, dtype=bool) if points == "daily" else month_end_rows(rep)
    if warm:
        rows &= rep.day >= rep.day.min() + WARM_DAYS
    s = score_replay(model.model_text, model.platt, rep)
    return account_max(s[rows], rep.account[rows], len(rep.accounts))


def labelled(rep, labels, s: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels of the labelled accounts (``mask`` over ``rep.accounts``: only those); no row: score 0."""
    y = labels_of(rep, labels)
    keep = y >= 0 if mask is None else (y >= 0) & mask
    out = np.where(np.isfinite(s), s, 0.0)[keep]
    # labelled accounts that never transact in the file score 0, as evaluate_replay counts them
    seen = set(rep.accounts)
    extra = [labels.label[a] for a in labels.label if a not in seen] if mask is None else []
    return np.concatenate([out, np.zeros(len(extra))]), np.concatenate([y[keep], np.asarray(extra, dtype=np.int64)])


def f1_at(s: np.ndarray, y: np.ndarray, thr: float) -> dict:
    pred = s >= thr
    tp, fp, fn = int(np.sum(pred & (y == 1))), int(np.sum(pred & (y == 0))), int(np.sum(~pred & (y == 1)))
    p = tp / max(1, tp + fp)
    r = tp / max(1, tp + fn)
    return {"f1": round(2 * p * r / max(1e-12, p + r), 4), "precision": round(p, 4), "recall": round(r, 4),
            "tp": tp, "fp": fp, "fn": fn}


def boot(a: np.ndarray, b: np.ndarray, y: np.ndarray, n: int, seed: int = SEED) -> list[float] | None:
    """95 % interval of AP(a) - AP(b) over stratified paired resamples, and the share of draws above 0."""
    if not n:
        return None
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    d = []
    for _ in range(n):
        i = np.concatenate([rng.choice(pos, pos.size), rng.choice(neg, neg.size)])
        d.append(average_precision(a[i], y[i]) - average_precision(b[i], y[i]))
    d = np.asarray(d)
    return [round(float(np.percentile(d, 2.5)), 4), round(float(np.percentile(d, 97.5)), 4),
            round(float(np.mean(d > 0)), 3)]


def compare(name: str, per_points: dict, y: np.ndarray, thresholds: dict, n_boot: int) -> dict:
    out = {p: {**ranking_metrics(per_points[p], y), **f1_at(per_points[p], y, thresholds[p])} for p in POINTS}
    out["ap_month_end_minus_daily"] = boot(per_points["month_end"], per_points["daily"], y, n_boot)
    d, m = out["daily"], out["month_end"]
    print(f"{name}: AP {d['average_precision']:.3f} -> {m['average_precision']:.3f}, P@K {d['precision_at_k']:.3f} -> "
          f"{m['precision_at_k']:.3f}, R@1%FPR {d['recall_at_1pct_fpr']:.3f} -> {m['recall_at_1pct_fpr']:.3f}, "
          f"F1@val-threshold {d['f1']:.3f} -> {m['f1']:.3f} (P {m['precision']:.3f} R {m['recall']:.3f}); "
          f"AP diff {out['ap_month_end_minus_daily']}", flush=True)
    return out


def run_gentex(out: dict, n_boot: int) -> None:
    names = ("dev_s101", "dev_s202")
    data = {n: L.gentex(n) for n in (*names, "dev3b_s404")}
    reps = {n: replay(data[n][0], name=n) for n in data}
    models = {}
    for p in POINTS:
        start = time.perf_counter()
        models[p] = train([reps[n] for n in names], [data[n][1] for n in names], seed=SEED, points=p)
        print(f"trained {p}: {models[p].num_trees} trees, validation AP {models[p].metrics['average_precision']} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
    out["trees"] = {p: models[p].num_trees for p in POINTS}
    thr = {p: models[p].metrics["threshold_best_f1"] for p in POINTS}
    for warm in (False, True):
        tag = " (warm window: rows from day 30)" if warm else ""
        # validation accounts of the training files (where the month-close score was found)
        per, y = {}, None
        for p in POINTS:
            parts = []
            for i, n in enumerate(names):
                val = split_accounts(labels_of(reps[n], data[n][1]), 0.25, SEED + i)
                parts.append(labelled(reps[n], data[n][1], scores_at(models[p], reps[n], p, warm), val))
            per[p] = np.concatenate([s for s, _ in parts])
            y = np.concatenate([t for _, t in parts])
        out[f"validation_dev_s101_s202{'_warm' if warm else ''}"] = compare(
            f"validation accounts of dev_s101 + dev_s202{tag}", per, y, thr, n_boot)
        per = {}
        for p in POINTS:
            per[p], y = labelled(reps["dev3b_s404"], data["dev3b_s404"][1],
                                 scores_at(models[p], reps["dev3b_s404"], p, warm))
        out[f"dev3b_s404{'_warm' if warm else ''}"] = compare(f"dev3b_s404, all labelled accounts{tag}", per, y,
                                                               thr, n_boot)


def run_amlsim(out: dict, n_boot: int) -> None:
    runs = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")
    reps, labs = {}, {}
    for r in runs:
        reps[r] = replay(L._load(L.AMLSIM / r / "transactions.csv.gz", "amlsim"), name=r)
        labs[r] = read_labels(L.AMLSIM / r / "nodes.csv.gz")
    for test in (runs[2], runs[0], runs[1]):
        tr = [r for r in runs if r != test]
        models, thr = {}, {}
        for p in POINTS:
            models[p] = m = train([reps[r] for r in tr], [labs[r] for r in tr], seed=SEED, points=p)
            thr[p] = m.metrics["threshold_best_f1"]
            out.setdefault("amlsim_trees", {}).setdefault(test, {})[p] = m.num_trees
            out.setdefault("amlsim_validation_ap", {}).setdefault(test, {})[p] = m.metrics["average_precision"]
        for warm in (False, True):
            per, y = {}, None
            for p in POINTS:
                per[p], y = labelled(reps[test], labs[test], scores_at(models[p], reps[test], p, warm))
            out[f"amlsim_{test}{'_warm' if warm else ''}"] = compare(
                f"AMLSim train {'+'.join(tr)} -> test {test}{' (warm window: rows from day 30)' if warm else ''}",
                per, y, thr, n_boot)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=["gentex", "amlsim"], action="append")
    ap.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (0: none)")
    ap.add_argument("--max-rows", type=int, help="read only the first rows of each file (smoke run)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    L.MAX_ROWS = args.max_rows
    todo = set(args.only or ["gentex", "amlsim"])
    out: dict = {}
    t0 = time.perf_counter()
    if "gentex" in todo:
        run_gentex(out, args.boot)
    if "amlsim" in todo:
        run_amlsim(out, args.boot)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"total {out['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
