"""Why the window-exact month-end baseline keeps up with the account model, and what would make the model better
(issue 21; docs/benchmarks/aml.md, "Account model against the window-exact baseline").

    .venv/bin/python benchmarks/aml_model_vs_baseline.py [--quick] [--boot N] [--no-test] [--seeds N]
        [--also dev3b_s404] [--json OUT]

Every variant is trained on the training accounts of AMLGentex dev_s101 + dev_s202 and measured on their validation
accounts, with the account model's own split (:func:`~sectorflow_aml.account_training.split_accounts`, 25 % of each
file's labelled accounts, seed 20211 + file; training rows only before the last 20 % of each file's period), so the
variants are compared on the same accounts. dev_s303 is scored once at the end, by the models of the validation run
(nothing is chosen there). Variants:

- ``model``: the account model's LightGBM (:data:`~sectorflow_aml.account_training.PARAMS`, class weights, early
  stopping on validation account AP, fewest trees within 0.002), trained on daily snapshot rows as
  :func:`~sectorflow_aml.account_training.train`; an account's score aggregated three ways: ``max over every row``
  (after each of its transactions: what ``sectorflow aml evaluate`` and the case score take), ``max over daily
  snapshots`` (its last row of each active day), ``max over month ends`` (its last row of each calendar month).
- ``model @month-end``: the same learner trained (and early-stopped) on month-end rows only.
- ``model + baseline30``: the model's 38 features and the baseline's 30 window-exact aggregates
  (``benchmarks/aml_learning.py``, :func:`window_baseline_features`) at the same points: the baseline rows exist at
  each account's day ends, where both describe the same 30 days before the same transaction, so these variants are
  scored at snapshot rows only. ``scale-free`` variants replace the baseline's 13 absolute amount features (sums,
  means, standard deviations, extremes, net inflow) by the same values divided by the account's mean amount in the
  window (multiplying every amount by one factor leaves them unchanged).
- ``baseline30``: the plain GBDT of the learning benchmark (LightGBM defaults, 200 rounds, no weights) on the 30
  aggregates at month ends (absolute or scale-free), raw margins, max over the account's months.

The bootstrap resamples the validation accounts (stratified, paired: every variant on the same draw) and gives the
95 % interval of each variant's AP minus the shipped model's and minus the month-end baseline's.
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
from sectorflow_aml.account_features import ACCOUNT_FEATURES  # noqa: E402
from sectorflow_aml.account_training import (PARAMS, fewest_trees, labels_of, ranking_metrics,  # noqa: E402
                                             replay, split_accounts)
from sectorflow_aml.metrics import average_precision  # noqa: E402

SEED = L.SEED
B_NAMES = list(L.BASELINE_NAMES)
AMOUNT_COLS = [B_NAMES.index(n) for n in ("sum_cash_in", "sum_cash_out", "sum_out", "sum_in", "mean_in", "mean_out",
                                          "std_in", "std_out", "min_in", "max_in", "min_out", "max_out", "net_in")]
COUNT_COLS = [B_NAMES.index(n) for n in ("n_cash_in", "n_cash_out", "n_out", "n_in")]
SUM_COLS = [B_NAMES.index(n) for n in ("sum_cash_in", "sum_cash_out", "sum_out", "sum_in")]


def scale_free(xb: np.ndarray) -> np.ndarray:
    """The baseline rows with the absolute amount columns divided by the account's mean amount in the window."""
    out = xb.copy()
    n = xb[:, COUNT_COLS].sum(axis=1)
    ref = np.where(n > 0, xb[:, SUM_COLS].sum(axis=1) / np.maximum(n, 1), 1.0)
    ref = np.where(ref > 0, ref, 1.0)
    out[:, AMOUNT_COLS] = xb[:, AMOUNT_COLS] / ref[:, None]
    return out


