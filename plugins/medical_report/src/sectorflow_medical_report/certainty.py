"""How sure the report is of an uncertain finding, and how every rendering of the finding says so.

ConText (Harkema et al., J Biomed Inform 2009;42(5):839-851) and medspaCy's default English rules
(``resources/en/context_rules.json``: "possible", "probably", "likely" all ``POSSIBLE_EXISTENCE``; "if"
``HYPOTHETICAL``; "rule out", "r/o" ``POSSIBLE_EXISTENCE``) give one "possible existence" value to every hedge.
``Finding.assertion`` keeps that value (``uncertain``); :func:`certainty_of` grades it, because radiology reports
do not use the hedges alike: the Brigham and Women's Hospital Radiologist Diagnostic Certainty Scale (Shinagare et
al., rad.bwh.harvard.edu/diagnostic-certainty-scale, 2020; read in a stored copy) gives "most likely" a very high
(> 90 %) and "likely" a high (75-90 %) probability, "may represent" an intermediate one (25-75 %). So:

- ``probable``: "probable", "probably", "likely" (so "most likely"), 可能性大, 可能大 ("high likelihood"); not after
  "less", "least" or "not" ("less likely pneumonia" is no probable pneumonia);
- ``unlikely``: "unlikely", "is unlikely", "very unlikely" after the finding (the scale's low and very low
  probability; medspaCy reads "unlikely" as a negation, which would list the finding as negative), 可能性小,
  可能性不大 (it had been read as 可能, possible);
- ``hypothetical``: the ConText hypothetical triggers of the lexicon ("if", "evaluate for", "to exclude", "to
  assess", "would", "should", "could obscure", 排除, 以排除, 如有, 若有, 如出现, ...): the finding is named, not
  reported as seen;
- ``possible``: every other hedge ("possible", "may represent", "cannot exclude", "not ruled out", "suspicious
  for", "questionable", "?", "not well seen", 可疑, 疑似, 考虑, 可能, 不除外, 待排, ...). 可能 alone is "may" /
  "possibly", so possible; only 可能性大 is probable (the project's reading of the Chinese, not from a cited
  scale).

A finding stated as present is rendered plainly, an absent one only under "Negative for" / 阴性所见, an uncertain
one with its grade (:func:`hedged`).
"""

from __future__ import annotations

import re
from typing import Literal

from .text import fold_width

Certainty = Literal["possible", "probable", "unlikely", "hypothetical"]

PROBABLE_CUES = frozenset({"probable", "probably", "likely", "is likely", "are likely", "is probable", "are probable",
                           "可能性大", "可能大"})
"""Uncertainty cues (surface, lower case) that grade a finding probable."""

UNLIKELY_CUES = frozenset({"unlikely", "is unlikely", "are unlikely", "very unlikely", "is very unlikely", "可能性小",
                           "可能性不大"})
"""Uncertainty cues of a low probability (BWH scale: "unlikely" < 25 %, "very unlikely" < 5 %)."""

HYPOTHETICAL_CUES = frozenset({
    "if", "evaluate for", "to evaluate", "to exclude", "to identify", "to assess", "could obscure", "would",
    "should", "detecting", "排除", "以排除", "进一步排除", "如有", "若有", "如出现", "若出现"})
"""ConText hypothetical triggers among the uncertainty cues of :data:`~.lexicon.CUES`."""

_LOWERED = re.compile(r"\b(?:less|least|not)[\s-]+$", re.IGNORECASE)

TRAILING_CUES = frozenset({
    "likely", "probably", "probable", "possibly", "possible", "suspected", "questionable", "equivocal", "unlikely",
    "very unlikely", "可能", "可能性大", "可能大", "可能性小", "可能性不大", "待排", "待排除", "待除外", "待查", "不除外",
    "不排除", "未除外"})
"""Hedges that, set off by a comma after a finding at the end of its sentence, govern that finding ("Pneumonia,
likely.", "Right lower lobe pneumonia, probably.", 右肺下叶肺炎，可能性大。). pyConText's lexical knowledge base
(Chapman et al., ``KB/lexical_kb_05042016.tsv``, read in a stored copy) gives "likely", "possible", "probable",
"equivocal" and "unlikely" both directions and "suspected" the backward one; medspaCy's default English rules give
"possible", "probably", "likely" only the forward one, so there "Pneumonia, likely." keeps no hedge."""

_TRAILING_GAP = re.compile(r"\s*(?:(?:in|at|within|on|along|involving)\b[^.;,:!?。；，：]*)?[,，]\s*"
                           r"(?:(?:most|more|less|least|very|quite)\s+)?$", re.IGNORECASE)
_TRAILING_END = re.compile(r"[\s)）]*(?:[.;!?。；！？\n]|$)")


def trails(text: str, finding_end: int, cue_start: int, cue_end: int) -> bool:
    """Whether the uncertainty cue at ``text[cue_start:cue_end]`` is a trailing hedge of the finding that ends at
    ``finding_end``: one of :data:`TRAILING_CUES`, after only a site phrase ("in the right lower lobe") and one
    comma (a "most" / "less" may stand before it), and with nothing but the end of the sentence after it. "Right
    lower lobe opacity, likely pneumonia." (the hedge names another finding), "Small effusion, possibly loculated."
    and "Nodule, unlikely to be significant." (it qualifies an attribute or an interpretation) are none."""
    if cue_start < finding_end or _surface(fold_width(text[cue_start:cue_end])) not in TRAILING_CUES:
        return False
    return bool(_TRAILING_GAP.fullmatch(text, finding_end, cue_start) and _TRAILING_END.match(text, cue_end))


def _surface(cue: str) -> str:
    return re.sub(r"[\s-]+", " ", cue.strip().lower())


def certainty_of(text: str, start: int, end: int) -> Certainty:
    """The grade of the uncertainty cue at ``text[start:end]`` (offsets of the cue; see the module docstring)."""
    surface = _surface(fold_width(text[start:end]))
    if surface in HYPOTHETICAL_CUES:
        return "hypothetical"
    if surface in UNLIKELY_CUES:
        return "unlikely"
    if surface in PROBABLE_CUES and not _LOWERED.search(fold_width(text[max(0, start - 8):start])):
        return "probable"
    return "possible"


_EN = {"possible": "possible {}", "probable": "probable {}", "unlikely": "{} (unlikely)",
       "hypothetical": "{} (hypothetical, not reported as seen)"}
_ZH = {"possible": "{}（待排）", "probable": "{}（可能性大）", "unlikely": "{}（可能性小）",
       "hypothetical": "{}（假设情形，非本次所见）"}


def hedged(phrase: str, assertion: str, certainty: Certainty | None, lang: str, capital: bool = False) -> str:
    """``phrase`` (a finding's description) as the report states it: unchanged when present; for an uncertain
    finding with its grade ("possible pneumonia, left lower lobe", "probable 6 mm nodule, right upper lobe",
    "pneumonia (unlikely)", "pneumothorax (hypothetical, not reported as seen)", 左肺下叶肺炎（待排）,
    右肺下叶炎症（可能性大）); none means possible. ``capital`` upper-cases the first letter (an impression line). An
    absent finding is never given here as a positive one: it raises ``ValueError``."""
    if assertion == "absent":
        raise ValueError("an absent finding is rendered only among the negative findings")
    out = phrase if assertion == "present" else (_ZH if lang == "zh" else _EN)[certainty or "possible"].format(phrase)
    return out[:1].upper() + out[1:] if capital else out
