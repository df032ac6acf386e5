"""Rule extraction: findings with anatomy, laterality, size, count, attributes, assertion and temporality.

Assertion follows ConText (Harkema et al. 2009): a cue governs the findings in its scope; pre-cues look forward,
post-cues backward. Scopes (both languages) end at the sentence end and at a terminator ("but", 但); a Chinese
pre-cue's scope and every post-cue's scope also end at a comma (English lists run across commas: "No pneumothorax,
effusion, or consolidation"), and an English scope ends at a comma followed by a new subject (", the ...",
", there ..."). The nearest governing cue wins. Nothing is created from text that is not in the lexicon, so "XXXX"
de-identification tokens create nothing, and a later "no acute process" names no finding and negates none.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .certainty import certainty_of, trails
from .exam import history_spans, read_exam
from .identity import characterisations, restatements
from .lexicon import FINDINGS, LUNG_LESIONS, NODULAR_FORMS, PLURALS, Entry, lexicon
from .schema import Anatomy, Cue, Finding, ReportWarning, Size
from .text import clauses, find_sizes, sentences, span_index

_NEW_SUBJECT = re.compile(r",\s*(the|a|an|there|this|it|these|which)\b", re.IGNORECASE)
_OTHER_WORDS = re.compile(r"\b(other|additional|further|new|another|suspicious|worrisome)\b|其他|其余|另外|新|可疑",
                          re.IGNORECASE)
"""Between a negation and its finding (or in the cue): the absent one is another kind than a present one ("No other
nodules", "No suspicious nodules" beside a calcified one), so the two do not conflict."""
_SOLID_PART = re.compile(r"(solid (component|portion|part)|实性(成分|部分))[^，,。.;；]{0,12}$", re.IGNORECASE)
_NEGATED_ATTR = re.compile(r"(non-?|not |without |no |无|未见|不伴|非)\s*$", re.IGNORECASE)
_NORMAL_HEART = re.compile(r"heart size (is )?(normal|within normal limits)|normal heart size|(心影|心脏)(大小)?(正常|不大)",
                           re.IGNORECASE)
_COMPONENT_AFTER = re.compile(r"\s*(components?|portions?|parts?)\b|成分|部分", re.IGNORECASE)
_SOLID_PART_AFTER = re.compile(r"\s*(solid (component|portion|part)|实性(成分|部分))", re.IGNORECASE)
_NOW_BEFORE = re.compile(r"(\b(now|currently|presently|today)\b|现|目前|本次)\s*(measur\w+|is|约|为|大小约|直径约|about|"
                         r"approximately)?\s*(about|approximately|约)?\s*$", re.IGNORECASE)
_PRIOR_SIZE = re.compile(r"(previously|formerly|prior|was|were|(?<!apart )(?<!aside )(?<!away )from|compared (with|to)|原|前次|上次|既往|原为|(?<=[（(，,\s])前)\s*"
                         r"(measuring|measured|measures)?\s*(about|approximately|约|大小约|直径约)?\s*$", re.IGNORECASE)
_SIZE_GAP_BREAK = re.compile(r"[,，;；、:：]|\b(and|or|with|in|of|at|on|from|to|measuring|is|are)\b|和|及|与|见", re.IGNORECASE)
_LIST_BREAK = re.compile(r",|;|\band\b|\bwith\b|\bplus\b|，|；|和|及|伴", re.IGNORECASE)
_POSITIVE_AFTER = re.compile(r"\s*(is|are)\s+(now\s+|again\s+|also\s+)?(present|seen|noted|identified|demonstrated|"
                             r"visible|visualized|evident)\b", re.IGNORECASE)
_ANAT_PREP = re.compile(r"\b(in|within|at|of|involving)\s+(the\s+)?(right\s+|left\s+|bilateral\s+)?$", re.IGNORECASE)
_CANCER = r"(cancer|carcinoma|malignancy|neoplasm|lymphoma|sarcoma|melanoma)\b"
_WORDS = r"(?:(?!no\b|not\b|without\b|suspected\b|suspicious\b|possible\b|probable\b|presumed\b|likely\b)[a-z]+\s+){0,2}"
_KNOWN_CANCER = re.compile(
    r"\b(known|history of|h/o|hx of|previous|prior|treated|metastatic)\s+(primary\s+)?([a-z]+\s+){0,2}"
    r"(cancer|carcinoma|malignancy|neoplasm|lymphoma|sarcoma|melanoma|metastas[ie]s)\b"
    # "Patient with colon cancer", "staging of breast cancer", "lobectomy for lung cancer" (not "no cancer")
    r"|\b(patient|pt|man|woman|male|female|gentleman|lady)\s+with\s+(a\s+)?(history\s+of\s+)?" + _WORDS + _CANCER
    + r"|\b(staging|restaging|surveillance)\s+(of|for)\s+" + _WORDS + _CANCER
    + r"|\b(lobectomy|pneumonectomy|segmentectomy|resection|mastectomy|colectomy|gastrectomy|nephrectomy|"
      r"prostatectomy|chemotherapy|radiotherapy|radiation|treated|treatment|surgery)\s+for\s+" + _WORDS + _CANCER
    + r"|[\u4e00-\u9fff]{0,4}?(癌|恶性肿瘤|淋巴瘤|肉瘤|黑色素瘤)(病史|术后|放疗后|化疗后|综合治疗后)"
    r"|[\u4e00-\u9fff]{0,4}?(癌|恶性肿瘤|淋巴瘤|肉瘤|黑色素瘤)(切除术后|根治术后|切除后|患者|病人)"
    r"|(既往|有).{0,8}(癌|恶性肿瘤|淋巴瘤)(病史)?",
    re.IGNORECASE)
_SCREENED = re.compile(r"\s*(screening|screened|筛查)", re.IGNORECASE)
"""Just after a cancer word: the cancer was screened for, not had."""
_OTHER_PERSON = re.compile(r"family history|family hx|\b(mother|father|sister|brother|sibling|parent)s?\b|家族史|父亲|母亲|"
                           r"其父|其母|兄弟|姐妹|哥哥|姐姐|弟弟|妹妹", re.IGNORECASE)
"""ConText experiencer "other": a finding in a sentence about a relative is not the patient's."""
_LESS_THAN = re.compile(r"(<|＜|≤|less than|smaller than|under|below|小于|不足|＜)\s*$", re.IGNORECASE)
_MORE_THAN = re.compile(r"(>|＞|≥|greater than|larger than|more than|over|exceeding|大于|超过)\s*$", re.IGNORECASE)
_TAG_BEFORE = re.compile(r"<[A-Za-z/!][^<>]*>\s*$")
"""An HTML/XML tag just before a size ("<b>8 mm</b>", "<td>5 mm"): its ">" is markup, not "greater than"."""
_ZH_LIST_REST = re.compile(r"^[\s、和及与或以及，,。；;]*$")
_ANAPHOR = re.compile(r"\s*(?:\d{1,2}\.\s+)?(this|it|these|they|(the\s+)?(largest|larger|biggest|dominant)|"
                      r"the\s+(nodule|nodules|lesion|lesions|mass|masses|opacity|density|abnormality|finding|focus))\b"
                      r"|\s*(该|其|此|最大者|较大者)",
                      re.IGNORECASE)
"""A sentence that opens with an anaphor ("This measures 3.2 cm", "The largest measures 3.5 mm", 其大小约8mm) and
names no lesion itself: its size belongs to the last lesion of the sentence before (a numbered item's marker, "2. The
largest measures 7 mm", may stand before the anaphor)."""
_LESION_SIZE_OWNERS = {"nodule", "mass", "granuloma", "cyst", "calcification", "opacity", "consolidation",
                       "lymphadenopathy", "effusion", "pneumothorax"}


@dataclass
class Token:
    start: int
    end: int
    text: str
    entries: list[Entry]

    def first(self, kind: str) -> Entry | None:
        return next((e for e in self.entries if e.kind == kind), None)


@dataclass
class Extraction:
    """What the rules read from one text."""

    findings: list[Finding]
    modality: str | None
    region: str | None
    screening_hint: bool
    warnings: list[ReportWarning] = field(default_factory=list)
    anatomy_mentions: list[Anatomy] = field(default_factory=list)
    modality_spans: list[tuple[int, int]] = field(default_factory=list)
    known_cancer: str | None = None
    """The text stating a known (patient's own) cancer, if any: Fleischner 2017 does not apply."""


def _lang(entry: Entry) -> str:
    return str(entry.data.get("lang", "en"))


_SIDED = {"upper_lobe", "middle_lobe", "lower_lobe", "upper_lung", "lower_lung"}
NONEXISTENT_LOBES = {
    "left_middle_lobe": "the left lung has no middle lobe (an upper and a lower lobe; the lingula is part of the upper "
                        "lobe): read as the left lung; check whether the lingula, the left mid zone or the right "
                        "middle lobe is meant",
    "right_lingula": "the right lung has no lingula (it is part of the left upper lobe): read as the right lung; "
                     "check whether the right middle lobe or the lingula (left) is meant",
}
"""Lobes a text may name that do not exist, and the message of their ``nonexistent_site`` warning."""


def _specific_site(generic: str, lat: str | None) -> tuple[str, str | None]:
    """The site key of a generic site with a laterality written before it, and the nonexistent lobe it names, if
    any: ("lower_lobe", "right") -> right_lower_lobe; ("lower_lung", "right") -> right_lower_lung (a zone stays a
    zone); ("mid_lung", "left") -> left_mid_lung; ("middle_lobe", "left") -> ("left_lung", "left_middle_lobe")."""
    if generic == "left_middle_lobe" or (generic == "middle_lobe" and lat == "left"):
        return "left_lung", "left_middle_lobe"
    if generic == "lingula" and lat == "right":
        return "right_lung", "right_lingula"
    if lat in ("right", "left"):
        if generic in _SIDED:
            return f"{lat}_{generic}", None
        if generic == "mid_lung":
            return f"{lat}_mid_lung", None
        if generic == "lung":
            return f"{lat}_lung", None
    if lat == "bilateral" and generic == "lung":
        return "both_lungs", None
    return generic, None


def extract(text: str) -> Extraction:
    """Read findings, exam and warnings from ``text`` (see the module docstring for the rules)."""
    toks = [Token(s, e, text[s:e], entries) for s, e, entries in lexicon().scan(text)]
    sents = sentences(text)
    claus = clauses(text)
    sizes = find_sizes(text)
    # sizes win over lexicon tokens inside them ("0.8 cm": nothing else there)
    toks = [t for t in toks if not any(sz.start <= t.start < sz.end for sz in sizes)]

    modality, region, screening_hint, modality_spans = read_exam(
        text, [(t.start, t.end, t.entries) for t in toks], sents)

    # laterality modifiers: attach forward to the next anatomy/finding token within a short distance
    lat_of: dict[int, str] = {}
    lat_tok: dict[int, int] = {}  # token index -> index of the laterality token written before it
    for i, t in enumerate(toks):
        lat = t.first("lat")
        if not lat:
            continue
        post = lat.data["form"].startswith("on ")
        if post:  # "effusion on the right": the nearest finding before it in the sentence
            for j in range(i - 1, -1, -1):
                if toks[j].first("finding") and span_index(sents, toks[j].start) == span_index(sents, t.start):
                    lat_of.setdefault(j, lat.key)
                    break
            continue
        reach = 3 if _lang(lat) == "zh" else 16
        for j in range(i + 1, len(toks)):
            nxt = toks[j]
            if nxt.start - t.end > reach or span_index(sents, nxt.start) != span_index(sents, t.start):
                break
            if nxt.first("anatomy") or nxt.first("finding"):
                lat_of[j] = lat.key
                lat_tok[j] = i
                break

    anatomy_mentions: list[tuple[int, Anatomy]] = []
    nonexistent: dict[int, str] = {}  # anatomy mention start -> the nonexistent lobe it names
    for i, t in enumerate(toks):
        a = t.first("anatomy")
        if a and not t.first("finding"):
            lat = lat_of.get(i) or a.data.get("laterality")
            key, missing = _specific_site(a.key, lat_of.get(i))
            start = t.start
            if missing:  # "left middle lobe", 左肺中叶: no such lobe; the side's lung, the text as written
                start = toks[lat_tok[i]].start if i in lat_tok else t.start  # "right lingula", side included
                nonexistent[start] = missing
                lat = "right" if key == "right_lung" else "left"
            anatomy_mentions.append((i, Anatomy(key=key, laterality=lat, text=text[start:t.end], start=start,
                                                end=t.end, nonexistent=bool(missing))))

    finding_idx = [i for i, t in enumerate(toks) if t.first("finding")]
    findings: list[Finding] = []
    for n, i in enumerate(finding_idx):
        t = toks[i]
        entry = t.first("finding")
        form = entry.data["form"]
        f = Finding(id=n, type=entry.key, text=t.text, start=t.start, end=t.end, assertion="present",
                    sentence=span_index(sents, t.start), laterality=lat_of.get(i))
        if form.lower() in PLURALS:
            f.count = "multiple"
        if "calcified" in form or "钙化" in form:
            f.attributes.append("calcified")
        if "磨玻璃" in form or form.lower() in ("ggn", "ggns", "ggo nodule", "ggo nodules", "ggo", "ggos"):
            f.attributes.append("ground-glass")
        if form in NODULAR_FORMS:
            f.attributes.append("nodular")
        findings.append(f)

    def clause_of(pos: int) -> int:
        return span_index(claus, pos)

    by_sentence: dict[int, list[Finding]] = {}
    for f in findings:
        by_sentence.setdefault(f.sentence, []).append(f)

    by_clause: dict[int, list[Finding]] = {}
    for f in findings:
        by_clause.setdefault(clause_of(f.start), []).append(f)

    def nearest_finding(tok_i: int) -> Finding | None:
        """The nearest finding in the token's clause."""
        t = toks[tok_i]
        best, best_d = None, None
        for f in by_clause.get(clause_of(t.start), []):
            d = f.start - t.end if f.start >= t.end else t.start - f.end
            d = d + 0.5 if f.start < t.start else d  # ties: the finding after a modifier ("calcified nodule")
            if best_d is None or d < best_d:
                best, best_d = f, d
        return best

    # modifiers: attribute, count, temporality -> nearest finding in the clause
    for i, t in enumerate(toks):
        if t.first("finding"):
            continue
        for kind in ("attribute", "count", "temporal"):
            e = t.first(kind)
            if not e:
                continue
            f = nearest_finding(i)
            if f is None and kind == "temporal":  # "结节，……，较前增大": the finding earlier in the sentence
                before = [g for g in by_sentence.get(span_index(sents, t.start), []) if g.end <= t.start]
                f = before[-1] if before else None
            if f is None:
                continue
            if kind == "attribute" and _NEGATED_ATTR.search(text[max(0, t.start - 8):t.start]):
                continue  # "无钙化", "non-calcified", "without calcification"
            if kind == "attribute" and e.key == "solid" and _COMPONENT_AFTER.match(text, t.end):
                continue  # "a 7 mm solid component", 实性成分: a part of the nodule, not a solid nodule
            if kind == "attribute" and e.key not in f.attributes:
                f.attributes.append(e.key)
            elif kind == "count" and f.count is None:
                f.count = e.key
            elif kind == "temporal" and f.temporality is None:
                f.temporality = e.key
    for f in findings:
        if "part-solid" in f.attributes:
            f.attributes = [a for a in f.attributes if a not in ("solid", "ground-glass", "subsolid")] or ["part-solid"]

    # anatomy -> nearest finding in the clause ("in the right upper lobe" after a finding: that earlier finding);
    # findings without any take the nearest earlier one in the sentence
    for i, anat in anatomy_mentions:
        f = nearest_finding(i)
        if _ANAT_PREP.search(text[max(0, anat.start - 14):anat.start]):
            earlier = [g for g in by_sentence.get(span_index(sents, anat.start), [])
                       if g.end <= anat.start and clause_of(g.start) == clause_of(anat.start)]
            f = earlier[-1] if earlier else f
        if f is not None:
            f.anatomy.append(anat)
    for f in findings:
        if not f.anatomy and not FINDINGS[f.type][3]:
            earlier = [a for _, a in anatomy_mentions if a.start < f.start and span_index(sents, a.start) == f.sentence
                       and not any(a.end <= g.start < f.start for g in by_sentence[f.sentence])]
            if earlier:
                f.anatomy.append(earlier[-1].model_copy())
        if not f.anatomy and FINDINGS[f.type][3]:
            f.anatomy.append(Anatomy(key=FINDINGS[f.type][3], source="implied"))
        if f.laterality is None:
            lats = {a.laterality for a in f.anatomy if a.laterality}
            f.laterality = lats.pop() if len(lats) == 1 else ("bilateral" if lats else None)

    # sizes -> the lesion-type finding the size modifies: the next finding when only modifiers stand between
    # ("5 mm calcified nodule and a 7 mm solid nodule"), else the nearest one before it in the sentence
    # ("nodule ... measuring 8 mm"), else the nearest after. A former size ("previously 4 mm") is not the size.
    # A sentence that names no lesion but opens with an anaphor takes the last lesion of the sentence before
    # ("A mass is present in the left midlung. This measures 3.2 cm."); the size keeps its own text and offsets.
    axis_of: dict[int, str | None] = {}  # finding id -> "long" / "short" when its size was labelled so
    former: dict[int, float] = {}  # finding id -> its former size in mm ("previously 8 mm", 原约8mm)
    current: set[int] = set()  # finding ids whose size is marked "now" (现, currently)
    for sz in sizes:
        sent = span_index(sents, sz.start)

        owners = _size_owners(by_sentence.get(sent, []), sz.kind)
        anaphor = _ANAPHOR.match(text, sents[sent][0]) if not owners and sent > 0 else None
        if anaphor is not None and anaphor.end() <= sz.start:
            owners = _size_owners(by_sentence.get(sent - 1, []), sz.kind)[-1:]
        if not owners:
            continue
        prior = bool(_PRIOR_SIZE.search(text[max(0, sz.start - 30):sz.start]))
        after = [f for f in owners if f.start >= sz.end]
        before = [f for f in owners if f.end <= sz.start]
        nxt = min(after, key=lambda f: f.start) if after else None
        if nxt is not None and nxt.start - sz.end <= 40 and not _SIZE_GAP_BREAK.search(text[sz.end:nxt.start]) \
                and not any(sz.end <= g.start < nxt.start for g in by_sentence.get(nxt.sentence, [])):
            f = nxt
        elif before:
            f = max(before, key=lambda f: f.end)
        else:
            f = min(owners, key=lambda f: abs(f.start - sz.end))
        if prior:  # a former size is not the size; kept to compare ("12 mm, previously 8 mm": grown)
            former[f.id] = sz.mm
            continue
        if f.id in current:  # a size marked "now" stays the size
            continue
        if _NOW_BEFORE.search(text[max(0, sz.start - 20):sz.start]) and f.size is not None and not f.size.bound:
            # "The 6 mm nodule is slightly smaller, now 4 mm", 现约9mm: the size written before is the former one
            former.setdefault(f.id, f.size.mm)
            f.size = None
            current.add(f.id)
        before_size = text[max(0, sz.start - 14):sz.start]
        bound = "<" if _LESS_THAN.search(before_size) else (
            ">" if _MORE_THAN.search(before_size) and not _TAG_BEFORE.search(text[max(0, sz.start - 200):sz.start])
            else None)
        size = Size(text=sz.text, start=sz.start, end=sz.end, axes_mm=sz.axes_mm, mm=sz.mm, bound=bound)
        axis = _axis_label(text, sz.start, sz.end)
        if _SOLID_PART.search(text[max(0, sz.start - 30):sz.start]) or _SOLID_PART_AFTER.match(text, sz.end):
            f.solid_component_mm = sz.mm
        elif axis and f.size is not None and axis_of.get(f.id) not in (None, axis) and len(sz.axes_mm) == 1 \
                and len(f.size.axes_mm) == 1 and not bound and not f.size.bound:
            # "长径约9mm，短径约7mm", "long axis 9 mm, short axis 7 mm": one size, the mean of the two axes
            first, second = (f.size, size) if f.size.start < size.start else (size, f.size)
            long_, short = (f.size, size) if axis == "short" else (size, f.size)
            axes = [long_.axes_mm[0], short.axes_mm[0]]
            f.size = Size(text=text[first.start:second.end], start=first.start, end=second.end, axes_mm=axes,
                          mm=round(sum(axes) / 2, 3))
            axis_of[f.id] = "both"
        elif f.size is None or sz.mm > f.size.mm:
            f.size = size
            axis_of[f.id] = axis

    for f in findings:
        if f.id in former and f.size is not None and not f.size.bound and f.temporality is None:
            f.temporality = _change(f.size.mm, former[f.id])
    _assert(text, toks, findings, sents, claus, sizes)
    for f in findings:  # experiencer: a relative's finding (before it in its sentence) is not the patient's
        s_start, _ = sents[f.sentence]
        if _OTHER_PERSON.search(text[max(s_start, f.start - _WINDOW):f.start]):
            f.experiencer = "other"
    known = None
    for m in _KNOWN_CANCER.finditer(text):
        s_start, _ = sents[span_index(sents, m.start())]
        if _SCREENED.match(text, m.end()):  # "colon cancer screening negative", 既往结肠癌筛查阴性: no cancer
            continue
        if not _OTHER_PERSON.search(text[s_start:m.end()]) and not re.search(
                r"\b(no|without|negative for)\b[^.;]*$|无[^。；]*$", text[s_start:m.start()], re.IGNORECASE):
            known = m.group(0)
            break
    history = history_spans(text, sents, modality_spans)
    for f in findings:
        f.historical = any(s <= f.start < e for s, e in history)
    restatements(text, findings, sents)
    characterisations(text, findings, sents)
    warnings = _warnings(text, [f for f in findings if f.experiencer == "patient" and not f.historical])
    for _, anat in anatomy_mentions:
        if anat.nonexistent and anat.start is not None:
            ids = [f.id for f in findings if any(a.start == anat.start for a in f.anatomy)]
            warnings.append(ReportWarning(kind="nonexistent_site", finding_ids=ids,
                                          message=f"'{anat.text}' names no lobe: {NONEXISTENT_LOBES[nonexistent[anat.start]]}"))
    return Extraction(findings, modality, region, screening_hint, warnings, [a for _, a in anatomy_mentions],
                      modality_spans, known)


_WINDOW = 400
GROWTH_MM = 1.5
"""A change of the mean diameter by more than this many mm between a former and the current size is growth or
shrinkage (Lung-RADS' growth threshold: > 1.5 mm; domain-facts §5, U for v2022); within it the sizes say stable."""


def _change(now_mm: float, former_mm: float) -> str:
    """Temporality from a former and the current size of one lesion ("12 mm, previously 8 mm": increased)."""
    if now_mm - former_mm > GROWTH_MM:
        return "increased"
    if former_mm - now_mm > GROWTH_MM:
        return "decreased"
    return "stable"
_LONG_AXIS = re.compile(r"(long(est)?[- ]?(axis|axial|diameter|dimension)|greatest (diameter|dimension)|长径|最大径|最长径)"
                        r"(\s*(diameter|dimension))?\s*(of|is|measures|measuring|=|:|：|约|为|达)?\s*(about|approximately|约)?\s*$",
                        re.IGNORECASE)
_SHORT_AXIS = re.compile(r"(short(est)?[- ]?(axis|axial|diameter|dimension)|短径|最小径|最短径)"
                         r"(\s*(diameter|dimension))?\s*(of|is|measures|measuring|=|:|：|约|为|达)?\s*(about|approximately|约)?\s*$",
                         re.IGNORECASE)


_AXIS_AFTER = re.compile(r"\s*(in|on|along)?\s*(the\s+)?(?:(long|longest|greatest|maximal|maximum)|(short|shortest))"
                         r"[- ]?(axis|axial|diameter|dimension)\b", re.IGNORECASE)
"""A label after the size: "10 mm in long axis and 6 mm in short axis"."""


def _axis_label(text: str, start: int, end: int | None = None) -> str | None:
    """"long" / "short" when the size at ``text[start:end]`` is labelled as the long or the short axis ("长径约9mm",
    "short axis of 5 mm", "10 mm in long axis"), else None."""
    before = text[max(0, start - 30):start]
    if _LONG_AXIS.search(before):
        return "long"
    if _SHORT_AXIS.search(before):
        return "short"
    m = _AXIS_AFTER.match(text, end) if end is not None else None
    return None if m is None else "long" if m.group(3) else "short"

def _size_owners(findings: list[Finding], kind: str) -> list[Finding]:
    """The findings that may own a size of ``kind`` (an apex distance: only a pneumothorax)."""
    return [f for f in findings if f.type in _LESION_SIZE_OWNERS and (kind != "apex_distance" or f.type == "pneumothorax")]


def _between(items: list, start: int, end: int) -> list:
    """The items (sorted by ``.start``) whose start lies in ``[start, end)`` (binary search on the starts)."""
    lo = bisect.bisect_left(items, start, key=lambda x: x.start)
    return items[lo:bisect.bisect_left(items, end, lo=lo, key=lambda x: x.start)]


def _zh_list_continues(text: str, cue_end: int, f: Finding, findings: list[Finding], c_end: int) -> bool:
    """A Chinese pre-cue's scope runs past a comma only into a bare list of findings ("未见胸腔积液，气胸及实变"):
    from the first comma after the cue to the end of the finding's clause, nothing but findings and connectors."""
    comma = re.search(r"[，,]", text[cue_end:f.start])
    if comma is None:
        return True
    start = cue_end + comma.start()
    rest = list(text[start:c_end])
    for g in findings:
        if start <= g.start and g.end <= c_end:
            rest[g.start - start:g.end - start] = " " * (g.end - g.start)
    return bool(_ZH_LIST_REST.match("".join(rest)))


_COLON_NEG = frozenset({"：无", ":无", "：未见", ":未见"})

_END_ONLY_POST = frozenset({"is likely", "are likely", "is probable", "are probable", "unlikely", "is unlikely",
                            "are unlikely", "very unlikely", "is very unlikely"})
"""Post-cues that govern the finding before them only at the end of its clause ("Pneumonia is likely.", "Pneumonia is
likely in the right lower lobe.", "Pneumonia is unlikely."), not before an interpretation ("The opacity is likely
atelectasis / infectious", "nodule unlikely to be significant")."""
_SITE_TAIL = re.compile(r"\s*(?:(?:in|at|within|on|along|involving)\b[^.;,:!?。；，：]*)?", re.IGNORECASE)


def _ends_clause(text: str, start: int, clause_end: int, findings: list[Finding]) -> bool:
    """Whether only a site phrase ("in the right lower lobe"), and no finding, stands from ``start`` to the clause end."""
    m = _SITE_TAIL.match(text, start, clause_end)
    rest = text[m.end():clause_end] if m else text[start:clause_end]
    return not rest.strip(" \t\n.;,:!?。；，：") and not any(start <= g.start < clause_end for g in findings)


_ZH_ATTRIBUTE = re.compile(r"\s*(明显|确切)?(增大|增多|长大|变化|改变|进展|钙化|强化|缩小|变小|新发)")
"""What "finding：无 ..." may negate instead of the finding: its change or an attribute ("结节：无钙化")."""


def _assert(text: str, toks: list[Token], findings: list[Finding], sents: list[tuple[int, int]],
            claus: list[tuple[int, int]], sizes: list | None = None) -> None:
    """Set each finding's assertion from the nearest ConText cue whose scope covers it.

    Beyond the module docstring's scope rules: a pre-cue's scope ends at a list break (comma, "and", "with", 和, 及)
    that is followed by a size before the finding ("No consolidation, 8 mm nodule": the nodule is stated, not
    negated), and at a comma when the finding's own clause asserts it ("No pneumothorax, effusion is present").
    ConText pseudo-triggers ("not without", "no interval increase") are matched (longest first) and ignored."""
    toks_by_sentence: dict[int, list[Token]] = {}
    for t in toks:
        toks_by_sentence.setdefault(span_index(sents, t.start), []).append(t)
    finds_by_sentence: dict[int, list[Finding]] = {}
    for f in findings:
        finds_by_sentence.setdefault(f.sentence, []).append(f)
    for f in findings:
        best: tuple[float, Token, str] | None = None
        s_start, s_end = sents[f.sentence]
        _, c_end = claus[span_index(claus, f.start)]
        # a cue governs at most _WINDOW characters away (ConText scopes are short; this bounds the work on a
        # 20,000-character one-sentence paste)
        s_start, s_end = max(s_start, f.start - _WINDOW), min(s_end, f.end + _WINDOW)
        sentence_toks = _between(toks_by_sentence.get(f.sentence, []), s_start, s_end)
        terms = [t for t in sentence_toks if any(e.kind == "cue" and e.key == "term" for e in t.entries)]
        findings_here = _between(finds_by_sentence[f.sentence], s_start, s_end)
        sizes_here = [sz for sz in sizes or [] if s_start <= sz.start < s_end]
        for t in sentence_toks:
            cues = [e for e in t.entries if e.kind == "cue" and e.key not in ("term", "pseudo")]
            if not cues or not (s_start <= t.start < s_end):
                continue
            for e in cues:
                pre = e.key.endswith("_pre")
                # "CT胸部：未见结节": the post-cue "：未见" / "：无" (a negated heading, "肺结节：无") took the characters of
                # the pre-cue "未见", so it also governs the findings after it
                if not pre and t.end <= f.start and _lang(e) == "zh" and text[t.start:t.end] in _COLON_NEG:
                    pre = True
                if e.key.startswith("unc") and trails(text, f.end, t.start, t.end) \
                        and not any(f.end <= g.start < t.start for g in findings_here):
                    dist = t.start - f.end  # "Pneumonia, likely.", 肺炎，可能性大。: a trailing hedge (certainty.trails)
                elif pre and t.end <= f.start:
                    between = text[t.end:f.start]
                    if _lang(e) == "zh" and re.search(r"[，,]", between) \
                            and not _zh_list_continues(text, t.end, f, findings_here, c_end):
                        continue
                    if _NEW_SUBJECT.search(between):
                        continue
                    if any(t.end <= sz.start and sz.end <= f.start and _LIST_BREAK.search(text[t.end:sz.start])
                           for sz in sizes_here):
                        continue
                    last_comma = max(between.rfind(","), between.rfind("，"))
                    if last_comma >= 0 and _POSITIVE_AFTER.match(text, f.end) \
                            and not re.search(r"\b(or|nor)\b", between[last_comma:], re.IGNORECASE) \
                            and any(t.end <= g.start and g.end <= t.end + last_comma for g in findings_here):
                        # "No pneumothorax, effusion is present"; not "No X, Y, or effusion is seen", not
                        # "No acute, displaced fractures are demonstrated" (adjectives, no finding before the comma)
                        continue
                    if any(t.end <= x.start and x.end <= f.start for x in terms):
                        continue
                    dist = f.start - t.end
                elif not pre and t.start >= f.end:
                    if " ".join(text[t.start:t.end].lower().split()) in _END_ONLY_POST \
                            and not _ends_clause(text, t.end, c_end, findings_here):
                        continue  # "The opacity is likely atelectasis": the interpretation is uncertain, not the opacity
                    if text[t.start:t.end] in _COLON_NEG and _ZH_ATTRIBUTE.match(text, t.end):
                        continue  # "结节：无增大，直径8mm": the growth is negated, not the nodule
                    if t.start >= c_end and not text[t.start:t.end].lstrip().startswith((":", "：")):
                        continue
                    if any(f.end <= x.start and x.end <= t.start for x in terms):
                        continue
                    if re.search(r"[，,]", text[f.end:t.start]):
                        continue
                    if re.search(r"\b(after|following|since|when|once)\b", text[f.end:t.start], re.IGNORECASE):
                        continue  # "pneumothorax after the chest tube was removed": the tube was removed
                    dist = t.start - f.end
                else:
                    continue
                if best is None or dist < best[0]:
                    best = (dist, t, e.key)
        if best is not None:
            _, t, key = best
            f.assertion = "absent" if key.startswith("neg") else "uncertain"
            f.cue = Cue(text=t.text, start=t.start, end=t.end, category=key)
            f.certainty = None if key.startswith("neg") else certainty_of(text, t.start, t.end)


def _warnings(text: str, findings: list[Finding]) -> list[ReportWarning]:
    out: list[ReportWarning] = []
    for f in findings:
        if f.size is None:
            continue
        mm = f.size.mm
        if mm <= 0 or mm > 300 or (f.type in LUNG_LESIONS and (mm > 100 or mm < 1)):
            out.append(ReportWarning(kind="implausible_size", finding_ids=[f.id],
                                     message=f"{f.type} size '{f.size.text}' = {mm:g} mm is implausible; check the "
                                             "unit (no guideline was applied to this size)"))
        elif f.type == "nodule" and mm > 30:
            out.append(ReportWarning(kind="mass_size", finding_ids=[f.id],
                                     message=f"a 'nodule' of {mm:g} mm is above 30 mm, which the Fleischner Society "
                                             "glossary (Hansell 2008) calls a mass; Fleischner 2017 does not apply"))
    pairs = [(a, b) for a in findings if a.assertion == "present" for b in findings
             if b.assertion == "absent" and b.type == a.type]
    n_conflicts = 0
    for a, b in sorted(pairs, key=lambda p: (min(p[0].id, p[1].id), max(p[0].id, p[1].id))):
        if a.id > b.id:
            a, b = b, a
        if n_conflicts >= 20:  # a pasted or repeated text: enough to send it back for review
            break
        absent = a if a.assertion == "absent" else b
        if absent.cue and _OTHER_WORDS.search(text[min(absent.cue.start, absent.start):absent.start] + " " + absent.text):
            continue
        if a.temporality and b.temporality and a.temporality != b.temporality:
            continue
        if absent.temporality == "new":
            continue
        if a.laterality and b.laterality and a.laterality != b.laterality and "bilateral" not in (a.laterality, b.laterality):
            continue
        keys_a = {x.key for x in a.anatomy if x.source != "implied"}
        keys_b = {x.key for x in b.anatomy if x.source != "implied"}
        if keys_a and keys_b and not (keys_a & keys_b) and a.laterality != b.laterality:
            continue
        n_conflicts += 1
        out.append(ReportWarning(kind="conflict", finding_ids=[a.id, b.id],
                                 message=f"'{a.text}' is stated {a.assertion} and '{b.text}' {b.assertion} for "
                                         "the same site; please check the report"))
    normal_heart = _NORMAL_HEART.search(text)
    for f in findings:
        if normal_heart and f.type == "cardiomegaly" and f.assertion == "present":
            out.append(ReportWarning(kind="conflict", finding_ids=[f.id],
                                     message=f"'{normal_heart.group(0)}' conflicts with '{f.text}'"))
    return out
