"""``Taskflow("aml")`` end to end: rules and the shipped model combined, reasons from both, report drafts, options."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sectorflow import ConfigError, Taskflow, UnsupportedPrecisionError
from sectorflow_aml.plugin import EXAMPLES, spec
from sectorflow_aml.schema import TransactionAssessment

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def tf() -> Taskflow:
    return Taskflow("aml")


@pytest.fixture
def aml(tf: Taskflow) -> Taskflow:
    tf.reset_state()
    return tf


def rec(i: int, src: str, dst: str, amount: str, *, days: float = 0, hours: float = 0, currency: str = "CNY",
        channel: str = "transfer", **extra) -> dict:
    return {"transaction_id": f"p{i}", "timestamp": (T0 + timedelta(days=days, hours=hours)).isoformat(),
            "sender_account": src, "receiver_account": dst, "amount": amount, "currency": currency,
            "channel": channel, **extra}


def test_spec_declares_the_task():
    s = spec()
    assert s.name == "aml" and s.stateful and set(s.languages) == {"zh", "en"}
    assert {"amlsim", "amlworld", "csv", "jsonl", "parquet"} <= set(s.readers)
    assert {"lookback_days", "rules", "jurisdiction", "fx_rates", "str_threshold"} <= set(s.options)
    assert s.default_bundle is not None and (s.default_bundle / "manifest.json").is_file()
    assert "aml" in {t["task"] for t in Taskflow.tasks()}


def test_examples_give_a_structuring_alert_with_rule_reasons_and_a_large_value_report(aml: Taskflow):
    results = aml(list(EXAMPLES))
    assert all(isinstance(r, TransactionAssessment) and 0 <= r.risk_score <= 1 for r in results)
    assert all(r.meta.bundle_sha256 == aml.meta.bundle_sha256 for r in results)
    # the account model scores every transaction (cash deposits are the account's own events): model_score is
    # the riskier account's score after it
    assert all(r.model_score == max(r.account_scores.values()) for r in results)
    second = results[1]
    assert second.flagged and second.typologies[0] == "structuring"
    sources = {reason.source for reason in second.reasons}
    assert "sectorflow_aml.typologies.structuring" in sources  # and the account model's score, below its threshold
    assert [r.code for r in second.reasons if r.source.startswith("model:")] == ["model.risk"]
    assert all(reason.en and reason.zh for reason in second.reasons)
    assert [d.kind for d in second.reports][:1] == ["large_value"]
    assert second.reports[0].total_amount == 99_700


def test_same_day_cash_deposits_give_cumulative_large_value_report_and_structuring_alert(aml: Taskflow):
    out = aml([rec(1, "ACC", "ACC", "49900", hours=0, channel="cash_deposit"),
               rec(2, "ACC", "ACC", "49800", hours=2, channel="cash_deposit"),
               rec(3, "ACC", "ACC", "49950", hours=5, channel="cash_deposit")])
    structuring = [a for r in out for a in r.alerts if a.typology == "structuring"]
    assert len(structuring) == 1 and structuring[0].variant == "cumulative"
    large = [d for r in out for d in r.reports if d.kind == "large_value"]
    assert large and large[0].jurisdiction == "CN" and large[0].customer_account == "ACC"
    # the cumulative structuring alert scores 0.7, under the default str_threshold of 0.75: no STR draft
    assert structuring[0].score == 0.7 and not [d for r in out for d in r.reports if d.kind == "suspicious"]


def test_str_threshold_option_drafts_suspicious_reports_for_alerts():
    tf = Taskflow("aml", model=False, str_threshold=0.5)
    out = tf([rec(1, "ACC", "ACC", "49900", hours=0, channel="cash_deposit"),
              rec(2, "ACC", "ACC", "49800", hours=2, channel="cash_deposit")])
    strs = [d for d in out[1].reports if d.kind == "suspicious"]
    assert len(strs) == 1 and strs[0].transaction_ids == ["p1", "p2"] and strs[0].total_amount == 99_700
    assert strs[0].elements["typology"] == "structuring" and strs[0].elements["variant"] == "cumulative"


def test_us_structuring_fan_in_alert_and_suspicious_report_draft():
    tf = Taskflow("aml", jurisdiction="US", model=False)
    out = tf([rec(i, f"S{i}", "FUNNEL", amt, days=i, currency="USD")
              for i, amt in enumerate(["9900", "8000", "9500", "9850", "8700"])])
    alerts = [a for r in out for a in r.alerts]
    assert [(a.typology, a.variant) for a in alerts] == [("structuring", "fan_in")]
    flagged = next(r for r in out if r.alerts)
    assert flagged.flagged and flagged.model_score is None and flagged.risk_score == alerts[0].score
    strs = [d for d in flagged.reports if d.kind == "suspicious"]
    assert len(strs) == 1 and strs[0].jurisdiction == "US" and strs[0].transaction_ids == alerts[0].transaction_ids
    assert strs[0].elements["transactions_not_supplied"] == []


def test_structuring_counts_the_report_engines_business_day_not_the_utc_day():
    # 07:10 and 09:20 Beijing time on 4 November are 23:10 and 01:20 UTC (two UTC days): one CN business day
    tf = Taskflow("aml", model=False)
    deposits = [{"transaction_id": i, "timestamp": ts, "sender_account": "Q1", "receiver_account": "Q1",
                 "amount": "49000", "channel": "cash_deposit"}
                for i, ts in (("d1", "2026-11-04T07:10:00+08:00"), ("d2", "2026-11-04T09:20:00+08:00"))]
    out = tf(deposits)
    assert [(p.kind, p.business_date) for p in out[1].reports][:1] == [("large_value", "2026-11-04")]
    assert [(a.typology, a.variant) for a in out[1].alerts] == [("structuring", "cumulative")]
    us = Taskflow("aml", jurisdiction="US", model=False)  # Saturday and Sunday count on Monday's business day
    weekend = us([rec(i, "W", "W", "9500", days=d, currency="USD", channel="cash_deposit")
                  for i, d in ((1, 5), (2, 6))])  # T0 is Monday 2024-03-04: days 5, 6 are Sat 9 and Sun 10
    assert [(p.kind, p.business_date) for p in weekend[1].reports] == [("ctr", "2024-03-11")]
    assert [a.variant for a in weekend[1].alerts] == ["cumulative"]
    rule = next(r for r in tf.pipeline.rules if r.name == "structuring")
    assert (rule.params.timezone, rule.params.calendar) == ("Asia/Shanghai", None)
    night = Taskflow("aml", jurisdiction="US", model=False, report_timezone="America/Chicago", cutoff="17:00")
    rule = next(r for r in night.pipeline.rules if r.name == "structuring")
    assert (rule.params.timezone, rule.params.calendar, rule.params.cutoff) == ("America/Chicago", "US", "17:00")


def test_the_structuring_fan_in_report_names_the_funnel_account():
    tf = Taskflow("aml", jurisdiction="US", model=False)
    out = tf([rec(i, f"SND{i}", "HUB", amount, hours=i, currency="USD", channel="wire")
              for i, amount in enumerate(["8000", "9900", "9150"])])
    (draft,) = [d for d in out[-1].reports if d.kind == "suspicious"]
    assert draft.customer_account == "HUB" and draft.elements["subject_accounts"] == ["HUB", "SND0", "SND1", "SND2"]
    reason = out[-1].alerts[0].reasons[0]
    assert "at or just under the 10,000.00 USD reporting threshold (reportable above it)" in reason.en
    assert "等于或略低于 10,000.00 USD 的报告标准（超过才须报告）" in reason.zh


def test_per_person_cash_aggregation_through_the_main_job():
    # 31 CFR 1010.313: one person's 6,000 + 6,000 USD cash into two accounts on one business day: one CTR
    tf = Taskflow("aml", jurisdiction="US", model=False, customers={"ACC1": "P1", "ACC2": "P1"})
    out = tf([rec(1, "ACC1", "ACC1", "6000", currency="USD", channel="cash_deposit"),
              rec(2, "ACC2", "ACC2", "6000", hours=2, currency="USD", channel="cash_deposit")])
    assert out[0].reports == []
    (ctr,) = out[1].reports
    assert (ctr.kind, ctr.customer_account, ctr.total_amount) == ("ctr", "P1", 12000)
    alone = Taskflow("aml", jurisdiction="US", model=False)(
        [rec(1, "ACC1", "ACC1", "6000", currency="USD", channel="cash_deposit"),
         rec(2, "ACC2", "ACC2", "6000", hours=2, currency="USD", channel="cash_deposit")])
    assert [r.reports for r in alone] == [[], []]
    with pytest.raises(ConfigError, match="customers"):
        Taskflow("aml", model=False, customers="P1")
    with pytest.raises(ConfigError, match="customer_types"):
        Taskflow("aml", model=False, customer_types={"A": "firm"})


def test_chain_is_not_a_cycle_until_it_closes(aml: Taskflow):
    chain = aml([rec(1, "A", "B", "10000", days=0), rec(2, "B", "C", "9900", days=1),
                 rec(3, "C", "D", "9800", days=2)])
    assert not any("cycle" in r.typologies for r in chain)
    closing = aml(rec(4, "D", "A", "9700", days=3))  # time-ordered, each hop 99 %: a cycle (issue 21)
    assert "cycle" in closing.typologies and closing.flagged
    cycle = next(a for a in closing.alerts if a.typology == "cycle")
    assert set(cycle.transaction_ids) == {"p1", "p2", "p3", "p4"}


def test_high_risk_country_flags_and_rules_can_be_switched_off(aml: Taskflow):
    hit = aml(rec(1, "A", "B", "5000", sender_country="CN", receiver_country="KP"))
    assert hit.flagged and hit.typologies[:1] == ["high_risk_jurisdiction"] and hit.risk_score >= 0.8
    quiet = Taskflow("aml", model=False, rules={"high_risk_jurisdiction": False})
    res = quiet(rec(1, "A", "B", "5000", sender_country="CN", receiver_country="KP"))
    assert not res.flagged and res.alerts == [] and res.risk_score == 0.0


def test_model_alert_when_the_model_alone_crosses_its_threshold():
    aml = Taskflow("aml", transaction_model=True)  # the per-transaction scorer (see test_model_alerts for the default)
    scorer = aml.pipeline.scorer
    assert scorer is not None and 0 < scorer.threshold < 1
    # an AMLSim-like laundering signature: one sender pays the same amount to one receiver on five days running
    # (bundle 2.1.0 flags the third to fifth; routine repeats days or weeks apart, as in benchmarks/aml_everyday.py,
    # it does not)
    out = aml([rec(i, "M1", "M2", "16.09", days=1 + i) for i in range(5)])
    scores = [r.model_score for r in out]
    assert all(0 <= s <= 1 for s in scores)
    opened = 0
    for r in out:
        model_alerts = [a for a in r.alerts if a.typology == "model_risk"]
        if r.model_score >= scorer.threshold:
            assert r.flagged  # every transfer the model flags is flagged ...
        # ... but the pair opens one model_risk alert per window: the first flagged transfer's
        assert bool(model_alerts) == (r.model_score >= scorer.threshold and opened == 0)
        if model_alerts:
            opened += 1
            assert model_alerts[0].fired_by.startswith("model:aml-risk-mlp")
    assert opened == 1 and sum(r.model_score >= scorer.threshold for r in out) >= 2


def test_option_errors_are_typed_and_name_the_option():
    with pytest.raises(ConfigError, match="lookback_days"):
        Taskflow("aml", lookback_days=90)  # the shipped model was trained at 30 days
    with pytest.raises(ConfigError, match="rules"):
        Taskflow("aml", model=False, rules=["cycle"])
    with pytest.raises(ConfigError, match="alert_threshold"):
        Taskflow("aml", model=False, alert_threshold=2)
    with pytest.raises(ConfigError, match="Unknown typolog"):
        Taskflow("aml", model=False, rules={"smurfing": {}})
    rules_only = Taskflow("aml", model=False, lookback_days=150)
    assert rules_only.pipeline.scorer is None and rules_only.pipeline.window.lookback == 150 * 86_400


def test_foreign_currency_needs_a_rate_and_fails_before_changing_state():
    tf = Taskflow("aml", model=False)
    with pytest.raises(ConfigError, match="fx_rates"):
        tf([rec(1, "A", "B", "100"), rec(2, "A", "B", "100", currency="USD")])
    assert len(tf.pipeline.window) == 0
    fx = Taskflow("aml", model=False, fx_rates={"as_of": "2024-01-02", "USD/CNY": "7.10"},
                  rules={"rapid_pass_through": {"min_amount": 50_000}})
    out = fx([rec(1, "X", "M", "8000", currency="USD", hours=0), rec(2, "M", "Y", "56000", hours=3)])
    # 8,000 USD = 56,800 CNY in, 56,000 CNY out three hours later: a pass-through in home-currency terms
    assert out[1].typologies == ["rapid_pass_through"]


def test_unflagged_results_are_ordinary_models(aml: Taskflow):
    quiet = aml(rec(1, "Q1", "Q2", "250.00"))
    assert not quiet.flagged and not quiet.alerts
    same = TransactionAssessment.model_validate(quiet.model_dump())
    assert same == quiet and TransactionAssessment.model_validate_json(quiet.model_dump_json()) == quiet
    assert quiet.model_fields_set == set(TransactionAssessment.model_fields)


def test_cn_default_with_fx_rates_gives_the_usd_structuring_fan_in_alert():
    tf = Taskflow("aml", model=False, fx_rates={"as_of": "2024-01-02", "USD/CNY": "7.10"})
    out = tf([rec(i, f"S{i}", "FUNNEL", amt, days=i, currency="USD")
              for i, amt in enumerate(["9900", "8000", "9500", "9850", "8700"])])
    alerts = [a for r in out for a in r.alerts]
    # China's foreign-currency cash level is USD 10,000 inclusive (PBOC Order 2016 No. 3 Art. 5): 8,000-9,900 is under
    assert [(a.typology, a.variant) for a in alerts] == [("structuring", "fan_in")]
    assert "10,000.00 USD" in alerts[0].reasons[0].en


def test_model_off_results_name_no_model(aml: Taskflow):
    """``model=False`` runs rules only: neither the results nor the load event may name the scorer bundle."""
    rules_only = Taskflow("aml", model=False)
    (off,) = rules_only([rec(1, "A", "B", "1000")])
    assert off.meta is not None and off.model_score is None
    assert (off.meta.model_name, off.meta.model_version, off.meta.bundle_sha256) == (None, None, None)
    (on,) = aml([rec(1, "A", "B", "1000")])
    assert on.meta.model_name == "aml-account-gbdt" and on.meta.bundle_sha256 and on.model_score is not None


def test_model_off_runs_at_int8_without_an_int8_bundle(tmp_path, monkeypatch):
    """No model runs with model=False, so precision="int8" needs no INT8 bundle (TaskSpec.model_switch)."""
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))  # an empty store: no INT8 bundle was ever built here
    (r,) = Taskflow("aml", model=False, precision="int8")([rec(1, "A", "B", "1000")])
    assert r.meta.precision == "int8" and r.meta.model_name is None and r.model_score is None
    with pytest.raises(UnsupportedPrecisionError, match="sectorflow models quantize aml"):
        Taskflow("aml", precision="int8")  # with the model on, the INT8 bundle is needed


def test_a_model_switch_that_is_not_a_bool_is_named_before_any_bundle_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))  # no INT8 bundle: that error used to come first for model=0
    for value in (0, "no", None):
        with pytest.raises(ConfigError, match=r"model=.*give True or False"):
            Taskflow("aml", model=value, precision="int8")


def test_exempt_accounts_silence_hub_typologies_on_them_only():
    # a shop paid by 12 customers in a day: a fan-in alert, unless the bank has reviewed the shop as a merchant
    tx = [rec(i, f"CUST{i}", "SHOP", "35.50", hours=i) for i in range(12)]
    tx += [rec(20 + i, "Q1", "Q1", amount, hours=13 + i, channel="cash_deposit")  # structuring is not a hub rule
           for i, amount in enumerate(("49900", "49800"))]

    def run(**options):
        out = Taskflow("aml", model=False, **options)(tx)
        return [a.typology for r in out for a in r.alerts], [d.kind for r in out for d in r.reports]

    typologies, reports = run()
    assert "fan_in" in typologies and "structuring" in typologies
    exempt_typologies, exempt_reports = run(exempt_accounts={"SHOP": "merchant, reviewed 2026-11"})
    assert "fan_in" not in exempt_typologies and "structuring" in exempt_typologies
    assert exempt_reports == reports  # report drafts are regulatory: never exempted
    assert run(exempt_accounts=["OTHER"])[0] == typologies
    tf = Taskflow("aml", model=False, exempt_accounts=["SHOP"])  # one at a time gives the same alerts
    assert [a.typology for t in tx for r in [tf(t)] for a in r.alerts] == exempt_typologies
    for bad in ("no-such-file.txt", [""], {"SHOP": 3}):
        with pytest.raises(ConfigError, match="exempt_accounts"):
            Taskflow("aml", model=False, exempt_accounts=bad)


def test_exempt_accounts_from_a_file(tmp_path):
    listed = tmp_path / "exempt.txt"
    listed.write_text("# reviewed hubs\nSHOP, merchant (reviewed 2026-11)\n\nPAYROLL\n", encoding="utf-8")
    tf = Taskflow("aml", model=False, exempt_accounts=str(listed))
    assert tf.pipeline.exempt_accounts == {"SHOP": "merchant (reviewed 2026-11)", "PAYROLL": "exempt"}
    out = tf([rec(i, f"CUST{i}", "SHOP", "35.50", hours=i) for i in range(12)])
    assert not any(a.typology == "fan_in" for r in out for a in r.alerts)
    # read like the customers / customer_types files (one reader): a header line, a line with no account
    listed.write_text("\ufeffaccount,reason\nSHOP\n,orphan reason\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"exempt_accounts=.*line\(s\) 3 are not 'account,value'"):
        Taskflow("aml", model=False, exempt_accounts=str(listed))
    listed.write_text("account,reason\nSHOP\n", encoding="utf-8")
    assert Taskflow("aml", model=False, exempt_accounts=str(listed)).pipeline.exempt_accounts == {"SHOP": "exempt"}


def test_a_model_alert_alone_drafts_no_suspicious_report_unless_model_str():
    tx = [rec(i, "M1", "M2", "16.09", days=1 + i) for i in range(5)]  # the model's own alert (see above)

    def run(**options):
        out = Taskflow("aml", transaction_model=True, **options)(tx)
        alerts = [a for r in out for a in r.alerts if a.typology == "model_risk"]
        drafts = [d for r in out for d in r.reports if d.kind == "suspicious"]
        return alerts, drafts

    alerts, drafts = run()
    assert len(alerts) == 1 and drafts == []  # flagged for review; a report needs a typology rule by default
    codes = [r.code for r in alerts[0].reasons]
    assert codes[0] == "model.risk" and "model.feature.pair_cnt" in codes  # facts an analyst can check
    alerts, drafts = run(model_str=True)
    assert len(alerts) == 1 and [d.customer_account for d in drafts] == ["M1"]
    with pytest.raises(ConfigError, match="model_str"):
        Taskflow("aml", model_str="yes")


def test_customers_option_joins_one_persons_accounts_for_the_report_and_the_structuring_alert():
    deposits = [rec(1, "W", "A1", "45000", hours=1, channel="cash_deposit"),
                rec(2, "W", "A2", "46000", hours=3, channel="cash_deposit")]
    out = Taskflow("aml", model=False, customers={"A1": "P1", "A2": "P1"})(deposits)
    (alert,) = out[1].alerts
    assert (alert.typology, alert.variant, alert.transaction_ids) == ("structuring", "cumulative", ["p1", "p2"])
    (draft,) = [d for d in out[1].reports if d.kind == "large_value"]
    assert draft.total_amount == 91_000 and draft.transaction_ids == ["p1", "p2"]
    # without the mapping neither account reaches anything on its own
    plain = Taskflow("aml", model=False)(deposits)
    assert [r.alerts for r in plain] == [[], []] and [r.reports for r in plain] == [[], []]


def test_a_suspicious_report_draft_of_structuring_names_the_customer_not_the_till_or_walk_in_id():
    """Cash booked against WALKIN or a branch's CASH account: the draft's customer and subject accounts are the
    customers (WALKIN and the tills were listed as subjects); the cash ids stay in its transaction list."""
    tf = Taskflow("aml", model=False, str_threshold=0.7)  # cumulative structuring scores 0.7
    (_, second) = tf([rec(1, "WALKIN", "C9", "49900", hours=1, channel="cash_deposit"),
                      rec(2, "WALKIN", "C9", "49800", hours=2, channel="cash_deposit")])
    (str_draft,) = [d for d in second.reports if d.kind == "suspicious"]
    assert str_draft.customer_account == "C9" and str_draft.elements["subject_accounts"] == ["C9"]
    assert [t["sender_account"] for t in str_draft.elements["transactions"]] == ["WALKIN", "WALKIN"]
    funnel = Taskflow("aml", model=False)  # a structuring fan-in (score 0.8): cash at two tills and a transfer
    *_, last = funnel([rec(3, "CASH-BJ", "F", "45000", days=0, channel="cash_deposit"),
                       rec(4, "S1", "F", "47000", days=1),
                       rec(5, "CASH-SH", "F", "46000", days=2, channel="cash_deposit")])
    (fan_in,) = [d for d in last.reports if d.kind == "suspicious" and d.elements["variant"] == "fan_in"]
    assert fan_in.customer_account == "F" and fan_in.elements["subject_accounts"] == ["F", "S1"]
    assert fan_in.transaction_ids == ["p3", "p4", "p5"]
