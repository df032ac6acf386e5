"""Escalation rules: when a message should go to a person, and why.

Five reasons, each a list of phrases (case-insensitive; English phrases match whole words):

- ``human_requested``: the customer asks for a person ("speak to a human", "can I speak to your manager", "real
  person", "转人工", "人工客服", "找你们行长"), or the message is only such a word ("人工", "agent", "human").
- ``regulator_or_legal_threat``: a regulator, ombudsman, court or the police is named. Sources for the names: the US
  Consumer Financial Protection Bureau (CFPB) complaint portal, the UK Financial Ombudsman Service and FCA, the OCC
  and FDIC; in China the National Financial Regulatory Administration (国家金融监督管理总局, formerly 银保监会 CBIRC,
  consumer hotline 12378), the People's Bank of China (人民银行, hotline 12363), the 12315 consumer and 12345 city
  hotlines, 信访 petitions, and litigation words (起诉, 法院, 律师函).
- ``media_threat``: going to the press or posting the case online ("go to the press", "找媒体", "曝光", "上热搜").
- ``complaint``: a formal complaint ("I want to file a complaint", "投诉").
- ``anger``: abuse and strong frustration ("ridiculous", "worst bank", "unacceptable", "太过分了", "垃圾", "生气"),
  angry emoji, or shouting (see :func:`_shouting`; "!!!" unless the message thanks).

Messages are matched in :func:`normalise`'s form (NFKC, lower case, traditional Chinese of the table as
simplified); :data:`EXCEPTIONS` lists ordinary phrases that contain a listed word ("power of attorney"), and a
negation right before a phrase of a :data:`NEGATABLE` reason cancels it. A rule table, not a model: every flag can
be traced to the phrase that raised it (``matched``). Operators can add phrases with the ``escalation_terms``
option.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sectorflow import ConfigError

REASONS = ("human_requested", "regulator_or_legal_threat", "media_threat", "complaint", "anger")

_PEOPLE = ("a human", "a person", "an agent", "a representative", "a rep", "a manager", "a supervisor", "an operator",
           "an advisor", "an adviser", "a real person", "a real human", "an actual person", "a staff member",
           "the manager", "the supervisor", "the operator", "your manager", "your supervisor", "a live agent",
           "a customer service agent", "someone", "somebody", "a human being")
_HUMAN_VERBS = ("speak to", "talk to", "speak with", "talk with", "chat with", "chat to", "connect me to",
                "connect me with", "transfer me to", "put me through to", "let me talk to", "let me speak to",
                "get me", "can i get", "can i have", "i'd like", "i would like")
_WANT = ("want", "need", "demand")
_MEDIA_VERBS = ("go to", "going to", "contact", "call", "tell", "write to", "talk to", "speak to", "report you to",
                "report this to", "take this to", "taking this to", "post this in", "expose you in", "expose you to")
_MEDIA = ("the press", "the media", "the newspapers", "a newspaper", "the newspaper", "the papers", "the news",
          "journalists", "a journalist", "a reporter", "reporters", "the tv", "a tv station")

TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "human_requested": {
        "en": tuple(f"{v} {p}" for v in _HUMAN_VERBS for p in _PEOPLE)
        + tuple(f"{v} {p}" for v in _WANT for p in _PEOPLE if not p.startswith("some"))
        + ("real person", "real human", "human agent", "live agent", "customer service rep", "operator please",
           "human please", "agent please", "representative please", "manager please", "escalate this",
           "this escalated", "escalate my complaint", "escalate my case", "put me through to customer service",
           "not a bot", "not a robot"),
        "zh": ("转人工", "人工客服", "人工服务", "找人工", "真人客服", "接人工", "要人工", "转接人工", "人工坐席",
               "客服经理", "找你们经理", "叫你们经理", "找你们领导", "叫你们领导", "找你们行长", "叫你们行长",
               "找你们主管", "找行长", "找主管", "转一下人工", "跟真人", "和真人", "找真人", "要真人", "真人服务",
               "工作人员联系我", "你们的负责人", "你们负责人", "找负责人", "叫负责人"),
    },
    "regulator_or_legal_threat": {
        "en": ("cfpb", "consumer financial protection bureau", "ombudsman", "financial conduct authority", "fca",
               "occ", "fdic", "regulator", "regulators", "attorney general", "better business bureau", "bbb",
               "lawyer", "lawyers", "attorney", "solicitor", "sue you", "sue the bank", "sue your bank", "suing you",
               "suing the bank", "lawsuit", "legal action", "take you to court", "see you in court", "small claims",
               "court", "call the police", "go to the police", "going to the police", "report you to the police",
               "trading standards"),
        "zh": ("银保监会", "银监会", "保监会", "金融监管总局", "金融监督管理总局", "监管局", "监管部门", "人民银行",
               "去人行", "找人行", "向人行", "到人行", "告到人行", "12378", "12363", "12315", "12345热线",
               "打12345", "市长热线", "信访", "消协", "消费者协会", "起诉", "诉讼", "告你们", "法院", "律师",
               "律师函", "打官司", "仲裁", "报警", "报案", "派出所", "公安局", "法庭", "找监管", "向监管", "告到监管",
               "去监管", "银监局", "银保监局", "金融监管局", "消保委"),
    },
    "media_threat": {
        "en": tuple(f"{v} {m}" for v in _MEDIA_VERBS for m in _MEDIA)
        + ("post this on", "post it on", "posting this on", "share this on", "name and shame", "one star review",
           "1 star review", "one-star review", "1-star review", "bad review", "write a review about this"),
        "zh": ("曝光", "媒体曝光", "找媒体", "联系媒体", "告诉媒体", "向媒体", "去媒体", "找记者", "联系记者", "叫记者",
               "找电视台", "上电视", "上新闻", "上热搜", "发微博", "发抖音", "发到网上", "发网上", "网上曝光", "发到微博",
               "发到抖音", "发小红书", "发到小红书", "发朋友圈", "发到朋友圈"),
    },
    "complaint": {
        "en": ("complaint", "complaints", "complain", "complaining", "complained", "file a complaint",
               "formal complaint", "raise a complaint", "i demand", "demand a refund", "want compensation",
               "demand compensation", "nobody is helping", "no one is helping", "nobody answers", "no one answers",
               "nobody has answered", "no one has answered", "still not resolved", "still hasn't been resolved",
               "still not been resolved", "third time i", "never bank with you again", "on hold for",
               "taking my business elsewhere", "take my business elsewhere", "extremely unhappy", "very unhappy",
               "not happy with your service", "poor service", "worst experience"),
        "zh": ("投诉", "举报", "差评", "还没解决", "一直没解决", "一直不解决", "没人管", "没人理", "要求赔偿", "赔偿我",
               "给个说法", "给我一个说法", "讨个说法", "什么态度", "第三次打", "没人接", "一直打不通"),
    },
    "anger": {
        "en": ("ridiculous", "unacceptable", "outrageous", "disgusting", "disgraceful", "appalling", "pathetic",
               "useless", "incompetent", "worst bank", "worst service", "worst customer service", "terrible service",
               "horrible service", "awful service", "shocking service", "fed up", "sick of", "furious", "livid",
               "fuming", "angry", "mad at you", "so mad", "really mad", "i'm mad", "i am mad", "pissed", "frustrated",
               "frustrating", "disappointed", "wtf", "what the hell",
               "bullshit", "fuck", "fucking", "rip off", "ripoff", "daylight robbery", "thieves", "shame on you",
               "this is a joke", "joke of a bank", "this is a scam", "what a scam", "total scam", "complete scam",
               "such a scam", "you're a scam", "you are a scam", "bank is a scam", "scam bank", "you scammers",
               "bunch of scammers", "hate this bank", "hate you", "thanks for nothing", "disgrace",
               "absolutely shocking", "this is unbelievable", "absolutely unbelievable", "unbelievable service", "you stole",
               "stolen my money", "stole my money"),
        "zh": ("太过分", "过分了", "气死", "生气", "愤怒", "火大", "气人", "离谱", "垃圾", "坑人", "坑钱", "无语",
               "什么破", "什么鬼", "搞什么", "忍无可忍", "太差劲", "太差了", "服务太差", "态度太差", "态度恶劣",
               "恶心", "滚蛋", "滚开", "给我滚", "滚吧", "滚出", "你们滚", "很不满", "非常不满", "十分不满",
               "不满意", "强盗", "抢钱", "流氓", "黑心", "你们是骗子", "你们就是骗子", "骗子银行",
               "你们这些骗子", "一群骗子", "你们骗人", "欺诈消费者", "霸王条款", "傻逼", "太坑", "坑死", "真烂", "太烂",
               "烂透", "服务真差", "服务差", "真差劲", "抢劫", "再也不用你们",
               "😡", "🤬", "😠", "💢", "🖕"),
    },
}

EXCEPTIONS: dict[str, tuple[str, ...]] = {
    "regulator_or_legal_threat": ("power of attorney", "powers of attorney", "fdic insured", "fdic-insured",
                                  "fdic insurance", "fdic coverage", "fdic protected", "fdic-protected",
                                  "protected by the fdic", "insured by the fdic", "member fdic", "fca regulated",
                                  "fca-regulated", "fca registered", "fca register", "fca number",
                                  "regulated by the fca",
                                  "authorised by the fca", "authorized by the fca", "人民银行征信", "人民银行的征信",
                                  "人民银行利率", "人民银行的利率", "人民银行基准", "人民银行规定", "人民银行的规定",
                                  "律师费", "律师事务所"),
    "anger": ("垃圾短信", "垃圾邮件", "垃圾电话", "垃圾信息", "垃圾广告", "垃圾分类"),
    "media_threat": ("曝光度", "曝光率"),
}
"""Ordinary phrases that contain an escalation phrase: a match inside one of these does not count ("power of
attorney" is a banking product, "Is this account FDIC insured?" and "人民银行征信报告怎么查" (the central bank's credit
report) are everyday questions, "垃圾短信" spam messages, "曝光度" exposure as a number)."""

WHOLE_MESSAGE: dict[str, tuple[str, ...]] = {
    "human_requested": ("human", "agent", "person", "representative", "operator", "live agent", "real person",
                        "人工", "真人", "人工服务", "转人工服务"),
    "anger": ("滚",),
}
"""A message that is only this word (with punctuation, emoji or "please"/"请" around it) asks for a person."""


_T2S = str.maketrans(
    "轉務經們領導銀監會總門協費訴師報體舉評過氣騙無語麼勁惡噁詐滾處說讓給見難態憤錢帳賬凍結誰問題還為對個請幫應該"
    "負責辦認識訊開關機構權時後來員話調熱線長媒記視電臺網發蕩離譜強盜搶煩嗎這沒並別傳護滿膽罵鬧橫條爭據規則險貸"
    "款戶鎖掛號碼餘額額轉賬財產證聯係繫議險們爛紅書賠償決聞訟訪討徵準備員廣類郵",
    "转务经们领导银监会总门协费诉师报体举评过气骗无语么劲恶恶诈滚处说让给见难态愤钱账账冻结谁问题还为对个请帮应该"
    "负责办认识讯开关机构权时后来员话调热线长媒记视电台网发荡离谱强盗抢烦吗这没并别传护满胆骂闹横条争据规则险贷"
    "款户锁挂号码余额额转账财产证联系系议险们烂红书赔偿决闻讼访讨征准备员广类邮")
"""Traditional Chinese characters of the phrase table (and of the negations, 沒有/並非/別) read as simplified, so
"我要投訴", "轉人工" and "我沒有要投訴" read as their simplified forms; one character for one, offsets unchanged.
Applied to the message and to the operator's phrases."""

