"""Fields the rules do not know: any name a lawyer gives ("租金", "押金", "Security Deposit", "保修期" ...).

A field the schema names but :data:`schema.FIELDS` does not define is found in two ways, and the value is typed
(:data:`schema.FIELD_TYPES`: amount, date, duration, percentage, party, place, or text) and normalised as the known
fields are (:mod:`normalize`, :mod:`amounts`):

(a) **label and value** (:func:`label_value`): the field's name or an alias written as a contract labels a value:
    ``租金：每月人民币伍仟元整``, ``押金为两个月租金``, ``Security Deposit: $5,000``, a table row ``| 租金 | 5000元 |``,
    ``Rent ... shall be $2,000``, or the value just before ``作为押金`` / ``as a security deposit``; a label with a
    separator (：, 为, is, shall be, a table cell) gives confidence 0.9, a label followed by its value in the same
    clause 0.75;
(b) **the clause most similar to the name** (:func:`similar_clause`), when no label is written: among the clauses
    that hold a value of the field's type, the one whose similarity to the name and aliases is highest, if it clears
    :data:`SIMILARITY_THRESHOLD`; similarity is how much of the name the clause holds (:func:`coverage`: characters
    and character pairs for Chinese, word stems and their pairs for English), mixed half and half with the cosine of
    the sentence vectors of the ``encoder`` option when one is given (e.g. the multilingual-e5-small encoder the
    project ships in the customer_service plugin). Confidence: 0.4 + 0.4 x similarity (at most
    0.7); source ``similarity:<method>``;
(c) both: a label hit whose clause is also the most similar one gets confidence 0.95 (``rule+similarity``).

Nothing is invented: a clause without a value of the field's type gives nothing, and a field with no hit is
``absent``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from . import normalize as nz
from .amounts import find_amounts
from .schema import Extraction, FieldDef

SIMILARITY_THRESHOLD = 0.35
"""Least similarity (cosine in [0, 1]) of the clause chosen by (b); below it the field is absent."""
ENCODER_FLOOR = 0.7
"""The encoder's cosine taken as "unrelated" (0): multilingual-e5's model card says its cosine scores "distribute
around 0.7 to 1.0" (low temperature of its contrastive loss); cosines are rescaled from [floor, 1] to [0, 1]. An
encoder object may set its own ``similarity_floor``."""
TEXT_SIMILARITY_THRESHOLD = 0.6
"""The same for a text field, whose every clause is a candidate (a typed field needs a value of its type)."""

_ZH_SEP = re.compile(r"[ \t　]*(?:[（(][^）)\n]{0,16}[)）])?[ \t　]*(?:[：:]|\||\t|[ 　]{2,}|(?:总?金额|总额|总计|标准|比例|数额|期限)?(?:为|是)|"
                     r"按|计|即|共计|合计)")
_EN_SEP = re.compile(r"\s*(?:\([^)\n]{0,24}\))?\s*(?:[:：]|\||\t| {2,}|(?:shall|will)\s+be(?:\s+equal\s+to)?|is|are|of|"
                     r"equal\s+to|equals|means|amounting\s+to|in\s+the\s+amount\s+of)(?![a-z])", re.I)
_CLAUSE_END = re.compile(r"[。；;\n]|\.(?:\s|$)")


def _label_pattern(name: str) -> re.Pattern[str]:
    name = name.strip()
    if re.search(r"[\u4e00-\u9fff]", name):
        return re.compile("[ \t　]?".join(re.escape(c) for c in name if not c.isspace()))
    words = [re.escape(w) for w in re.findall(r"[A-Za-z0-9]+(?:'[a-z]+)?", name)]
    return re.compile(r"(?<![A-Za-z])" + r"[\s\-]+".join(words) + r"(?:s|es)?(?![A-Za-z])", re.I)


# --- typed values -------------------------------------------------------------------------------------------------

_PCT = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?:[%％]|percent\b|per\s*cent\b)|(?P<base>百|千|万)分之(?P<cn>[零〇一二三四五六七八九十"
                  r"两点\d.]+)", re.I)
_PER = re.compile(r"每(?:逾期|延迟|迟延)?一?(?:日|天)|按日|(?<![每按])日(?=[万千百]分之)|日利率|月利率|per\s+(?:day|diem)|daily|每月|per\s+month|monthly|每年|年(?:化|利率)|per\s+(?:annum|"
                  r"year)|annual", re.I)
_MULTIPLE = re.compile(rf"(?P<n>\d+(?:\.\d+)?|[{nz.CN_DIGITS}]+)\s*(?:个月|月)的?(?P<of>(?:月)?租金|工资|服务费|费用)"
                       r"|(?P<en>one|two|three|four|five|six|\d+)\s*(?:\(\d+\)\s*)?months?'?\s*(?:of\s+)?(?P<eof>rent|fees?)",
                       re.I)
_SHARE_OF = re.compile(r"(?P<of>合同(?:总)?(?:价款|金额|总价|价格)|总价款|总金额|(?:年|月)?租金总?额?|the\s+(?:contract\s+price|"
                       r"purchase\s+price|total\s+fees?))的?\s*(?P<p>\d+(?:\.\d+)?\s*[%％]|百分之[零〇一二三四五六七八九十]+)",
                       re.I)
_ORG = re.compile(r"[\u4e00-\u9fffA-Za-z0-9（）()·]{2,40}?(?:有限责任公司|股份有限公司|有限公司|公司|集团|银行|事务所|研究院|中心|"
                  r"合伙企业)|(?:[A-Z][\w&.'\-]*,?\s+){0,6}(?:Inc\.|LLC|L\.L\.C\.|Ltd\.?|Limited|Corporation|Corp\.|"
                  r"Company|GmbH|N\.A\.|plc|PLC|LLP|L\.P\.|S\.A\.|B\.V\.)")


def percentage(text: str) -> tuple[int, int, dict[str, Any]] | None:
    """The first percentage or 千分之/万分之 rate of ``text``: ``(start, end, {"rate": "0.0005", "per": "day"})``
    (``rate`` as a decimal fraction string; ``per``: day, month, year or None)."""
    match = _PCT.search(nz.half_width(text))
    if not match:
        return None
    if match.group("n"):
        rate = Decimal(match.group("n")) / 100
    else:
        numerator = match.group("cn")
        value = Decimal(numerator) if re.fullmatch(r"\d+(?:\.\d+)?", numerator) else (
            Decimal(str(nz._cn2an().cn2an(numerator, "smart"))) if numerator else None)
        if value is None:
            return None
        rate = value / {"百": 100, "千": 1000, "万": 10000}[match.group("base")]
    per = _PER.search(text[max(0, match.start() - 16):match.end() + 12])
    unit = _per_unit(per.group()) if per else None
    return match.start(), match.end(), {"rate": format(rate.normalize(), "f"), "per": unit}


def _clean(value: str) -> str:
    return value.strip(" \t　:：,，。;；|\"“”'「」").strip()


def typed_value(kind: str, region: str, date_order: str = "MDY") -> tuple[int, int, Any] | None:
    """The first value of type ``kind`` in ``region``: ``(start, end, normalised value)``, or ``None``.

    amount: ``{"amount", "currency", "approximate", "bound", "range"}`` (:func:`amounts.find_amounts`), or a
    multiple of another amount (``两个月租金`` -> ``{"amount": None, "multiple": "2", "of": "租金"}``) or a share of
    it (``合同总价的10%`` -> ``{"amount": None, "rate": "0.1", "of": "合同总价"}``); date: ISO 8601, or a relative
    date ``{"anchor", "offset", "bound"}``; duration: ``{"iso", "business_days"}``; percentage: see
    :func:`percentage`; party: the name (an organisation's, or the label's value); place and text: the value as
    written, up to the end of its clause.
    """
    if kind == "amount":
        share = _SHARE_OF.search(region)
        found = find_amounts(region)
        multiple = _MULTIPLE.search(region)
        if found and not (multiple and multiple.start() < found[0].start) and not (share and share.start() <
                                                                                 found[0].start):
            return found[0].start, found[0].end, found[0].value
        if multiple:
            n = multiple.group("n") or multiple.group("en")
            number = (int(n) if n.isdigit() else nz._EN_NUMBERS.get(n.lower()) if n.isascii() else nz._zh_int(n))
            if number is not None:
                return multiple.start(), multiple.end(), {"amount": None, "multiple": str(number),
                                                          "of": multiple.group("of") or multiple.group("eof").lower()}
        if share:
            rate = percentage(share.group("p"))
            if rate:
                return share.start(), share.end(), {"amount": None, "rate": rate[2]["rate"], "of": share.group("of")}
        rate = percentage(region)
        if rate:  # 按日加收欠款金额千分之三的滞纳金: an amount set as a rate
            return rate[0], rate[1], {"amount": None, **rate[2]}
        return None
    if kind == "percentage":
        return percentage(region)
    if kind == "date":
        dates = nz.dates_in(region, date_order)
        if dates:
            return dates[0][0], dates[0][1], dates[0][3]
        relative = nz.parse_relative(region)
        if relative:
            return relative["start"], relative["end"], {k: relative[k] for k in ("anchor", "offset", "bound")}
        return None
    if kind == "duration":
        blanked = region
        for s, e, _, _ in nz.dates_in(region, date_order):  # "2023年3月1日" is no duration of 2023 years
            blanked = blanked[:s] + " " * (e - s) + blanked[e:]
        duration = nz.parse_duration(blanked)
        if duration:
            return duration["start"], duration["end"], {"iso": duration["iso"],
                                                        "business_days": duration["business_days"]}
        return None
    if kind == "party":
        org = _ORG.search(region)
        if org and org.start() <= 12:
            return org.start(), org.end(), _clean(org.group())
        return None
    head = re.match(r"[ \t　]*(?:[：:|]|为|是|在|于|at|in|is|shall\s+be)?[ \t　]*", region, re.I).end()
    end = _CLAUSE_END.search(region, head)
    stop = end.start() if end else len(region)
    if kind == "place":  # a Chinese address has no comma; an English one stops at ", which" / ", and"
        comma = re.search(r"，|,\s*(?=[a-z])", region[head:stop])
        stop = head + comma.start() if comma else stop
    value = _clean(region[head:stop])
    if not value or len(value) > 200 or not re.search(r"\w", value):
        return None
    begin = head + region[head:stop].find(value)
    return begin, begin + len(value), value


# --- (a) label and value ------------------------------------------------------------------------------------------


def _clause_index(spans: Sequence[tuple[int, int]], at: int) -> int:
    import bisect

    return max(0, bisect.bisect_right([s for s, _ in spans], at) - 1)


_REGION_END = re.compile(r"\n|[。；;]|(?<!\bNo)(?<!\bInc)(?<!\bLtd)(?<!\bCo)(?<!\bCorp)(?<!\bSt)\.(?=\s|$)")


def label_value(field: FieldDef, text: str, spans: Sequence[tuple[int, int]],
                date_order: str = "MDY") -> list[tuple[Extraction, int]]:
    """Hits of (a) in order of preference, each with the index of its clause in ``spans``: labels with a
    separator first, then a label followed by its value in the clause, then a value just before "作为<label>" /
    "as (a) <label>". The value is read after the label up to the end of its line or clause (a PDF's
    ``Payment Account:`` line is one clause of its own: its value is on the same line)."""
    strong, weak, before = [], [], []
    for pattern in (_label_pattern(n) for n in field.names):
        for label in pattern.finditer(text):
            zh = bool(re.search(r"[\u4e00-\u9fff]", label.group()))
            index = _clause_index(spans, label.start())
            sep = (_ZH_SEP if zh else _EN_SEP).match(text, label.end())
            region_start = sep.end() if sep else label.end()
            stop = _REGION_END.search(text, region_start, region_start + 400)
            if sep and sep.group().strip() in ("", ":", "：") and stop and stop.start() == region_start:
                stop = _REGION_END.search(text, region_start + 1, region_start + 400)  # "租金：\n5000元"
            region = text[region_start:stop.start() if stop else min(len(text), region_start + 400)]
            if sep and "\t" not in sep.group() and "|" not in sep.group():
                cut = re.search(r"[ \t　]{2,}\S{1,10}[：:]|[，,；;]\s*[^\s，,]{1,10}[：:]", region)  # "租金：5000元  押金：…"
                region = region[:cut.start()] if cut else region
            elif sep:
                cut = re.search(r"\t|\|", region)
                region = region[:cut.start()] if cut else region
            found = typed_value(field.type, region, date_order)
            if found is not None:
                s, e, value = found
                gap = region[:s]
                if field.type == "percentage" and isinstance(value, dict) and value.get("per") is None:
                    per = _PER.search(label.group())
                    if per:
                        value = {**value, "per": _per_unit(per.group())}
                if sep and (s <= 24 or field.type in ("text", "place") or not re.search(r"[，,]", gap)):
                    strong.append((_hit(text, region_start + s, region_start + e, value, 0.9, "rule:label_value"),
                                   index))
                elif field.type not in ("text", "place") and len(gap) <= (40 if not zh else 14) and not re.search(
                        r"[，,.:：]|即|相当于|i\.e\.", gap):
                    weak.append((_hit(text, region_start + s, region_start + e, value, 0.75, "rule:label_in_clause"),
                                 index))
            if field.type in ("amount", "percentage"):
                clause_start = spans[index][0] if spans else 0
                head = text[clause_start:label.start()]
                lead = re.search(r"(?:作为|用作|充作|的|as\s+(?:a|an|the)?\s*)$", head, re.I)
                if lead:  # 支付人民币伍万元作为定金 / 按日加收欠款金额千分之三的滞纳金 / $15,000 as a down payment
                    found = typed_value(field.type, head[max(0, lead.start() - 40):lead.start()], date_order)
                    if found:
                        offset = clause_start + max(0, lead.start() - 40)
                        before.append((_hit(text, offset + found[0], offset + found[1], found[2], 0.8,
                                            "rule:value_as_label"), index))
    return strong + weak + before


def _per_unit(word: str) -> str:
    word = word.lower()
    return "day" if re.search(r"日|天|day|diem|daily", word) else "month" if re.search(r"月|month", word) else "year"


def _hit(text: str, start: int, end: int, value: Any, confidence: float, source: str) -> Extraction:
    return Extraction(text=text[start:end], start=start, end=end, value=value, confidence=confidence, source=source)


# --- (b) similarity -----------------------------------------------------------------------------------------------

Encoder = Callable[[Sequence[str]], np.ndarray]


_STOP = {"the", "of", "a", "an", "and", "or", "for", "to", "in", "on", "by", "with", "per"}


def _terms(text: str) -> tuple[set[str], set[str]]:
    """``(units, pairs)`` of a text: Chinese characters and English word stems (first 5 letters), and adjacent
    pairs of them."""
    units = [w.lower()[:5] for w in re.findall(r"[\u4e00-\u9fff]|[A-Za-z]+", text)
             if w.lower() not in _STOP]
    return set(units), {a + b for a, b in zip(units, units[1:])}


def coverage(name: str, clause: str) -> float:
    """Share of a name's characters (Chinese) or word stems (English) that the clause holds, averaged with the
    share of its adjacent pairs (in [0, 1]; 1.0 when the name is written in the clause)."""
    units, pairs = _terms(name)
    if not units:
        return 0.0
    have_units, have_pairs = _terms(clause)
    unit_share = len(units & have_units) / len(units)
    return unit_share if not pairs else 0.5 * unit_share + 0.5 * len(pairs & have_pairs) / len(pairs)


def similarities(names: Sequence[str], clauses: Sequence[str], encoder: Any = None) -> np.ndarray:
    """Similarity in [0, 1] of each clause to the field (its best-matching name): float [len(clauses)].

    :func:`coverage` of the name by the clause (characters and their pairs for Chinese, word stems and their pairs
    for English); with ``encoder`` (an object with ``encode(texts) -> float32 [n, d]`` of unit rows, or such a
    callable), the mean of that and the encoder's cosine rescaled from [:data:`ENCODER_FLOOR`, 1] to [0, 1]."""
    if not clauses:
        return np.zeros(0)
    lexical = np.asarray([max(coverage(n, c) for n in names) for c in clauses])
    if encoder is None:
        return lexical
    encode = encoder.encode if hasattr(encoder, "encode") else encoder
    vectors = np.asarray(encode([*names, *clauses]), dtype=np.float32)
    cosine = (vectors[len(names):] @ vectors[:len(names)].T).max(axis=1)
    floor = float(getattr(encoder, "similarity_floor", ENCODER_FLOOR))
    semantic = np.clip((cosine - floor) / (1.0 - floor), 0, 1)
    return 0.5 * lexical + 0.5 * semantic


