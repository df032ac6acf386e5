"""Seeded generator of annotated radiology report snippets (zh + en) written by the project, for the span tagger.

Each item is ``{"text": str, "spans": [[start, end, label], ...], "style": int}`` with labels ``ANAT`` (anatomy)
and ``FIND`` (finding), ``end`` exclusive. Four styles stand for four hospitals' ways of writing:

0. English narrative ("There is an 8 mm solid nodule in the left lower lobe.")
1. English telegraphic ("LLL nodule, 8 mm. No effusion.")
2. Chinese narrative ("右肺下叶见一实性结节，直径约8mm。")
3. Chinese structured ("部位：右肺下叶；所见：结节，大小8毫米。")

Surface forms come from :mod:`.lexicon`; phrasing, sizes, negations and order vary with the seed. No real report
text is used (the evaluation sets in ../shared/data are never read here).
"""

from __future__ import annotations

import random

from .lexicon import ANATOMY, FINDINGS

STYLES = ("en_narrative", "en_telegraphic", "zh_narrative", "zh_structured")
_LESIONS = ("nodule", "mass", "granuloma", "cyst", "calcification", "opacity", "consolidation")
LATER_FORMS = frozenset({
    "ggns", "ggo nodules", "micronodule", "micronodules", "微小结节", "磨玻璃结节", "磨玻璃结节影", "纯磨玻璃结节",
    "磨玻璃密度结节", "磨玻璃小结节", "磨玻璃微结节", "磨玻璃样结节", "ggo", "ggos", "致密影", "结节状致密影", "结节样致密影",
    "enlarged mediastinal lymph node", "enlarged mediastinal lymph nodes", "enlarged hilar lymph node",
    "enlarged hilar lymph nodes"})
LATER_SITES = frozenset({"right_mid_lung", "left_mid_lung", "mid_lung", "fissure", "left_middle_lobe", "right_upper_lung",
                         "left_upper_lung", "right_lower_lung", "left_lower_lung", "upper_lung", "lower_lung"})
LATER_FINDINGS = frozenset({"pericardial_effusion"})
"""Lexicon forms, sites and finding types added after the shipped tagger (bundle 0.1.0) was trained (second fresh-user check, 30
Nov). The generator leaves them out, so that it still draws the snippets the bundle was trained, chosen and tested
on (its manifest figures stay reproducible, ``tests/test_int8.py``); they join the corpus when the tagger is next
retrained (empty the sets then). The rules read them either way."""
BUNDLE_SITE_FORMS: dict[str, tuple[list[str], list[str]]] = {
    "right_upper_lobe": (["right upper lobe", "rul"], ["右肺上叶", "右上叶", "右上肺"]),
    "right_middle_lobe": (["right middle lobe", "rml"], ["右肺中叶", "右中叶", "右中肺"]),
    "right_lower_lobe": (["right lower lobe", "rll"], ["右肺下叶", "右下叶", "右下肺"]),
    "left_upper_lobe": (["left upper lobe", "lul"], ["左肺上叶", "左上叶", "左上肺"]),
    "left_lower_lobe": (["left lower lobe", "lll"], ["左肺下叶", "左下叶", "左下肺"]),
    "upper_lobe": (["upper lobe", "upper lobes", "upper lung", "upper lungs", "upper zone"], ["上叶", "上肺"]),
    "lower_lobe": (["lower lobe", "lower lobes", "lower lung", "lower lungs", "lower zone"], ["下叶", "下肺"]),
}
"""The site forms these keys had when the shipped tagger was trained (before zones were read apart from lobes, 30
Nov): the generator draws a site's surface from them, so that its snippets stay the ones the bundle was trained and
scored on. The tagger labels every site ANAT, lobe or zone alike, so the labels are the same; every form is still in
the lexicon (右上肺, "upper lung" now under the zone keys)."""
_SITE_FORMS = {k: BUNDLE_SITE_FORMS.get(k, (v[0], v[1])) for k, v in ANATOMY.items()}
_FINDING_KEYS = [k for k in FINDINGS if k not in LATER_FINDINGS]
_LUNG_SITES = [k for k, v in ANATOMY.items() if v[3] == "chest" and k not in ("heart", "aorta", "rib", "clavicle")
               and k not in LATER_SITES]


class _Builder:
    def __init__(self) -> None:
        self.text = ""
        self.spans: list[list] = []

    def add(self, piece: str, label: str | None = None) -> None:
        if label and piece:
            self.spans.append([len(self.text), len(self.text) + len(piece), label])
        self.text += piece


def _size(rng: random.Random, zh: bool) -> str:
    mm = rng.choice([3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 22])
    r = rng.random()
    if r < 0.35:
        return f"{mm}{rng.choice([' mm', 'mm'])}" if not zh else f"{mm}{rng.choice(['mm', '毫米', ' mm'])}"
    if r < 0.7:
        return f"{mm / 10:g}{rng.choice([' cm', 'cm'])}" if not zh else f"{mm / 10:g}{rng.choice(['cm', '厘米'])}"
    return f"{mm / 10:g} x {max(mm - 2, 2) / 10:g} cm" if not zh else f"{mm / 10:g}×{max(mm - 2, 2) / 10:g}cm"


def _form(rng: random.Random, table: dict, key: str, zh: bool) -> str:
    forms = [f for f in table[key][1 if zh else 0] if f not in LATER_FORMS]
    return rng.choice(forms)


