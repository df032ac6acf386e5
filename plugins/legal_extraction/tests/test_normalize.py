"""Normalisation edge cases, including the library behaviour relied on (cn2an, price-parser, dateparser)."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import normalize as nz


@pytest.mark.parametrize("text, amount, currency", [
    ("壹佰万元整", "1000000.00", "CNY"),                      # financial uppercase with 元 and 整 (cn2an)
    ("玖仟陆佰陆拾伍圆壹角捌分", "9665.18", "CNY"),             # 圆, 角 and 分
    ("人民币壹拾万零叁佰元整", "100300.00", "CNY"),            # 零 inside the number
    ("10.56亿元", "1056000000.00", "CNY"),                    # a decimal point before 亿, not a thousands separator
    ("人民币100万元", "1000000.00", "CNY"),
    ("1,000,000.00", "1000000.00", None),                    # comma thousands, no currency named
    ("120.000 USD", "120000.00", "USD"),                      # dot thousands (price-parser)
    ("EUR 1.234.567,89", "1234567.89", "EUR"),
    ("USD 5 million", "5000000.00", "USD"),
    ("¥1,409.50", "1409.50", "CNY"),
])
def test_amounts(text, amount, currency):
    assert nz.parse_amount(text) == {"amount": amount, "currency": currency}


def test_words_and_figures_that_disagree_are_flagged_not_resolved():
    text = "许可费用总额为人民币叁拾万元整（¥350,000.00），定金人民币贰万元整（¥20,000.00）。"
    amounts = nz.amounts_in(text)
    assert [(a[2], a[3]["amount"], a[4]) for a in amounts] == [
        ("人民币叁拾万元整", "300000.00", "words"), ("¥350,000.00", "350000.00", "figures"),
        ("人民币贰万元整", "20000.00", "words"), ("¥20,000.00", "20000.00", "figures")]
    warnings = nz.check_consistency(amounts)
    assert len(warnings) == 1 and "300000.00" in warnings[0] and "350000.00" in warnings[0]


@pytest.mark.parametrize("text, iso", [
    ("二〇二三年三月一日", "2023-03-01"), ("2023年3月1日", "2023-03-01"), ("2023.3.1", "2023-03-01"),
    ("15th july 2018", "2018-07-15"), ("Sept 1st, 2005", "2005-09-01"), ("October 1, 1999", "1999-10-01"),
    ("16 day of August. 2012", "2012-08-16"), ("the 24t h day of August 2018", "2018-08-24"),
    ("1/5/2010", "2010-01-05"),            # US month/day order
    ("June __, 2005", "2005-06"),          # day left blank: month precision, not a guessed day
    ("2023年2月30日", None),                # no such day
])
def test_dates(text, iso):
    assert nz.parse_date(text) == iso


@pytest.mark.parametrize("text, iso, successive, business", [
    ("180日", "P180D", False, False), ("十二个月", "P12M", False, False), ("successive 1 year", "P1Y", True, False),
    ("30 days", "P30D", False, False), ("thirty (30) days", "P30D", False, False),
    ("successive one (1) year periods", "P1Y", True, False), ("sixty (60) calendar days", "P60D", False, False),
    ("five (5) business days", "P5D", False, True), ("6 weeks", "P6W", False, False), ("0.5 year", "P6M", False, False),
    ("十个工作日", "P10D", False, True),
])
def test_durations(text, iso, successive, business):
    found = nz.parse_duration(text)
    assert (found["iso"], found["successive"], found["business_days"]) == (iso, successive, business)


def test_relative_dates_keep_their_anchor():
    assert {k: v for k, v in nz.parse_relative("乙方应于本合同签订之日起30日内支付").items()
            if k in ("anchor", "offset", "bound")} == {"anchor": "本合同签订之日", "offset": "P30D", "bound": "within"}
    found = nz.parse_relative("甲方在收到发票后十个工作日内付款")
    assert (found["anchor"], found["offset"], found["business_days"]) == ("收到发票后", "P10D", True)
    assert nz.parse_relative("本合同一式两份") is None


@pytest.mark.parametrize("text, raw, amount, currency", [
    ("5,000美元", "5,000美元", "5000.00", "USD"),               # 美元 is not CNY's 元
    ("合同总价为100万欧元", "100万欧元", "1000000.00", "EUR"),
    ("500万港元", "500万港元", "5000000.00", "HKD"),
    ("100万日元", "100万日元", "1000000.00", "JPY"),
    ("1,000英镑", "1,000英镑", "1000.00", "GBP"),
    ("伍万美元", "伍万美元", "50000.00", "USD"),                 # words with a foreign currency
    ("HK$2,000,000", "HK$2,000,000", "2000000.00", "HKD"),     # HK$ is not US$
    ("S$1,000", "S$1,000", "1000.00", "SGD"),
    ("US$1,000", "US$1,000", "1000.00", "USD"),
    ("人民币１２３，４５６．７８元", "人民币１２３，４５６．７８元", "123456.78", "CNY"),  # full-width: cents kept
    ("¥120, 000.00", "¥120, 000.00", "120000.00", "CNY"),     # OCR: a space after the thousands comma
])
def test_currencies_full_width_and_ocr_amounts(text, raw, amount, currency):
    (found,) = nz.amounts_in(text)
    assert found[2] == raw and text[found[0]:found[1]] == raw
    assert found[3] == {"amount": amount, "currency": currency}


def test_a_space_after_a_comma_joins_no_amounts_without_cents():
    assert [a[3]["amount"] for a in nz.amounts_in("fees of $100, 200 units")] == ["100.00"]


@pytest.mark.parametrize("text, iso", [
    ("２０２３年３月１日", "2023-03-01"), ("２０２３．３．１", "2023-03-01"),   # full-width digits
    ("二O二三年三月一日", "2023-03-01"), ("2O23年3月1日", "2023-03-01"),       # OCR: the letter O for a zero
])
def test_full_width_and_ocr_dates(text, iso):
    (found,) = nz.dates_in(text)
    assert found == (0, len(text), text, iso)


@pytest.mark.parametrize("text, iso", [
    ("半年", "P6M"), ("一年半", "P18M"), ("三个半月", "P3M15D"), ("半个月", "P15D"), ("1.5年", "P18M"),
])
def test_chinese_halves(text, iso):
    assert nz.parse_duration(text)["iso"] == iso