def similar_clause(field: FieldDef, text: str, spans: Sequence[tuple[int, int]], encoder: Any = None,
                   date_order: str = "MDY", scores: np.ndarray | None = None) -> tuple[Extraction, int] | None:
    """(b): the typed value of the clause most similar to the field, if it clears :data:`SIMILARITY_THRESHOLD`
    (with its clause's index), else ``None``. Only clauses holding a value of the field's type compete (every clause
    for a text field); ``scores`` may give the similarities already computed."""
    candidates = []
    for index, (start, end) in enumerate(spans):
        found = typed_value(field.type, text[start:end], date_order) if field.type != "text" else (0, end - start,
                                                                                                 text[start:end])
        if found is not None:
            candidates.append((index, found))
    if not candidates:
        return None
    if scores is None:
        scores = similarities(field.names, [text[s:e] for s, e in (spans[i] for i, _ in candidates)], encoder)
    else:
        scores = np.asarray([scores[i] for i, _ in candidates])
    best = int(np.argmax(scores))
    if scores[best] < (TEXT_SIMILARITY_THRESHOLD if field.type == "text" else SIMILARITY_THRESHOLD):
        return None
    index, (s, e, value) = candidates[best]
    start = spans[index][0]
    method = "coverage+encoder" if encoder is not None else "coverage"
    return (_hit(text, start + s, start + e, value, round(min(0.7, 0.4 + 0.4 * float(scores[best])), 4),
                 f"similarity:{method}"), index)


def extract(field: FieldDef, text: str, spans: Sequence[tuple[int, int]], encoder: Any = None,
            date_order: str = "MDY") -> list[Extraction]:
    """The value of an open field (see the module docstring): ``[]`` when none is found."""
    hits = label_value(field, text, spans, date_order)
    if hits:
        hit, index = hits[0]
        similar = similar_clause(field, text, spans, encoder, date_order)
        if similar is not None and similar[1] == index:
            hit = hit.model_copy(update={"confidence": 0.95, "source": hit.source.replace("rule:", "rule+similarity:")})
        return [hit]
    similar = similar_clause(field, text, spans, encoder, date_order)
    return [similar[0]] if similar else []
