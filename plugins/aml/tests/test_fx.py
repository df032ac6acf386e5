"""FX conversion with caller-supplied rate tables."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from sectorflow import ConfigError
from sectorflow_aml.fx import FxRates, FxTable, MissingRateError, illustrative_table, is_iso4217


def test_direct_inverse_and_cross_rates() -> None:
    fx = FxRates.from_mapping({"USD/CNY": "7.20", "EUR/USD": "1.10"}, as_of=date(2024, 1, 2))
    on = date(2024, 1, 5)
    assert fx.convert(Decimal("100"), "USD", "CNY", on) == Decimal("720.00")
    assert fx.convert(Decimal("720"), "CNY", "USD", on) == Decimal("100")
    assert fx.rate("EUR", "CNY", on) == Decimal("7.920")  # EUR -> USD -> CNY
    assert fx.convert(Decimal("5"), "JPY", "JPY", on) == Decimal("5")


def test_latest_table_on_or_before_the_date_is_used() -> None:
    fx = FxRates([FxTable(date(2024, 1, 1), {("USD", "CNY"): Decimal("7.0")}),
                  FxTable(date(2024, 2, 1), {("USD", "CNY"): Decimal("7.3")})])
    assert fx.rate("USD", "CNY", date(2024, 1, 31)) == Decimal("7.0")
    assert fx.rate("USD", "CNY", date(2024, 2, 1)) == Decimal("7.3")
    with pytest.raises(MissingRateError, match="USD/CNY.*2023-12-31"):
        fx.rate("USD", "CNY", date(2023, 12, 31))


def test_missing_pair_and_stale_tables_raise() -> None:
    fx = FxRates.from_mapping({"USD/CNY": "7.2"}, as_of=date(2024, 1, 2))
    with pytest.raises(MissingRateError, match="GBP/CNY"):
        fx.convert(Decimal("1"), "GBP", "CNY", date(2024, 1, 3))
    stale = FxRates(fx.tables, max_age_days=30)
    with pytest.raises(MissingRateError):
        stale.rate("USD", "CNY", date(2024, 6, 1))


def test_csv_rate_table(tmp_path) -> None:
    path = tmp_path / "rates.csv"
    path.write_text("as_of,base,quote,rate\n2024-01-02,USD,CNY,7.1\n2024-01-02,eur,usd,1.09\n"
                    "2024-02-01,USD,CNY,7.15\n", encoding="utf-8")
    fx = FxRates.from_csv(path)
    assert [t.as_of for t in fx.tables] == [date(2024, 1, 2), date(2024, 2, 1)]
    assert fx.rate("EUR", "USD", date(2024, 2, 3)) == Decimal("1.09")  # only the January table has EUR
    assert fx.rate("USD", "CNY", date(2024, 2, 3)) == Decimal("7.15")
    path.write_text("as_of,base,quote,rate\n2024-01-02,USD,CNY,seven\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2"):
        FxRates.from_csv(path)


def test_csv_rate_table_from_a_spreadsheet_and_a_pair_given_twice(tmp_path) -> None:
    # Excel's "CSV UTF-8" starts with a byte-order mark: the header read '\ufeffas_of' and the file was refused as
    # lacking as_of; spaces and capitals around header names are spreadsheet habits too
    path = tmp_path / "rates.csv"
    path.write_bytes("\ufeffAs_Of, base ,quote,rate\r\n2026-11-02,USD,CNY,7.12\r\n".encode("utf-8"))
    assert FxRates.from_csv(path).rate("USD", "CNY", date(2026, 11, 2)) == Decimal("7.12")
    # two rates for one pair and day: the later row silently won; now an error naming both lines
    path.write_text("as_of,base,quote,rate\n2026-11-02,USD,CNY,7.12\n2026-11-02,EUR,CNY,7.70\n"
                    "2026-11-02,usd,cny,7.21\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"lines 2 and 4: two USD/CNY rates for 2026-11-02; keep one"):
        FxRates.from_csv(path)
    path.write_text("date,base,quote,rate\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"lacks the column\(s\) as_of \(header as_of,base,quote,rate; found date, "):
        FxRates.from_csv(path)


def test_bad_tables_are_refused() -> None:
    with pytest.raises(ConfigError, match="ISO 4217"):
        FxTable(date(2024, 1, 1), {("USD", "BTC"): Decimal("0.00002")})
    with pytest.raises(ConfigError, match="positive"):
        FxTable(date(2024, 1, 1), {("USD", "CNY"): Decimal("-7")})
    with pytest.raises(ConfigError, match="not a float"):
        FxRates.from_mapping({"USD/CNY": 7.1}, as_of=date(2024, 1, 1))


def test_iso_codes_and_illustrative_table_is_labelled() -> None:
    assert is_iso4217("CNY") and is_iso4217("USD") and not is_iso4217("XYZ") and not is_iso4217("BITCOIN")
    assert "ILLUSTRATIVE" in illustrative_table().tables[0].source


def test_with_no_rate_table_at_all_the_error_names_no_date() -> None:
    """With no table, no date would do: the message must not quote the date the caller passed (the window passes
    today, so a user saw 'for <today>' for a transaction of another day)."""
    with pytest.raises(MissingRateError) as raised:
        FxRates([]).rate("EUR", "USD", date(2031, 7, 9))
    message = str(raised.value)
    assert message.startswith("No EUR/USD exchange rate: no rate table was given, so there is none for any date")
    assert "2031" not in message and raised.value.details["on"] == "2031-07-09"


def test_the_pipeline_without_rates_names_the_foreign_transaction_and_its_day_not_today() -> None:
    from sectorflow import Taskflow

    txn = {"transaction_id": "e1", "timestamp": "2026-11-06T15:00:00", "sender_account": "GINA",
           "receiver_account": "GINA", "amount": "9000.00", "currency": "EUR", "channel": "cash_deposit"}
    with pytest.raises(MissingRateError, match=r"^Transaction e1 of 2026-11-06 \(UTC\) is in EUR: A EUR transaction "
                                               r"needs a EUR/USD rate.*no rate table was given") as raised:
        Taskflow("aml", jurisdiction="US", model=False)([txn])
    assert date.today().isoformat() not in str(raised.value)
    assert raised.value.details["transaction_id"] == "e1" and raised.value.details["date"] == "2026-11-06"


def test_an_fx_rate_file_saved_as_utf16_or_gbk_is_read(tmp_path):
    """Excel's "Unicode text" (UTF-16) and a Chinese Windows export (GBK): refused as not UTF-8 before."""
    text = "as_of,base,quote,rate,备注\r\n2026-01-02,USD,CNY,7.1234,中国银行 中间价 外汇\r\n"
    for encoding in ("utf-16", "gbk"):
        path = tmp_path / f"{encoding}.csv"
        path.write_bytes(text.encode(encoding))
        rates = FxRates.from_csv(path)
        assert [(t.as_of, dict(t.rates)) for t in rates.tables] == [(date(2026, 1, 2), {("USD", "CNY"): Decimal("7.1234")})]
