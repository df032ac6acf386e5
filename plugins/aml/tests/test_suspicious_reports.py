"""Suspicious transaction report drafts: local detection day, per-transaction FX, the customer named."""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from sectorflow import Taskflow
from sectorflow_aml.fx import FxRates, FxTable, MissingRateError
from sectorflow_aml.schema import Alert, Transaction
from sectorflow_aml.suspicious import suspicious_report


def _alert(when: datetime, ids: list[str], accounts: list[str] | None = None) -> Alert:
    return Alert(alert_id="structuring-x", typology="structuring", accounts=accounts or ["acct-A"],
                 transaction_ids=ids, score=0.9, fired_by="test", time=when, reasons=[])


def _txn(tid: str, amount: str, when: str, currency: str = "CNY", receiver: str = "acct-A") -> Transaction:
    return Transaction(transaction_id=tid, timestamp=when, sender_account="walk-in", receiver_account=receiver,
                       amount=Decimal(amount), currency=currency, channel="cash_deposit")


def test_cn_detection_day_is_the_beijing_date_not_the_utc_date() -> None:
    # 2026-11-02T17:00Z is 01:00 on Tuesday 3 November in Beijing: the detection day is the 3rd, and 5 working days
    # later is Tuesday 10 November (before the fix: the UTC date, Monday the 2nd, and 9 November)
    when = datetime(2026, 11, 2, 17, tzinfo=timezone.utc)
    draft = suspicious_report(_alert(when, ["s1"]), [_txn("s1", "45000", "2026-11-02T17:00:00Z")])
    assert draft.business_date == "2026-11-03"
    assert draft.elements["due_if_confirmed_on_detection"] == "2026-11-10"
    assert draft.elements["detected_at_local"] == "2026-11-03T01:00:00+08:00"
    assert draft.elements["timezone"] == "Asia/Shanghai"
    assert draft.elements["transactions"][0]["local_time"] == "2026-11-03T01:00:00+08:00"


def test_us_sar_outline_counts_30_days_from_the_new_york_day() -> None:
    # 21:00 on Monday 2 November in New York is 02:00Z on the 3rd: detected on the 2nd, due 2 December
    when = datetime(2026, 11, 3, 2, tzinfo=timezone.utc)
    draft = suspicious_report(_alert(when, ["u1"]), [_txn("u1", "9500", "2026-11-03T02:00:00Z", "USD")], "US")
    assert draft.business_date == "2026-11-02" and draft.due_by == "2026-12-02"
    chicago = suspicious_report(_alert(when, ["u1"]), [_txn("u1", "9500", "2026-11-03T02:00:00Z", "USD")], "US",
                                timezone="America/Chicago")
    assert chicago.elements["detected_at_local"] == "2026-11-02T20:00:00-06:00"


def test_foreign_amounts_use_the_rate_of_the_local_day_and_are_listed_per_transaction() -> None:
    # 1 January 20:00Z is 2 January 04:00 in Beijing: the 2 January table applies (7.10), as in the large-value
    # engine; before the fix the UTC date took the 31 December table (7.00) and the draft showed no rate
    fx = FxRates([FxTable(as_of=date(2025, 12, 31), rates={("USD", "CNY"): Decimal("7.00")}),
                  FxTable(as_of=date(2026, 1, 2), rates={("USD", "CNY"): Decimal("7.10")})])
    txns = [_txn("f1", "1000", "2026-01-01T20:00:00Z", "USD"), _txn("f2", "500", "2026-01-01T10:00:00Z")]
    draft = suspicious_report(_alert(datetime(2026, 1, 1, 20, tzinfo=timezone.utc), ["f1", "f2"]), txns, fx=fx)
    rows = {r["transaction_id"]: r for r in draft.elements["transactions"]}
    assert rows["f1"]["amount_cny"] == "7100.00" and rows["f1"]["fx_rate"] == "USD/CNY=7.10"
    assert rows["f2"]["amount_cny"] == "500" and "fx_rate" not in rows["f2"]
    assert draft.total_amount == Decimal("7600.00") and draft.currency == "CNY"


def test_the_draft_names_the_customer_of_the_subject_account() -> None:
    when = datetime(2026, 11, 2, 3, tzinfo=timezone.utc)
    draft = suspicious_report(_alert(when, ["c1"], ["ACC2", "ACC1"]), [_txn("c1", "45000", "2026-11-02T03:00:00Z")],
                              customers={"ACC1": "P1", "ACC2": "P1"})
    assert draft.customer_account == "P1" and draft.elements["customer"] == "P1"
    assert draft.elements["subject_accounts"] == ["ACC2", "ACC1"]
    plain = suspicious_report(_alert(when, ["c1"], ["ACC2"]), [_txn("c1", "45000", "2026-11-02T03:00:00Z")])
    assert plain.customer_account == "ACC2"


