"""Regulatory edges of the report engine: China large-value reports and US currency transaction reports."""

from __future__ import annotations

import json

from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from sectorflow import ConfigError
from sectorflow_aml.fx import FxRates, MissingRateError
from sectorflow_aml.reports import ReportEngine
from sectorflow_aml.schema import Alert, Reason, Transaction
from sectorflow_aml.suspicious import suspicious_report
from sectorflow_aml.thresholds import Threshold


def txn(tid: str, amount: str, channel: str = "cash_deposit", when: str = "2024-03-05T02:00:00",
        currency: str = "CNY", sender: str = "walk-in", receiver: str = "acct-A", **extra: object) -> Transaction:
    return Transaction(transaction_id=tid, timestamp=when, sender_account=sender, receiver_account=receiver,
                       amount=Decimal(amount), currency=currency, channel=channel, **extra)


# -- China: PBOC Order 2016 No. 3, Art. 5 ---------------------------------------------------------------------------

def test_cn_cash_at_50000_reports_and_just_below_does_not() -> None:
    engine = ReportEngine("CN")
    assert engine.observe(txn("t1", "49999.99")) == []
    engine.reset()
    drafts = engine.observe(txn("t2", "50000.00"))
    assert len(drafts) == 1
    draft = drafts[0]
    assert (draft.kind, draft.jurisdiction, draft.customer_account) == ("large_value", "CN", "acct-A")
    assert draft.total_amount == Decimal("50000.00") and draft.currency == "CNY"
    assert draft.regulation == "PBOC Order 2016 No. 3, Art. 5(1)"
    assert draft.elements["aggregation"] == "single" and draft.elements["direction"] == "in"
    assert draft.elements["transactions"][0]["counterparty_account"] == "walk-in"
    # 2024-03-05 is a Tuesday: five working days later is Tuesday 2024-03-12.
    assert draft.business_date == "2024-03-05" and draft.due_by == "2024-03-12"


def test_cn_same_day_cumulative_cash_fires_once_at_the_crossing_transaction() -> None:
    engine = ReportEngine("CN")
    got = [engine.observe(txn(f"d{i}", amount, when=f"2024-03-05T0{i + 1}:00:00"))
           for i, amount in enumerate(["49900", "49800", "49950"])]
    assert got[0] == []
    (draft,) = got[1]
    assert draft.transaction_ids == ["d0", "d1"] and draft.total_amount == Decimal("99700")
    assert draft.elements["aggregation"] == "cumulative"
    # the third deposit joins the open draft, and its result carries it updated (same id: one report, not two), so
    # results name every deposit the report must list (it used to reach open_reports() only)
    (updated,) = got[2]
    assert updated.report_id == draft.report_id
    assert updated.transaction_ids == ["d0", "d1", "d2"] and updated.total_amount == Decimal("149650")
    assert [d.model_dump() for d in engine.open_reports()] == [updated.model_dump()]


def test_a_second_large_cash_deposit_on_the_same_day_is_reported_on_its_own_result() -> None:
    engine = ReportEngine("CN")
    (first,) = engine.observe(txn("big1", "60000", when="2024-03-05T01:00:00"))
    (joined,) = engine.observe(txn("small", "100", when="2024-03-05T02:00:00"))  # joins: the draft, updated
    assert joined.report_id == first.report_id and joined.transaction_ids == ["big1", "small"]
    (again,) = engine.observe(txn("huge", "5000000", when="2024-03-05T03:00:00"))  # large-value on its own
    assert again.report_id == first.report_id  # the same day's draft, updated, not a second report
    assert again.transaction_ids == ["big1", "small", "huge"] and again.total_amount == Decimal("5060100")
    assert engine.observe(txn("next-day", "100", when="2024-03-06T03:00:00")) == []
    us = ReportEngine("US")
    (ctr,) = us.observe(txn("c1", "10000.01", currency="USD", when="2024-03-05T15:00:00"))
    (joined_ctr,) = us.observe(txn("c2", "10000.00", currency="USD", when="2024-03-05T16:00:00"))
    assert joined_ctr.report_id == ctr.report_id and joined_ctr.total_amount == Decimal("20000.01")  # 1010.313
    (ctr2,) = us.observe(txn("c3", "10000.02", currency="USD", when="2024-03-05T17:00:00"))
    assert ctr2.report_id == ctr.report_id and ctr2.total_amount == Decimal("30000.03")


