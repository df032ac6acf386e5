"""Money in report drafts is stated to the currency's minor unit (2 places; JPY 0; KWD 3), half up: converted
amounts and totals (a fresh-user check saw 10000.00000000000000000000000 USD and 10650.0000 CNY)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sectorflow import Taskflow
from sectorflow_aml.fx import FxRates, minor_unit, to_minor_unit

RATES = {"as_of": "2026-11-01", "USD/CNY": "7.10", "USD/JPY": "150"}


def txn(tid: str, amount: str, currency: str = "CNY", channel: str = "cash_deposit", **extra: str) -> dict[str, str]:
    return {"transaction_id": tid, "timestamp": "2026-11-03T10:00:00+08:00", "sender_account": "P",
            "receiver_account": "P", "amount": amount, "currency": currency, "channel": channel, **extra}


def test_minor_units_and_rounding_half_up() -> None:
    assert [minor_unit(c) for c in ("CNY", "USD", "JPY", "KRW", "KWD", "CLF", "XAU")] == [2, 2, 0, 0, 3, 4, 2]
    assert str(to_minor_unit(Decimal("10650.0000"), "CNY")) == "10650.00"
    assert str(to_minor_unit(Decimal("0.005"), "USD")) == "0.01"  # half up, not half even
    assert str(to_minor_unit(Decimal("1499.5"), "JPY")) == "1500"
    assert str(to_minor_unit(Decimal("1.23456"), "KWD")) == "1.235"


def test_a_conversion_is_stated_in_the_quote_currencys_minor_unit() -> None:
    fx = FxRates.from_mapping({"USD/CNY": "7.10", "USD/JPY": "150"}, as_of=date(2026, 11, 1))
    on = date(2026, 11, 3)
    assert str(fx.convert(Decimal("1500000"), "JPY", "USD", on)) == "10000.00"  # an inverse rate, 1/150
    assert str(fx.convert(Decimal("12.34"), "USD", "JPY", on)) == "1851"
    assert str(fx.convert(Decimal("1500.00"), "USD", "CNY", on)) == "10650.00"
    assert str(fx.convert(Decimal("100"), "JPY", "CNY", on)) == "4.73"  # cross via USD: 100 / 150 * 7.10 = 4.7333
    assert str(fx.convert(Decimal("30000.1250"), "CNY", "CNY", on)) == "30000.1250"  # no conversion: as given


def test_report_draft_totals_are_in_minor_units() -> None:
    tf = Taskflow("aml", model=False, fx_rates=RATES)
    (jpy,) = tf([txn("j1", "1500000", "JPY")])  # CN large-value cash: foreign currency counted in USD
    (draft,) = jpy.reports
    assert (draft.kind, draft.currency, str(draft.total_amount)) == ("large_value", "USD", "10000.00")
    assert draft.elements["transactions"][0]["amount_usd"] == "10000.00"
    assert '"total_amount":"10000.00"' in draft.model_dump_json()
    tf.reset_state()
    (ir,) = tf([txn("h1", "1500.00", "USD", "transfer", sender_account="ACME", receiver_account="IRCO",
                    sender_country="CN", receiver_country="IR")])
    suspicious = [d for d in ir.reports if d.kind == "suspicious"]
    assert [(d.currency, str(d.total_amount)) for d in suspicious] == [("CNY", "10650.00")]
    tf.reset_state()
    cny = tf([txn("c1", "30000.1250"), txn("c2", "20000.0050")])  # sub-cent input amounts: the total is to the fen
    assert [str(d.total_amount) for r in cny for d in r.reports] == ["50000.13"]
