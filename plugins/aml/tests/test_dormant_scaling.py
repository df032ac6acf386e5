"""Dormant reactivation on a busy account (30 Nov): after an account idle for 215 days became a busy shop, every one of
its transactions in the 30 watch days listed all its windowed transactions again, even after the reactivation had
alerted (8,000 transfers on one day: 4.70 s, now 0.72 s; 2 shared cores, load). The scan is skipped once the
reactivation's alert is armed in the window's cooldown, which decides the same alerts."""

from __future__ import annotations

from collections import deque

from sectorflow import Taskflow

from sectorflow_aml import window as window_module


class _CountingDeque(deque):
    """An account's incoming / outgoing deque that counts the edges forward iteration yields (the rule's scan)."""

    yielded = 0

    def __iter__(self):
        for e in deque.__iter__(self):
            _CountingDeque.yielded += 1
            yield e


def _reactivated(n: int) -> list[dict]:
    out = [{"transaction_id": "old", "timestamp": "2026-04-01T10:00:00Z", "sender_account": "X",
            "receiver_account": "DORM", "amount": "100", "currency": "CNY", "channel": "transfer"}]
    for i in range(n):
        s = 3600 + 10 * i
        out.append({"transaction_id": f"r{i}", "timestamp": f"2026-11-02T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z",
                    "sender_account": f"PAYER{i}", "receiver_account": "DORM", "amount": "1000", "currency": "CNY",
                    "channel": "transfer"})
    return out


def test_a_reactivated_busy_account_is_not_rescanned_after_its_alert(monkeypatch):
    monkeypatch.setattr(window_module, "deque", _CountingDeque)
    monkeypatch.setattr(_CountingDeque, "yielded", 0)
    n = 400
    out = Taskflow("aml", model=False)(_reactivated(n))
    hits = [o.transaction_id for o in out if any(a.typology == "dormant_reactivation" for a in o.alerts)]
    # idle from 1 April to 2 November (215 days >= 180); 1,000 a transfer reaches min_amount (50,000) on the 50th
    assert hits == ["r49"]
    # the scans up to the alert (1 + 2 + ... + 50 edges) and none after it: n * n / 2 = 80,000 edges before
    assert _CountingDeque.yielded < 2 * n + 50 * 51 // 2