NEGATABLE = ("human_requested", "complaint", "anger")
"""Reasons a negation right before the phrase cancels ("I don't want to complain", "我不是要投诉", "Not angry at
all"). A regulator, court or the press named is always reported, negated or not."""

_EN_NEGATION = re.compile(r"(?<![a-z'])(not|no|don't|dont|do not|didn't|did not|doesn't|does not|no need to|never|"
                          r"wouldn't|would not|isn't|is not|wasn't|aren't|won't|will not)\s+"
                          r"((really\s+)?(want|need|wish|mean|plan|intend|have|trying|going|here|calling|writing)"
                          r"\s+to\s+)?"
                          r"((a|an|any)\s+)?([a-z]+\s+(or|nor)\s+)?$")
_EN_DOUBLE_NEGATION = re.compile(r"\b(can't|cannot|can not|won't|couldn't)\s+not\s+$")
_ZH_NEGATION = re.compile(r"(不是|不想|不要|不用|不需要|无需|没有|没想|并非|不会|别|(?<![得能可])不|没)"
                          r"(要|想|去|再|转|找|来|打算|准备)?\s*$")
_ZH_MODALS = "要想需"
"""A phrase starting with one of these ("要人工") may share it with the negation before it ("我不要人工")."""
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'", "\u00b4": "'"})
"""Typographic apostrophes (as phones and word processors type "don’t"), the backtick and the acute accent
("don`t", "don´t") read as ``'``; mapped before NFKC, which would split the acute accent into a space and a
combining mark."""
_CLAUSE_BREAK = re.compile(r"[.,;:!?，。；：！？\n]")


