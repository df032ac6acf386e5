"""Normalisation of amounts, dates and durations found in contracts (zh + en).

Libraries do the parsing: ``cn2an`` (Chinese numerals, financial uppercase 壹贰叁 with 元/圆/角/分, 万/亿),
``price-parser`` (figures with either thousands convention: ``1,000,000.00`` and ``120.000 USD``; currency
signs and codes), ``dateparser`` (English dates: "15th july 2018", "Sept 1st, 2005"). This module only finds the
pieces and joins the results:

- amounts -> ``{"amount": "1000000.00", "currency": "CNY"}`` (decimal string, never a float);
- dates -> ISO 8601 (``2023-03-01``; ``2005-06`` when the day is blank, as in "June __, 2005");
- durations -> ISO 8601 durations (``P180D``, ``P1Y``, ``P6W``), with ``successive`` for renewals;
- relative dates ("签订之日起30日内") -> ``{"anchor": "签订之日", "offset": "P30D", "bound": "within"}``.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from price_parser import Price
from sectorflow import ConfigError

CN_DIGITS = "零〇○一二三四五六七八九十百千万亿两壹贰叁肆伍陆柒捌玖拾佰仟"
CN_UPPER = "零壹贰叁肆伍陆柒捌玖拾佰仟万亿元圆角分整正"

_CURRENCIES = (  # most specific first: 美元/港元 before CNY's 元, HK$/S$ before USD's bare $
    (r"港币|港元|HKD|HK\$", "HKD"),
    (r"新加坡元|新币|SGD|(?<![A-Za-z])S\$", "SGD"),
    (r"澳元|澳大利亚元|AUD|(?<![A-Za-z])A\$", "AUD"),
    (r"加元|加拿大元|CAD|(?<![A-Za-z])C\$", "CAD"),
    (r"新台币|TWD|NT\$", "TWD"),
    (r"美元|美金|USD|US\$|U\.S\.\s?\$", "USD"),
    (r"欧元|EUR|€", "EUR"),
    (r"英镑|GBP|£", "GBP"),
    (r"日元|日圆|JPY", "JPY"),
    (r"瑞士法郎|CHF", "CHF"),
    (r"人民币|RMB|CNY|¥|￥|元|圆", "CNY"),
    (r"\$", "USD"),
)
_CURRENCY_WORDS = "港币|港元|新加坡元|澳大利亚元|澳元|加拿大元|加元|新台币|美元|美金|欧元|英镑|日元|日圆|瑞士法郎"
"""Chinese names of foreign currencies: ``伍万美元`` is an amount in words (USD), not ``伍万`` plus text."""
_PREFIX = r"(?:人民币|RMB|CNY|USD|US\$|HK\$|HKD|NT\$|S\$|A\$|C\$|SGD|AUD|CAD|TWD|CHF|EUR|GBP|JPY|[¥￥$€£])"
_SUFFIX = rf"(?:{_CURRENCY_WORDS}|元|圆|USD|EUR|RMB|CNY|HKD|GBP|JPY|dollars)"
_HALF_WIDTH = str.maketrans("０１２３４５６７８９．／－＄％", "0123456789./-$%")
"""Full-width digits and the signs around them (``１２３，４５６．７８元``, ``２０２３．３．１``) as ASCII, one character for
one, so offsets found in the translated text hold in the original. The full-width comma ``，`` is left alone: in
Chinese it separates clauses, and the patterns read it as a thousands separator only between digit groups."""


def half_width(text: str) -> str:
    """``text`` with full-width digits, ``．／－＄％`` replaced by ASCII (same length: offsets are unchanged)."""
    return text.translate(_HALF_WIDTH)


FIGURES_RE = re.compile(
    rf"(?:{_PREFIX}\s*)?"
    r"\d{1,3}(?:[,，]\s?\d{3})+\.\d{2}(?![\d])(?:\s*(?:万|亿|million|billion))?"  # OCR: "¥120, 000.00"
    rf"(?:\s*{_SUFFIX})?"
    rf"|(?:{_PREFIX}\s*)?"
    r"\d{1,3}(?:[,，.]\d{3})+(?:[.,]\d{1,2})?(?![\d])(?:\s*(?:万|亿|million|billion))?"
    rf"(?:\s*{_SUFFIX})?"
    rf"|(?:{_PREFIX}\s*)?\d+(?:\.\d+)?"
    rf"(?:\s*(?:万|亿|million|billion))?(?:\s*{_SUFFIX})?",
    re.IGNORECASE)
"""An amount written in figures, with optional currency before or after and 万/亿/million multipliers."""

WORDS_RE = re.compile(rf"(?:人民币|RMB)?(?:（?大写）?[:：]?)?[{CN_DIGITS}]+(?:(?:{_CURRENCY_WORDS}|[元圆])[{CN_DIGITS}角分整正]*)")
"""An amount written in Chinese words (financial uppercase or ordinary numerals) ending in 元/圆 ..."""



_EN_NUMBER_WORD = (r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                   r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
                   r"ninety|hundred|thousand|million|billion)")
EN_WORDS_RE = re.compile(
    rf"\b(?P<w>{_EN_NUMBER_WORD}(?:(?:[\s\-]+|\s+and\s+){_EN_NUMBER_WORD})*)"
    r"(?:\s+and\s+(?P<cents>\d{1,2})\s*/\s*100)?\s+"
    r"(?P<cur>(?:(?:US|U\.S\.|United\s+States|Hong\s+Kong|Singapore|Australian|Canadian)\s+)?dollars?|"
    r"euros?|pounds?(?:\s+sterling)?|yuan|renminbi)\b", re.IGNORECASE)
"""An English amount in words, with its currency: "Two Hundred Thousand US Dollars", "one million dollars",
"One Thousand and 50/100 Dollars". Without a currency word a number in words is no amount ("thirty (30) days")."""


def amount_from_english_words(words: str) -> Decimal | None:
    """Value of an English number in words: "two hundred and fifty thousand" -> 250000 (``text2num``, which
    reads "and" and hyphens); ``None`` when it is no well-formed number ("thousand hundred")."""
    from text_to_num import text2num  # imported on first use

    try:
        return Decimal(text2num(re.sub(r"\s+", " ", words.lower().replace("-", " ")).strip(), "en"))
    except ValueError:
        return None


def _english_currency(name: str) -> str:
    name = name.lower()
    for cue, code in (("hong kong", "HKD"), ("singapore", "SGD"), ("australian", "AUD"), ("canadian", "CAD"),
                      ("dollar", "USD"), ("euro", "EUR"), ("pound", "GBP"), ("yuan", "CNY"), ("renminbi", "CNY")):
        if cue in name:
            return code
    return "USD"


def _cn2an() -> Any:
    """The ``cn2an`` module, imported on first use (0.9 s: every task's start would pay it at plugin discovery)."""
    import cn2an

    return cn2an

def currency_of(text: str) -> str | None:
    """ISO 4217 code named in ``text`` (人民币/¥/元 -> CNY, $/USD -> USD, ...), or ``None``."""
    for pattern, code in _CURRENCIES:
        if re.search(pattern, text, re.IGNORECASE):
            return code
    return None


def _decimal(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def amount_from_words(text: str) -> Decimal | None:
    """Value of an amount in Chinese words: ``壹佰万元整`` -> 1000000, ``玖仟陆佰陆拾伍圆壹角捌分`` -> 9665.18.

    Uses ``cn2an`` (its ``normal`` mode reads 元/圆, 角, 分 and 整); ``None`` if it cannot read the text.
    """
    core = re.sub(_CURRENCY_WORDS, "元", re.sub(r"人民币|RMB|大写|[（()）:：\s]", "", text))
    core = re.sub(r"[整正]$", "", core)
    if not core:
        return None
    try:
        return _decimal(_cn2an().cn2an(core, "normal"))
    except (ValueError, KeyError, IndexError, InvalidOperation):
        try:
            return _decimal(_cn2an().cn2an(re.sub(r"[元圆].*$", "", core), "smart"))
        except (ValueError, KeyError, IndexError, InvalidOperation):
            return None


def amount_from_figures(text: str) -> Decimal | None:
    """Value of an amount in figures: ``1,000,000.00``, ``120.000 USD`` (dot thousands), ``10.56亿`` (x 10^8),
    ``100万`` (x 10^4), ``5 million``. ``price-parser`` reads the number; the multiplier is applied here."""
    multiplier = Decimal(1)
    if "亿" in text or re.search(r"billion", text, re.I):
        multiplier = Decimal(10) ** 8 if "亿" in text else Decimal(10) ** 9
    elif "万" in text:
        multiplier = Decimal(10) ** 4
    elif re.search(r"million", text, re.I):
        multiplier = Decimal(10) ** 6
    number = re.sub(r"(?<=[,，])\s(?=\d{3})", "", half_width(text))  # "120, 000.00" (OCR)
    number = re.sub(r"[，]", ",", number)
    number = re.sub(rf"万|亿|million|billion|{_CURRENCY_WORDS}|元|圆|dollars", " ", number, flags=re.I)
    if multiplier != 1 and re.fullmatch(r"\D*\d+\.\d+\D*", number):  # "10.56亿": a decimal point, not thousands
        value = Decimal(re.search(r"\d+\.\d+", number).group())
    else:
        parsed = Price.fromstring(number)
        if parsed.amount is None:
            return None
        value = Decimal(parsed.amount)
    return _decimal(value * multiplier)


def parse_amount(text: str) -> dict[str, Any] | None:
    """``{"amount": "<decimal>", "currency": ISO code or None}`` for one amount expression, else ``None``."""
    has_words = (re.search(rf"[{CN_DIGITS}]", text) and re.search(rf"{_CURRENCY_WORDS}|[元圆]", text)
                 and not re.search(r"\d", text))
    value = amount_from_words(text) if has_words else amount_from_figures(text)
    if value is None:
        return None
    return {"amount": format(value, "f"), "currency": currency_of(text)}


def amounts_in(text: str) -> list[tuple[int, int, str, dict[str, Any], str]]:
    """Every amount in ``text`` as ``(start, end, raw, normalised, "figures"|"words")``, in order."""
    found = []
    half = half_width(text)  # same length: offsets in it are offsets in text
    for kind, pattern in (("words", WORDS_RE), ("figures", FIGURES_RE)):
        for match in pattern.finditer(half):
            raw = match.group().strip()
            if kind == "figures" and not (currency_of(raw) or re.search(r"万|亿|million|billion|[,，]\s?\d{3}", raw)):
                continue  # a bare number is not an amount
            if kind == "words" and not re.search(r"[零壹贰叁肆伍陆柒捌玖拾佰仟一二三四五六七八九十百千万亿两]", raw):
                continue
            value = parse_amount(raw)
            if value is not None:
                start = match.start() + (len(match.group()) - len(match.group().lstrip()))
                found.append((start, start + len(raw), text[start:start + len(raw)], value, kind))
    for match in EN_WORDS_RE.finditer(half):  # "Two Hundred Thousand US Dollars"
        number = amount_from_english_words(match.group("w"))
        if number is None or re.fullmatch(r"(?i:a|one|hundred|thousand|million|billion)", match.group("w")):
            continue
        if match.group("cents"):
            number += Decimal(match.group("cents")) / 100
        found.append((match.start(), match.end(), text[match.start():match.end()],
                      {"amount": format(_decimal(number), "f"), "currency": _english_currency(match.group("cur"))},
                      "words"))
    found.sort()
    return found


_BETWEEN_FORMS = re.compile(r"[\s（()）\[\]【】:：,，;；、=]*(?:(?:即|大写|小写|人民币|RMB|金额|in\s+words|in\s+figures|"
                            r"i\.e\.|namely)[\s（()）\[\]【】:：,，;；、=]*)*", re.I)
"""What may stand between an amount in words and the same amount in figures: brackets, punctuation and the labels
大写/小写/即 ("人民币350,000.00元（大写：人民币叁拾万元整）", "（大写）：人民币叁拾万元整，（小写）：¥350,000.00")."""


def side_by_side(text: str, first: tuple, second: tuple) -> bool:
    """Whether two amounts of :func:`amounts_in` found in ``text`` (``first`` before ``second``) are one amount
    written twice, in words and in figures: of different kinds, with only brackets, punctuation and the labels
    大写 / 小写 / 即 between them (at most 16 characters). Without ``text``, at most 3 characters apart."""
    if first[4] == second[4] or second[0] < first[1]:
        return False
    if not text:
        return second[0] - first[1] <= 3
    between = text[first[1]:second[0]]
    return len(between) <= 16 and bool(_BETWEEN_FORMS.fullmatch(between))


def amount_value(amounts: list[tuple[int, int, str, dict[str, Any], str]], text: str = "") -> dict[str, Any] | None:
    """The value of the first amount of a sentence (:func:`amounts_in`), or ``None``. When it is written in words
    and in figures side by side (``人民币叁拾万元整（¥350,000.00）``, ``USD 250,000 (Two Hundred Thousand US Dollars)``)
    ``words_and_figures_agree`` says whether they agree, and when they do not, ``amount`` is ``None`` and both
    readings are given (``words``, ``figures``): neither is preferred."""
    if not amounts:
        return None
    first = amounts[0]
    pair = [a for a in amounts[1:] if side_by_side(text, first, a)]
    value = dict(first[3])
    if pair:
        words, figures = (first, pair[0]) if first[4] == "words" else (pair[0], first)
        value["words_and_figures_agree"] = Decimal(words[3]["amount"]) == Decimal(figures[3]["amount"])
        if not value["words_and_figures_agree"]:
            value.update(amount=None, words=words[3]["amount"], figures=figures[3]["amount"])
    return value


def check_consistency(amounts: list[tuple[int, int, str, dict[str, Any], str]], text: str = "") -> list[str]:
    """Warnings for an amount written both in words and in figures that disagree (never resolved silently)."""
    words = [a for a in amounts if a[4] == "words"]
    figures = [a for a in amounts if a[4] == "figures"]
    warnings = []
    for w in words:
        for f in figures:  # the two forms written side by side: 壹佰万元整（¥1,000,000.00）
            if side_by_side(text, w, f) or side_by_side(text, f, w):
                if Decimal(w[3]["amount"]) != Decimal(f[3]["amount"]):
                    warnings.append(f"amount mismatch: words {w[2]!r} = {w[3]['amount']} but figures {f[2]!r} = "
                                    f"{f[3]['amount']}; check the contract (neither is assumed correct)")
    return warnings


# --- dates --------------------------------------------------------------------------------------------------------

ZH_DATE_RE = re.compile(rf"((?:[0-9{CN_DIGITS}]|[OoО](?=[0-9{CN_DIGITS}OoО]*\s*年)){{4}})\s*年\s*([0-9{CN_DIGITS}]{{1,3}})\s*月\s*(?:([0-9{CN_DIGITS}]{{1,3}})\s*[日号])?")
NUM_DATE_RE = re.compile(r"(?<![\d.])((?:19|20)\d{2})[./\-](\d{1,2})[./\-](\d{1,2})(?![\d])")
_MONTHS = (r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|"
           r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?")
EN_DATE_RE = re.compile(
    rf"(?:(?<![\d\w])(?:the\s+)?|(?<=[a-z]))\d{{1,2}}\s{{0,2}}(?:st|nd|rd|th|s\s{{0,2}}t|n\s{{0,2}}d|r\s{{0,2}}d|t\s{{0,2}}h)?\)?\s+(?:day\s+)?"
    rf"(?:of\s+)?(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day,?\s+)?(?:-{{2,}}\s*)?"
    rf"(?:{_MONTHS})\.?\s*,?\s+\d{{4}}\b"
    rf"|\b(?:{_MONTHS})\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th|t\s{{0,2}}h)?\s*|_+|\[\s*\*+\s*\]|\s)?,?\s*\d{{4}}"
    rf"|\b\d{{1,2}}/\d{{1,2}}/(?:(?:19|20)\d{{2}}|\d{{2}})\b"
    rf"|(?<![\w.\-])\d{{1,2}}\.\d{{1,2}}\.(?:19|20)\d{{2}}(?!\.?\w)"
    rf"|(?<![\w.\-])\d{{1,2}}-\d{{1,2}}-(?:19|20)\d{{2}}(?![\w\-])"
    rf"|(?:_{{2,}}|\[\s*[*·_\s]*\])(?:\s*day\s+of\s+_{{2,}})?\s*,?\s*(?:19|20)\d{{2}}\b"
    rf"|(?<=\bday\sof)\s+,\s*(?:19|20)\d{{2}}\b|(?<=\bas\sof)\s+,\s*(?:19|20)\d{{2}}\b"
    rf"|_{{2,}}\s*day\s+of\s+(?:{_MONTHS})\.?,?\s+(?:19|20)\d{{2}}\b"
    rf"|(?<![\d\w])\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\s+day\s+of\s+(?:19|20)\d{{2}}\b", re.IGNORECASE)
"""English dates: '15th july 2018', '16 day of August. 2012', 'Sept 1st, 2005', 'June __, 2005', '1/5/2010',
'01.03.2024', '15-07-2018', '20 March day of 1998' (numeric ones: day and month in the order :func:`parse_date` is given)."""

DATE_ORDERS = ("auto", "DMY", "MDY")
"""Values of the ``date_order`` option (dateparser's ``DATE_ORDER`` names): how a numeric date whose first two
numbers could both be a month (``01/03/2024``) is read. ``DMY``: day first (British, European); ``MDY``: month first
(US, CUAD); ``auto``: from the contract (:func:`contract_date_order`)."""

_NUMERIC_DATE = re.compile(r"(\d{1,2})([/.\-])(\d{1,2})\2((?:19|20)\d{2}|\d{2})")
"""A numeric day-month-year or month-day-year date: ``01/03/2024``, ``7/1/98``, ``15.07.2018``, ``15-07-2018``."""
_NUMERIC_DATE_IN_TEXT = re.compile(r"(?<![\w./\-])(\d{1,2})(?:/(\d{1,2})/(?:(?:19|20)\d{2}|\d{2})(?![\w/])|"
                                   r"([.\-])(\d{1,2})\3(?:19|20)\d{2}(?!\.?\w|-))")


def ambiguous_numeric_date(text: str) -> bool:
    """Whether ``text`` is a numeric date whose first two numbers could each be the month (``01/03/2024``: 1 March
    or 3 January); not when they are equal (``05/05/2024``) or one is over 12 (``15/07/2018``)."""
    match = _NUMERIC_DATE.fullmatch(text.strip())
    if not match:
        return False
    first, second = int(match.group(1)), int(match.group(3))
    return 1 <= first <= 12 and 1 <= second <= 12 and first != second


def contract_date_order(text: str) -> dict[str, Any]:
    """How a contract writes its numeric dates, from the dates that can be read one way only:
    ``{"order": "DMY" | "MDY", "day_first": "15/07/2018" | None, "month_first": "12/31/2023" | None}``.

    ``order`` is ``DMY`` when any numeric date of ``text`` has a first number over 12 that can only be a day
    (``15/07/2018``, ``31-12-2023``) or is written with dots (``1.4.2011``: the European form; US contracts write
    slashes or hyphens), else ``MDY`` (US contracts, as CUAD's); ``day_first`` / ``month_first`` are the first such
    dates found each way (both may be given: a contract signed in two countries)."""
    day_first = month_first = None
    for match in _NUMERIC_DATE_IN_TEXT.finditer(half_width(text)):
        first, second = int(match.group(1)), int(match.group(2) or match.group(4))
        if day_first is None and (12 < first <= 31 and 1 <= second <= 12 or match.group(3) == "." and
                                  1 <= first <= 31 and 1 <= second <= 12):
            day_first = match.group()
        elif month_first is None and 12 < second <= 31 and 1 <= first <= 12:
            month_first = match.group()
        if day_first and month_first:
            break
    return {"order": "DMY" if day_first else "MDY", "day_first": day_first, "month_first": month_first}


def check_date_order(value: Any) -> str:
    """The ``date_order`` option as ``auto``, ``DMY`` or ``MDY`` (case ignored).

    Raises:
        ConfigError: any other value (the message lists the allowed ones).
    """
    if isinstance(value, str) and value.strip().upper() in ("DMY", "MDY", "AUTO"):
        return value.strip().upper() if value.strip().upper() != "AUTO" else "auto"
    raise ConfigError(f"date_order={value!r}: give one of {', '.join(repr(o) for o in DATE_ORDERS)} ('DMY': "
                      f"01/03/2024 is 1 March, as British and European contracts write it; 'MDY': 3 January, as US "
                      f"contracts do; 'auto': day first when the contract writes a date such as 15/07/2018).",
                      details={"date_order": repr(value), "allowed": list(DATE_ORDERS)})


def _zh_int(text: str | None) -> int | None:
    if not text:
        return None
    if re.fullmatch(r"[0-9OoО]+", text):  # "2O23" (OCR: the letter O for a zero)
        return int(re.sub(r"[OoО]", "0", text))
    if text.isdigit():
        return int(text)
    text = re.sub(r"[○OoО]", "〇", text)  # "二O二三" (OCR: the letter O for 〇)
    try:
        if re.fullmatch(r"[〇零一二三四五六七八九]{4}", text):  # a year digit by digit: 二〇二三
            return int(_cn2an().transform(text, "cn2an"))
        return int(_cn2an().cn2an(text, "smart"))
    except (ValueError, KeyError, IndexError):
        return None


def _iso(year: int | None, month: int | None, day: int | None) -> str | None:
    import datetime

    if year is None or month is None or not 1 <= month <= 12:
        return None
    if day is None:
        return f"{year:04d}-{month:02d}"
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def parse_date(text: str, date_order: str = "MDY") -> str | None:
    """ISO 8601 date of one date expression (zh or en), ``YYYY-MM`` when the day is left blank, else ``None``.

    二〇二三年三月一日 / 2023年3月1日 / 2023.3.1 -> 2023-03-01 (cn2an for Chinese numerals); English through
    ``dateparser``. A numeric date with the year last (``01/03/2024``, ``15.07.2018``, ``1-5-10``) is read in
    ``date_order`` (``"MDY"``: 2024-01-03, US; ``"DMY"``: 2024-03-01), except that a first number over 12 can only be
    the day (``15/07/2018`` -> 2018-07-15 in either order) and a second one over 12 only the day of ``12/31/2023``;
    two-digit years as dateparser reads them (``7/1/98`` -> 1998, ``1/5/10`` -> 2010). Full-width digits are read
    (``２０２３年３月１日``), and so is the letter O written for a zero by OCR (``二O二三年``).
    """
    text = half_width(text)
    numeric = _NUMERIC_DATE.fullmatch(text.strip())
    if numeric:  # dateparser falls back to the other order when a number can only be the day
        day_month_year = f"{numeric.group(1)}/{numeric.group(3)}/{numeric.group(4)}"
        parsed = _dateparser().parse(day_month_year, languages=["en"], settings={
            "REQUIRE_PARTS": ["day", "month", "year"], "DATE_ORDER": "DMY" if date_order == "DMY" else "MDY"})
        return parsed.date().isoformat() if parsed else None
    match = ZH_DATE_RE.search(text)
    if match:
        return _iso(_zh_int(match.group(1)), _zh_int(match.group(2)), _zh_int(match.group(3)))
    match = NUM_DATE_RE.search(text)
    if match:
        return _iso(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    blank = re.fullmatch(r"\s*(?:_{2,}|\[\s*[*·_\s]*\]|(?=\s*,))(?:\s*day\s+of\s+_{2,})?\s*,?\s*((?:19|20)\d{2})\s*",
                         text)
    if blank:  # "________, 2015": only the year is given
        return blank.group(1)
    cleaned = re.sub(r"(\d)\s*(s)\s{0,2}(t)|(\d)\s*(n)\s{0,2}(d)|(\d)\s*(r)\s{0,2}(d)|(\d)\s*(t)\s{0,2}(h)\b",
                     lambda m: "".join(g for g in m.groups() if g) + " ", text, flags=re.I)  # "24t h" (PDF text) -> "24th"
    cleaned = re.sub(r"\bday\s+of\b|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day,?|-{2,}", "", cleaned, flags=re.I)
    cleaned = re.sub(r"\s+,", ",", cleaned)
    cleaned = re.sub(r"(?<=[A-Za-z])\.(?=\s)", "", cleaned)  # "August. 2012"
    if re.search(r"_|\[\s*\*+\s*\]", cleaned) or re.fullmatch(rf"\s*(?:{_MONTHS})\.?,?\s+\d{{4}}\s*", cleaned, re.I):
        month_year = re.search(rf"({_MONTHS})\.?.*?(\d{{4}})", cleaned, re.I)
        if month_year:
            parsed = _dateparser().parse(f"1 {month_year.group(1)} {month_year.group(2)}", languages=["en"])
            return _iso(parsed.year, parsed.month, None) if parsed else None
        return None
    parsed = _dateparser().parse(cleaned, languages=["en"], settings={
        "REQUIRE_PARTS": ["day", "month", "year"], "DATE_ORDER": "MDY", "PREFER_DAY_OF_MONTH": "first"})
    return parsed.date().isoformat() if parsed else None


@lru_cache(maxsize=1)
def _dateparser() -> Any:
    import dateparser  # about 1 s to import: only when an English date is met

    return dateparser


_PAGE_NUMBER = re.compile(r"(\b(?i:page)\s+)(\d{1,4})\b(?!\s*[/.\-]\s*\d)")


def dates_in(text: str, date_order: str = "MDY") -> list[tuple[int, int, str, str]]:
    """Every date in ``text`` as ``(start, end, raw, iso)``, in order; numeric ones (``01/03/2024``) read in
    ``date_order`` (``"MDY"`` or ``"DMY"``, :func:`parse_date`)."""
    out = []
    half = half_width(text)  # same length: offsets in it are offsets in text
    # a page number is no day: "Page 2   May 2004" (a footer) is May 2004 (blanked, same length)
    half = _PAGE_NUMBER.sub(lambda m: m.group(1) + " " * len(m.group(2)), half)
    for pattern in (ZH_DATE_RE, NUM_DATE_RE, EN_DATE_RE):
        for match in pattern.finditer(half):
            if any(s <= match.start() < e for s, e, *_ in out):
                continue
            iso = parse_date(match.group(), date_order)
            if iso:
                lead = len(match.group()) - len(match.group().lstrip())
                out.append((match.start() + lead, match.end(), text[match.start() + lead:match.end()], iso))
    out.sort()
    return out


REDACTED_TERM_END = "the term's end is redacted in the text ([*****]): left out"
"""The warning of a term whose end the copy blanks out (English "through [*****]", Chinese 至[*****]止 /
至****年**月**日止): the end is left out, never read from another date."""


# --- durations ----------------------------------------------------------------------------------------------------

_EN_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_EN_NUMBERS.update({"thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
                    "one hundred twenty": 120, "one hundred and twenty": 120, "one hundred eighty": 180,
                    "one hundred and eighty": 180, "a": 1, "an": 1, "half": 0.5})
_EN_UNITS = {"day": "D", "week": "W", "month": "M", "year": "Y"}
_ZH_UNITS = {"日": "D", "天": "D", "工作日": "D", "周": "W", "星期": "W", "个月": "M", "月": "M", "年": "Y"}

EN_DURATION_RE = re.compile(
    r"\b(?P<succ>successive\s+|consecutive\s+|additional\s+|further\s+|renewal\s+)?"
    r"(?:(?P<word>one hundred (?:and )?(?:twenty|eighty)|forty-five|[a-z]+)\s*(?:\(\s*(?P<paren>\d+)\s*\)))?"
    r"(?(paren)|(?P<num>\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
    r"twenty|thirty|forty-five|sixty|ninety|a|an))"
    r"[\s\-]*(?P<succ2>successive\s+|consecutive\s+|additional\s+|renewal\s+)?(?P<kind>calendar\s+|business\s+|"
    r"working\s+)?(?P<unit>day|week|month|year)s?\b", re.IGNORECASE)
ZH_DURATION_RE = re.compile(rf"(?P<num>\d+(?:\.\d+)?|[{CN_DIGITS}]+)\s*(?:个(?P<half_month>半)月|"
                            rf"(?P<unit>个工作日|工作日|个月|日|天|周|星期|年|月)(?P<half>半)?)|(?P<only_half>半)(?P<half_unit>个月|年)")
"""Chinese durations: ``180日``, ``十个工作日``, ``两年``; halves: ``半年``, ``一年半``, ``三个半月``, ``半个月``."""


def _iso_duration(number: float, unit: str) -> str:
    if number != int(number):  # 0.5 year -> P6M, 1.5 years -> P18M, half a month -> P15D, 3.5 months -> P3M15D
        if unit == "Y":
            return f"P{round(number * 12)}M"
        if unit == "M":
            whole, days = int(number), round((number - int(number)) * 30)
            return f"P{whole}M{days}D" if whole else f"P{days}D"
    return f"P{int(number)}{unit}"


def parse_duration(text: str) -> dict[str, Any] | None:
    """``{"iso": "P30D", "successive": bool, "business_days": bool}`` for the first duration in ``text``.

    "180日" -> P180D; "十二个月" -> P12M; "successive 1 year" / "successive one (1) year periods" -> P1Y,
    successive; "thirty (30) days" -> P30D; "6 weeks" -> P6W; "0.5 year" -> P6M. ``None`` when there is none.
    """
    match = EN_DURATION_RE.search(text)
    if match:
        raw_number = match.group("paren") or match.group("num")
        word = (match.group("num") or "").lower()
        number = float(raw_number) if re.fullmatch(r"\d+(?:\.\d+)?", raw_number or "") else _EN_NUMBERS.get(word)
        if number is not None:
            succ = (match.group("succ") or match.group("succ2") or "").strip().lower()
            return {"iso": _iso_duration(number, _EN_UNITS[match.group("unit").lower()]),
                    "successive": succ in ("successive", "consecutive"),
                    "business_days": bool(match.group("kind") and match.group("kind").strip().lower() != "calendar"),
                    "text": match.group().strip(), "start": match.start(), "end": match.end()}
    match = ZH_DURATION_RE.search(text)
    if match:
        if match.group("only_half"):  # 半年, 半个月
            number, unit = 0.5, match.group("half_unit").lstrip("个")
        else:
            number = float(match.group("num")) if re.fullmatch(r"\d+(?:\.\d+)?", match.group("num")) else _zh_int(
                match.group("num"))
            unit = "月" if match.group("half_month") else match.group("unit").lstrip("个")
            if number is not None and (match.group("half") or match.group("half_month")):
                number += 0.5  # 一年半, 三个半月
        if number is not None:
            return {"iso": _iso_duration(number, _ZH_UNITS[unit if unit != "月" else "个月"]),
                    "successive": False, "business_days": "工作日" in unit, "text": match.group(),
                    "start": match.start(), "end": match.end()}
    return None


RELATIVE_RE = re.compile(
    rf"(?:自|于|在)?(?P<anchor>[^，。；,;\s]{{1,16}}?(?:之日|之时|后|日))起?\s*"
    rf"(?P<num>\d+|[{CN_DIGITS}]+)\s*(?P<unit>个工作日|工作日|个月|日|天|年)(?P<bound>内|以内|之内|后)?")


def parse_relative(text: str) -> dict[str, Any] | None:
    """A date relative to an event, kept with its anchor: "签订之日起30日内" ->
    ``{"anchor": "签订之日", "offset": "P30D", "bound": "within", "business_days": False}``."""
    match = RELATIVE_RE.search(text)
    if not match:
        return None
    duration = parse_duration(match.group("num") + match.group("unit"))
    if duration is None:
        return None
    bound = {"内": "within", "以内": "within", "之内": "within", "后": "after"}.get(match.group("bound") or "", "at")
    anchor = re.split(r"[于自在从为]", match.group("anchor"))[-1]
    return {"anchor": anchor, "offset": duration["iso"], "bound": bound,
            "business_days": duration["business_days"], "text": match.group(), "start": match.start(),
            "end": match.end()}