def test_cn_cash_in_and_out_are_not_netted() -> None:
    engine = ReportEngine("CN")
    assert engine.observe(txn("in1", "30000")) == []
    assert engine.observe(txn("out1", "30000", channel="cash_withdrawal", sender="acct-A", receiver="teller")) == []
    assert engine.observe(txn("in2", "10000")) == []  # in: 40,000 (not 10,000 after netting, nor 70,000 together)
    drafts = engine.observe(txn("in3", "10000"))
    assert [(d.elements["direction"], d.total_amount) for d in drafts] == [("in", Decimal("50000"))]


def test_cn_business_day_is_beijing_date_and_next_day_starts_fresh() -> None:
    engine = ReportEngine("CN")
    # 15:59 UTC is 23:59 in Beijing on 03-05; 16:01 UTC is already 03-06 there.
    assert engine.observe(txn("a", "30000", when="2024-03-05T15:59:00")) == []
    assert engine.observe(txn("b", "30000", when="2024-03-05T16:01:00")) == []
    drafts = engine.observe(txn("c", "20000", when="2024-03-06T03:00:00"))
    assert [d.business_date for d in drafts] == ["2024-03-06"] and drafts[0].total_amount == Decimal("50000")


def test_cn_transfer_rows_by_customer_type_and_border() -> None:
    engine = ReportEngine("CN")
    # Individual domestic transfer: >= 500,000 RMB; both the payer (out) and the payee (in) reach it.
    drafts = engine.observe(txn("p1", "500000", channel="transfer", sender="ind-1", receiver="ind-2"))
    assert sorted((d.customer_account, d.elements["rule"]) for d in drafts) == [
        ("ind-1", "individual_domestic_transfer"), ("ind-2", "individual_domestic_transfer")]
    # Corporate: 1,999,999.99 is below 2,000,000.
    assert engine.observe(txn("c1", "1999999.99", channel="transfer", sender="co-1", receiver="co-2",
                              customer_type="corporate")) == []
    # Individual cross-border: >= 200,000 RMB.
    drafts = engine.observe(txn("x1", "200000", channel="wire", sender="ind-3", receiver="hk-9",
                                sender_country="CN", receiver_country="HK", customer_type="individual"))
    assert {d.elements["rule"] for d in drafts} == {"individual_cross_border_transfer"}


def test_cn_foreign_currency_cash_uses_usd_equivalent_with_supplied_rates() -> None:
    fx = FxRates.from_mapping({"EUR/USD": "1.25"}, as_of=date(2024, 3, 1))
    engine = ReportEngine("CN", fx=fx)
    assert engine.observe(txn("e1", "7999.99", currency="EUR")) == []  # 9,999.99 USD: below 10,000
    (draft,) = engine.observe(txn("e2", "0.01", currency="EUR"))  # day total 8,000 EUR = 10,000 USD
    assert draft.currency == "USD" and draft.total_amount == Decimal("10000.0000")
    assert draft.regulation.endswith("Art. 5(1)") and draft.elements["transactions"][0]["fx_rate"] == "EUR/USD=1.25"
    # RMB and foreign-currency totals are kept apart.
    assert engine.observe(txn("r1", "49999", currency="CNY")) == []


def test_missing_rate_is_an_error_not_a_guess() -> None:
    engine = ReportEngine("CN")
    with pytest.raises(MissingRateError, match="EUR/USD"):
        engine.observe(txn("e1", "100", currency="EUR"))


def test_thresholds_are_configuration() -> None:
    engine = ReportEngine("CN", thresholds={"cash:domestic": "200000"})  # the pre-2017 RMB 200,000 cash level
    assert engine.observe(txn("a", "199999.99")) == []
    assert len(engine.observe(txn("b", "0.01"))) == 1
    with pytest.raises(ConfigError, match="Unknown CN threshold"):
        ReportEngine("CN", thresholds={"cash:nowhere": "1"})
    strict = Threshold("cash", Decimal("50000"), "CNY", False, "domestic", "test: exclusive")
    assert ReportEngine("CN", thresholds=[strict]).observe(txn("c", "50000")) == []