def _is_word_char(ch: str) -> bool:
    """A letter or digit other than a Chinese character (those have no spaces between words)."""
    return ch.isalnum() and not ("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")


@dataclass(frozen=True)
class _Phrase:
    """One phrase in :func:`normalise`'s form. A phrase that starts (ends) with a letter or digit matches whole words
    only: no letter or digit other than a Chinese character may touch it ("court" not in "courtesy"; "CFPB" in
    "去CFPB投诉")."""

    text: str
    form: str

    def starts(self, lowered: str) -> list[int]:
        """Start offsets of the phrase's whole-word occurrences in ``lowered`` (plain substring search)."""
        out, form, n = [], self.form, len(self.form)
        edge_before, edge_after = _is_word_char(form[0]), _is_word_char(form[-1])
        i = lowered.find(form)
        while i >= 0:
            if not (edge_before and i > 0 and _is_word_char(lowered[i - 1])) and \
                    not (edge_after and i + n < len(lowered) and _is_word_char(lowered[i + n])):
                out.append(i)
            i = lowered.find(form, i + 1)
        return out


_ACRONYMS = frozenset({"IBAN", "SWIFT", "SEPA", "BACS", "CHAPS", "VISA", "AMEX", "MASTERCARD", "UNIONPAY", "PAYPAL",
                       "ALIPAY", "WECHAT", "HSBC", "ICBC", "FATCA", "HELOC", "LIBOR", "SOFR", "SIPP", "FDIC",
                       "CFPB", "NACHA", "EMV", "CVV2"})
