"""Figures of the account risk model (docs/aml.md, "Account risk model"): train on labelled data, evaluate elsewhere.

    .venv/bin/python benchmarks/aml_learning.py [--only amlgentex|few|amlsim|baseline|mlp] [--json OUT]
        [--max-rows N]

1. AMLGentex: train on dev_s101 + dev_s202 (validation split inside them for every choice), evaluate on dev_s303
   (account score = max over its rows, as ``sectorflow aml evaluate`` computes from results).
2. The same with only 25 labelled laundering accounts for training (the other laundering accounts unlabelled).
3. Baselines: plain LightGBM (defaults, 200 rounds) on 30 simple per-account aggregates (counts, sums, means,
   extremes, degrees): (a) over each account's whole period (not window-exact: it sees the future, the test month
   included), (b) window-exact, as the account model's rows: one row per account per day it is active, over the 30
   days before its last transaction of that day; account score = max over its days.
4. AMLSim: train on two sample runs, evaluate on the third (F1 at the validation threshold of best F1); and a second
   stage at case level on the graph evidence of :mod:`sectorflow_aml.case_graph` (an account-month's own period
   maximum, its counterparties' highest score, how many of them score >= 0.5, its counterparties): stacked without
   leaking, each training run's first-stage scores come from a model trained on the *other* training run; the
   second stage is fitted on a seeded, stratified 75 % of those accounts, and the model (logistic regression or
   LightGBM), its early stopping and its threshold (best F1) are chosen on the other 25 %; the test run is scored by
   the first stage trained on both training runs. ``--no-graph`` skips it.
5. ``--only mlp``: the model choice, a Paddle MLP on the same rows and split (validation account AP only).

Data: ``../shared/data/amlgentex_dev`` (AMLGentex, arXiv:2506.13989) and ``../shared/data/amlsim_sample``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "aml" / "src"))

from sectorflow_aml.account_training import (PARAMS, account_max, evaluate_replay, ranking_metrics,  # noqa: E402
                                             replay, score_replay, train)
from sectorflow_aml.case_graph import GRAPH_FEATURES, graph_rows  # noqa: E402
from sectorflow_aml.labels import Labels, read_labels  # noqa: E402
from sectorflow_aml.loaders import load_transactions  # noqa: E402
from sectorflow_aml.metrics import f1_at  # noqa: E402

GENTEX = ROOT.parent / "shared" / "data" / "amlgentex_dev"
AMLSIM = ROOT.parent / "shared" / "data" / "amlsim_sample"
SEED = 20211


MAX_ROWS: int | None = None
"""``--max-rows``: read only the first rows of each file (a smoke run; the figures need whole files)."""


def _load(path: Path, fmt: str):
    if MAX_ROWS is None:
        return load_transactions(path, format=fmt)[0]
    from itertools import islice

    from sectorflow_aml.loaders import READERS
    from sectorflow_aml.schema import Transaction

    return [t for _, t in islice(READERS[fmt](path), MAX_ROWS) if isinstance(t, Transaction)]


def gentex(name: str):
    return _load(GENTEX / name / "transactions.csv.gz", "amlgentex"), read_labels(GENTEX / name / "accounts.csv.gz")


def few_labels(labels: Labels, n_pos: int, rng: np.random.Generator) -> Labels:
    """``labels`` with only ``n_pos`` laundering accounts kept (the others left unlabelled)."""
    pos = sorted(a for a, v in labels.label.items() if v)
    keep = set(rng.choice(pos, size=min(n_pos, len(pos)), replace=False).tolist())
    out = Labels(source=labels.source + f" ({n_pos} positives)")
    for a, v in labels.label.items():
        if not v or a in keep:
            out.label[a] = v
            out.typologies[a] = labels.typologies.get(a, ())
    return out


def baseline_features(txns) -> tuple[list[str], np.ndarray]:
    """30 whole-period aggregates per account (the 'plain GBDT' baseline; not window-exact, not served)."""
    acc: dict[str, int] = {}
    rows: list[list[float]] = []

    def get(a: str) -> list[float]:
        k = acc.get(a)
        if k is None:
            k = acc[a] = len(rows)
            rows.append([0.0] * 12 + [np.inf, 0.0, np.inf, 0.0] + [np.inf, -np.inf] + [0.0] * 2)
        return rows[k]

    partners: dict[str, tuple[set, set]] = {}
    days: dict[str, set] = {}
    for t in txns:
        amt = float(t.amount)
        day = t.timestamp.toordinal()
        s, r = t.sender_account, t.receiver_account
        if s == r:
            row = get(s)
            i = 0 if t.channel.value == "cash_deposit" else 2
            row[i] += 1
            row[i + 1] += amt
            days.setdefault(s, set()).add(day)
            continue
        rs, rr = get(s), get(r)
        rs[4] += 1; rs[5] += amt; rs[6] += amt * amt; rs[14] = min(rs[14], amt); rs[15] = max(rs[15], amt)  # noqa
        rr[8] += 1; rr[9] += amt; rr[10] += amt * amt; rr[12] = min(rr[12], amt); rr[13] = max(rr[13], amt)  # noqa
        for a in (s, r):
            row = rows[acc[a]]
            row[16] = min(row[16], day)
            row[17] = max(row[17], day)
            days.setdefault(a, set()).add(day)
        partners.setdefault(s, (set(), set()))[1].add(r)
        partners.setdefault(r, (set(), set()))[0].add(s)
    names = ["n_cash_in", "sum_cash_in", "n_cash_out", "sum_cash_out", "n_out", "sum_out", "sq_out", "_", "n_in",
             "sum_in", "sq_in", "_", "min_in", "max_in", "min_out", "max_out", "first_day", "last_day",
             "_", "_"]
    out = []
    for a, k in acc.items():
        r = rows[k]
        ins, outs = partners.get(a, (set(), set()))
        mean_in = r[9] / r[8] if r[8] else 0.0
        mean_out = r[5] / r[4] if r[4] else 0.0
        std_in = np.sqrt(max(0.0, r[10] / r[8] - mean_in ** 2)) if r[8] else 0.0
        std_out = np.sqrt(max(0.0, r[6] / r[4] - mean_out ** 2)) if r[4] else 0.0
        span = r[17] - r[16] if np.isfinite(r[16]) else 0.0
        out.append(_baseline_row(r[0], r[1], r[2], r[3], r[4], r[5], r[8], r[9], mean_in, mean_out, std_in, std_out,
                                 r[12] if np.isfinite(r[12]) else 0.0, r[13], r[14] if np.isfinite(r[14]) else 0.0,
                                 r[15], len(ins), len(outs), len(ins & outs), span, len(days.get(a, ()))))
    return list(acc), np.asarray(out, dtype=np.float64)


BASELINE_NAMES = ("n_cash_in", "sum_cash_in", "n_cash_out", "sum_cash_out", "n_out", "sum_out", "n_in", "sum_in",
                  "mean_in", "mean_out", "std_in", "std_out", "min_in", "max_in", "min_out", "max_out", "deg_in",
                  "deg_out", "reciprocal", "span_days", "active_days", "out_in_ratio", "net_in", "out_transfer_share",
                  "in_transfer_share", "cash_in_share", "cash_out_share", "deg_in_per_in", "deg_out_per_out",
                  "transfers_per_day")
"""The 30 baseline features, in the order both :func:`baseline_features` and :func:`window_baseline_features` give
them."""

_CIN, _COUT, _OUT, _IN = range(4)


class _WindowAccount:
    """One account's transactions of the last ``lookback`` seconds and the baseline aggregates over them."""

    __slots__ = ("events", "n", "sum", "sq", "ins", "outs", "recip", "days", "tdays", "max_in", "min_in", "max_out",
                 "min_out")

    def __init__(self) -> None:
        from collections import deque

        self.events = deque()  # (ts, kind, amount, counterparty, day)
        self.n, self.sum, self.sq = [0, 0, 0, 0], [0.0] * 4, [0.0] * 4
        self.ins: dict[str, int] = {}
        self.outs: dict[str, int] = {}
        self.recip = 0
        self.days: dict[int, int] = {}
        self.tdays: dict[int, int] = {}
        # monotonic deques of (ts, amount): the window's largest / smallest transfer in and out
        self.max_in, self.min_in, self.max_out, self.min_out = deque(), deque(), deque(), deque()

    def evict(self, horizon: float) -> None:
        ev = self.events
        while ev and ev[0][0] < horizon:
            ts, kind, amt, cp, day = ev.popleft()
            self.n[kind] -= 1
            self.sum[kind] -= amt
            self.sq[kind] -= amt * amt
            _drop(self.days, day)
            if kind >= _OUT:
                _drop(self.tdays, day)
                mine, other = (self.outs, self.ins) if kind == _OUT else (self.ins, self.outs)
                if _drop(mine, cp) == 0 and cp in other:
                    self.recip -= 1
        for q in (self.max_in, self.min_in, self.max_out, self.min_out):
            while q and q[0][0] < horizon:
                q.popleft()

    def add(self, ts: float, kind: int, amt: float, cp: str | None, day: int) -> None:
        self.events.append((ts, kind, amt, cp, day))
        self.n[kind] += 1
        self.sum[kind] += amt
        self.sq[kind] += amt * amt
        self.days[day] = self.days.get(day, 0) + 1
        if kind >= _OUT:
            self.tdays[day] = self.tdays.get(day, 0) + 1
            mine, other = (self.outs, self.ins) if kind == _OUT else (self.ins, self.outs)
            c = mine.get(cp, 0)
            mine[cp] = c + 1
            if c == 0 and cp in other:
                self.recip += 1
            hi, lo = (self.max_out, self.min_out) if kind == _OUT else (self.max_in, self.min_in)
            while hi and hi[-1][1] <= amt:
                hi.pop()
            hi.append((ts, amt))
            while lo and lo[-1][1] >= amt:
                lo.pop()
            lo.append((ts, amt))

    def row(self) -> list[float]:
        n, sm, sq = self.n, self.sum, self.sq
        n_in, n_out = n[_IN], n[_OUT]
        s_in, s_out = sm[_IN], sm[_OUT]
        mean_in = s_in / n_in if n_in else 0.0
        mean_out = s_out / n_out if n_out else 0.0
        std_in = float(np.sqrt(max(0.0, sq[_IN] / n_in - mean_in ** 2))) if n_in else 0.0
        std_out = float(np.sqrt(max(0.0, sq[_OUT] / n_out - mean_out ** 2))) if n_out else 0.0
        span = float(max(self.tdays) - min(self.tdays)) if self.tdays else 0.0
        deg_in, deg_out = len(self.ins), len(self.outs)
        return _baseline_row(n[_CIN], sm[_CIN], n[_COUT], sm[_COUT], n_out, s_out, n_in, s_in, mean_in, mean_out,
                             std_in, std_out, self.min_in[0][1] if self.min_in else 0.0,
                             self.max_in[0][1] if self.max_in else 0.0, self.min_out[0][1] if self.min_out else 0.0,
                             self.max_out[0][1] if self.max_out else 0.0, deg_in, deg_out, self.recip, span,
                             len(self.days))