# -- United States: 31 CFR 1010.311 and 1010.313 --------------------------------------------------------------------

def test_us_ctr_needs_more_than_10000() -> None:
    engine = ReportEngine("US")
    assert engine.observe(txn("u1", "10000.00", currency="USD", when="2024-03-05T15:00:00")) == []
    engine.reset()
    (draft,) = engine.observe(txn("u2", "10000.01", currency="USD", when="2024-03-05T15:00:00"))
    assert draft.kind == "ctr" and draft.total_amount == Decimal("10000.01") and draft.currency == "USD"
    assert draft.due_by == "2024-03-20"  # 15 days after the transaction
    assert draft.elements["threshold"] == "> 10000 USD" and draft.elements["threshold_verified"] is True


def test_us_same_day_aggregation_in_and_out_separately() -> None:
    engine = ReportEngine("US")
    when = "2024-03-05T{:02d}:00:00"
    assert engine.observe(txn("i1", "6000", currency="USD", when=when.format(14))) == []
    assert engine.observe(txn("o1", "6000", channel="cash_withdrawal", sender="acct-A", receiver="teller",
                              currency="USD", when=when.format(15))) == []
    assert engine.observe(txn("o2", "4000", channel="cash_withdrawal", sender="acct-A", receiver="teller",
                              currency="USD", when=when.format(16))) == []  # out 10,000.00: not more than
    (draft,) = engine.observe(txn("i2", "4000.01", currency="USD", when=when.format(17)))
    assert draft.elements["direction"] == "in" and draft.transaction_ids == ["i1", "i2"]
    (joined,) = engine.observe(txn("i3", "900", currency="USD", when=when.format(18)))  # joins the open draft
    assert joined.report_id == draft.report_id and joined.transaction_ids == ["i1", "i2", "i3"]
    (updated,) = engine.observe(txn("i4", "50000", currency="USD", when=when.format(18)))  # a CTR amount itself
    assert updated.report_id == draft.report_id and updated.transaction_ids == ["i1", "i2", "i3", "i4"]
    # A transfer is not a currency transaction.
    assert engine.observe(txn("w1", "50000", channel="wire", currency="USD", when=when.format(19))) == []


def test_us_next_business_day_starts_fresh_and_weekend_counts_on_monday() -> None:
    engine = ReportEngine("US")
    assert engine.observe(txn("f", "6000", currency="USD", when="2024-03-08T15:00:00")) == []  # Friday
    assert engine.observe(txn("s", "3000", currency="USD", when="2024-03-09T15:00:00")) == []  # Saturday -> Mon
    (draft,) = engine.observe(txn("m", "7000.01", currency="USD", when="2024-03-11T15:00:00"))  # Monday
    assert draft.business_date == "2024-03-11" and draft.transaction_ids == ["s", "m"]
    assert draft.total_amount == Decimal("10000.01")


def test_us_night_deposit_after_cutoff_counts_next_business_day() -> None:
    engine = ReportEngine("US", timezone="America/New_York", cutoff="18:00")
    # 23:30 UTC on Friday 2024-03-08 is 18:30 in New York: after the cut-off, so it counts on Monday 03-11.
    assert engine.observe(txn("n", "6000", currency="USD", when="2024-03-08T23:30:00")) == []
    assert engine.observe(txn("f", "6000", currency="USD", when="2024-03-08T20:00:00")) == []  # Friday 15:00
    (draft,) = engine.observe(txn("m", "4000.01", currency="USD", when="2024-03-11T14:00:00"))
    assert draft.business_date == "2024-03-11" and draft.transaction_ids == ["n", "m"]
    with pytest.raises(ConfigError, match="HH:MM"):
        ReportEngine("US", cutoff="6pm")