"""Capitalised banking names that are not shouting ("Is my IBAN right for SWIFT and SEPA transfers?")."""
_THANKS = re.compile(r"(?<![a-z])(thank|thanks|thx|appreciate|appreciated)(?![a-z])|谢谢|感谢|多谢")
"""Thanks in the message: "Thank you so much!!!" is not anger."""
_FILLER = re.compile(r"(?<![a-z])(please|pls|plz|now)(?![a-z])|请|谢谢")


def _a_not_a(text: str, at: int) -> bool:
    """Whether the 不/没 at ``at`` is the middle of an A-not-A question (是不是, 要不要, 会不会, 有没有): a question,
    not a negation ("这是不是坑人" asks whether it is a rip-off)."""
    return 0 < at < len(text) - 1 and text[at] in "不没" and text[at - 1] == text[at + 1]


def _negated(lowered: str, start: int) -> bool:
    """Whether the phrase at ``start`` is negated: a negation directly before it in its clause (English: "not", "no",
    "don't", "do not", "isn't" ..., optionally with "want to" / "trying to" ... between, as in "don't want to
    complain", an article ("not a complaint") or a word and "or"/"nor" ("not upset or angry"); not
    "never been so angry", "won't you let me talk to a person" or "can't not complain"; Chinese: 不是/不想/不要/不/没
    ... directly before, also sharing a character with the phrase as in "我不要人工", so "再不处理我就投诉" stays a
    complaint, and "不得不投诉" is not a negation)."""
    before = lowered[:start]
    breaks = [m.end() for m in _CLAUSE_BREAK.finditer(before)]
    clause = before[breaks[-1] if breaks else 0:]
    if _EN_DOUBLE_NEGATION.search(clause):  # "I can't not complain"
        return False
    if _EN_NEGATION.search(clause):
        return True
    zh = _ZH_NEGATION.search(clause)
    if zh and not _a_not_a(clause, zh.start()):
        return True
    # "我不要人工": the phrase 要人工 took the 要 of 不要, so read the clause with the phrase's first character too
    first = lowered[start:start + 1]
    zh = _ZH_NEGATION.search(clause + first) if first in _ZH_MODALS else None
    return zh is not None and not _a_not_a(clause + first, zh.start())


def _shouting(text: str) -> bool:
    """At least 3 words of 4+ capital letters that are more than half of the words of 4+ letters (banking names such
    as IBAN, SWIFT or VISA not counted)."""
    long = [w for w in re.findall(r"\b[A-Za-z]{4,}\b", text) if w not in _ACRONYMS]
    caps = [w for w in long if w.isupper()]
    return len(caps) >= 3 and 2 * len(caps) > len(long)


def normalise(text: str) -> str:
    """The form phrases are matched in: typographic apostrophes as ``'``, NFKC (full-width letters and spaces as
    ASCII), lower case, traditional Chinese characters of the table as simplified. Same length as NFKC's output."""
    return unicodedata.normalize("NFKC", text.translate(_APOSTROPHES)).lower().translate(_T2S)


