"""The learning benchmark's window-exact baseline (benchmarks/aml_learning.py): its rows see the window only."""

from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from core_support import REPO_ROOT

pytest.importorskip("sectorflow_aml")
from sectorflow_aml.schema import Channel, Transaction  # noqa: E402

spec = importlib.util.spec_from_file_location("aml_learning", REPO_ROOT / "benchmarks" / "aml_learning.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
T0 = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)


def _txns():
    """A small stream over 40 days: transfers between A, B, C, D, cash on A, repeated pairs, a reciprocal pair."""
    rng = np.random.default_rng(5)
    out = []
    accounts = ["A", "B", "C", "D"]
    for i in range(120):
        when = T0 + timedelta(hours=8 * i + int(rng.integers(0, 5)))
        s, r = rng.choice(accounts, size=2, replace=False)
        channel = Channel.transfer
        if i % 9 == 0:
            r, channel = s, Channel.cash_deposit if i % 2 else Channel.cash_withdrawal
        out.append(Transaction(transaction_id=str(i), timestamp=when, sender_account=s, receiver_account=r,
                               amount=f"{rng.uniform(10, 900):.2f}", channel=channel))
    return out


def test_window_baseline_with_a_window_longer_than_the_period_is_the_whole_period_baseline():
    txns = _txns()
    ids, whole = bench.baseline_features(txns)
    acc, rows, _ = bench.window_baseline_features(txns, lookback_days=1000)
    assert rows.shape == (len(acc), len(bench.BASELINE_NAMES)) == (len(acc), 30)
    last = {a: rows[i] for i, a in enumerate(acc)}  # an account's last row: its last day, the whole period seen
    for a, row in zip(ids, whole):
        np.testing.assert_allclose(last[a], row, rtol=1e-9, atol=1e-6)


def test_window_baseline_rows_see_only_the_window():
    txns = _txns()
    acc, rows, row_days = bench.window_baseline_features(txns, lookback_days=5)
    days = {}
    for t in txns:  # the rows come one per account per active day, in day order
        days.setdefault(t.timestamp.date(), []).append(t)
    col = {n: i for i, n in enumerate(bench.BASELINE_NAMES)}
    k = 0
    for day in sorted(days):
        active = list(dict.fromkeys(a for t in days[day] for a in (t.sender_account, t.receiver_account)))
        for a in active:
            assert acc[k] == a
            last = max(t.timestamp for t in days[day] if a in (t.sender_account, t.receiver_account))
            seen = [t for t in txns if last - timedelta(days=5) <= t.timestamp <= last and a in
                    (t.sender_account, t.receiver_account)]
            sent = [t for t in seen if t.sender_account == a and t.receiver_account != a]
            got = [t for t in seen if t.receiver_account == a and t.sender_account != a]
            assert rows[k, col["n_out"]] == len(sent) and rows[k, col["n_in"]] == len(got)
            assert rows[k, col["sum_out"]] == pytest.approx(sum(float(t.amount) for t in sent))
            assert rows[k, col["max_in"]] == (max(float(t.amount) for t in got) if got else 0.0)
            assert rows[k, col["deg_out"]] == len({t.receiver_account for t in sent})
            assert rows[k, col["reciprocal"]] == len({t.receiver_account for t in sent} & {t.sender_account
                                                                                          for t in got})
            k += 1
    assert k == len(acc)
    assert rows[:, col["n_out"]].max() < sum(1 for t in txns if t.sender_account == "A")  # the window forgets
    assert row_days.tolist() == sorted(row_days.tolist())
    assert {(a, d) for a, d in zip(acc, row_days.tolist())} == {
        (a, int(t.timestamp.timestamp() // 86_400)) for t in txns for a in (t.sender_account, t.receiver_account)}


def test_month_end_rows_are_each_accounts_last_row_of_each_month():
    txns = _txns()  # 1 March to 10 April
    acc, _, row_days = bench.window_baseline_features(txns, lookback_days=30)
    keep = bench._month_end_rows(acc, row_days)
    march_end = int(datetime(2026, 4, 1, tzinfo=timezone.utc).timestamp() // 86_400)
    got = {(acc[i], row_days[i] < march_end): int(row_days[i]) for i in keep.tolist()}
    assert len(got) == keep.size == 8  # 4 accounts x 2 months
    for (a, in_march), day in got.items():
        same = [d for b, d in zip(acc, row_days.tolist()) if b == a and (d < march_end) == in_march]
        assert day == max(same)
