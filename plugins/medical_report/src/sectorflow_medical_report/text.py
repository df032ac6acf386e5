"""Text helpers: language detection, sentence and clause boundaries, and size mentions normalised to millimetres.

All offsets are character offsets into the original text, ``end`` exclusive (Python slicing).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_CJK = re.compile(r"[\u4e00-\u9fff]")
_SENT_END = re.compile(r"[。！？!；;\n]|\.(?=\s|$)(?<!(?<![\d.])\d\.)(?<!(?<![\d.])\d\d\.)|\.(?=\s*$)"
                       r"|(?<=\s)(?<![.;!?。；]\s)(?=\d{1,2}\.\s+\S)")
"""Sentence ends; the last branch is an empty break before a numbered item ("1. No pneumothorax 2. Right lung
nodule"): an item written without a full stop does not run on into the next, so "No" does not reach the nodule.
A full stop after a one- or two-digit number is a list marker ("1. "), not an end; after a year or a decimal it is
an end ("unchanged from 2021. No new nodules.": the two sentences had been one, and "unchanged" went to the
nodules of the next)."""
_CLAUSE_END = re.compile(r"[，,]")
DEID = re.compile(r"X{2,}", re.IGNORECASE)
"""De-identification placeholders in the Indiana chest X-ray reports ("XXXX"): they name nothing."""
_WIDTH = {**{c: c - 0xFEE0 for c in (*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B),
                                       0xFF0D, 0xFF0E, 0xFF0F)}, 0x3000: 0x20}


def fold_width(text: str) -> str:
    """Full-width digits, Latin letters and ``－．／`` (and the ideographic space) as their ASCII forms, one
    character for one, so offsets stay valid: "８ｍｍ" -> "8mm", "ＣＴ" -> "CT" (Chinese input methods type them).
    Chinese punctuation (，：；（）) is kept: the scope rules read it."""
    return text.translate(_WIDTH)


def detect_language(text: str) -> str:
    """``"zh"`` when at least 10 % of the non-space characters are CJK ideographs, else ``"en"``."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return "en"
    return "zh" if sum(1 for c in chars if _CJK.match(c)) / len(chars) >= 0.1 else "en"


def boundaries(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans between matches of ``pattern`` (the delimiter stays with the span before it)."""
    spans, start = [], 0
    for match in pattern.finditer(text):
        end = match.end()
        if end > start:
            spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans: split after 。！？!；; newlines and a full stop followed by space or the end (not 0.8), and
    before a numbered list item ("2. ") that follows a space but no sentence end."""
    return boundaries(text, _SENT_END)


def clauses(text: str) -> list[tuple[int, int]]:
    """Clause spans: sentences further split after commas (，,)."""
    out = []
    for s, e in sentences(text):
        out.extend((s + a, s + b) for a, b in boundaries(text[s:e], _CLAUSE_END))
    return out


def span_index(spans: list[tuple[int, int]], pos: int) -> int:
    """Index of the span holding character ``pos`` (the last span for a position past the end). ``spans`` are
    sorted and contiguous (as :func:`sentences` and :func:`clauses` return them): a binary search."""
    if not spans:
        return -1
    i = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return min(max(i, 0), len(spans) - 1)


# ---- sizes -----------------------------------------------------------------------------------------------------
_UNIT = r"(mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?|毫米|厘米|公分)"
_NUM = r"(\d+(?:\.\d+|,\d{1,2}(?=\s*(?:mm|cm|millimet|centimet|毫米|厘米|公分|x|×|\*|乘)))?)"
"""A number; a decimal comma ("6,5 mm", "1,9 x 1,8 cm": European reports) only directly before a unit or a "x"."""
_AXIS = _NUM + r"(?:\s*-?\s*" + _UNIT + r")?"
_SIZE = re.compile(
    r"(?<![A-Za-z0-9.])(?<!\d,)" + _NUM + r"\s*(?:-|–|~|～|到|至|to)\s*" + _NUM + r"\s*" + _UNIT + r"(?![A-Za-z])"
    r"|(?<![A-Za-z0-9.])(?<!\d,)" + _AXIS + (r"(?:\s*(?:x|×|\*|by|乘)\s*" + _AXIS + r")?") * 2 + r"(?![A-Za-z0-9])",
    re.IGNORECASE)
_TO_MM = {"mm": 1.0, "cm": 10.0, "毫米": 1.0, "厘米": 10.0, "公分": 10.0}
_DISTANCE_AFTER = re.compile(r"\s*(above|below|from|proximal|distal|superior to|inferior to|距)", re.IGNORECASE)
_APEX_DISTANCE = re.compile(r"\s*from\s+the\s+((left|right|thoracic|lung|pleural|chest|pulmonary)\s+)*(apex|apices|cupola)\b"
                            r"|\s*(apex|apical)[- ]to[- ]cupola\b", re.IGNORECASE)
"""A pneumothorax measured "0.9 cm from the thoracic apex": the apex-cupola distance, the usual size of a
pneumothorax (Baumann MH et al., ACCP consensus, Chest 2001;119(2):590-602: < 3 cm small). Kept as a size of kind
``apex_distance``, which only a pneumothorax may take."""


@dataclass
class SizeMention:
    """A size as written: ``axes_mm`` per axis in mm; ``mm`` = mean of the first two axes (Fleischner 2017 and
    Lung-RADS use the mean of long and short axis) or, for a range "6-8 mm", its upper bound."""

    start: int
    end: int
    text: str
    axes_mm: list[float]
    mm: float
    kind: str  # single | axes | range | apex_distance


def _unit_factor(unit: str | None) -> float | None:
    if not unit:
        return None
    unit = unit.lower()
    if unit.startswith("millimet"):
        return 1.0
    if unit.startswith("centimet"):
        return 10.0
    return _TO_MM.get(unit)


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def find_sizes(text: str) -> list[SizeMention]:
    """Every size with a unit in ``text``, in mm. Distances ("3 cm above the carina") are left out, except a
    distance from the lung apex (``kind="apex_distance"``: a pneumothorax's apex-cupola size).

    Example: "1.9 x 1.8 cm" -> axes [19.0, 18.0], mm 18.5; "0.8cm" -> 8.0; "8毫米" -> 8.0; "８ｍｍ" -> 8.0 (full width,
    :func:`fold_width`; ``text`` stays as written).
    """
    out = []
    written, text = text, fold_width(text)  # "８ｍｍ": matched folded, reported as written (same offsets)
    for m in _SIZE.finditer(text):
        apex = bool(_APEX_DISTANCE.match(text, m.end()))
        if _DISTANCE_AFTER.match(text, m.end()) and not apex:
            continue
        g = m.groups()
        if g[0] is not None:  # range
            f = _unit_factor(g[2])
            lo, hi = _number(g[0]) * f, _number(g[1]) * f
            out.append(SizeMention(m.start(), m.end(), written[m.start():m.end()], [lo, hi], max(lo, hi), "range"))
            continue
        nums = [g[i] for i in (3, 5, 7)]
        units = [g[i] for i in (4, 6, 8)]
        nums_units = [(n, u) for n, u in zip(nums, units) if n is not None]
        last_unit = next((u for _, u in reversed(nums_units) if u), None)
        if last_unit is None:
            continue  # a bare number is no size
        axes = []
        for n, u in nums_units:
            axes.append(round(_number(n) * (_unit_factor(u) or _unit_factor(last_unit)), 3))
        mm = round(sum(axes[:2]) / len(axes[:2]), 3)
        kind = "apex_distance" if apex else "axes" if len(axes) > 1 else "single"
        out.append(SizeMention(m.start(), m.end(), written[m.start():m.end()], axes, mm, kind))
    return out
