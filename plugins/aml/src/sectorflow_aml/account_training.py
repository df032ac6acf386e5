"""Training of the account risk model (``sectorflow aml train``; the shipped bundle's script and the benchmark).

- Replay (:func:`replay`): the transactions go, in order, through the same
  :class:`~sectorflow_aml.window.TransactionWindow` and
  :class:`~sectorflow_aml.account_features.AccountFeatureExtractor` that serve ``Taskflow("aml")``: every row the
  pipeline would score is computed (the sender's and the receiver's after each transaction).
- Training points (``points``, :data:`POINTS`): ``"daily"`` (the default, the shipped bundle's): one snapshot per
  account per day it is active (its row after its last transaction of that UTC day), or ``"month_end"``: each
  account's row after its last transaction of each UTC calendar month (:func:`month_end_rows`: the month-close row;
  a bundle trained so has its cases read at each period's close, :mod:`sectorflow_aml.cases`). Rows are labelled
  with the account's label; accounts without a label are left out. The points decide the validation rows too:
  ``"daily"`` validates on every row of the validation accounts (account score = max over every row),
  ``"month_end"`` on their month-end rows (account score = max over its month-close scores), so early stopping,
  calibration and the threshold are chosen where the model is read.
- Split (:func:`split_accounts`): a seeded, stratified share of the labelled accounts is held out for validation
  (model choice, early stopping, calibration, metrics), and of the training accounts only the days before the last
  ``time_holdout`` share of the period are trained on, so validation is later in time and on other accounts.
- Model: gradient-boosted trees (LightGBM, saved as its text model, never pickled), positives weighted so both
  classes weigh the same, early stopping on validation account-level average precision; the model keeps the
  **fewest trees** whose validation AP is within :data:`TREE_TOLERANCE` of the best one seen
  (:func:`fewest_trees`): scoring cost grows with the trees (about 1.5 us a row per 100 trees), and a smaller AP
  difference than that is far below the validation AP's own sampling noise.
- Calibration: Platt scaling (logistic on the raw tree margin) fitted on the validation accounts' **period
  scores** (per calendar month: the month-close margin with ``"month_end"``, the max of the month's raw margins
  with ``"daily"``), so the calibrated probability is the probability that an account-month is laundering. Stored
  in the bundle as JSON.
- Account-level evaluation (:func:`account_max`, :func:`evaluate_replay`): an account's score is the max of its
  scores over its scoring rows (every row, or its month-end rows).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .account_features import ACCOUNT_FEATURES, AccountFeatureExtractor
from .labels import Labels, check_overlap
from .metrics import average_precision, best_f1, precision_at_k, recall_at_fpr
from .schema import Transaction
from .window import TransactionWindow

DAY = 86_400.0


@dataclass
class Replay:
    """Every account row of one replayed transaction set.

    ``x``: float32 ``[n, F]``; ``account``: int ``[n]`` (index into ``accounts``); ``day``: int ``[n]`` (UTC day
    number); ``month``: int ``[n]`` (``year * 12 + month - 1``); ``snapshot``: bool ``[n]``, the account's last row
    of its day (the training rows).
    """

    name: str
    x: np.ndarray
    account: np.ndarray
    day: np.ndarray
    month: np.ndarray
    snapshot: np.ndarray
    accounts: list[str]
    n_transactions: int
    seconds: float
    digest: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def replay(transactions: Iterable[Transaction], lookback_days: float = 30.0, name: str = "") -> Replay:
    """Replay ``transactions`` (in arrival order) through the window and the account features.

    Also computes the sha256 of the transactions (:func:`~sectorflow_aml.schema.transactions_digest` lines) for the
    bundle's provenance.
    """
    start = time.perf_counter()
    window = TransactionWindow(lookback_days=lookback_days)
    extractor = AccountFeatureExtractor(window.lookback)
    ids: dict[str, int] = {}
    rows: list[list[float]] = []
    acc: list[int] = []
    days: list[int] = []
    last: dict[tuple[int, int], int] = {}
    digest = hashlib.sha256()
    n = 0
    for txn in transactions:
        if txn.transaction_id in window.ids:
            continue  # a repeated id is not counted by the pipeline either
        n += 1
        digest.update(f"{txn.transaction_id}|{txn.timestamp.isoformat()}|{txn.sender_account}|"
                      f"{txn.receiver_account}|{txn.amount}|{txn.currency}|{txn.channel.value}\n".encode())
        edge = window.add(txn)
        day = int(edge.ts // DAY)
        for account, row in extractor.rows(edge, window):
            k = ids.get(account)
            if k is None:
                k = ids[account] = len(ids)
            last[(k, day)] = len(rows)
            rows.append(row)
            acc.append(k)
            days.append(day)
    x = np.asarray(rows, dtype=np.float32).reshape(-1, len(ACCOUNT_FEATURES))
    day_arr = np.asarray(days, dtype=np.int64)
    snap = np.zeros(len(rows), dtype=bool)
    snap[np.fromiter(last.values(), dtype=np.int64, count=len(last))] = True
    months = _months(day_arr)
    return Replay(name, x, np.asarray(acc, dtype=np.int64), day_arr, months, snap, list(ids), n,
                  time.perf_counter() - start, digest.hexdigest())


def _months(days: np.ndarray) -> np.ndarray:
    """Calendar month numbers (``year * 12 + month - 1``, UTC) of day numbers."""
    out = np.empty_like(days)
    cache: dict[int, int] = {}
    for i, d in enumerate(days.tolist()):
        m = cache.get(d)
        if m is None:
            when = datetime.fromtimestamp(d * DAY, tz=timezone.utc)
            m = cache[d] = when.year * 12 + when.month - 1
        out[i] = m
    return out


POINTS = ("month_end", "daily")
"""Training (and validation) points of :func:`train`: see the module docstring."""

DEFAULT_POINTS = "daily"
"""The points the shipped bundle and ``sectorflow aml train`` use by default. Month ends gained on the validation
accounts where they were found, but not on AMLSim and not beyond noise on warm windows (docs/aml.md, "The case
score: highest or month close"), so the default stayed."""


def month_end_rows(rep: Replay) -> np.ndarray:
    """Bool ``[n]``: each account's last row (in arrival order) of each UTC calendar month of ``rep``: its row after
    its last transaction of the month, the month-close row."""
    n = rep.account.size
    out = np.zeros(n, dtype=bool)
    if not n:
        return out
    key = rep.account.astype(np.int64) * 100_000 + (rep.month - rep.month.min())
    rev = key[::-1]
    _, first_rev = np.unique(rev, return_index=True)
    out[n - 1 - first_rev] = True
    return out


def scoring_rows(rep: Replay, points: str) -> np.ndarray:
    """Bool ``[n]``: the rows an account is scored at under ``points`` (``"daily"``: every row; ``"month_end"``: its
    month-end rows).

    Raises:
        ValueError: unknown ``points``.
    """
    check_points(points)
    return np.ones(rep.account.size, dtype=bool) if points == "daily" else month_end_rows(rep)


def check_points(points: str) -> None:
    """Raise ``ValueError`` unless ``points`` is one of :data:`POINTS`."""
    if points not in POINTS:
        raise ValueError(f"training points {points!r}: give one of {', '.join(POINTS)}")


def labels_of(rep: Replay, labels: Labels) -> np.ndarray:
    """Per-account labels of a replay: int ``[len(rep.accounts)]``, ``-1`` where unlabelled."""
    return np.asarray([labels.label.get(a, -1) for a in rep.accounts], dtype=np.int64)


def split_accounts(y_acc: np.ndarray, share: float, seed: int) -> np.ndarray:
    """A seeded, stratified validation mask over labelled accounts (bool ``[n_accounts]``; unlabelled: False)."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(y_acc.size, dtype=bool)
    for value in (0, 1):
        idx = np.flatnonzero(y_acc == value)
        rng.shuffle(idx)
        mask[idx[:int(round(share * idx.size))]] = True
    return mask


def account_max(scores: np.ndarray, account: np.ndarray, n_accounts: int) -> np.ndarray:
    """The max of each account's row scores (``-inf`` for an account without rows): float64 ``[n_accounts]``."""
    out = np.full(n_accounts, -np.inf)
    np.maximum.at(out, account, scores.astype(np.float64))
    return out


def period_max(scores: np.ndarray, account: np.ndarray, month: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max score per (account, month): ``(scores [m], account index [m])``."""
    key = account * 100_000 + (month - month.min() if month.size else month)
    uniq, inv = np.unique(key, return_inverse=True)
    out = np.full(uniq.size, -np.inf)
    np.maximum.at(out, inv, scores.astype(np.float64))
    return out, uniq // 100_000


def fit_platt(margin: np.ndarray, y: np.ndarray, iterations: int = 200) -> tuple[float, float]:
    """Platt scaling ``p = 1 / (1 + exp(-(a * margin + b)))`` by Newton's method on the log loss, with Platt's
    smoothed targets (``(n+ + 1) / (n+ + 2)`` and ``1 / (n- + 2)``). Returns ``(a, b)``."""
    f = np.asarray(margin, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    pos, neg = y.sum(), y.size - y.sum()
    t = np.where(y > 0, (pos + 1) / (pos + 2), 1 / (neg + 2))
    def loss(a: float, b: float) -> float:
        z = a * f + b
        return float(np.sum(np.logaddexp(0.0, z) - t * z))

    a, b = 1.0, 0.0
    current = loss(a, b)
    for _ in range(iterations):  # damped Newton: halve the step until the loss does not rise
        z = np.clip(a * f + b, -35, 35)
        p = 1 / (1 + np.exp(-z))
        g = np.array([np.sum((p - t) * f), np.sum(p - t)])
        w = p * (1 - p) + 1e-12
        h = np.array([[np.sum(w * f * f), np.sum(w * f)], [np.sum(w * f), np.sum(w)]]) + 1e-9 * np.eye(2)
        step = np.linalg.solve(h, g)
        scale = 1.0
        while scale > 1e-6:
            na, nb = a - scale * step[0], b - scale * step[1]
            trial = loss(na, nb)
            if trial <= current:
                break
            scale /= 2
        else:
            break
        a, b, done = na, nb, current - trial < 1e-12
        current = trial
        if done:
            break
    return float(a), float(b)


def platt(margin: np.ndarray, a: float, b: float) -> np.ndarray:
    """Calibrated probabilities of raw margins."""
    return 1.0 / (1.0 + np.exp(-np.clip(a * np.asarray(margin, dtype=np.float64) + b, -35, 35)))


def ranking_metrics(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Account-level AP, precision at K (K = positives), recall at 1 % FPR, best F1, base rate."""
    k = int(np.sum(y))
    f1, thr = best_f1(scores, y)
    return {"average_precision": round(average_precision(scores, y), 4),
            "precision_at_k": round(precision_at_k(scores, y, k), 4), "k": k,
            "recall_at_1pct_fpr": round(recall_at_fpr(scores, y, 0.01), 4),
            "best_f1": round(f1, 4), "base_rate": round(k / max(1, y.size), 4), "n_accounts": int(y.size)}


@dataclass
class Trained:
    """A trained account model: the LightGBM text model, Platt ``(a, b)``, the validation metrics."""

    model_text: str
    platt: tuple[float, float]
    metrics: dict[str, Any]
    params: dict[str, Any]
    num_trees: int


PARAMS: dict[str, Any] = {
    "objective": "binary", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 40,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0, "verbose": -1,
    "num_threads": 1, "deterministic": True, "force_row_wise": True,
}
"""LightGBM settings (chosen on the validation split of AMLGentex dev_s101 + dev_s202, see docs/aml.md). One thread:
with two, OpenMP's waiting thread spins at every round's barriers and, on a machine whose other core is busy, takes
the core from the thread with work (100 rounds on dev_s101: 14.1 s CPU with two threads, 1.7 s with one, at load
6.6-6.9); one and two threads gave the same trees there (docs/aml.md, "Training rows, split, model")."""


TREE_TOLERANCE = 0.002
"""Validation account AP the shipped tree count may give up against the best count seen (:func:`fewest_trees`).
For scale: the standard error of an AP near 0.75 over 1,000 validation positives is about
``sqrt(0.75 * 0.25 / 1000)`` = 0.014, seven times this tolerance."""


def fewest_trees(history: Sequence[tuple[int, float]], tolerance: float = TREE_TOLERANCE) -> int:
    """The smallest tree count of ``history`` (``[(trees, validation AP), ...]``, as :func:`train` records it) whose
    AP is at least the best AP minus ``tolerance``; ``0`` for an empty history.

    Raises:
        ValueError: a negative ``tolerance``.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, not {tolerance}")
    if not history:
        return 0
    best = max(ap for _, ap in history)
    return min(it for it, ap in history if ap >= best - tolerance)


def _stack(reps: Sequence[Replay], ys: Sequence[np.ndarray], vals: Sequence[np.ndarray],
           time_holdout: float, points: str = "daily") -> tuple[np.ndarray, ...]:
    """Training rows / labels and validation rows over replays: ``points="daily"``: the training accounts' daily
    snapshots and every row of the validation accounts; ``"month_end"``: both accounts' month-end rows."""
    check_points(points)
    xt, yt, xv, av, mv, yv_acc = [], [], [], [], [], []
    offset = 0
    for rep, y_acc, val in zip(reps, ys, vals):
        labelled = y_acc[rep.account] >= 0
        is_val = val[rep.account]
        cut = rep.day.min() + (1 - time_holdout) * (rep.day.max() - rep.day.min() + 1) if rep.day.size else 0
        at = scoring_rows(rep, points)
        train = rep.snapshot & at & labelled & ~is_val & (rep.day < cut)
        xt.append(rep.x[train])
        yt.append(y_acc[rep.account[train]])
        vrows = is_val & labelled & at
        xv.append(rep.x[vrows])
        av.append(rep.account[vrows] + offset)
        mv.append(rep.month[vrows])
        acc_y = np.full(len(rep.accounts), -1)
        acc_y[val] = y_acc[val]
        yv_acc.append(acc_y)
        offset += len(rep.accounts)
    return (np.concatenate(xt), np.concatenate(yt).astype(np.float64), np.concatenate(xv), np.concatenate(av),
            np.concatenate(mv), np.concatenate(yv_acc))


def train(reps: Sequence[Replay], labels: Sequence[Labels], *, seed: int = 20211, val_share: float = 0.25,
          time_holdout: float = 0.2, rounds: int = 600, params: dict[str, Any] | None = None,
          log: Any = None, tree_tolerance: float = TREE_TOLERANCE, points: str = DEFAULT_POINTS) -> Trained:
    """Train, early-stop, calibrate and measure the account model on replays with their labels.

    ``points``: the training and validation rows (:data:`POINTS`, the module docstring). Validation account AP is
    measured every 25 trees; training stops 150 trees after the last gain (or at ``rounds``), and the model keeps
    :func:`fewest_trees` of that history (``tree_tolerance`` 0: the best count).

    Raises:
        ValueError: unknown ``points``.
        InvalidInputError: (from :mod:`sectorflow_aml.labels` users) no labelled positive or negative account in the
            training or validation split.
    """
    import lightgbm as lgb

    from sectorflow import InvalidInputError

    ys = [labels_of(r, lab) for r, lab in zip(reps, labels)]
    for i, (rep, lab) in enumerate(zip(reps, labels)):
        check_overlap(lab, set(rep.accounts), f"training file {i + 1}")
    vals = [split_accounts(y, val_share, seed + i) for i, y in enumerate(ys)]
    xt, yt, xv, av, mv, yv_acc = _stack(reps, ys, vals, time_holdout, points)
    if yt.sum() == 0 or yt.sum() == yt.size:
        raise InvalidInputError("The training split has labelled accounts of one class only: label laundering (1) "
                                "and legitimate (0) accounts that transact in the files.")
    n_acc = yv_acc.size
    vmask = yv_acc >= 0
    if yv_acc[vmask].sum() == 0:
        raise InvalidInputError("The validation split holds no laundering account: label more laundering accounts "
                                "(at least 4 in the validation split; from Python, or a larger val_share).")
    p = dict(PARAMS, seed=seed, **(params or {}))
    pos = yt.sum()
    weight = np.where(yt > 0, (yt.size - pos) / pos, 1.0)
    booster = lgb.Booster(params=p, train_set=lgb.Dataset(xt, yt, weight=weight, feature_name=list(ACCOUNT_FEATURES),
                                                         free_raw_data=False))
    threads = p["num_threads"]
    best_ap, best_iter, history = -1.0, 0, []
    check = 25
    raw = np.zeros(xv.shape[0])
    for it in range(1, rounds + 1):
        booster.update()
        if it % check == 0:
            # the validation margins grow by the last ``check`` trees only (each tree is applied to each validation
            # row once, not once per check); the sums differ from a whole-model prediction in the last bits only
            raw += booster.predict(xv, raw_score=True, start_iteration=it - check, num_iteration=check,
                                   num_threads=threads)
            acc = account_max(raw, av, n_acc)[vmask]
            ap = average_precision(acc, yv_acc[vmask])
            history.append((it, round(ap, 6)))
            if log:
                log(f"round {it}: validation account AP {ap:.4f}")
            if ap > best_ap + 1e-4:
                best_ap, best_iter = ap, it
            elif it - best_iter >= 150:
                break
    best_ap_iter = best_iter
    best_iter = fewest_trees(history, tree_tolerance) or best_iter
    text = booster.model_to_string(num_iteration=best_iter)
    final = lgb.Booster(model_str=text)
    raw = final.predict(xv, raw_score=True, num_threads=threads)
    pm, pa = period_max(raw, av, mv)
    a, b = fit_platt(pm, yv_acc[pa])
    acc_scores = platt(account_max(raw, av, n_acc)[vmask], a, b)
    metrics = ranking_metrics(acc_scores, yv_acc[vmask])
    metrics["threshold_best_f1"] = round(best_f1(acc_scores, yv_acc[vmask])[1], 6)
    metrics.update(train_rows=int(yt.size), train_positive_rows=int(pos), validation_rows=int(xv.shape[0]),
                   rounds=best_iter, rounds_best_validation_ap=best_ap_iter,
                   validation_ap_of_rounds=dict(history).get(best_iter), best_validation_ap=round(best_ap, 6),
                   tree_tolerance=tree_tolerance, history=history, points=points,
                   split=f"seeded stratified {val_share:.0%} of labelled accounts per file held out; training "
                         f"rows: the other accounts' {POINT_WORDS[points]} before the last {time_holdout:.0%} of "
                         f"each file's period; validation: the held-out accounts' {VAL_WORDS[points]}")
    return Trained(text, (a, b), metrics, p, best_iter)


POINT_WORDS = {"daily": "daily snapshots", "month_end": "month-end rows (last row of each UTC calendar month)"}
VAL_WORDS = {"daily": "every row (account score = max over every row)",
             "month_end": "month-end rows (account score = max over its month-close scores)"}


def score_replay(model_text: str, ab: tuple[float, float], rep: Replay) -> np.ndarray:
    """Calibrated scores of every row of a replay (float64 ``[n]``)."""
    import lightgbm as lgb

    booster = lgb.Booster(model_str=model_text)
    return platt(booster.predict(rep.x, raw_score=True, num_threads=PARAMS["num_threads"]), *ab) \
        if rep.x.shape[0] else np.zeros(0)


def account_scores(model_text: str, ab: tuple[float, float], rep: Replay, points: str = DEFAULT_POINTS
                   ) -> np.ndarray:
    """Each account's score on a replay (float64 ``[len(rep.accounts)]``): the max of its calibrated scores over its
    scoring rows (:func:`scoring_rows`: every row for ``"daily"``, its month-close rows for ``"month_end"``)."""
    rows = scoring_rows(rep, points)
    scores = score_replay(model_text, ab, rep)
    return account_max(scores[rows], rep.account[rows], len(rep.accounts))


def evaluate_replay(model_text: str, ab: tuple[float, float], rep: Replay, labels: Labels,
                    points: str = DEFAULT_POINTS) -> dict[str, Any]:
    """Account-level metrics of a model on a replay (account score: :func:`account_scores` under ``points``, as
    ``sectorflow aml evaluate`` reads results: max over month-close scores, or with ``"daily"`` over every row);
    unlabelled accounts and labelled accounts that never transact are counted (the latter with score 0)."""
    s = account_scores(model_text, ab, rep, points)
    index = {a: i for i, a in enumerate(rep.accounts)}
    accounts = sorted(labels.label)
    scores = np.asarray([s[index[a]] if a in index else 0.0 for a in accounts])
    scores[~np.isfinite(scores)] = 0.0
    y = np.asarray([labels.label[a] for a in accounts])
    return ranking_metrics(scores, y)