def _drop(d: dict, key) -> int:
    """Decrement ``d[key]`` (deleting it at 0); returns the new count."""
    c = d[key] - 1
    if c:
        d[key] = c
    else:
        del d[key]
    return c


def _baseline_row(n_cin, s_cin, n_cout, s_cout, n_out, s_out, n_in, s_in, mean_in, mean_out, std_in, std_out, min_in,
                  max_in, min_out, max_out, deg_in, deg_out, recip, span, active_days) -> list[float]:
    """The 30 values of :data:`BASELINE_NAMES` from an account's aggregates (whole period or window)."""
    return [n_cin, s_cin, n_cout, s_cout, n_out, s_out, n_in, s_in, mean_in, mean_out, std_in, std_out, min_in, max_in,
            min_out, max_out, deg_in, deg_out, recip, span, active_days, s_out / s_in if s_in else 0.0, s_in - s_out,
            n_out / max(1.0, n_out + n_cout), n_in / max(1.0, n_in + n_cin), s_cin / max(1.0, s_cin + s_in),
            s_cout / max(1.0, s_cout + s_out), deg_in / max(1.0, n_in), deg_out / max(1.0, n_out),
            (n_out + n_in) / max(1.0, span)]


def window_baseline_features(txns, lookback_days: float = 30.0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The baseline's 30 features, window-exact: one row per account per UTC day it is active, over the account's
    transactions of the ``lookback_days`` before its last transaction of that day (the account model's window and
    its training snapshot), in arrival order, nothing from later. Returns ``(account of each row, x [n, 30],
    UTC day number of each row [n])``."""
    lookback = lookback_days * 86_400.0
    state: dict[str, _WindowAccount] = {}
    accounts: list[str] = []
    rows: list[list[float]] = []
    row_days: list[int] = []
    pending: dict[str, _WindowAccount] = {}  # accounts touched on the current day: their rows at the day's end
    today = None

    def touch(a: str, horizon: float) -> _WindowAccount:
        st = state.get(a)
        if st is None:
            st = state[a] = _WindowAccount()
        else:
            st.evict(horizon)
        pending[a] = st
        return st

    for t in txns:
        ts = t.timestamp.timestamp()
        day = int(ts // 86_400)
        if day != today:
            for a, st in pending.items():
                accounts.append(a)
                rows.append(st.row())
            row_days.extend([today] * len(pending))
            pending.clear()
            today = day
        amt = float(t.amount)
        horizon = ts - lookback
        s, r = t.sender_account, t.receiver_account
        if s == r:
            touch(s, horizon).add(ts, _CIN if t.channel.value == "cash_deposit" else _COUT, amt, None, day)
            continue
        touch(s, horizon).add(ts, _OUT, amt, r, day)
        touch(r, horizon).add(ts, _IN, amt, s, day)
    for a, st in pending.items():
        accounts.append(a)
        rows.append(st.row())
    row_days.extend([today] * len(pending))
    return (accounts, np.asarray(rows, dtype=np.float64).reshape(-1, len(BASELINE_NAMES)),
            np.asarray(row_days, dtype=np.int64))


def _month_end_rows(accounts: list[str], days: np.ndarray) -> np.ndarray:
    """Indices of each account's last daily row of each UTC calendar month (its row at the month's end)."""
    from datetime import date

    last: dict[tuple[str, int], int] = {}
    month_of: dict[int, int] = {}
    for i, (a, d) in enumerate(zip(accounts, days.tolist())):
        m = month_of.get(d)
        if m is None:
            when = date.fromordinal(date(1970, 1, 1).toordinal() + d)
            m = month_of[d] = when.year * 12 + when.month - 1
        last[(a, m)] = i
    return np.fromiter(sorted(last.values()), dtype=np.int64, count=len(last))


def run_window_baseline(train_sets, test_set, lookback_days: float = 30.0, points: str = "daily") -> dict:
    """The plain GBDT of :func:`run_baseline` on :func:`window_baseline_features`, at ``points`` ``daily`` (every
    daily row, as the account model's training rows and account score) or ``month_end`` (each account's last row of
    each calendar month): trained on those rows of the training files' labelled accounts (labelled with the
    account's label), an account of the test file scored by the max over its rows."""
    import lightgbm as lgb

    def features(txns):
        ids, x, days = window_baseline_features(txns, lookback_days)
        if points == "daily":
            return ids, x
        keep = _month_end_rows(ids, days)
        return [ids[i] for i in keep.tolist()], x[keep]

    xs, ys = [], []
    for txns, labels in train_sets:
        ids, x = features(txns)
        y = np.asarray([labels.label.get(a, -1) for a in ids])
        xs.append(x[y >= 0])
        ys.append(y[y >= 0])
    x, y = np.concatenate(xs), np.concatenate(ys)
    booster = lgb.train(dict(BASELINE_PARAMS), lgb.Dataset(x, y, feature_name=list(BASELINE_NAMES)),
                        num_boost_round=200)
    txns, labels = test_set
    ids, xt = features(txns)
    index = {a: i for i, a in enumerate(dict.fromkeys(ids))}
    acc = np.fromiter((index[a] for a in ids), dtype=np.int64, count=len(ids))
    # raw margins, not probabilities: this unweighted model's margins reach the hundreds, where the sigmoid is 1.0
    # in float64 for many accounts at once, and those ties would decide the top of the ranking
    best = account_max(booster.predict(xt, raw_score=True, num_threads=1), acc, len(index))
    accounts = sorted(labels.label)
    low = float(best.min()) - 1.0 if best.size else 0.0  # accounts without a row rank last
    out = ranking_metrics(np.asarray([best[index[a]] if a in index else low for a in accounts]),
                          np.asarray([labels.label[a] for a in accounts]))
    return {**out, "train_rows": int(y.size), "test_rows": int(xt.shape[0]), "lookback_days": lookback_days,
            "points": points}


