"""A busy account's same-day report is not repeated whole on each of its transactions: past JOIN_UPDATES_MAX a
transaction that joins it (cash, or meeting the threshold on its own) carries a reference of one id, so the ids all
results carry grow linearly (fresh-user check, 30 Nov 2026: 6,000 transfers of SETTLE wrote 833 MB)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from sectorflow_aml.reports import JOIN_UPDATES_MAX, ReportEngine
from sectorflow_aml.schema import Transaction
from typer.testing import CliRunner


def _hub(engine: ReportEngine, n: int, amount: str, channel: str, currency: str, day: str,
         sender: str = "C") -> list[list]:
    return [engine.observe(Transaction(
        transaction_id=f"{day}-{i}", timestamp=f"{day}T{2 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
        sender_account=f"{sender}{i}", receiver_account="HUB", amount=Decimal(amount), currency=currency,
        channel=channel)) for i in range(n)]


def _check_hub(results: list[list], n: int, total: Decimal) -> str:
    """The HUB's drafts on each of ``n`` results: full snapshots up to the cap, then one-id references."""
    hub = [[d for d in drafts if d.customer_account == "HUB"] for drafts in results]
    assert all(len(h) == 1 for h in hub)  # every transaction says which report it joined
    (report_id,) = {h[0].report_id for h in hub}
    full = [h[0] for h in hub[:JOIN_UPDATES_MAX]]
    refs = [h[0] for h in hub[JOIN_UPDATES_MAX:]]
    assert [len(d.transaction_ids) for d in full] == list(range(1, JOIN_UPDATES_MAX + 1))
    assert {d.elements["snapshot"] for d in full} == {"full"} and {d.elements["snapshot"] for d in refs} == {"reference"}
    assert [d.transaction_ids for d in refs] == [[f"{d.transaction_ids[0]}"] for d in refs]
    assert [d.elements["transaction_count"] for d in refs] == list(range(JOIN_UPDATES_MAX + 1, n + 1))
    assert [len(d.elements["transactions"]) for d in refs] == [1] * (n - JOIN_UPDATES_MAX)
    assert refs[-1].total_amount == total
    # ids carried: 1 + 2 + ... + 200, then one per transaction (was n (n + 1) / 2)
    carried = sum(len(h[0].transaction_ids) for h in hub)
    assert carried == JOIN_UPDATES_MAX * (JOIN_UPDATES_MAX + 1) // 2 + n - JOIN_UPDATES_MAX
    return report_id


def test_a_cn_hub_of_1000_large_transfers_carries_references_past_the_cap_and_the_full_draft_at_close() -> None:
    engine = ReportEngine("CN")
    results = _hub(engine, 1000, "600000", "transfer", "CNY", "2024-03-05")  # each meets 500,000 on its own
    report_id = _check_hub(results, 1000, Decimal("600000000.00"))
    (open_hub,) = [d for d in engine.open_reports() if d.customer_account == "HUB"]
    assert open_hub.report_id == report_id and len(open_hub.transaction_ids) == 1000
    assert open_hub.total_amount == Decimal("600000000.00") and open_hub.elements["snapshot"] == "full"
    # the first transaction of the next Beijing day carries the final draft once, all 1,000 ids
    closing = engine.observe(Transaction(transaction_id="next", timestamp="2024-03-05T16:30:00+00:00",
                                         sender_account="X", receiver_account="Y", amount=Decimal(10),
                                         currency="CNY", channel="transfer"))
    (closed,) = [d for d in closing if d.customer_account == "HUB"]
    assert closed.report_id == report_id and closed.elements["day_closed"] is True
    assert closed.transaction_ids == open_hub.transaction_ids
    # each sender's own 600,000 is a single-transaction report of its own (not capped: one transaction each)
    assert sum(1 for drafts in results for d in drafts if d.customer_account != "HUB") == 1000


def test_us_cash_600_deposits_over_10000_into_one_account_carry_references_past_the_cap() -> None:
    engine = ReportEngine("US")
    results = _hub(engine, 600, "10001", "cash_deposit", "USD", "2026-11-03")  # 21:00-03:00 New York: two days
    # 02:00-04:59 UTC on 3 Nov is the evening of 2 Nov in New York: one business day (Monday 2 Nov)
    report_id = _check_hub(results, 600, Decimal("6000600.00"))
    (open_hub,) = engine.open_reports()
    assert open_hub.report_id == report_id and len(open_hub.transaction_ids) == 600
    assert open_hub.business_date == "2026-11-02" and open_hub.due_by == "2026-11-17"


def test_sectorflow_aml_reports_adds_the_referenced_transactions_to_the_latest_snapshot(tmp_path: Path) -> None:
    import typer
    from sectorflow import Taskflow
    from sectorflow_aml.cli import register

    app = typer.Typer()
    register(app)

    n = JOIN_UPDATES_MAX + 50
    items = [{"transaction_id": f"d{i}", "timestamp": f"2026-11-03T15:{i // 60:02d}:{i % 60:02d}+00:00",
              "sender_account": f"P{i}", "receiver_account": "CASINO", "amount": "10001", "currency": "USD",
              "channel": "cash_deposit"} for i in range(n)]
    results = Taskflow("aml", model=False, jurisdiction="US")(items)  # one day, still open at the end
    path = tmp_path / "results.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in results), encoding="utf-8")
    assert max(len(d.transaction_ids) for r in results for d in r.reports) == JOIN_UPDATES_MAX
    out = CliRunner().invoke(app, ["aml", "reports", "--results", str(path), "--json"])
    assert out.exit_code == 0, out.output
    (ctr,) = [json.loads(line) for line in out.output.splitlines() if '"CASINO"' in line]
    assert ctr["transaction_ids"] == [f"d{i}" for i in range(n)]
    assert Decimal(ctr["total_amount"]) == Decimal(10001 * n)
    assert [r["transaction_id"] for r in ctr["elements"]["transactions"]] == ctr["transaction_ids"]