def test_us_ctr_is_due_15_days_after_the_day_the_transaction_occurred_not_its_business_day() -> None:
    # 31 CFR 1010.306(a)(1): "within 15 days following the day on which the reportable transaction occurred"
    engine = ReportEngine("US")
    (saturday,) = engine.observe(txn("s", "12000", currency="USD", when="2026-11-07T15:00:00"))  # Saturday
    assert saturday.business_date == "2026-11-09"  # aggregated on Monday (1010.313) ...
    assert saturday.due_by == "2026-11-22"  # ... but due 15 days after Saturday, not after Monday (11-24)
    engine.observe(txn("a", "6000", currency="USD", when="2026-11-14T15:00:00", receiver="acct-B"))  # Saturday
    (monday,) = engine.observe(txn("b", "6000", currency="USD", when="2026-11-16T15:00:00", receiver="acct-B"))
    assert monday.business_date == "2026-11-16" and monday.due_by == "2026-11-29"  # from the earliest, Saturday
    # 03:00 UTC on Wednesday is Tuesday evening in New York: the local day counts
    (late,) = engine.observe(txn("t", "12000", currency="USD", when="2026-11-18T03:00:00", receiver="acct-C"))
    assert late.business_date == "2026-11-17" and late.due_by == "2026-12-02"


def test_per_person_aggregation_options_are_task_options_and_validated() -> None:
    assert {"customers", "customer_types", "cutoff"} <= set(ReportEngine.OPTIONS)
    # 31 CFR 1010.313: one person's 6,000 + 6,000 USD cash into two accounts on one business day is one CTR
    engine = ReportEngine.from_options({"jurisdiction": "US", "customers": {"ACC1": "P1", "ACC2": "P1"}})
    assert engine.observe(txn("a", "6000", currency="USD", when="2026-11-03T15:00:00", receiver="ACC1")) == []
    (draft,) = engine.observe(txn("b", "6000", currency="USD", when="2026-11-03T16:00:00", receiver="ACC2"))
    assert draft.customer_account == "P1" and draft.total_amount == Decimal("12000")
    assert draft.elements["accounts"] == ["ACC1", "ACC2"]
    typed = ReportEngine.from_options({"customer_types": {"CO": "corporate"}})  # China row (2), not (3)
    assert typed.observe(txn("c", "600000", channel="transfer", sender="CO", receiver="IND")) != []
    assert [d.elements["rule"] for d in typed.open_reports()] == ["individual_domestic_transfer"]  # CO: no draft
    night = ReportEngine.from_options({"jurisdiction": "US", "cutoff": "18:00"})
    (d,) = night.observe(txn("n", "12000", currency="USD", when="2026-11-03T23:30:00"))  # 18:30 New York
    assert d.business_date == "2026-11-04"
    for options, message in (({"customers": ["ACC1"]}, "customers must be a mapping"),
                             ({"customers": {"ACC1": 5}}, "customers must be a mapping"),
                             ({"customer_types": {"A": "company"}}, "individual, corporate"),
                             ({"jurisdiction": "US", "cutoff": "6pm"}, "HH:MM"),
                             ({"jurisdiction": "US", "cutoff": 18}, "HH:MM"),
                             ({"cutoff": "18:00"}, "US business days only")):
        with pytest.raises(ConfigError, match=message):
            ReportEngine.from_options(options)


