"""Structuring on a busy account (fresh-user check, 30 Nov): every just-under cash deposit rescanned the account's
day (cumulative variant) and its whole incoming window (fan-in variant), even after both had alerted, so one shop
account's same-day deposits took quadratic time (4,000 deposits: 49.6 s, now 0.5 s). The scans are skipped while
the variant's cooldown holds, which decides the same alerts."""

from __future__ import annotations

from sectorflow import Taskflow

from sectorflow_aml.typologies.structuring import StructuringRule


def _deposits(n: int) -> list[dict]:
    return [{"transaction_id": f"d{i}", "timestamp": f"2026-11-02T{1 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
             "sender_account": f"WALK{i}", "receiver_account": "SHOP", "amount": "49900", "currency": "CNY",
             "channel": "cash_deposit"} for i in range(n)]


def test_a_busy_accounts_deposits_are_scanned_a_bounded_number_of_times(monkeypatch):
    calls = []
    real = StructuringRule._just_under

    def counted(self, edge):
        calls.append(1)
        return real(self, edge)

    monkeypatch.setattr(StructuringRule, "_just_under", counted)
    n = 400
    out = Taskflow("aml", model=False)(_deposits(n))
    hits = [(o.transaction_id, sorted(a.variant for a in o.alerts if a.typology == "structuring")) for o in out
            if o.alerts]
    # the cumulative variant alerts on the deposit that takes the day's total past RMB 50,000 (the second, 99,800),
    # the fan-in variant once the third distinct depositor paid in (fan_in_min_senders); then each variant's
    # cooldown holds for the day
    assert hits[:2] == [("d1", ["cumulative"]), ("d2", ["fan_in"])]
    assert all(variants == [] for _, variants in hits[2:])
    # each deposit's own band test and at most a constant number more (the scans behind the alerts), not one scan
    # of the day per deposit (n * n / 2 = 80,000 calls before)
    assert len(calls) < 4 * n