@dataclass(frozen=True)
class Escalation:
    """``escalate`` is True when any reason fired; ``reasons`` in the order of :data:`REASONS`; ``matched`` the
    phrases that fired (for the audit trail)."""

    escalate: bool
    reasons: tuple[str, ...] = ()
    matched: tuple[str, ...] = field(default=())


def _check_extra(extra: object) -> dict[str, list[str]]:
    """The operator's ``escalation_terms``, checked: a mapping of known reasons to lists of non-empty strings."""
    if extra is None:
        return {}
    example = '{"complaint": ["raise a dispute"], "anger": ["disgraceful"]}'
    if not isinstance(extra, Mapping):
        raise ConfigError(f"escalation_terms={extra!r}: give a mapping of reason to a list of phrases, e.g. {example}.")
    unknown = sorted(str(k) for k in extra if k not in REASONS)
    if unknown:
        raise ConfigError(f"escalation_terms has unknown reason(s) {unknown}; the reasons are {list(REASONS)}.")
    out: dict[str, list[str]] = {}
    for reason, phrases in extra.items():
        if isinstance(phrases, str) or not isinstance(phrases, (list, tuple, set, frozenset)):
            raise ConfigError(f"escalation_terms[{reason!r}]={phrases!r}: give a list of phrases (a single phrase "
                              f"as [{phrases!r}]), e.g. {example}.")
        bad = [p for p in phrases if not isinstance(p, str) or not p.strip()]
        if bad:
            raise ConfigError(f"escalation_terms[{reason!r}] has {bad!r}: every phrase must be a non-empty string.")
        out[reason] = [p.strip() for p in phrases]
    return out


class EscalationRules:
    """Compiled phrase tables. ``extra`` maps a reason (one of :data:`REASONS`) to a list of more phrases (any
    language; case-insensitive; traditional Chinese read as simplified).

    Raises:
        ConfigError: ``extra`` is not such a mapping (an unknown reason, a string instead of a list, an empty or
            non-string phrase).
    """

    def __init__(self, extra: Mapping[str, Sequence[str]] | None = None) -> None:
        added = _check_extra(extra)
        self._patterns: dict[str, list[_Phrase]] = {}
        self._exceptions: dict[str, list[_Phrase]] = {}
        self._whole: dict[str, dict[str, str]] = {}
        for reason in REASONS:
            phrases = list(TERMS[reason]["en"]) + list(TERMS[reason]["zh"]) + added.get(reason, [])
            self._patterns[reason] = [_Phrase(p, normalise(p)) for p in dict.fromkeys(phrases)]
            self._exceptions[reason] = [_Phrase(p, normalise(p)) for p in EXCEPTIONS.get(reason, ())]
            self._whole[reason] = {normalise(p): p for p in WHOLE_MESSAGE.get(reason, ())}

    def check(self, text: str) -> Escalation:
        """Escalation verdict for one message, matched in :func:`normalise`'s form: full-width
        "Ｉ　ｗａｎｔ　ａ　ｈｕｍａｎ" reads as "I want a human", "我要投訴" as "我要投诉", "don’t" as "don't"."""
        text = unicodedata.normalize("NFKC", text.translate(_APOSTROPHES))
        lowered = normalise(text)
        bare = re.sub(r"[\W_]+", " ", _FILLER.sub(" ", lowered)).strip()
        reasons, matched = [], []
        for reason in REASONS:
            spans = [(i, i + len(e.form)) for e in self._exceptions[reason] for i in e.starts(lowered)]

            def counts(p: _Phrase, i: int, reason: str = reason, spans: list = spans) -> bool:
                if any(a <= i and i + len(p.form) <= b for a, b in spans):
                    return False  # inside an ordinary phrase ("power of attorney", "垃圾短信")
                return reason not in NEGATABLE or not _negated(lowered, i)

            hits = [p.text for p in self._patterns[reason] if any(counts(p, i) for i in p.starts(lowered))]
            if bare in self._whole[reason]:
                hits.append(self._whole[reason][bare])
            if reason == "anger":
                if _shouting(text):
                    hits.append("SHOUTING")
                if "!!!" in text and not _THANKS.search(lowered):
                    hits.append("!!!")
            if hits:
                reasons.append(reason)
                matched += hits
        return Escalation(bool(reasons), tuple(reasons), tuple(matched))
