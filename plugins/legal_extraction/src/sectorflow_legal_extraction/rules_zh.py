"""Rules for Chinese contracts: party blocks (甲方/乙方, 出租方/承租方 ... with each party's own address and
contacts), amounts (figures and 大写, checked against each other), dates, term, renewal, notice, 违约金, governing
law, dispute resolution (仲裁委员会 or 人民法院) and clause fields.

Each function returns ``list[Extraction]``, empty when nothing is found (nothing is guessed).
"""

from __future__ import annotations

import re

from . import normalize as nz
from .schema import Extraction
from .text import party_block_end

_ROLES = {"甲方": "party_a", "乙方": "party_b", "丙方": "party_c", "出租方": "lessor", "出租人": "lessor",
          "承租方": "lessee", "承租人": "lessee", "卖方": "seller", "出卖人": "seller", "供方": "seller",
          "供货方": "seller", "买方": "buyer", "买受人": "buyer", "需方": "buyer", "许可方": "licensor",
          "许可人": "licensor", "被许可方": "licensee", "被许可人": "licensee", "委托方": "client", "委托人": "client",
          "受托方": "agent", "受托人": "agent", "发包方": "employer", "发包人": "employer", "承包方": "contractor",
          "承包人": "contractor", "借款人": "borrower", "贷款人": "lender", "出借人": "lender", "转让方": "assignor",
          "受让方": "assignee", "服务方": "provider", "开发方": "developer"}
_ROLE_ALT = "|".join(sorted(_ROLES, key=len, reverse=True))
PARTY_LINE = re.compile(rf"^[ \t　]*(?P<role>{_ROLE_ALT})(?:名称|全称)?[ \t　]*"
                        rf"(?:[（(](?:以下(?:简称|称)|下称|简称)?(?:为)?[ \t　]*[“”\"「『]?(?P<alias>{_ROLE_ALT})[“”\"」』]?[)）])?[ \t　]*"
                        rf"(?:[（(][^)）\n]{{0,12}}[)）])?[ \t　]*[：:][ \t　]*(?P<name>[^\n]{{2,80}}?)[ \t　]*$", re.M)
_ATTRS = (
    ("address", r"(?:通讯|联系|注册|住所|办公|送达)?地址|住所(?:地)?"),
    ("contact", r"联系人|法定代表人|负责人|授权代表|委托代理人|代表人"),
    ("phone", r"(?:联系)?电话|手机(?:号码)?|传真"),
    ("email", r"电子邮(?:箱|件)|邮箱|E-?mail"),
    ("id_number", r"统一社会信用代码|身份证(?:号码?)?|营业执照(?:号码?)?"),
    ("bank_account", r"开户(?:银行|行)|(?:银行)?账号"),
)
HEADING = re.compile(r"(?:第[一二三四五六七八九十百零〇\d]+[条章节]|[一二三四五六七八九十]{1,3}[、.．]|"
                     r"[（(][一二三四五六七八九十]{1,3}[)）]|\d{1,2}[、．](?!\d)|\d{1,2}\.(?!\d))[ \t　]*[^。；，\n]{0,20}")
"""A section heading: 第五条 合同的解除, 四、保密, （二）付款方式, 3. 违约责任."""
_ATTRS = tuple((key, re.sub(r"([\u4e00-\u9fff])(?=[\u4e00-\u9fff(])", "\\1[ \\t　]?", pattern))
               for key, pattern in _ATTRS)  # OCR spaces inside a label: "地 址：", "联 系 人："
_ATTR_LINE = re.compile(r"^[ \t　]*(?P<label>" + "|".join(p for _, p in _ATTRS) +
                        r")[ \t　]*[：:][ \t　]*(?P<value>[^\n]*?)[ \t　]*$", re.M)
_INLINE_CUT = re.compile(r"(?:[ \t　]*[，,；;、][ \t　]*|[ \t　]+)(?=(?:" + "|".join(p for _, p in _ATTRS) + r")[ \t　]*[：:])")
"""Where a party's name ends when its attributes follow on the same line, after a comma or a space."""
_INLINE_ATTR_RE = (r"(?<=[，,；;、 \t　])[ \t　]*(?P<label>" + "|".join(p for _, p in _ATTRS) +
                   r")[ \t　]*[：:][ \t　]*(?P<value>[^，,；;\n]*?)[ \t　]*(?=[，,；;、]|[ \t　]+(?:" + "|".join(p for _, p in _ATTRS) +
                   r")[ \t　]*[：:]|$)")