def test_pipeline_str_and_large_value_report_agree_on_the_beijing_day() -> None:
    tf = Taskflow("aml", model=False, str_threshold=0.5, customers={"ACC1": "P1", "ACC2": "P1"})
    results = tf([{"transaction_id": "s1", "timestamp": "2026-11-02T16:30:00+00:00", "sender_account": "WALKIN",
                   "receiver_account": "ACC1", "amount": "45000", "channel": "cash_deposit"},
                  {"transaction_id": "s2", "timestamp": "2026-11-02T17:00:00+00:00", "sender_account": "WALKIN2",
                   "receiver_account": "ACC2", "amount": "45000", "channel": "cash_deposit"}])
    by_kind = {d.kind: d for d in results[1].reports}
    assert set(by_kind) == {"large_value", "suspicious"}
    assert by_kind["large_value"].business_date == by_kind["suspicious"].business_date == "2026-11-03"
    assert by_kind["large_value"].customer_account == by_kind["suspicious"].customer_account == "P1"
    assert by_kind["suspicious"].total_amount == Decimal("90000.00")


def test_a_missing_rate_for_a_report_total_fails_the_call_before_any_state_changes() -> None:

    def cash(tid: str, amount: str, currency: str = "CNY") -> dict:
        return {"transaction_id": tid, "timestamp": "2026-11-02T02:00:00Z", "sender_account": "W",
                "receiver_account": "P1", "amount": amount, "currency": currency, "channel": "cash_deposit"}

    # the table is dated after the deposits: the window's sums take it, the EUR deposit's USD-equivalent cash total
    # (PBOC Art. 5, foreign currency) cannot; before the fix k1 had entered the window and the report aggregate when
    # the error came, so the retry saw k1 as a repeated id and drafted no report
    tf = Taskflow("aml", model=False, fx_rates={"as_of": "2026-12-01", "USD/CNY": "7.10", "EUR/USD": "1.10"})
    with pytest.raises(MissingRateError, match=r"Transaction k2 of 2026-11-02 \(Asia/Shanghai\) is in EUR and its "
                                               r"cash report total is in USD: No EUR/USD exchange rate for 2026-11-02"):
        tf([cash("k1", "30000"), cash("k2", "5000", "EUR")])
    results = tf([cash("k1", "30000"), cash("k3", "20000")])
    assert [n.code for n in results[0].reasons] == []
    (draft,) = results[1].reports
    assert draft.transaction_ids == ["k1", "k3"] and draft.total_amount == Decimal("50000.00")


def test_a_missing_rate_in_a_suspicious_report_names_the_alert_and_transaction() -> None:

    fx = FxRates([FxTable(as_of=date(2026, 12, 1), rates={("USD", "CNY"): Decimal("7.10")})])
    with pytest.raises(MissingRateError, match=r"alert structuring-x: transaction u1 of 2026-11-02 \(Asia/Shanghai\) "
                                               r"is in USD and the draft's total is in CNY"):
        suspicious_report(_alert(datetime(2026, 11, 2, 2, tzinfo=timezone.utc), ["u1"]),
                          [_txn("u1", "9500", "2026-11-02T02:00:00Z", "USD")], fx=fx)



def test_rate_check_covers_a_custom_threshold_in_another_currency() -> None:
    from sectorflow_aml.reports import ReportEngine
    from sectorflow_aml.thresholds import Threshold

    # a US table stated in EUR for every currency ("any"): even a USD deposit needs a rate, on its New York day
    fx = FxRates([FxTable(as_of=date(2026, 12, 1), rates={("USD", "EUR"): Decimal("0.9")})])
    engine = ReportEngine("US", [Threshold("ctr_cash", Decimal("9000"), "EUR", False, "any", "custom")], fx)
    deposit = _txn("x", "100", "2026-11-02T15:00:00Z", "USD")
    with pytest.raises(MissingRateError, match=r"Transaction x of 2026-11-02 \(America/New_York\) is in USD and its "
                                               r"ctr_cash report total is in EUR"):
        engine.check_rates([deposit])
    engine.check_rates([_txn("y", "100", "2026-12-02T15:00:00Z", "USD")])  # covered: no error