BASELINE_PARAMS = {"objective": "binary", "verbose": -1, "num_threads": 1, "seed": SEED, "deterministic": True}
"""The plain GBDT of both baselines: LightGBM's defaults (31 leaves, learning rate 0.1), 200 rounds, unweighted."""


def run_baseline(train_sets, test_set) -> dict:
    import lightgbm as lgb

    xs, ys = [], []
    for txns, labels in train_sets:
        ids, x = baseline_features(txns)
        y = np.asarray([labels.label.get(a, -1) for a in ids])
        xs.append(x[y >= 0])
        ys.append(y[y >= 0])
    x, y = np.concatenate(xs), np.concatenate(ys)
    booster = lgb.train(dict(BASELINE_PARAMS), lgb.Dataset(x, y), num_boost_round=200)
    txns, labels = test_set
    ids, xt = baseline_features(txns)
    s = dict(zip(ids, booster.predict(xt, num_threads=1)))
    accounts = sorted(labels.label)
    return ranking_metrics(np.asarray([s.get(a, 0.0) for a in accounts]),
                           np.asarray([labels.label[a] for a in accounts]))


def run_mlp(reps, labels, seed: int = SEED, epochs: int = 6) -> dict:
    """The model choice: a Paddle MLP on the same rows and split as the GBDT, scored by validation account AP."""
    from sectorflow import import_paddle
    from sectorflow_aml.account_training import _stack, labels_of, split_accounts
    from sectorflow_aml.metrics import average_precision

    paddle = import_paddle()
    paddle.seed(seed)
    ys = [labels_of(r, lab) for r, lab in zip(reps, labels)]
    vals = [split_accounts(y, 0.25, seed + i) for i, y in enumerate(ys)]
    xt, yt, xv, av, _, yv_acc = _stack(reps, ys, vals, 0.2)

    def t(x):
        return np.sign(x) * np.log1p(np.abs(x))

    mu, sd = t(xt).mean(0), t(xt).std(0) + 1e-6
    xt_n = ((t(xt) - mu) / sd).astype(np.float32)
    xv_n = ((t(xv) - mu) / sd).astype(np.float32)
    net = paddle.nn.Sequential(paddle.nn.Linear(xt.shape[1], 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 32),
                               paddle.nn.ReLU(), paddle.nn.Linear(32, 1))
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())
    pos_w = float((yt.size - yt.sum()) / yt.sum())
    rng = np.random.default_rng(seed)
    vmask = yv_acc >= 0
    history = []
    for epoch in range(epochs):
        order = rng.permutation(yt.size)
        net.train()
        for i in range(0, yt.size, 1024):
            idx = order[i:i + 1024]
            x = paddle.to_tensor(xt_n[idx])
            y = paddle.to_tensor(yt[idx].astype(np.float32)).reshape([-1, 1])
            w = paddle.where(y > 0, paddle.full_like(y, pos_w), paddle.ones_like(y))
            loss = paddle.nn.functional.binary_cross_entropy_with_logits(net(x), y, weight=w)
            loss.backward()
            opt.step()
            opt.clear_grad()
        net.eval()
        with paddle.no_grad():
            raw = np.concatenate([net(paddle.to_tensor(xv_n[i:i + 8192])).numpy().reshape(-1)
                                  for i in range(0, xv_n.shape[0], 8192)])
        ap = average_precision(account_max(raw, av, yv_acc.size)[vmask], yv_acc[vmask])
        history.append(round(ap, 4))
    return {"validation_ap_by_epoch": history, "best_validation_ap": max(history)}


