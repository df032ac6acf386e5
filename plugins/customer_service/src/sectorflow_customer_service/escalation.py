"""Escalation rules: when a message should go to a person, and why.

Four reasons, each a list of phrases (case-insensitive; English phrases match on word boundaries):

- ``human_requested``: the customer asks for a person ("speak to a human", "I want a human", "real person", "转人工",
  "人工客服").
- ``regulator_or_legal_threat``: a regulator, ombudsman or court is named. Sources for the names: the US Consumer
  Financial Protection Bureau (CFPB) complaint portal, the UK Financial Ombudsman Service and FCA, the OCC and
  FDIC; in China the National Financial Regulatory Administration (国家金融监督管理总局, formerly 银保监会 CBIRC,
  consumer hotline 12378), the People's Bank of China (人民银行, hotline 12363), the 12315 consumer hotline, and
  litigation words (起诉, 法院, 律师函).
- ``complaint``: a formal complaint ("I want to file a complaint", "投诉").
- ``anger``: abuse and strong frustration ("ridiculous", "worst bank", "unacceptable", "太过分了", "垃圾"),
  or shouting (at least 3 words of 4+ letters in capitals, or "!!!").

A rule table, not a model: every flag can be traced to the phrase that raised it (``matched``). Operators can add
phrases with the ``escalation_terms`` option.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

REASONS = ("human_requested", "regulator_or_legal_threat", "complaint", "anger")

TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "human_requested": {
        "en": ("speak to a human", "talk to a human", "speak to someone", "talk to someone", "speak to a person",
               "talk to a person", "real person", "real human", "human agent", "live agent", "speak to an agent",
               "talk to an agent", "speak to a representative", "talk to a representative", "customer service rep",
               "speak to a manager", "talk to a manager", "speak with a human", "speak with someone",
               "speak with an agent", "speak with a manager", "speak with a person", "talk with a person",
               "speak with a representative", "talk with someone", "talk with a human", "connect me to",
               "transfer me to", "operator please",
               "want a human", "need a human", "want a person", "need a person", "get me a human",
               "get me a person", "let me talk to", "let me speak to", "human please", "agent please",
               "representative please", "want a real", "need a real"),
        "zh": ("转人工", "人工客服", "人工服务", "找人工", "真人客服", "接人工", "要人工", "客服经理", "找你们经理",
               "找你们领导"),
    },
    "regulator_or_legal_threat": {
        "en": ("cfpb", "consumer financial protection bureau", "ombudsman", "financial conduct authority", "fca",
               "occ", "fdic", "regulator", "attorney general", "better business bureau", "bbb", "lawyer", "attorney",
               "solicitor", "sue you", "sue the bank", "lawsuit", "legal action", "take you to court", "small claims",
               "court"),
        "zh": ("银保监会", "银监会", "保监会", "金融监管总局", "金融监督管理总局", "监管局", "监管部门", "人民银行",
               "人行", "12378", "12363", "12315", "消协", "消费者协会", "起诉", "法院", "律师", "律师函", "打官司",
               "仲裁", "报警", "媒体曝光", "曝光", "找监管", "向监管", "告到监管", "去监管"),
    },
    "complaint": {
        "en": ("complaint", "complaints", "complain", "complaining", "complained", "file a complaint",
               "formal complaint", "raise a complaint"),
        "zh": ("投诉", "举报", "差评"),
    },
    "anger": {
        "en": ("ridiculous", "unacceptable", "outrageous", "disgusting", "pathetic", "useless", "incompetent",
               "worst bank", "worst service", "terrible service", "fed up", "sick of", "scam", "scammers", "furious",
               "angry", "wtf", "what the hell", "rip off", "ripoff", "shame on you"),
        "zh": ("太过分", "过分了", "气死", "垃圾", "骗子", "坑人", "无语", "什么破", "忍无可忍", "太差劲", "恶心",
               "滚", "欺诈", "黑心"),
    },
}


NEGATABLE = ("human_requested", "complaint", "anger")
"""Reasons a negation right before the phrase cancels ("I don't want to complain", "我不是要投诉", "Not angry at
all"). A regulator or court named is always reported, negated or not."""

_EN_NEGATION = re.compile(r"(?<![a-z'])(not|no|don't|dont|do not|didn't|did not|doesn't|does not|no need to|never|"
                          r"wouldn't|would not)\s+"
                          r"((really\s+)?(want|need|wish|mean|plan|intend|have)\s+to\s+)?$")
_EN_DOUBLE_NEGATION = re.compile(r"\b(can't|cannot|can not|won't|couldn't)\s+not\s+$")
_ZH_NEGATION = re.compile(r"(不是|不想|不要|不用|不需要|无需|没有|没想|并非|不会|别)(要|想|去|再|转|找)?\s*$")
_ZH_MODALS = "要想需"
"""A phrase starting with one of these ("要人工") may share it with the negation before it ("我不要人工")."""
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'", "\u00b4": "'"})
"""Typographic apostrophes (as phones and word processors type "don’t"), the backtick and the acute accent
("don`t", "don´t") read as ``'``; mapped before NFKC, which would split the acute accent into a space and a
combining mark."""
_CLAUSE_BREAK = re.compile(r"[.,;:!?，。；：！？\n]")


def _negated(lowered: str, start: int) -> bool:
    """Whether the phrase at ``start`` is negated: a negation directly before it in its clause (English: "not", "no",
    "don't", "do not" ..., optionally with "want to" / "need to" between, as in "don't want to complain"; not
    "never been so angry", "won't you let me talk to a person" or "can't not complain"; Chinese: 不是/不想/不要 ...
    directly before, also sharing a character with the phrase as in "我不要人工", so "再不处理我就投诉" stays a
    complaint)."""
    before = lowered[:start]
    breaks = [m.end() for m in _CLAUSE_BREAK.finditer(before)]
    clause = before[breaks[-1] if breaks else 0:]
    if _EN_DOUBLE_NEGATION.search(clause):  # "I can't not complain"
        return False
    if _EN_NEGATION.search(clause) or _ZH_NEGATION.search(clause):
        return True
    # "我不要人工": the phrase 要人工 took the 要 of 不要, so read the clause with the phrase's first character too
    first = lowered[start:start + 1]
    return first in _ZH_MODALS and bool(_ZH_NEGATION.search(clause + first))


@dataclass(frozen=True)
class Escalation:
    """``escalate`` is True when any reason fired; ``reasons`` in the order of :data:`REASONS`; ``matched`` the
    phrases that fired (for the audit trail)."""

    escalate: bool
    reasons: tuple[str, ...] = ()
    matched: tuple[str, ...] = field(default=())


class EscalationRules:
    """Compiled phrase tables. ``extra`` maps a reason to more phrases (any language)."""

    def __init__(self, extra: Mapping[str, Sequence[str]] | None = None) -> None:
        self._patterns: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
        for reason in REASONS:
            phrases = list(TERMS[reason]["en"]) + list(TERMS[reason]["zh"]) + list((extra or {}).get(reason, ()))
            self._patterns[reason] = [(p, self._compile(p)) for p in phrases]

    @staticmethod
    def _compile(phrase: str) -> re.Pattern[str]:
        if phrase.isascii():
            return re.compile(r"(?<![a-z0-9])" + re.escape(phrase.lower()) + r"(?![a-z0-9])")
        return re.compile(re.escape(phrase))

    def check(self, text: str) -> Escalation:
        """Escalation verdict for one message (NFKC-normalised first, so full-width "Ｉ　ｗａｎｔ　ａ　ｈｕｍａｎ" reads
        as "I want a human", and typographic apostrophes read as ``'``)."""
        text = unicodedata.normalize("NFKC", text.translate(_APOSTROPHES))
        lowered = text.lower()
        reasons, matched = [], []
        for reason in REASONS:
            hits = [p for p, rx in self._patterns[reason]
                    if any(reason not in NEGATABLE or not _negated(lowered, m.start()) for m in rx.finditer(lowered))]
            if reason == "anger":
                caps = re.findall(r"\b[A-Z]{4,}\b", text)
                if len(caps) >= 3:
                    hits.append("SHOUTING")
                if "!!!" in text or "！！！" in text:
                    hits.append("!!!")
            if hits:
                reasons.append(reason)
                matched += hits
        return Escalation(bool(reasons), tuple(reasons), tuple(matched))
