"""The exam a report describes: its modality, body region and whether it is a lung-cancer screening CT.

A report names other exams too: the comparison ("Comparison: CT chest 2019"), the recommended next exam ("Recommend
CT for further evaluation", 建议CT进一步检查) and exams in the history ("Screening mammogram last year.", 去年钼靶,
外院胸片). Such a modality is not the exam's. Of the modalities left, the exam is the one the findings belong to:
the last one named before the first finding ("Screening mammogram last year. CT chest: 7 mm nodule" is a CT).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .lexicon import Entry
from .text import fold_width, span_index

SCREENING = re.compile(
    r"\b(?:lung|chest|ct|ldct)\s+(?:cancer\s+)?screening\b"
    r"|\bscreening\s+(?:(?:low[-\s]?dose|ldct)\s+)?(?:chest\s+)?(?:ct|ldct)\b"
    r"|\blow[-\s]?dose\s+(?:chest\s+)?ct\b|\bldct\b|\blung[-\s]?rads\b"
    r"|肺癌筛查|肺部筛查|肺结节筛查|肺筛查|ct\s*筛查|筛查\s*ct|低剂量\s*(?:胸部\s*)?(?:螺旋\s*)?ct", re.IGNORECASE)
"""Lung-cancer screening named as this exam's context: screening of the lung or by (low-dose) CT, low-dose CT, LDCT,
Lung-RADS, 肺癌筛查, 低剂量CT. "Screening" alone is not enough: "Cancer screening negative", "colon cancer screening"
or a screening mammogram in the history had turned a diagnostic chest CT into a Lung-RADS screening (fresh-user
check)."""
_REFERENCE_BEFORE = re.compile(
    r"\b(recommend\w*|suggest\w*|advis\w*|consider\w*|comparison|compared|compare|comparing|prior|previous|"
    r"previously|earlier|outside|correlat\w*|obtain\w*|enrol\w*|refer\w*|if|could|would|should)\b"
    r"|建议|推荐|必要时|进一步|可行|结合|与|较|对比|比较", re.IGNORECASE)
_REFERENCE_AFTER = re.compile(r"[^.;,\n。；，]{0,30}?\b(recommended|suggested|advised|warranted|would|could|should)\b"
                              r"|[^.;,\n。；，]{0,20}?(比较|对比|相比)", re.IGNORECASE)
_HISTORY_BEFORE = re.compile(
    r"\b(history|hx|indication|indications|reason for (exam|study)|last|remote|outside|at another)\b"
    r"|既往|曾|去年|前年|上次|外院|病史|年前|月前|周前|天前|临床资料|临床诊断", re.IGNORECASE)
"""Before a modality in its segment: it is an exam of the history or the indication ("Clinical history: abnormal
chest x-ray", "on the last CT", 既往胸片, 外院CT), not this one."""
_HISTORY_AFTER = re.compile(
    r"[^.;,\n。；，]{0,24}?\b(last\s+(year|month|week|time)|(a|one|two|three|several|few|\d+)\s+(years?|months?|weeks?|"
    r"days?)\s+(ago|earlier|before|prior)|ago|showed|revealed|had shown|had demonstrated)\b"
    r"|[^.;,\n。；，]{0,12}?(去年|前年|年前|个月前|月前|周前|天前|曾示|曾提示)", re.IGNORECASE)
"""Just after a modality: it was done earlier ("Screening mammogram last year", "CT 2 years ago showed ..."); a
date alone ("CT chest 11/30/2026") does not say so, it may date this exam."""
_HEADER = re.compile(r"\b(findings|impression|technique|exam(ination)?|procedure|study)\s*:", re.IGNORECASE)
_ZH_SEGMENT = re.compile(r"[，,：:。；;]")
_EN_SEGMENT = re.compile(r"[.;](?=\s)|\n")


def _segment_before(text: str, start: int, sents: list[tuple[int, int]]) -> str:
    """The text before ``start`` in its sentence: for Chinese since the last comma or colon, for English since the
    last full stop, semicolon, line break or section header ("History: cough FINDINGS: CT chest ...")."""
    before = text[sents[span_index(sents, start)][0]:start]
    if re.search(r"[\u4e00-\u9fff]", before):
        return _ZH_SEGMENT.split(before)[-1]
    before = _EN_SEGMENT.split(before)[-1]
    return _HEADER.split(before)[-1]


def named_as_reference(text: str, start: int, end: int, sents: list[tuple[int, int]],
                       history: bool = False) -> bool:
    """Whether the modality (or "screening") at ``text[start:end]`` is named as a comparison or a recommended next
    exam, not as this exam: "Comparison: CT chest 2019", "Recommend CT for further evaluation", "Chest CT is
    recommended", 建议CT进一步检查, 与2019年胸部CT比较. Looked for before it in its sentence (a Chinese segment: since the
    last comma or colon) and just after it. "Follow-up CT chest", 复查胸部CT name this exam. With ``history`` (for a
    modality, not for the screening context: "Indication: lung cancer screening" is this exam's) also an exam of
    the history or the indication (:data:`_HISTORY_BEFORE`, :data:`_HISTORY_AFTER`)."""
    before = _segment_before(text, start, sents)
    if _REFERENCE_BEFORE.search(before) or _REFERENCE_AFTER.match(text, end):
        return True
    return history and bool(_HISTORY_BEFORE.search(before) or _HISTORY_AFTER.match(text, end))


_HISTORY_HEADER = re.compile(
    r"\b(?:clinical\s+)?(?:history|hx|indications?|reason\s+for\s+(?:exam|study|examination|referral)|clinical\s+"
    r"(?:information|indication|data|details))\s*:"
    r"|(?:临床诊断|临床资料|临床病史|简要病史|病史|临床信息|检查目的|检查原因|申请目的)\s*[:：]", re.IGNORECASE)
_OTHER_HEADER = re.compile(
    r"\b(?:findings|impression|technique|comparison|exam(?:ination)?|procedure|study|conclusion|result)\s*:"
    r"|(?:所见|检查所见|影像所见|印象|诊断意见|影像诊断|结论|检查方法|对比)\s*[:：]"
    r"|\b(?:ct|ldct|cxr|x-ray|radiograph)(?:\s+chest)?\s*:|(?:胸部)?ct\s*[:：]|胸片\s*[:：]", re.IGNORECASE)


def history_spans(text: str, sents: list[tuple[int, int]], modalities: Sequence[tuple[int, int]]
                  ) -> list[tuple[int, int]]:
    """Character ranges that state the history or the indication, not this exam's findings: from a history heading
    ("Indication:", "Clinical history:", 临床诊断：) to the end of its sentence or the next other heading
    ("Findings:", "CT chest:", 所见：), and from a modality of the history ("外院胸片提示...", "Chest x-ray 2 weeks ago
    showed ...", :data:`_HISTORY_BEFORE`, :data:`_HISTORY_AFTER`) to the end of its sentence, when this exam's own
    modality is named elsewhere in the text. A comparison
    ("Compared with the prior CT, the nodule is stable") is no history: its findings are this exam's."""
    out = []
    folded = fold_width(text)
    for s_start, s_end in sents:
        for m in _HISTORY_HEADER.finditer(folded, s_start, s_end):
            nxt = _OTHER_HEADER.search(folded, m.end(), s_end)
            out.append((m.start(), nxt.start() if nxt else s_end))
    # a modality of the history only when this exam's own modality is named too ("CT chest showed a 7 mm nodule"
    # alone may be this exam, written in the past tense: its findings stay this exam's, its modality unknown)
    if any(not named_as_reference(text, s, e, sents, history=True) for s, e in modalities):
        for start, end in modalities:
            _, s_end = sents[span_index(sents, start)]
            before = _segment_before(text, start, sents)
            if not _REFERENCE_BEFORE.search(before) and not _REFERENCE_AFTER.match(text, end) and (
                    _HISTORY_BEFORE.search(before) or _HISTORY_AFTER.match(text, end)):
                out.append((start, s_end))
    return out


def read_exam(text: str, toks: Sequence[tuple[int, int, Sequence[Entry]]], sents: list[tuple[int, int]]
              ) -> tuple[str | None, str | None, bool, list[tuple[int, int]]]:
    """``(modality, region, screening_hint, modality_spans)`` of a report from its lexicon tokens ``(start, end,
    entries)`` in text order.

    - modality: of the modality mentions that name neither a comparison, a recommended exam nor an exam of the
      history (:func:`named_as_reference`), the last one before the first finding (the exam the findings belong
      to), else the first one; none when there is none.
    - region: the region that modality's form names ("胸部CT", "chest x-ray"), else the first region word.
    - screening_hint: lung-cancer screening named as this exam's context (:data:`SCREENING`).
    - modality_spans: every modality mention, whatever exam it names (offsets)."""
    candidates: list[tuple[int, Entry]] = []
    spans: list[tuple[int, int]] = []
    first_region = None
    first_finding = next((s for s, _, entries in toks if any(e.kind == "finding" for e in entries)), None)
    for s, e, entries in toks:
        m = next((x for x in entries if x.kind == "modality"), None)
        r = next((x for x in entries if x.kind == "region"), None)
        if r and first_region is None:
            first_region = r.key
        if m is None:
            continue
        spans.append((s, e))
        if not named_as_reference(text, s, e, sents, history=True):
            candidates.append((s, m))
    chosen = None
    if candidates:
        before = [c for c in candidates if first_finding is not None and c[0] < first_finding]
        chosen = (before[-1] if before else candidates[0])[1]
    region = str(chosen.data["region"]) if chosen is not None and chosen.data.get("region") else first_region
    # "screening" / 筛查 / low-dose CT, unless only recommended or compared ("Consider enrollment in a lung cancer
    # screening program", 建议低剂量CT筛查): that does not make this CT a screening CT
    screening = any(not named_as_reference(text, m.start(), m.end(), sents) for m in SCREENING.finditer(fold_width(text)))
    return (chosen.key if chosen is not None else None), region, screening, spans
