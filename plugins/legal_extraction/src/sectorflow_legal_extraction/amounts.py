"""Every monetary amount of a contract, wherever it stands: the result's ``amounts``.

:func:`find_amounts` reads the amounts :func:`normalize.amounts_in` finds (figures, 大写 words, English words;
万/亿 with decimals: ``约1.5亿元`` -> 150000000.00 CNY; mixed forms: ``3.2万美元`` -> 32000.00 USD; full-width digits)
and joins what belongs together:

- one amount written twice, in words and in figures side by side (``人民币壹拾贰万元整（¥120,000.00）``), is one entry
  with ``words_and_figures_agree``;
- a range (``5万至8万元``, ``人民币5-8万元``, ``USD 10,000 to USD 20,000``, ``between $1,000 and $2,000``) is one
  entry with ``range: {"low", "high"}`` (``amount`` is the low end); the currency and the 万/亿 multiplier written
  once at the end hold for both ends;
- an approximation (约, 大约, 左右, approximately, about) is flagged ``approximate: true``; a cap or floor
  (不超过, 最高, 以内, up to, not exceed / 不低于, at least) gives ``bound: "max"`` / ``"min"``.

A number with neither a currency nor an amount cue before it (``100,000 shares``, ``10万平方米``) is no amount.
Each entry is an :class:`schema.Extraction` with ``text == contract[start:end]``; value ``{"amount": "<decimal>",
"currency": ISO 4217 or None, "approximate": bool, "bound": None|"max"|"min", "range": None|{...}}``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from . import normalize as nz
from .schema import Extraction

_APPROX_BEFORE = re.compile(r"(?:约|大约|大概|预计|估计|估算|近|approximately|approx\.?|about|around|roughly|"
                            r"estimated(?:\s+at)?|some)\s*$", re.I)
_APPROX_AFTER = re.compile(r"^\s*(?:左右|上下|许)")
_MAX_BEFORE = re.compile(r"(?:不(?:超过|高于|多于)|最高(?:不超过)?|至多|上限为?|up\s+to|not\s+(?:to\s+)?exceed(?:ing)?|"
                         r"no\s+more\s+than|a\s+maximum\s+of|at\s+most|capped\s+at)\s*$", re.I)
_MAX_AFTER = re.compile(r"^\s*(?:以内|以下|之内|为限|封顶)")
_MIN_BEFORE = re.compile(r"(?:不(?:低于|少于)|最低|至少|at\s+least|no\s+less\s+than|not\s+less\s+than|"
                         r"a\s+minimum\s+of)\s*$", re.I)
_MIN_AFTER = re.compile(r"^\s*(?:以上|起)")
_RANGE_JOIN = re.compile(r"\s*(?:至|到|—|–|-|－|~|～|to|and)\s*", re.I)
_CUE = re.compile(r"(?:金额|价款|价格|总价|费用?|款|租金|押金|保证金|定金|投资|资本|price|amount|fee|sum|"
                  r"consideration|payment|rent|deposit|cost)s?\s*(?:为|是|of|is|:|：)?\s*$", re.I)
_NOT_MONEY = re.compile(r"^\s*(?:平方米|平米|㎡|吨|千克|公斤|件|个|人|名|股|份|台|套|辆|公里|米|字|次|户|"
                        r"shares?|units?|square|sq\.?|tons?|pieces?|copies|km|miles?)", re.I)


def _is_money(text: str, start: int, end: int, value: dict[str, Any]) -> bool:
    if value.get("currency"):
        return True
    if _NOT_MONEY.match(text[end:end + 8]):
        return False
    return bool(_CUE.search(text[max(0, start - 12):start]))


def _flags(text: str, start: int, end: int) -> dict[str, Any]:
    before, after = text[max(0, start - 24):start], text[end:end + 6]
    bound = ("max" if _MAX_BEFORE.search(before) or _MAX_AFTER.match(after) else
             "min" if _MIN_BEFORE.search(before) or _MIN_AFTER.match(after) else None)
    return {"approximate": bool(_APPROX_BEFORE.search(before) or _APPROX_AFTER.match(after)), "bound": bound}


def _multiplier(raw: str) -> Decimal:
    if "亿" in raw:
        return Decimal(10) ** 8
    if "万" in raw:
        return Decimal(10) ** 4
    if re.search(r"billion", raw, re.I):
        return Decimal(10) ** 9
    if re.search(r"million", raw, re.I):
        return Decimal(10) ** 6
    return Decimal(1)


def _money(value: Decimal) -> str:
    return format(value.quantize(Decimal("0.01")), "f")


def find_amounts(text: str) -> list[Extraction]:
    """Every monetary amount of ``text`` (see the module docstring), in order of position.

    Returns ``[]`` when there is none. Amounts are decimal strings; nothing is guessed: an amount whose words and
    figures disagree keeps both readings (``amount: None``, ``words``, ``figures``) and a warning.
    """
    raw = nz.amounts_in(text)
    out: list[Extraction] = []
    used: set[int] = set()
    for i, first in enumerate(raw):
        if i in used:
            continue
        start, end = first[0], first[1]
        value: dict[str, Any] = dict(first[3])
        warnings: list[str] = []
        pair = next((j for j in range(i + 1, min(i + 3, len(raw))) if nz.side_by_side(text, first, raw[j])), None)
        if pair is not None:  # 壹拾贰万元整（¥120,000.00）: one amount written twice
            used.add(pair)
            second = raw[pair]
            words, figures = (first, second) if first[4] == "words" else (second, first)
            agree = Decimal(words[3]["amount"]) == Decimal(figures[3]["amount"])
            value["currency"] = value.get("currency") or second[3].get("currency")
            value["words_and_figures_agree"] = agree
            if not agree:
                value.update(amount=None, words=words[3]["amount"], figures=figures[3]["amount"])
                warnings = nz.check_consistency([first, second], text)
            end = max(end, second[1])
            end += len(re.match(r"\s*[)）]?", text[end:end + 2]).group()) if "（" in text[start:end] or "(" in \
                text[start:end] else 0
        value["range"] = None
        nxt = raw[i + 1] if i + 1 < len(raw) and pair is None else None
        if nxt is not None and nxt[4] == first[4] == "figures" and _RANGE_JOIN.fullmatch(text[end:nxt[0]]) and (
                not re.fullmatch(r"\s*and\s*", text[end:nxt[0]], re.I) or re.search(r"between\s*$",
                                                                                     text[max(0, start - 10):start], re.I)):
            low, high = Decimal(first[3]["amount"]), Decimal(nxt[3]["amount"])
            if _multiplier(first[2]) == 1 and _multiplier(nxt[2]) != 1 and low * _multiplier(nxt[2]) < high:
                low *= _multiplier(nxt[2])  # 5万至8万元 reads 5万 itself; "5至8万元" shares the 万
            if low < high:
                used.add(i + 1)
                value.update(amount=_money(low), currency=value.get("currency") or nxt[3].get("currency"),
                             range={"low": _money(low), "high": _money(high)})
                end = nxt[1]
        elif first[4] == "figures":
            gap = text[max(0, start - 20):start]
            lead = re.search(r"(?:(?P<cur>人民币|RMB|CNY|USD|US\$|HK\$|[¥￥$€£])\s*)?(?<![\d.,])(?P<n>\d+(?:\.\d+)?)"
                             r"\s*(?:至|到|—|–|-|－|~|～)\s*$", gap)
            if lead:  # 人民币5-8万元, $5-10 million: the low end is a bare number before the amount
                low = Decimal(lead.group("n")) * _multiplier(first[2])
                high = Decimal(first[3]["amount"])
                if low < high:
                    start = max(0, start - 20) + lead.start()
                    value.update(amount=_money(low), range={"low": _money(low), "high": _money(high)},
                                 currency=value.get("currency") or nz.currency_of(lead.group()))
        if not _is_money(text, start, end, value):
            continue
        value.update(_flags(text, start, end))
        out.append(Extraction(text=text[start:end], start=start, end=end, value=value, confidence=0.9,
                              source="rule:amount", warnings=warnings))
    return out