class File:
    """One file's replay, the baseline rows aligned to its snapshot rows, its labels, split and month-end rows."""

    def __init__(self, name: str, index: int, time_holdout: float = 0.2) -> None:
        txns, self.labels = L.gentex(name)
        self.name = name
        self.rep = rep = replay(txns, name=name)
        ids, xb, days = L.window_baseline_features(txns)
        where = {(a, d): i for i, (a, d) in enumerate(zip(ids, days.tolist()))}
        snap = np.flatnonzero(rep.snapshot)
        self.xb = np.full((rep.x.shape[0], len(B_NAMES)), np.nan)
        hit = np.asarray([where.get((rep.accounts[a], d), -1) for a, d in
                          zip(rep.account[snap].tolist(), rep.day[snap].tolist())], dtype=np.int64)
        self.aligned = float(np.mean(hit >= 0)) if hit.size else 0.0
        self.xb[snap[hit >= 0]] = xb[hit[hit >= 0]]
        self.y = labels_of(rep, self.labels)
        self.val = split_accounts(self.y, 0.25, SEED + index)
        cut = rep.day.min() + (1 - time_holdout) * (rep.day.max() - rep.day.min() + 1)
        self.early = rep.day < cut
        last: dict[tuple[int, int], int] = {}
        for i, (a, m) in enumerate(zip(rep.account.tolist(), rep.month.tolist())):
            last[(a, m)] = i
        self.month_end = np.zeros(rep.x.shape[0], dtype=bool)
        self.month_end[np.fromiter(last.values(), dtype=np.int64, count=len(last))] = True

    def inputs(self, kind: str) -> np.ndarray:
        x = self.rep.x.astype(np.float64)
        if kind == "model":
            return x
        if kind == "baseline":
            return self.xb
        if kind == "baseline_sf":
            return scale_free(self.xb)
        if kind == "model+baseline":
            return np.hstack([x, self.xb])
        if kind == "model+baseline_sf":
            return np.hstack([x, scale_free(self.xb)])
        raise ValueError(kind)


POINTS = {"all": lambda f: np.ones(f.rep.x.shape[0], dtype=bool), "daily": lambda f: f.rep.snapshot,
          "month_end": lambda f: f.month_end,
          # rows whose 30-day window lies wholly inside the file (a file starts empty; a bank's stream does not)
          "all_full": lambda f: f.rep.day >= f.rep.day.min() + 30,
          "month_end_full": lambda f: f.month_end & (f.rep.day >= f.rep.day.min() + 30)}


def names_of(kind: str) -> list[str]:
    model, base = list(ACCOUNT_FEATURES), [f"b_{n}" for n in B_NAMES]
    return {"model": model, "baseline": base, "baseline_sf": base, "model+baseline": model + base,
            "model+baseline_sf": model + base}[kind]


def stack(files, kind: str, train_points: str, eval_points: str, part: str):
    """Training rows (``part='train'``) or validation rows (``'val'``) over ``files``, with pooled account indices."""
    xs, ys, accs = [], [], []
    offset = 0
    for f in files:
        labelled = f.y[f.rep.account] >= 0
        if part == "train":
            rows = labelled & ~f.val[f.rep.account] & f.early & POINTS[train_points](f) & f.rep.snapshot
        elif part == "val":
            rows = labelled & f.val[f.rep.account] & POINTS[eval_points](f)
        else:  # "test": every row of the file
            rows = POINTS[eval_points](f)
        xs.append(f.inputs(kind)[rows])
        ys.append(f.y[f.rep.account[rows]])
        accs.append(f.rep.account[rows] + offset)
        offset += len(f.rep.accounts)
    return np.concatenate(xs), np.concatenate(ys).astype(np.float64), np.concatenate(accs)