_ATTR_INLINE = re.compile(_INLINE_ATTR_RE, re.M)
"""An attribute on the party's own line: "甲方：A科技有限公司，地址：北京市海淀区1号，联系人：张三"."""


_LABEL_AHEAD = (rf"(?=(?:{_ROLE_ALT}|" + "|".join(p for _, p in _ATTRS) +
                rf")(?:名称|全称)?[ \t　]*(?:[（(][^)）\n]{{0,20}}[)）])?[ \t　]*[：:])")
_RUN_TOGETHER = re.compile(rf"[。；;](?![ \t　]*\n)|[ \t　]*[，,][ \t　]*{_LABEL_AHEAD}|[ \t　]+{_LABEL_AHEAD}|"
                           r"[ \t　]+(?=第[一二三四五六七八九十百零〇\d]+[条章])")
"""Where text taken out of a PDF runs lines together: a sentence end inside a line, or a comma or spaces before a
party or attribute label (``甲方：A公司。乙方：B公司。本合同……`` / ``甲方：A公司 乙方：B公司``)."""


def line_view(text: str) -> str:
    """``text`` with the places :data:`_RUN_TOGETHER` finds turned into line breaks (one character for each: the
    offsets are those of ``text``), so that each party and attribute stands on a line of its own."""
    return _RUN_TOGETHER.sub(lambda m: "\n" * len(m.group()), text)


def parties(text: str) -> list[Extraction]:
    """Every ``<role>[（<alias>）]：<name>`` line, each with the attribute lines under it (地址, 联系人, 电话,
    邮箱 ...) up to the next party line or the first blank line that the body or nothing follows (a blank line
    followed by a 地址：… line is inside the block: :func:`text.party_block_end`): a party's address is never taken
    from another party's block. Lines run together by PDF text extraction are read split at their labels
    (:func:`line_view`)."""
    original, text = text, line_view(text)
    lines = list(PARTY_LINE.finditer(text))
    found: list[Extraction] = []
    seen_roles: set[str] = set()
    for n, match in enumerate(lines):
        name = match.group("name").strip()
        inline = _INLINE_CUT.search(name)  # "甲方：A科技有限公司，地址：北京市…，联系人：张三": the name ends at 地址
        if inline:
            name = name[:inline.start()].strip()
        comma = re.search(r"[，,]", name)  # "乙方：B公司，双方经协商一致": a party's name holds no comma
        if comma and comma.start() >= 2:
            name = name[:comma.start()].strip()
        if re.fullmatch(r"[_\s＿]*|（?签(?:字|章)）?.*|.*(?:盖章|签字|签章).*", name):
            continue  # a signature line at the end: 甲方（盖章）：
        role = _ROLES[match.group("role")]
        roles = [role] + ([_ROLES[match.group("alias")]] if match.group("alias") else [])
        if seen_roles & set(roles):  # 甲方 named again (a signature block's 甲方名称：...): the first line stands
            continue
        seen_roles.update(roles)
        start = match.start("name")
        party = Extraction(text=original[start:start + len(name)], start=start, end=start + len(name),
                           value={"name": name, "role": roles[0], "roles": roles, "label": match.group("role")},
                           confidence=0.95, source="rule:zh_party_line")
        block_end = party_block_end(text, match.end(), lines[n + 1].start() if n + 1 < len(lines) else len(text),
                                    _ATTR_LINE)  # a blank line before its 地址：… line stays inside the block
        attrs = [*(_ATTR_INLINE.finditer(text, start + len(name), match.end()) if inline else []),
                 *_ATTR_LINE.finditer(text, match.end(), block_end)]
        for attr in attrs:
            value = attr.group("value")
            if not value.strip():
                continue
            key = next(k for k, p in _ATTRS if re.fullmatch(p, attr.group("label")))
            b = attr.start("value")
            party.relations.setdefault(key, []).append(Extraction(
                text=original[b:b + len(value)], start=b, end=b + len(value), value=value.strip(), confidence=0.95,
                source=f"rule:zh_party_{key}"))
        found.append(party)
    return found