def transfers_by_month(txns) -> dict[int, list[tuple[str, str]]]:
    """(sender, receiver) of every transfer per UTC month (``year * 12 + month - 1``, as ``Replay.month``)."""
    out: dict[int, list[tuple[str, str]]] = {}
    for t in txns:
        if t.sender_account != t.receiver_account and not t.channel.is_cash:
            out.setdefault(t.timestamp.year * 12 + t.timestamp.month - 1, []).append(
                (t.sender_account, t.receiver_account))
    return out


def graph_data(rep, scores: np.ndarray, transfers, labels: Labels):
    """Stage-two rows of a replay scored by a first stage: ``(x [n, 5], account index [n], y per account)``."""
    best: dict[int, dict[str, float]] = {}
    for k, m, v in zip(rep.account.tolist(), rep.month.tolist(), scores.tolist()):
        period = best.setdefault(m, {})
        a = rep.accounts[k]
        if v > period.get(a, -1.0):
            period[a] = v
    accounts, _, x = graph_rows(best, transfers)
    index = {a: i for i, a in enumerate(rep.accounts)}
    y = np.asarray([labels.label.get(a, 0) for a in rep.accounts])
    return x, np.asarray([index[a] for a in accounts], dtype=np.int64), y


def _design(x: np.ndarray) -> np.ndarray:
    """Logistic-regression inputs of graph rows: logit of the own score, the counterparty score (and whether there
    is none), log counts, the risky share and one interaction."""
    own = np.clip(x[:, 0], 1e-6, 1 - 1e-6)
    top = np.maximum(x[:, 1], 0.0)
    return np.c_[np.log(own / (1 - own)), top, x[:, 1] < 0, np.log1p(x[:, 2]), np.log1p(x[:, 3]), x[:, 4],
                 top * np.log1p(x[:, 2])]