def account_scores(margin: np.ndarray, acc: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The max margin of each target account (pooled index); accounts without a row rank last."""
    best = np.full(int(max(acc.max(initial=0), targets.max(initial=0))) + 1, -np.inf)
    np.maximum.at(best, acc, margin)
    s = best[targets]
    low = (s[np.isfinite(s)].min() - 1.0) if np.isfinite(s).any() else 0.0
    return np.where(np.isfinite(s), s, low)


def targets_of(files, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Pooled indices and labels of the accounts a variant is measured on (validation or a test file's labelled)."""
    idx, ys = [], []
    offset = 0
    for f in files:
        m = (f.y >= 0) & (f.val if part == "val" else True)
        idx.append(np.flatnonzero(m) + offset)
        ys.append(f.y[m])
        offset += len(f.rep.accounts)
    return np.concatenate(idx), np.concatenate(ys)


def fit_model(xt, yt, xv, av, targets, yv, names, rounds: int, seed: int = SEED):
    """The account model's learner (as :func:`~sectorflow_aml.account_training.train`): weighted classes, early
    stopping on validation account AP every 25 trees, the fewest trees within 0.002 of the best."""
    import lightgbm as lgb

    p = dict(PARAMS, seed=seed)
    pos = yt.sum()
    w = np.where(yt > 0, (yt.size - pos) / pos, 1.0)
    booster = lgb.Booster(params=p, train_set=lgb.Dataset(xt, yt, weight=w, feature_name=names, free_raw_data=False))
    raw = np.zeros(xv.shape[0])
    best_ap, best_it, history = -1.0, 0, []
    for it in range(1, rounds + 1):
        booster.update()
        if it % 25 == 0:
            raw += booster.predict(xv, raw_score=True, start_iteration=it - 25, num_iteration=25, num_threads=1)
            ap = average_precision(account_scores(raw, av, targets), yv)
            history.append((it, round(ap, 6)))
            if ap > best_ap + 1e-4:
                best_ap, best_it = ap, it
            elif it - best_it >= 150:
                break
    trees = fewest_trees(history) or best_it
    return lgb.Booster(model_str=booster.model_to_string(num_iteration=trees)), trees


def fit_baseline(xt, yt, names):
    import lightgbm as lgb

    return lgb.train(dict(L.BASELINE_PARAMS), lgb.Dataset(xt, yt, feature_name=names), num_boost_round=200), 200


# (label, learner, inputs, training points, scoring points)
VARIANTS = [
    ("model (shipped): max over every row", "model", "model", "daily", "all"),
    ("model: max over daily snapshots", "model", "model", "daily", "daily"),
    ("model: max over month ends", "model", "model", "daily", "month_end"),
    ("model: max over every row with a full window", "model", "model", "daily", "all_full"),
    ("model: max over month ends with a full window", "model", "model", "daily", "month_end_full"),
    ("model @month-end: trained and scored at month ends", "model", "model", "month_end", "month_end"),
    ("model + baseline30 (absolute): daily snapshots", "model", "model+baseline", "daily", "daily"),
    ("model + baseline30 (absolute): month ends", "model", "model+baseline", "daily", "month_end"),
    ("model + baseline30 (scale-free): daily snapshots", "model", "model+baseline_sf", "daily", "daily"),
    ("model + baseline30 (scale-free): month ends", "model", "model+baseline_sf", "daily", "month_end"),
    ("model + baseline30 (absolute) @month-end", "model", "model+baseline", "month_end", "month_end"),
    ("model + baseline30 (scale-free) @month-end", "model", "model+baseline_sf", "month_end", "month_end"),
    ("baseline30 (absolute) @month-end", "baseline", "baseline", "month_end", "month_end"),
    ("baseline30 (scale-free) @month-end", "baseline", "baseline_sf", "month_end", "month_end"),
]
REF_MODEL, REF_BASE = VARIANTS[0][0], "baseline30 (absolute) @month-end"
REF_DAY = "model: max over daily snapshots"


def bootstrap(scores: dict[str, np.ndarray], y: np.ndarray, n: int, seed: int = SEED) -> dict:
    """Stratified paired bootstrap over accounts: 95 % interval of AP(variant) - AP(reference)."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    diffs: dict[str, dict[str, list[float]]] = {k: {REF_MODEL: [], REF_BASE: [], REF_DAY: []} for k in scores}
    for _ in range(n):
        i = np.concatenate([rng.choice(pos, pos.size), rng.choice(neg, neg.size)])
        ap = {k: average_precision(s[i], y[i]) for k, s in scores.items()}
        for k in scores:
            for ref in (REF_MODEL, REF_BASE, REF_DAY):
                diffs[k][ref].append(ap[k] - ap[ref])
    return {k: {ref: [round(float(np.percentile(v, 2.5)), 4), round(float(np.percentile(v, 97.5)), 4),
                      round(float(np.mean(np.asarray(v) > 0)), 3)] for ref, v in d.items()} for k, d in diffs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smoke run: first 30,000 rows of each file, 100 trees")
    ap.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (0: none)")
    ap.add_argument("--no-test", action="store_true", help="validation only (dev_s303 not read)")
    ap.add_argument("--seeds", type=int, default=1, help="LightGBM seeds of the model's learner (split fixed): "
                    "validation AP over seeds 20211, 20212, ... (the baseline's defaults do not sample: one fit)")
    ap.add_argument("--also", action="append", default=[], metavar="FOLDER",
                    help="another amlgentex_dev folder scored by the same models (e.g. dev3b_s404, another "
                         "configuration), printed in a second table")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.quick:
        L.MAX_ROWS = 30_000
    rounds = 100 if args.quick else 600
    t0 = time.perf_counter()
    files = [File(n, i) for i, n in enumerate(("dev_s101", "dev_s202"))]
    test = None if args.no_test else File("dev_s303", 0)
    print(f"replayed + baseline rows in {time.perf_counter() - t0:.1f} s; snapshot rows with a baseline row: "
          f"{', '.join(f'{f.name} {f.aligned:.4f}' for f in files + ([test] if test else []))}", flush=True)
    others = [File(n, 0) for n in args.also]
    v_targets, v_y = targets_of(files, "val")
    out: dict = {"validation": {}, "test_dev_s303": {}, "trees": {}, **{f"also_{f.name}": {} for f in others}}
    val_scores: dict[str, np.ndarray] = {}
    fitted: dict[tuple, tuple] = {}
    for label, learner, kind, tpts, epts in VARIANTS:
        start = time.perf_counter()
        names = names_of(kind)
        key = (learner, kind, tpts)
        # the model's learner early-stops on its validation account AP over its training points' rows ("all" for the
        # shipped model, as train()); the aggregation variants reuse that fit
        if key not in fitted:
            xt, yt, _ = stack(files, kind, tpts, tpts, "train")
            out.setdefault("train_rows", {})[f"{kind} @{tpts}"] = [int(yt.size), int(yt.sum())]
            if learner == "model":
                stop_pts = "all" if kind == "model" and tpts == "daily" else tpts
                xv, _, av = stack(files, kind, tpts, stop_pts, "val")
                fitted[key] = fit_model(xt, yt, xv, av, v_targets, v_y, names, rounds)
            else:
                fitted[key] = fit_baseline(xt, yt, names)
        booster, trees = fitted[key]
        xv, _, av = stack(files, kind, tpts, epts, "val")
        s = account_scores(booster.predict(xv, raw_score=True, num_threads=1), av, v_targets)
        val_scores[label] = s
        out["validation"][label] = ranking_metrics(s, v_y)
        out["trees"][label] = trees
        if test is not None:
            xs, _, at = stack([test], kind, tpts, epts, "test")
            t_targets, t_y = targets_of([test], "test")
            out["test_dev_s303"][label] = ranking_metrics(
                account_scores(booster.predict(xs, raw_score=True, num_threads=1), at, t_targets), t_y)
        for f in others:
            xs, _, at = stack([f], kind, tpts, epts, "test")
            t_targets, t_y = targets_of([f], "test")
            out[f"also_{f.name}"][label] = ranking_metrics(
                account_scores(booster.predict(xs, raw_score=True, num_threads=1), at, t_targets), t_y)
        print(f"{label}: validation {out['validation'][label]['average_precision']} ({trees} trees, "
              f"{time.perf_counter() - start:.1f} s)", flush=True)
    seed_aps: dict[str, list[float]] = {label: [out["validation"][label]["average_precision"]]
                                        for label, *_ in VARIANTS}
    for extra in range(1, args.seeds):
        refit: dict[tuple, tuple] = {}
        for label, learner, kind, tpts, epts in VARIANTS:
            if learner != "model":
                continue
            key = (learner, kind, tpts)
            if key not in refit:
                xt, yt, _ = stack(files, kind, tpts, tpts, "train")
                stop_pts = "all" if kind == "model" and tpts == "daily" else tpts
                xv, _, av = stack(files, kind, tpts, stop_pts, "val")
                refit[key] = fit_model(xt, yt, xv, av, v_targets, v_y, names_of(kind), rounds, seed=SEED + extra)
            xv, _, av = stack(files, kind, tpts, epts, "val")
            s = account_scores(refit[key][0].predict(xv, raw_score=True, num_threads=1), av, v_targets)
            seed_aps[label].append(round(average_precision(s, v_y), 4))
        print(f"seed {SEED + extra} done", flush=True)
    out["validation_ap_by_seed"] = seed_aps
    if args.boot:
        out["bootstrap"] = bootstrap(val_scores, v_y, args.boot)
    k = int(v_y.sum())
    print("training rows (positive):", ", ".join(f"{k} {v[0]:,} ({v[1]:,})" for k, v in out["train_rows"].items()))
    print(f"\nvalidation: {v_y.size} accounts of dev_s101 + dev_s202, {k} laundering (K={k}); "
          f"AP difference: 95 % bootstrap interval over accounts ({args.boot} draws) and share of draws > 0")
    head = f"{'variant':60s} {'trees':>5s} {'AP':>6s} {'P@K':>6s} {'R@1%':>6s}"
    if test is not None:
        head += f" | {'s303 AP':>7s} {'P@K':>6s} {'R@1%':>6s}"
    if args.boot:
        head += "".join(f" | {h:>23s}" for h in ("AP - model [95%] P>0", "AP - baseline [95%] P>0",
                                                  "AP - day-close [95%] P>0"))
    if args.seeds > 1:
        head += f" | AP over {args.seeds} seeds"
    print(head)
    for label, *_ in VARIANTS:
        v = out["validation"][label]
        line = (f"{label:60s} {out['trees'][label]:5d} {v['average_precision']:6.3f} {v['precision_at_k']:6.3f} "
                f"{v['recall_at_1pct_fpr']:6.3f}")
        if test is not None:
            t = out["test_dev_s303"][label]
            line += f" | {t['average_precision']:7.3f} {t['precision_at_k']:6.3f} {t['recall_at_1pct_fpr']:6.3f}"
        if args.boot:
            b = out["bootstrap"][label]
            line += "".join(f" | {b[r][0]:+.3f} .. {b[r][1]:+.3f} {b[r][2]:5.3f}" for r in (REF_MODEL, REF_BASE, REF_DAY))
        if args.seeds > 1:
            a = seed_aps[label]
            line += f" | {np.mean(a):.3f} [{min(a):.3f}..{max(a):.3f}]" if len(a) > 1 else " | (one fit)"
        print(line)
    for f in others:
        print(f"\n{f.name} (scored by the same models): AP / P@K / R@1%FPR")
        for label, *_ in VARIANTS:
            t = out[f"also_{f.name}"][label]
            print(f"{label:60s} {t['average_precision']:6.3f} {t['precision_at_k']:6.3f} {t['recall_at_1pct_fpr']:6.3f}")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"total {out['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