def _sentence(rng: random.Random, style: int, b: _Builder) -> None:
    zh = style >= 2
    find = rng.choice(_FINDING_KEYS)
    lesion = rng.choice(_LESIONS)
    site = rng.choice(_LUNG_SITES)
    neg = rng.random() < 0.35
    f = _form(rng, FINDINGS, find, zh)
    fl = _form(rng, FINDINGS, lesion, zh)
    a = _form(rng, _SITE_FORMS, site, zh)
    if style == 0:
        if neg:
            b.add(rng.choice(["No ", "No evidence of ", "There is no ", "Negative for "]))
            b.add(f, "FIND")
            if rng.random() < 0.5:
                b.add(rng.choice([" or ", ", ", " and "]))
                b.add(_form(rng, FINDINGS, rng.choice(_FINDING_KEYS), zh), "FIND")
            b.add(". ")
        elif rng.random() < 0.5:
            b.add(rng.choice(["There is a ", "There is an ", "A ", "Redemonstrated "]))
            b.add(_size(rng, zh) + " " + rng.choice(["", "solid ", "calcified ", "ground-glass ", "part-solid "]))
            b.add(fl, "FIND")
            b.add(rng.choice([" in the ", " within the ", " at the "]))
            b.add(a, "ANAT")
            b.add(rng.choice([". ", ", unchanged. ", ", new since prior. "]))
        else:
            b.add(rng.choice(["Small ", "Mild ", "Stable ", "Possible ", ""]))
            b.add(f, "FIND")
            b.add(rng.choice([" in the ", " of the ", " involving the "]))
            b.add(a, "ANAT")
            b.add(rng.choice([". ", " is noted. ", " cannot be excluded. "]))
    elif style == 1:
        if neg:
            b.add(rng.choice(["No ", "Neg for ", "No acute "]))
            b.add(f, "FIND")
            b.add(". ")
        else:
            b.add(a.upper() if len(a) <= 3 else a.capitalize(), "ANAT")
            b.add(" ")
            b.add(fl, "FIND")
            b.add(rng.choice([", ", " - ", ": "]) + _size(rng, zh) + rng.choice([". ", ", stable. ", ", new. "]))
    elif style == 2:
        if neg:
            b.add(a, "ANAT")
            b.add(rng.choice(["未见", "未见明显", "未发现", "无"]))
            b.add(f, "FIND")
            b.add(rng.choice(["。", "征象。", "，"]))
        else:
            b.add(a, "ANAT")
            b.add(rng.choice(["见", "可见", "见一", "见多发", "示", "见一枚"]) + rng.choice(["", "实性", "磨玻璃", "钙化", "部分实性"]))
            b.add(fl, "FIND")
            b.add(rng.choice(["，直径约", "，大小约", "，约", "，最大径"]) + _size(rng, zh))
            b.add(rng.choice(["。", "，较前增大。", "，边界清楚。", "，考虑良性。"]))
    else:
        if neg:
            b.add(f, "FIND")
            b.add(rng.choice(["：无；", "：未见；", "：阴性；"]))
        else:
            b.add(rng.choice(["部位：", "位置：", ""]))
            b.add(a, "ANAT")
            b.add(rng.choice(["；所见：", "，", "："]))
            b.add(fl, "FIND")
            b.add(rng.choice(["，大小", "，"]) + _size(rng, zh) + rng.choice(["；", "。"]))


_FILLERS_EN = (
    "Heart size is normal.", "The cardiomediastinal silhouette is within normal limits.", "PA and lateral views of the chest.",
    "Comparison: none.", "Lungs are clear.", "No acute cardiopulmonary process.", "Bony structures are intact.",
    "Clinical history: cough and fever.", "Technique: portable AP view.", "Findings:", "Impression:",
    "The trachea is midline.", "Pulmonary vascularity is within normal limits.", "Exam limited by patient rotation.",
    "Compared with the prior study of last year.", "Recommend clinical correlation.", "Well-expanded lungs.",
    "Visualized osseous structures are unremarkable.", "Mediastinal contours are normal.", "Indication: chest pain.",
)
_FILLERS_ZH = (
    "心影大小正常。", "纵隔居中。", "双肺纹理清晰。", "检查方法：胸部正侧位片。", "所见：", "印象：", "临床诊断：咳嗽待查。",
    "气管居中。", "骨质结构未见明显异常。", "与前片比较。", "建议结合临床。", "胸廓对称。", "双侧膈面光滑。",
    "扫描范围自胸廓入口至肺底。", "请结合临床随访。", "检查所见：", "双肺门不大。", "肋膈角锐利。",
)


def _filler(rng: random.Random, zh: bool, b: _Builder) -> None:
    """A sentence without findings; anatomy words in it are labelled by the rule lexicon (same scheme)."""
    from .lexicon import lexicon

    text = rng.choice(_FILLERS_ZH if zh else _FILLERS_EN) + ("" if zh else " ")
    base = len(b.text)
    for start, end, entries in lexicon().scan(text):
        kinds = {e.kind for e in entries}
        label = "FIND" if "finding" in kinds else "ANAT" if "anatomy" in kinds else None
        if label:
            b.spans.append([base + start, base + end, label])
    b.text += text


def generate(n: int, seed: int, styles: tuple[int, ...] = (0, 1, 2, 3)) -> list[dict]:
    """``n`` annotated snippets (1-3 sentences each), styles cycled in order, reproducible from ``seed``."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        style = styles[i % len(styles)]
        b = _Builder()
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.4:
                _filler(rng, style >= 2, b)
            _sentence(rng, style, b)
        if rng.random() < 0.3:
            _filler(rng, style >= 2, b)
        out.append({"text": b.text.strip(), "spans": [s for s in b.spans if s[1] <= len(b.text.strip())],
                    "style": style})
    return out