def fit_logistic(z: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-3, iterations: int = 40):
    """Weighted, L2-regularised logistic regression by Newton's method on standardised inputs; returns a margin
    function."""
    mu, sd = z.mean(0), z.std(0) + 1e-9
    zs = np.c_[(z - mu) / sd, np.ones(len(z))]
    b = np.zeros(zs.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-np.clip(zs @ b, -35, 35)))
        g = zs.T @ (w * (p - y)) + l2 * b
        h = (zs * (w * p * (1 - p))[:, None]).T @ zs + l2 * np.eye(b.size)
        b -= np.linalg.solve(h, g)
    return lambda z2: np.c_[(z2 - mu) / sd, np.ones(len(z2))] @ b


def graph_stage(parts, test) -> dict:
    """Fit the second stage on ``parts`` (``graph_data`` of each training run, scored out of sample) and score
    ``test`` (``graph_data`` of the test run): F1 at the validation threshold, AP, the model chosen."""
    import lightgbm as lgb

    from sectorflow_aml.account_training import split_accounts
    from sectorflow_aml.metrics import average_precision, best_f1

    xt, yt, xv, av, yv = [], [], [], [], []
    offset = 0
    for i, (x, acc, y) in enumerate(parts):
        val = split_accounts(y, 0.25, SEED + 100 + i)
        rows_val = val[acc]
        xt.append(x[~rows_val]); yt.append(y[acc[~rows_val]])  # noqa: E702
        xv.append(x[rows_val]); av.append(acc[rows_val] + offset)  # noqa: E702
        yv.append(np.where(val, y, -1))
        offset += y.size
    xt, yt, xv, av, yv = (np.concatenate(v) for v in (xt, yt, xv, av, yv))
    vmask = yv >= 0
    pos = yt.sum()
    w = np.where(yt > 0, (yt.size - pos) / pos, 1.0)

    def per_account(margin, acc, n):
        out = account_max(margin, acc, n)
        out[~np.isfinite(out)] = -1e9
        return out

    candidates = {}
    lr = fit_logistic(_design(xt), yt, w)
    candidates["logistic"] = (lambda x: lr(_design(x)))
    params = {"objective": "binary", "learning_rate": 0.05, "num_leaves": 7, "min_data_in_leaf": 40, "verbose": -1,
              "num_threads": 2, "seed": SEED, "deterministic": True, "force_row_wise": True}
    booster = lgb.Booster(params=params, train_set=lgb.Dataset(xt, yt, weight=w, feature_name=list(GRAPH_FEATURES)))
    best_ap, best_it = -1.0, 0
    for it in range(1, 301):
        booster.update()
        if it % 25 == 0:
            ap = average_precision(per_account(booster.predict(xv, raw_score=True), av, yv.size)[vmask], yv[vmask])
            if ap > best_ap + 1e-4:
                best_ap, best_it = ap, it
    trees = lgb.Booster(model_str=booster.model_to_string(num_iteration=best_it))
    candidates["lightgbm"] = (lambda x: trees.predict(x, raw_score=True))
    chosen = {}
    for name, f in candidates.items():
        sv = per_account(f(xv), av, yv.size)[vmask]
        chosen[name] = (average_precision(sv, yv[vmask]), best_f1(sv, yv[vmask]))
    name = max(chosen, key=lambda n: chosen[n][0])
    threshold = chosen[name][1][1]
    x, acc, y, accounts, labels = test
    scored = dict(zip(accounts, per_account(candidates[name](x), acc, y.size)))
    every = sorted(labels.label)  # as the first stage's figures: labelled accounts that never transact score lowest
    s = np.asarray([scored.get(a, -1e9) for a in every])
    y = np.asarray([labels.label[a] for a in every])
    f1 = f1_at(s, y, threshold)
    return {"model": name, "validation": {n: {"ap": round(v[0], 4), "best_f1": round(v[1][0], 4)}
                                          for n, v in chosen.items()},
            "f1_at_validation_threshold": round(f1["f1"], 4), **f1, **ranking_metrics(s, y)}