def test_customers_and_customer_types_can_be_files_of_account_lines(tmp_path) -> None:
    """A bank's account-to-person mapping has thousands of lines: ``-O customers=FILE`` (it took only an inline JSON
    mapping, which does not fit on a command line: fresh-user check). It also reaches the structuring rule."""
    from sectorflow import Taskflow

    people = tmp_path / "customers.csv"
    people.write_text("\ufeffaccount,customer_id\n# the Wang household\nACC1, P1\nACC2,P1\n", encoding="utf-8")
    engine = ReportEngine.from_options({"jurisdiction": "US", "customers": str(people)})
    assert engine.customers == {"ACC1": "P1", "ACC2": "P1"}
    assert engine.observe(txn("a", "6000", currency="USD", when="2026-11-03T15:00:00", receiver="ACC1")) == []
    (draft,) = engine.observe(txn("b", "6000", currency="USD", when="2026-11-03T16:00:00", receiver="ACC2"))
    assert draft.customer_account == "P1" and draft.total_amount == Decimal("12000")
    kinds = tmp_path / "types.csv"
    kinds.write_text("CO,corporate\n", encoding="utf-8")
    assert ReportEngine.from_options({"customer_types": kinds}).customer_types == {"CO": "corporate"}
    chinese = tmp_path / "customers-gbk.csv"  # a Chinese Windows export: GBK, read as GB18030 (detected)
    chinese.write_bytes("account,customer_id\n# 王家 账户 客户 对应表\nACC1,王伟\nACC2,王伟\n".encode("gbk"))
    assert ReportEngine.from_options({"customers": str(chinese)}).customers == {"ACC1": "王伟", "ACC2": "王伟"}
    tf = Taskflow("aml", model=False, jurisdiction="US", customers=str(people))
    results = tf([{"transaction_id": f"d{i}", "timestamp": f"2026-11-03T1{i}:00:00-05:00", "sender_account": acc,
                   "receiver_account": acc, "amount": "9500", "currency": "USD", "channel": "cash_deposit"}
                  for i, acc in enumerate(["ACC1", "ACC2"])])
    assert [a.variant for a in results[1].alerts] == ["cumulative"] and results[1].alerts[0].accounts[0] == "ACC2"
    assert [d.customer_account for d in results[1].reports] == ["P1"]
    bad = tmp_path / "bad.csv"
    bad.write_text("ACC1,P1\nACC2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"customers='.*bad.csv': line\(s\) 2 are not 'account,value'"):
        ReportEngine.from_options({"customers": str(bad)})
    with pytest.raises(ConfigError, match="no such file"):
        ReportEngine.from_options({"customers": str(tmp_path / "none.csv")})


def test_suspicious_report_draft_carries_alert_elements() -> None:
    txns = [txn(f"s{i}", amount, when=f"2024-03-05T0{i + 1}:00:00")
            for i, amount in enumerate(["49900", "49800", "49950"])]
    alert = Alert(alert_id="structuring-1", typology="structuring", accounts=["acct-A"],
                  transaction_ids=["s0", "s1", "s2", "gone"], score=0.9, fired_by="sectorflow_aml.typologies.test",
                  time=datetime(2024, 3, 5, 3, tzinfo=timezone.utc),
                  reasons=[Reason(code="typology.structuring", en="deposits just under the threshold",
                                  zh="接近大额标准的现金存入", source="test")])
    draft = suspicious_report(alert, txns + [txn("other", "1")], confirmed_on=date(2024, 3, 7))
    assert draft.kind == "suspicious" and draft.regulation == "PBOC Order 2016 No. 3, Arts. 11-15"
    assert draft.total_amount == Decimal("149650") and draft.currency == "CNY"
    assert [t["transaction_id"] for t in draft.elements["transactions"]] == ["s0", "s1", "s2"]
    assert draft.elements["transactions_not_supplied"] == ["gone"]
    assert draft.elements["indicators"][0]["zh"] == "接近大额标准的现金存入"
    assert draft.due_by == "2024-03-14"  # 5 working days after confirmation (Thursday -> next Thursday)
    unconfirmed = suspicious_report(alert, txns)
    assert unconfirmed.due_by is None  # the clock starts when a person confirms the suspicion
    # detected Tuesday 2024-03-05: 5 working days later is Tuesday 2024-03-12, if confirmed the same day
    assert unconfirmed.elements["due_if_confirmed_on_detection"] == "2024-03-12"
    assert "Art. 15" in unconfirmed.elements["due_rule"]


def test_reports_command_shows_the_suspicious_report_deadline(tmp_path, capsys, cli_main) -> None:
    alert = Alert(alert_id="structuring-1", typology="structuring", accounts=["acct-A"], transaction_ids=["s0"],
                  score=0.9, fired_by="test", time=datetime(2024, 3, 5, 3, tzinfo=timezone.utc), reasons=[])
    draft = suspicious_report(alert, [txn("s0", "49900", when="2024-03-05T01:00:00")])
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"transaction_id": "s0", "reports": [draft.model_dump(mode="json")]}) + "\n")
    assert cli_main(["aml", "reports", "--results", str(results)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith("due 2024-03-12 if confirmed on the detection day (5 working days after the internal "
                         "procedure confirms the suspicion (PBOC Order 2016 No. 3 Art. 15; read in secondary sources, "
                         "unverified))"), line


def test_engine_from_task_options(tmp_path) -> None:
    rates = tmp_path / "rates.csv"
    rates.write_text("as_of,base,quote,rate\n2024-03-01,USD,CNY,7.0\n", encoding="utf-8")
    engine = ReportEngine.from_options({"jurisdiction": "US", "fx_rates": str(rates), "institution": "B1"})
    (draft,) = engine.observe(txn("c1", "70000.07", currency="CNY", when="2024-03-05T15:00:00", receiver_bank="B1"))
    assert draft.kind == "ctr" and draft.total_amount == Decimal("10000.01")
    assert engine.observe(txn("c2", "90000", currency="CNY", when="2024-03-05T15:00:00", receiver="acct-B",
                              receiver_bank="OTHER")) == []  # another bank's customer
    inline = ReportEngine.from_options({"fx_rates": {"as_of": "2024-03-01", "EUR/USD": "1.25"}})
    assert len(inline.observe(txn("e", "8000", currency="EUR"))) == 1
    with pytest.raises(ConfigError, match="as_of"):
        ReportEngine.from_options({"fx_rates": {"EUR/USD": "1.25"}})


def test_cli_lists_report_drafts_from_results(tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from sectorflow_aml.cli import register
    from sectorflow_aml.schema import TransactionAssessment

    engine = ReportEngine("CN")
    lines = []
    for i, amount in enumerate(["49900", "49800", "49950"]):
        t = txn(f"d{i}", amount, when=f"2024-03-05T0{i + 1}:00:00")
        lines.append(TransactionAssessment(transaction_id=t.transaction_id, risk_score=0.5, alert=False,
                                           reports=engine.observe(t)).model_dump_json())
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n")
    app = typer.Typer()
    register(app)
    out = CliRunner().invoke(app, ["aml", "reports", "--results", str(path), "--kind", "large_value"])
    assert out.exit_code == 0, out.output
    (row,) = out.stdout.splitlines()  # the latest snapshot of the one report: all three deposits
    assert out.stderr == f"1 report draft(s) in {len(lines)} results\n"
    assert row.split("\t")[1:] == ["large_value", "PBOC Order 2016 No. 3, Art. 5(1)", "acct-A", "149650.00 CNY",
                                   "2024-03-05", "due 2024-03-12"]
    assert sum('"kind":"large_value"' in line for line in lines) == 2  # in the results: first and updated draft
    assert CliRunner().invoke(app, ["aml", "reports", "--results", str(path), "--kind", "ctr"]).stdout == ""


def test_a_busy_corporate_transfer_aggregate_does_not_repeat_its_draft_but_closes_it_on_the_next_day() -> None:
    from sectorflow_aml.reports import JOIN_UPDATES_MAX

    engine = ReportEngine("CN")
    corp = {"channel": "transfer", "sender": "CORP", "customer_type": "corporate"}
    assert engine.observe(txn("c0", "1500000", receiver="SUPP0", when="2024-03-05T01:00:00", **corp)) == []
    crossing = engine.observe(txn("c1", "600000", receiver="SUPP1", when="2024-03-05T01:10:00", **corp))
    assert [(d.transaction_ids, d.elements["day_closed"]) for d in crossing if d.customer_account == "CORP"] == [
        (["c0", "c1"], False)]
    later = [engine.observe(txn(f"s{i}", "1000", receiver=f"SHOP{i}", when="2024-03-05T02:00:00", **corp))
             for i in range(300)]
    assert not any(d.customer_account == "CORP" for drafts in later for d in drafts)  # no quadratic output
    (open_corp,) = [d for d in engine.open_reports() if d.customer_account == "CORP"]
    assert len(open_corp.transaction_ids) == 302  # still every transfer of the day in the open draft
    # the first transaction of the next Beijing day closes 5 March: its result carries the final draft (the
    # transfers used to reach open_reports() only, never the results of Taskflow("aml") or sectorflow run)
    (closed,) = engine.observe(txn("n1", "10", sender="OTHER", receiver="X", channel="transfer",
                                   when="2024-03-05T16:00:00"))  # 00:00 on 6 March in Beijing
    assert closed.report_id == crossing[0].report_id and closed.elements["day_closed"] is True
    assert closed.model_dump(exclude={"elements"}) == open_corp.model_dump(exclude={"elements"})
    assert closed.total_amount == Decimal("2400000.00") and closed.business_date == "2024-03-05"
    assert engine.observe(txn("n2", "10", sender="OTHER", receiver="X", channel="transfer",
                              when="2024-03-06T16:00:00")) == []  # shown once: nothing more to close
    cash = ReportEngine("CN")  # cash: each later deposit carries the update, up to JOIN_UPDATES_MAX transactions
    results = [cash.observe(txn(f"d{i}", "30000" if i < 2 else "10", when="2024-03-05T03:00:00"))
               for i in range(JOIN_UPDATES_MAX + 5)]
    assert [len(r) for r in results[:3]] == [0, 1, 1] and sum(map(len, results)) == JOIN_UPDATES_MAX + 4
    # past the cap each deposit carries a reference to the report (its own id), not the growing list
    assert [len(r[0].transaction_ids) for r in results[1:]] == list(range(2, JOIN_UPDATES_MAX + 1)) + [1] * 5
    assert [r[0].elements["snapshot"] for r in results[JOIN_UPDATES_MAX - 1:]] == ["full"] + ["reference"] * 5
    (cash_closed,) = cash.observe(txn("next", "10", when="2024-03-06T03:00:00"))  # and the rest at the day's close
    assert len(cash_closed.transaction_ids) == JOIN_UPDATES_MAX + 5


def test_taskflow_results_carry_a_corporate_days_draft_at_the_crossing_and_in_full_when_the_day_closes() -> None:
    """A corporate account's transfers of 3 Nov (Beijing): the one that brings the day's total to 2,000,000 CNY carries
    the large-value draft, as for cash; the two after it join silently; the first transaction of 4 Nov carries the
    draft with all five. One batch, chunks of two and one at a time give the same results."""
    from sectorflow import Taskflow

    def transfer(tid: str, amount: str, when: str, sender: str = "CO1") -> dict[str, str]:
        return {"transaction_id": tid, "timestamp": when, "sender_account": sender, "receiver_account": f"S-{tid}",
                "amount": amount, "currency": "CNY", "channel": "transfer", "customer_type": "corporate"}

    items = [transfer(tid, amount, f"2026-11-03T{hour}:00+08:00") for tid, amount, hour in (
        ("c1", "900000", "09:00"), ("c2", "900000", "10:00"), ("c3", "300000", "11:00"), ("c4", "100000", "12:00"),
        ("c5", "50000", "23:30"))] + [transfer("n1", "10", "2026-11-04T00:10:00+08:00", sender="X")]

    def run(size: int) -> list[dict]:
        tf = Taskflow("aml", model=False)
        return [r.model_dump(exclude={"meta"}) for i in range(0, len(items), size) for r in tf(items[i:i + size])]

    batch = run(len(items))
    assert run(2) == batch and run(1) == batch
    drafts = [[(d["customer_account"], d["transaction_ids"], str(d["total_amount"]), d["elements"]["day_closed"])
               for d in r["reports"] if d["kind"] == "large_value"] for r in batch]
    assert drafts == [[], [], [("CO1", ["c1", "c2", "c3"], "2100000.00", False)], [], [],
                      [("CO1", ["c1", "c2", "c3", "c4", "c5"], "2250000.00", True)]]
    assert batch[2]["reports"][0]["report_id"] == batch[5]["reports"][0]["report_id"]


def test_a_transaction_arriving_after_its_day_was_dropped_does_not_replace_that_days_report(caplog) -> None:
    def cash(tid: str, amount: str, when: str, account: str = "P1") -> Transaction:
        return txn(tid, amount, when=when, receiver=account)

    engine = ReportEngine("CN")
    (first,) = engine.observe(cash("a1", "60000", "2026-11-02T02:00:00Z"))
    assert engine.observe(cash("z1", "10", "2026-11-13T02:00:00Z", "Q")) == []  # 2 November is dropped (7 days)
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        (late,) = engine.observe(cash("a2", "50000", "2026-11-02T03:00:00Z"))
    # before the fix both drafts had one report_id, and keeping the latest snapshot per id (`aml reports`) lost a1
    assert late.report_id != first.report_id and late.business_date == first.business_date == "2026-11-02"
    assert (first.transaction_ids, late.transaction_ids) == (["a1"], ["a2"])
    assert "Transaction a2 of business day 2026-11-02 arrived more than retention_days=7 days after it" in caplog.text
    # the report_id of one stream's aggregate is stable: the same input gives the same ids
    again = ReportEngine("CN")
    assert again.observe(cash("a1", "60000", "2026-11-02T02:00:00Z"))[0].report_id == first.report_id
