"""Scatter-gather on a hub paid by many customers of one payer (30 Nov): once ``A -> {M} -> B`` had alerted, every
later ``M -> B`` payment still rebuilt the legs of every intermediary of the ``(A, B)`` pair (each leg a scan of
``A``'s payments) before the cooldown check dropped the result. The cooldown is now peeked first, which decides the
same alerts (the pair would be dropped anyway) without the scans."""

from __future__ import annotations

from sectorflow import Taskflow

from sectorflow_aml.typologies import scatter_gather


def _payroll_then_hub(customers: int, payments: int) -> list[dict]:
    """An employer pays ``customers`` salaries on 1 Nov; on 2 Nov each customer in turn pays a hub 90 % of it (60 %
    before issue 21 raised scatter-gather's least share passed on to 80 %)."""
    out = []
    for i in range(customers):
        out.append({"transaction_id": f"w{i}", "timestamp": f"2026-11-01T08:{i // 60:02d}:{i % 60:02d}Z",
                    "sender_account": "EMP", "receiver_account": f"CU{i}", "amount": "5000", "currency": "CNY",
                    "channel": "transfer"})
    for j in range(payments):
        i = j % customers
        out.append({"transaction_id": f"s{j}", "timestamp": f"2026-11-02T09:{j // 60:02d}:{j % 60:02d}Z",
                    "sender_account": f"CU{i}", "receiver_account": "HUB", "amount": "4500", "currency": "CNY",
                    "channel": "transfer"})
    return out


def test_a_pair_that_alerted_is_not_rescanned_while_its_cooldown_holds(monkeypatch):
    calls = []
    real = scatter_gather.latest

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scatter_gather, "latest", counting)
    out = Taskflow("aml", model=False)(_payroll_then_hub(customers=40, payments=40))
    hits = [o.transaction_id for o in out if any(a.typology == "scatter_gather" for a in o.alerts)]
    # the third customer to pass on its salary completes EMP -> {CU0, CU1, CU2} -> HUB; one alert for the pair
    assert hits == ["s2"]
    alert = next(a for o in out for a in o.alerts if a.typology == "scatter_gather")
    assert alert.accounts == ["EMP", "CU0", "CU1", "CU2", "HUB"]
    # s2 builds the three legs: the other two intermediaries' latest payment to HUB and EMP's latest payment to each
    # of the three (5 calls); then nothing. Before, payment k + 1 rebuilt k legs (2k - 1 calls): 1,596 calls in all
    assert len(calls) == 5