def contract_amount(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The amount after 合同总金额/合同总价/总价款/合同价款/租金总额 ...; words and figures written side by side
    are both read and must agree (a mismatch is a warning, the figures are not preferred over the words)."""
    cue = re.compile(r"合同(?:总)?(?:金额|价款|总价|价格)|总价款|总金额|总价|租金总额|总租金|合同总额|价款(?:总计|合计)?|"
                     r"(?:许可|服务|技术|咨询)?费用?总额|(?:借款|贷款)(?:金额|本金|总额)|转让(?:价款|价格|总价)|"
                     r"采购(?:总)?金额")
    for n, (start, end) in enumerate(spans):
        match = cue.search(text, start, end)
        if not match:
            continue
        if n + 1 < len(spans) and text[end - 1] in "；;" and re.match(r"[（(]?[大小]写", text[spans[n + 1][0]:]):
            end = spans[n + 1][1]  # "大写人民币叁拾万元整；小写¥300,000.00": the same amount, both forms
        sentence = text[start:end]
        match = cue.search(sentence)
        amounts = [a for a in nz.amounts_in(sentence) if a[0] >= match.start()]
        if not amounts:
            continue
        warnings = nz.check_consistency(amounts, sentence)
        first = amounts[0]
        pair = [a for a in amounts[1:] if nz.side_by_side(sentence, first, a)]
        b, e = start + first[0], start + (pair[0][1] if pair else first[1])
        e = _close_brackets(text, b, e, end)
        value = dict(first[3])
        if pair:
            value["words_and_figures_agree"] = not warnings
            if warnings:  # never resolved silently: both readings, no amount
                words, figures = (first, pair[0]) if first[4] == "words" else (pair[0], first)
                value.update(amount=None, words=words[3]["amount"], figures=figures[3]["amount"])
        return [Extraction(text=text[b:e], start=b, end=e, value=value, confidence=0.9, source="rule:zh_amount",
                           warnings=warnings)]
    return []


_BRACKETS = {"（": "）", "(": ")", "【": "】", "[": "]"}


def _close_brackets(text: str, begin: int, end: int, limit: int) -> int:
    """``end`` moved past the closing brackets that the span ``text[begin:end]`` opens and leaves open, when they
    follow at once (spaces allowed): ``人民币壹佰万元整（¥1,000,000.00`` -> ``...（¥1,000,000.00）``, so a span
    that holds an opening bracket also holds its closing one. Never past ``limit``."""
    stack = []
    for char in text[begin:end]:
        if char in _BRACKETS:
            stack.append(_BRACKETS[char])
        elif stack and char == stack[-1]:
            stack.pop()
    while stack:
        match = re.match(r"\s*" + re.escape(stack[-1]), text[end:limit])
        if not match:
            break
        end += match.end()
        stack.pop()
    return end


def _dated(text: str, spans: list[tuple[int, int]], cue: re.Pattern[str], name: str,
           relative_ok: bool = False, date_order: str = "MDY") -> list[Extraction]:
    for start, end in spans:
        sentence = text[start:end]
        match = cue.search(sentence)
        if not match:
            continue
        dates = [d for d in nz.dates_in(sentence, date_order)
                 if (abs(d[0] - match.end()) < 30 or abs(match.start() - d[1]) < 30)
                 and not re.match(r"\s*(?:之|以)?前", sentence[d[1]:])]  # "于2023年3月1日前签署": a deadline
        if dates:
            s, e, raw, iso = dates[0]
            return [Extraction(text=raw, start=start + s, end=start + e, value=iso, confidence=0.9,
                               source=f"rule:zh_{name}")]
        if relative_ok:
            anchor = re.search(r"(?:自|于)?(?P<a>[^，。；]{1,20}?之日)起(?:生效|开始)", sentence)
            if anchor:
                b, e = start + anchor.start("a"), start + anchor.end("a")
                return [Extraction(text=text[b:e], start=b, end=e, confidence=0.8, source=f"rule:zh_{name}_anchor",
                                   value={"anchor": re.split(r"[自于]", anchor.group("a"))[-1], "offset": "P0D",
                                          "bound": "at"})]
            event = re.search(r"(?:经|在|待)(?P<a>[^，。；经在待]{2,20}?)(?P<w>后|之后|时)(?:即|方|始)?(?:行)?生效", sentence)
            if event:  # "本合同经双方签字盖章后生效": the event, kept as the anchor
                b, e = start + event.start("a"), start + event.end("a")
                return [Extraction(text=text[b:e], start=b, end=e, confidence=0.75, source=f"rule:zh_{name}_anchor",
                                   value={"anchor": event.group("a"), "offset": "P0D",
                                          "bound": "at" if event.group("w") == "时" else "after"})]
    return []


def signing_date(text: str, spans: list[tuple[int, int]], date_order: str = "MDY") -> list[Extraction]:
    """签订日期/签署日期/签约时间 or 本合同于<date>签订."""
    return _dated(text, spans, re.compile(r"签(?:订|署|约)(?:日期|时间)|(?:本|该)?(?:合同|协议|双方)[^，。；]{0,8}?于"
                                          r"[^，。；]{0,25}?签(?:订|署)|签订于"), "signing_date",
                  date_order=date_order)


def effective_date(text: str, spans: list[tuple[int, int]], date_order: str = "MDY") -> list[Extraction]:
    """A date with 生效, or the anchor of "自双方签字盖章之日起生效" kept as an anchor."""
    return _dated(text, spans, re.compile(r"生效"), "effective_date", relative_ok=True, date_order=date_order)


_MASK = r"[*＊×]"
_REDACTED_END = re.compile(r"(?:至|到)\s*(?:于\s*)?(?:[\[【［][\s*＊×]*" + _MASK + r"[\s*＊×]*[\]】］]|" + _MASK + r"{3,}|"
                          r"(?=[^日，。；]{0,12}" + _MASK + r")"
                          r"[\d〇零一二三四五六七八九十*＊×]{2,4}年[\d〇零一二三四五六七八九十*＊×]{1,2}月"
                          r"[\d〇零一二三四五六七八九十*＊×]{1,3}日)")
"""An end the copy blanks out: 至[*****]止, 至****年**月**日止, 至2024年**月**日 (a date with a masked part)."""


def term(text: str, spans: list[tuple[int, int]], date_order: str = "MDY") -> list[Extraction]:
    """租赁期限/合同期限/有效期: from-to dates ("自2023年3月1日起至2024年2月29日止") and/or a duration. An end the copy
    redacts (至[*****]止, 至****年**月**日止) is left out with the warning :data:`~.normalize.REDACTED_TERM_END`, as in
    English, never read from another date."""
    cue = re.compile(r"(?:租赁|合同|服务|许可|借款)?期限|有效期")
    for start, end in spans:
        sentence = text[start:end]
        if not cue.search(sentence) or "续" in sentence:
            continue
        value: dict[str, str] = {}
        dates = nz.dates_in(sentence, date_order)
        span_from = re.search(r"(?:自|从|[：:]\s*)(.{4,20}?)起?至(.{4,20}?)(?:止|$|[，。；])", sentence)
        if span_from and len(dates) >= 2 or len(dates) >= 2 and re.fullmatch(
                r"\s*起?\s*(?:至|到|—+|－|~|～|-)\s*", sentence[dates[0][1]:dates[1][0]]):  # 2024年1月1日—2024年12月31日
            value["start"], value["end"] = dates[0][3], dates[1][3]
        elif dates and re.search(r"(?:至|到)\s*$", sentence[:dates[0][0]]):  # 有效期至2025年12月31日止
            value["end"] = dates[0][3]
        elif dates and re.search(r"(?:自|从)\s*$", sentence[:dates[0][0]]) and sentence[dates[0][1]:].lstrip().startswith("起"):
            value["start"] = dates[0][3]  # 租赁期限为半年，自2023年3月1日起计算
        duration = nz.parse_duration(re.sub(r"\d{4}年|\d{1,2}月\d{1,2}日", "", sentence.split("自")[0]) or "")
        if duration is None:
            duration = nz.parse_duration(re.sub(r"[0-9〇零一二三四五六七八九十]{4}年[^，。；]*?日", "", sentence))
        if duration:
            value["duration"] = duration["iso"]
        if value:
            redacted = "end" not in value and _REDACTED_END.search(sentence)
            return [Extraction(text=sentence, start=start, end=end, value=value, confidence=0.85,
                               source="rule:zh_term", warnings=[nz.REDACTED_TERM_END] if redacted else [])]
    return []


def renewal(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """续租/续约/续签/续期/自动延长: the renewal duration if one is given, with the clause."""
    for start, end in spans:
        sentence = text[start:end]
        if HEADING.fullmatch(sentence) or not re.search(r"续(?:租|约|签|期)|自动(?:延长|延续|顺延)", sentence):
            continue
        duration = None
        for cut in re.finditer(r"(?:延长|顺延|续(?:租|约|签|期))[^，。；]*", sentence):
            found = nz.parse_duration(cut.group())
            if found and not re.search(r"提前|届满前|期满前", cut.group()[:found["start"]]):
                duration = found  # a number after 提前/期满前 is the notice, not the renewal
                break
        value = {"iso": duration["iso"] if duration else None, "successive": bool(re.search(r"依此类推|以此类推|每次",
                                                                                            sentence)),
                 "automatic": bool(re.search(r"自动", sentence))}
        return [Extraction(text=sentence, start=start, end=end, value=value, confidence=0.8,
                           source="rule:zh_renewal")]
    return []


def notice_period(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """提前<N>日/个月(书面)通知 -> ISO 8601 duration."""
    for start, end in spans:
        sentence = text[start:end]
        match = re.search(rf"(?:提前|届满前|期满前)\s*(?P<d>(?:\d+|[{nz.CN_DIGITS}]+)\s*(?:个工作日|工作日|个月|日|天|周|月))[^，。；]{{0,6}}?"
                          r"(?:书面)?(?:通知|告知)", sentence)
        if match:
            duration = nz.parse_duration(match.group("d"))
            if duration:
                b, e = start + match.start("d"), start + match.end("d")
                applies = "renewal" if "续" in sentence else "termination" if re.search(r"解除|终止", sentence) else None
                return [Extraction(text=text[b:e], start=b, end=e, confidence=0.85, source="rule:zh_notice",
                                   value={"iso": duration["iso"], "business_days": duration["business_days"],
                                          "applies_to": applies})]
    return []


def liquidated_damages(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """违约金: every sentence that sets one, with its amount, percentage of the contract price, or daily rate
    (每日万分之五)."""
    out: list[Extraction] = []
    for start, end in spans:
        sentence = text[start:end]
        if "违约金" not in sentence:
            continue
        value: dict[str, object] = {}
        rate = re.search(r"(?:每(?:日|天|逾期一日))?[^，。；]{0,12}?(?:(\d+(?:\.\d+)?)\s*[%％]|(百|千|万)分之([零〇一二三四五六七"
                         r"八九十\d.]+))", sentence)
        if rate:
            if rate.group(1):
                value["rate"] = str(float(rate.group(1)) / 100)
            else:
                base = {"百": 100, "千": 1000, "万": 10000}[rate.group(2)]
                numerator = nz._zh_int(rate.group(3)) if not rate.group(3).replace(".", "").isdigit() else float(
                    rate.group(3))
                if numerator is not None:
                    value["rate"] = str(numerator / base)
            value["per_day"] = bool(re.search(r"每(?:日|天)|每逾期一日|按日", sentence))
        amounts = nz.amounts_in(sentence)
        if amounts:
            value["amount"] = nz.amount_value(amounts, sentence)
        warnings = nz.check_consistency(amounts, sentence)
        out.append(Extraction(text=sentence, start=start, end=end, value=value or None, confidence=0.85,
                              source="rule:zh_liquidated_damages", warnings=warnings))
    return out


_PLACES = ((r"中华人民共和国|中国", "People's Republic of China"), (r"香港", "Hong Kong"), (r"澳门", "Macau"),
           (r"台湾", "Taiwan"), (r"新加坡", "Singapore"), (r"英格兰(?:和|及|与)威尔士", "England; Wales"),
           (r"英格兰", "England"), (r"英国", "United Kingdom"), (r"(?:美国)?纽约州", "New York"),
           (r"(?:美国)?特拉华州", "Delaware"), (r"(?:美国)?加利?福尼亚州", "California"), (r"美国", "United States"),
           (r"日本", "Japan"), (r"德国", "Germany"), (r"法国", "France"), (r"瑞士", "Switzerland"))
"""The place names of governing-law clauses in English (CUAD's spelling): 中华人民共和国大陆地区 -> People's Republic
of China; a place not listed is given as written."""


def governing_law(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """适用中华人民共和国法律 / 受…法律管辖 -> the jurisdiction ("People's Republic of China")."""
    for start, end in spans:
        sentence = text[start:end]
        match = re.search(r"(?:适用|受|依据|按照|遵守|适用法律[为是：:]?)[ \t　]*(?P<p>中华人民共和国|中国|香港特别行政区|香港|"
                          r"[^，。；：:\s]{2,12}?)(?:的)?(?:现行)?法律", sentence)
        if match and re.search(r"适用|管辖|解释|订立|履行", sentence):
            place = match.group("p")
            value = next((v for k, v in _PLACES if re.match(k, place)), place)
            b, e = start + match.start(), start + match.end()
            return [Extraction(text=text[b:e], start=b, end=e, value=value, confidence=0.9,
                               source="rule:zh_governing_law")]
    return []


_VERB = re.compile(r"^.*?(?:提交|提请|交由|诉至|诉诸|向|(?<!自)由|交)")
"""What comes before the body's name: 均应提交 / 由 / 向 (not the 由 of 自由贸易试验区)."""


def _body(raw: str) -> str:
    return _VERB.sub("", raw, count=1) or raw


def dispute_resolution(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """仲裁: the named 仲裁委员会 (or 仲裁院/仲裁中心); 诉讼: the named 人民法院 (向/由/提交 甲方所在地人民法院 ...), or
    litigation with no body when the clause names no court (起诉 / 提起诉讼): none is guessed."""
    for start, end in spans:
        sentence = text[start:end]
        body = re.search(r"(?P<b>[^，。；、\s]{2,30}?(?:仲裁委员会|仲裁院|仲裁中心))", sentence)
        if body and "仲裁" in sentence:
            return [Extraction(text=sentence, start=start, end=end, confidence=0.9, source="rule:zh_arbitration",
                               value={"method": "arbitration", "body": _body(body.group("b"))})]
        if not re.search(r"争议|纠纷|诉讼|起诉|管辖|协商不成", sentence):
            continue
        court = re.search(r"(?P<b>[^，。；、\s]{2,30}?法院)", sentence)
        if court:  # 向甲方所在地人民法院起诉 / 由甲方所在地人民法院管辖 / 提交北京市朝阳区人民法院诉讼解决
            return [Extraction(text=sentence, start=start, end=end, confidence=0.85, source="rule:zh_court",
                               value={"method": "litigation", "body": _body(court.group("b"))})]
        if re.search(r"(?:提起|提出)诉讼|起诉|诉讼解决|诉讼方式", sentence):
            return [Extraction(text=sentence, start=start, end=end, confidence=0.7, source="rule:zh_court",
                               value={"method": "litigation", "body": None})]  # no court named: none is guessed
    return []


CLAUSE_PATTERNS = {
    "termination": re.compile(r"(?:有权|可以)[^，。；]{0,10}?(?:解除|终止)(?:本)?(?:合同|协议)|(?:合同|协议)(?:自行|即行)?(?:解除|终止)(?![后时之])"),
    "confidentiality": re.compile(r"保密"),
    "assignment": re.compile(r"转让.{0,20}(?:权利|义务)|(?:权利|义务).{0,20}转让|不得转让|转租"),
    "payment_terms": re.compile(r"(?:支付|付款|结算|缴纳).{0,30}(?:日内|之前|前|方式|账户|期)|付款方式|支付方式|"
                                r"(?:日内|之前|前).{0,20}(?:支付|付款)"),
}
SECTION_HEADINGS = {"termination": r"解除|终止", "confidentiality": r"保密", "assignment": r"转让",
                    "payment_terms": r"付款|支付|结算"}


def _section(key: str, text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sentences under the first heading of the clause type (第五条 合同的解除 ...) first, then the others (for
    termination only that section, when there is one); every sentence when no heading names the clause."""
    for n, (start, end) in enumerate(spans):
        heading = text[start:end]
        if HEADING.fullmatch(heading) and re.search(SECTION_HEADINGS[key], heading):
            body = []
            for s, e in spans[n + 1:]:
                if HEADING.fullmatch(text[s:e]):
                    break
                body.append((s, e))
            return body if key == "termination" else body + [sp for sp in spans if sp not in body]
    return spans




def clause(key: str, text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The first sentence of the clause type (解除/终止, 保密, 转让, 付款), with a relative deadline ("签订之日起
    30日内" kept with its anchor), a duration or an amount found in it as its value. Headings (第五条 转让) are
    skipped: the clause is the sentence that says it."""
    pattern = CLAUSE_PATTERNS[key]
    out: list[Extraction] = []
    for start, end in _section(key, text, spans):
        sentence = text[start:end]
        if HEADING.fullmatch(sentence) or not pattern.search(sentence):
            continue
        value: dict[str, object] = {}
        relative = nz.parse_relative(sentence)
        if relative:
            value["deadline"] = {k: relative[k] for k in ("anchor", "offset", "bound", "business_days")}
        else:
            duration = nz.parse_duration(sentence)
            if duration:
                value["duration"] = duration["iso"]
        amounts = nz.amounts_in(sentence)
        if amounts:
            value["amount"] = nz.amount_value(amounts, sentence)
        out.append(Extraction(text=sentence, start=start, end=end, value=value or None, confidence=0.75,
                              source=f"rule:zh_{key}", warnings=nz.check_consistency(amounts, sentence)))
        if key != "termination":  # every termination ground is kept; other clause fields give their first sentence
            break
    return out