def _cached(cache: Path | None, reps, labels):
    """``train(reps, labels, seed=SEED)``, kept in ``cache`` (a folder; key: the replays' sha256) when given, so a
    second run of the script reuses the first stage (the models are deterministic: same data, same model)."""
    import hashlib

    from sectorflow_aml.account_training import Trained

    if cache is None:
        return train(reps, labels, seed=SEED)
    key = hashlib.sha256("|".join(r.digest for r in reps).encode()).hexdigest()[:16]
    path = cache / f"account-model-{key}.json"
    if path.is_file():
        d = json.loads(path.read_text())
        return Trained(d["model_text"], tuple(d["platt"]), d["metrics"], d["params"], d["num_trees"])
    m = train(reps, labels, seed=SEED)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"model_text": m.model_text, "platt": list(m.platt), "metrics": m.metrics,
                                "params": m.params, "num_trees": m.num_trees}))
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=["amlgentex", "few", "amlsim", "baseline", "mlp"], action="append")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--max-rows", type=int, help="read only the first rows of each file (smoke run)")
    ap.add_argument("--no-graph", action="store_true", help="AMLSim without the case-level graph stage")
    ap.add_argument("--cache", type=Path, help="folder keeping AMLSim's first-stage models between runs")
    args = ap.parse_args()
    global MAX_ROWS
    MAX_ROWS = args.max_rows
    todo = set(args.only or ["amlgentex", "few", "baseline", "amlsim"])
    out: dict = {}
    t0 = time.perf_counter()
    if todo & {"amlgentex", "few", "baseline", "mlp"}:
        data = {n: gentex(n) for n in ("dev_s101", "dev_s202", "dev_s303")}
        reps = {n: replay(data[n][0], name=n) for n in data}
        print(f"replayed AMLGentex: {', '.join(f'{n} {r.x.shape[0]:,} rows {r.seconds:.1f} s' for n, r in reps.items())}")
        if "amlgentex" in todo:
            start = time.perf_counter()
            m = train([reps["dev_s101"], reps["dev_s202"]], [data["dev_s101"][1], data["dev_s202"][1]], seed=SEED)
            test = evaluate_replay(m.model_text, m.platt, reps["dev_s303"], data["dev_s303"][1])
            out["amlgentex"] = {"validation": {k: v for k, v in m.metrics.items() if k != "history"},
                                "test_dev_s303": test, "train_seconds": round(time.perf_counter() - start, 1)}
            print(f"AMLGentex train dev_s101+dev_s202 -> test dev_s303: AP {test['average_precision']}, precision "
                  f"at K {test['precision_at_k']} (K={test['k']}), recall at 1% FPR {test['recall_at_1pct_fpr']}, "
                  f"best F1 {test['best_f1']} (base rate {test['base_rate']}); validation AP "
                  f"{m.metrics['average_precision']}")
        if "few" in todo:
            rng = np.random.default_rng(SEED)
            runs = []
            for rep_seed in range(3):
                few = [few_labels(data[n][1], 13 if n == "dev_s101" else 12, rng) for n in ("dev_s101", "dev_s202")]
                m = train([reps["dev_s101"], reps["dev_s202"]], few, seed=SEED + rep_seed)
                runs.append(evaluate_replay(m.model_text, m.platt, reps["dev_s303"], data["dev_s303"][1]))
            aps = [r["average_precision"] for r in runs]
            out["few_25"] = {"runs": runs, "ap_mean": round(float(np.mean(aps)), 4)}
            print(f"AMLGentex with 25 labelled laundering accounts (3 draws): test AP {aps} (mean "
                  f"{np.mean(aps):.4f}), precision at K {[r['precision_at_k'] for r in runs]}")
        if "mlp" in todo:
            mlp = run_mlp([reps["dev_s101"], reps["dev_s202"]], [data["dev_s101"][1], data["dev_s202"][1]])
            out["mlp"] = mlp
            print(f"model choice: Paddle MLP 64-32 on the same rows, validation account AP by epoch "
                  f"{mlp['validation_ap_by_epoch']} (GBDT: see 'validation AP' above)")
        if "baseline" in todo:
            b = run_baseline([data["dev_s101"], data["dev_s202"]], data["dev_s303"])
            out["baseline"] = b
            print(f"baseline GBDT on 30 whole-period account aggregates (not window-exact: each account's whole "
                  f"period, the future included) -> dev_s303: AP {b['average_precision']}, precision at K "
                  f"{b['precision_at_k']}, recall at 1% FPR {b['recall_at_1pct_fpr']}")
            for points, when in (("daily", "the end of each day an account is active"),
                                 ("month_end", "each account's last active day of each month")):
                w = run_window_baseline([data["dev_s101"], data["dev_s202"]], data["dev_s303"], points=points)
                out[f"baseline_window_{points}"] = w
                print(f"baseline GBDT on the same 30 aggregates, window-exact (the last 30 days, at {when}; account "
                      f"score = max over its rows; {w['train_rows']:,} training rows) -> dev_s303: AP "
                      f"{w['average_precision']}, precision at K {w['precision_at_k']}, recall at 1% FPR "
                      f"{w['recall_at_1pct_fpr']}")
    if "amlsim" in todo:
        runs = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")
        reps, labs, transfers = {}, {}, {}
        for r in runs:
            txns = _load(AMLSIM / r / "transactions.csv.gz", "amlsim")
            reps[r] = replay(txns, name=r)
            labs[r] = read_labels(AMLSIM / r / "nodes.csv.gz")
            transfers[r] = transfers_by_month(txns)
        out["amlsim"] = {}
        singles: dict = {}

        def single(r):  # the first stage trained on one run (stage two's out-of-sample inputs), on first use
            if r not in singles:
                singles[r] = _cached(args.cache, [reps[r]], [labs[r]])
            return singles[r]

        for test in (runs[2], runs[0], runs[1]):  # the shipped scorer's split first
            tr = [r for r in runs if r != test]
            m = _cached(args.cache, [reps[r] for r in tr], [labs[r] for r in tr])
            s = account_max(score_replay(m.model_text, m.platt, reps[test]), reps[test].account,
                            len(reps[test].accounts))
            index = {a: i for i, a in enumerate(reps[test].accounts)}
            accounts = sorted(labs[test].label)
            sc = np.asarray([s[index[a]] if a in index else 0.0 for a in accounts])
            y = np.asarray([labs[test].label[a] for a in accounts])
            f1 = f1_at(sc, y, m.metrics["threshold_best_f1"])
            rank = ranking_metrics(sc, y)
            out["amlsim"][test] = {"f1_at_validation_threshold": round(f1["f1"], 4), **f1, **rank}
            print(f"AMLSim train {'+'.join(tr)} -> test {test}: F1 {f1['f1']:.4f} (precision {f1['precision']:.4f}, "
                  f"recall {f1['recall']:.4f} at validation threshold {m.metrics['threshold_best_f1']}), AP "
                  f"{rank['average_precision']}", flush=True)
            if not args.no_graph:
                parts = [graph_data(reps[r], score_replay(single(o).model_text, single(o).platt, reps[r]),
                                    transfers[r], labs[r]) for r, o in ((tr[0], tr[1]), (tr[1], tr[0]))]
                g = graph_stage(parts, (*graph_data(reps[test], score_replay(m.model_text, m.platt, reps[test]),
                                                    transfers[test], labs[test]), reps[test].accounts, labs[test]))
                out["amlsim"][test]["graph_stage"] = g
                print(f"  + case-level graph stage ({g['model']}; validation {g['validation']}): F1 {g['f1']:.4f} "
                      f"(precision {g['precision']:.4f}, recall {g['recall']:.4f}), AP {g['average_precision']}",
                      flush=True)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["params"] = {k: v for k, v in PARAMS.items()}
    print(f"total {out['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
