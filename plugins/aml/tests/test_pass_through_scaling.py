"""Rapid pass-through on a busy settlement account (30 Nov): every payment out of an account that receives and pays
thousands of transfers a day rescanned its day of incoming transfers (and its outgoing ones), even after the rule had
alerted and its cooldown was holding, so 4,000 transfers took 3.4 s and 8,000 took 22.1 s (quadratic; now 0.32 s
and 0.63 s). The scans are skipped while the account's cooldown holds, which decides the same alerts."""

from __future__ import annotations

from sectorflow import Taskflow

from sectorflow_aml.typologies import rapid_pass_through


def _settlement(n: int) -> list[dict]:
    """A settlement account: even transfers in from distinct payers, odd ones out to distinct payees, 10,000 each,
    one every 10 seconds from 01:00 on one day."""
    out = []
    for i in range(n):
        s = 3600 + 10 * i
        ts = f"2026-11-02T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"
        src, dst = (f"PAYER{i}", "HUB") if i % 2 == 0 else ("HUB", f"PAYEE{i}")
        out.append({"transaction_id": f"t{i}", "timestamp": ts, "sender_account": src, "receiver_account": dst,
                    "amount": "10000", "currency": "CNY", "channel": "transfer"})
    return out


class _CountingCashSideIn:
    """Stands in for ``CASH_SIDE_IN`` in the rule's incoming scan: counts the incoming edges the scan looks at."""

    def __init__(self, real):
        self.real = real
        self.calls = 0

    def __ne__(self, other):
        self.calls += 1
        return other != self.real

    def __eq__(self, other):
        self.calls += 1
        return other == self.real

    __hash__ = None


def test_a_busy_hubs_payments_do_not_rescan_its_inflow_while_the_cooldown_holds(monkeypatch):
    counter = _CountingCashSideIn(rapid_pass_through.CASH_SIDE_IN)
    monkeypatch.setattr(rapid_pass_through, "CASH_SIDE_IN", counter)
    n = 600
    out = Taskflow("aml", model=False)(_settlement(n))
    hits = [(o.transaction_id, [a.typology for a in o.alerts if a.typology == "rapid_pass_through"]) for o in out]
    hits = [(tid, t) for tid, t in hits if t]
    # in: 10,000 at t0, t2, t4, ...; out: 10,000 at t1, t3, ... The inflow reaches min_amount (50,000) at t8, and t9
    # passes on 50,000 of 50,000 (ratio 1.0, within 0.9..1.1); the 24-hour cooldown then holds for the whole day
    assert hits == [("t9", ["rapid_pass_through"])]
    # one look at each inflow before the alert, then none: 300 payments out each rescanning up to 300 transfers in
    # (about n * n / 8 = 45,000 looks) before
    assert counter.calls < n
