"""An alert lists each account once (a fresh user's settlement account: a pass-through alert on customer C1032 read
["C1032", "SETTLE", "SETTLE"], SETTLE having both paid C1032 and been paid by it; the STR draft named it twice)."""

from __future__ import annotations

from sectorflow import Taskflow


def _t(i: int, hhmm: str, src: str, dst: str, amount: str) -> dict:
    return {"transaction_id": f"t{i}", "timestamp": f"2026-11-02T{hhmm}:00Z", "sender_account": src,
            "receiver_account": dst, "amount": amount, "currency": "CNY", "channel": "transfer"}


def test_a_counterparty_on_both_sides_of_a_pass_through_is_listed_once():
    records = [_t(0, "09:00", "SETTLE", "C1032", "60000"), _t(1, "09:30", "P2", "C1032", "20000"),
               _t(2, "10:00", "C1032", "SETTLE", "30000"), _t(3, "10:30", "C1032", "X9", "45000")]
    out = Taskflow("aml", model=False)(records)
    alert = next(a for o in out for a in o.alerts if a.typology == "rapid_pass_through")
    assert alert.accounts == ["C1032", "P2", "SETTLE", "X9"]  # subject, senders (newest first), receivers
    assert alert.transaction_ids == ["t0", "t1", "t2", "t3"]
