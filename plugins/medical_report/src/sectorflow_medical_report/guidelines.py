"""Encoded guidelines: Fleischner 2017 (incidental nodules on CT), Lung-RADS v2022 (screening CT), radiograph nodule
-> CT, and ICD-10 codes. Each recommendation names its source and how far the project checked it.

Sources (see ../shared/notes/domain-facts.md sections 4-6 and docs/medical-report.md):

- Fleischner: MacMahon H, Naidich DP, Goo JM, et al. Guidelines for Management of Incidental Pulmonary Nodules
  Detected on CT Images: From the Fleischner Society 2017. Radiology 2017;284(1):228-243. Tables read in copies of
  the primary text (V~). Size = mean of long and short axes rounded to the nearest mm (the footnote as usually
  quoted: U). Not for screening, patients under 35, immunosuppressed patients or known primary cancer.
- Lung-RADS: American College of Radiology, Lung-RADS v2022. Category thresholds as in v1.1 (NCBI Bookshelf
  NBK568579 App. A Table 2, V~); the v2022 changes (stepped management of stable nodules) are U: the ACR text was
  not read. Sizes to 0.1 mm.
- ICD-10: codes as in domain-facts section 6 (mostly U); Chinese names are the project's translation of the WHO
  titles (U) except R91 肺诊断性影像异常 (国家临床版 2.0 wording, U).
"""

from __future__ import annotations

from .schema import Code, Finding, Recommendation

FLEISCHNER = "MacMahon H et al. Fleischner Society 2017 guidelines, Radiology 2017;284(1):228-243"
LUNG_RADS = "American College of Radiology, Lung-RADS v2022 (thresholds as v1.1, NBK568579 App. A Table 2)"
RADIOGRAPH_CT = ("Fleischner Society 2017 applies to nodules detected on CT only (MacMahon 2017); a nodule on a "
                 "radiograph is characterised by CT first (project rule)")

_T = {
    "none": ("No routine follow-up.", "无需常规随访。"),
    "opt12": ("Optional CT at 12 months.", "可选择12个月时复查CT。"),
    "s68_low": ("CT at 6-12 months, then consider CT at 18-24 months.", "6-12个月复查CT，之后考虑18-24个月复查CT。"),
    "s68_high": ("CT at 6-12 months, then CT at 18-24 months.", "6-12个月复查CT，之后18-24个月复查CT。"),
    "s8": ("Consider CT at 3 months, PET/CT, or tissue sampling.", "考虑3个月复查CT、PET/CT或组织取样。"),
    "m68_low": ("CT at 3-6 months, then consider CT at 18-24 months.", "3-6个月复查CT，之后考虑18-24个月复查CT。"),
    "m68_high": ("CT at 3-6 months, then CT at 18-24 months.", "3-6个月复查CT，之后18-24个月复查CT。"),
    "gg6": ("CT at 6-12 months to confirm persistence, then CT every 2 years until 5 years.",
            "6-12个月复查CT确认是否持续存在，之后每2年复查CT至5年。"),
    "ps6": (("CT at 3-6 months to confirm persistence; if unchanged and the solid component stays < 6 mm, annual CT "
             "for 5 years."), "3-6个月复查CT确认是否持续存在；若无变化且实性成分 < 6 mm，每年复查CT至5年。"),
    "ps8": ("Solid component > 8 mm: consider PET/CT, biopsy or resection.", "实性成分 > 8 mm：考虑PET/CT、活检或切除。"),
    "msub_small": ("CT at 3-6 months; if stable, consider CT at 2 and 4 years.", "3-6个月复查CT；若稳定，考虑2年和4年时复查CT。"),
    "msub_big": ("CT at 3-6 months; subsequent management based on the most suspicious nodule.",
                 "3-6个月复查CT；之后依据最可疑的结节处理。"),
    "ps68": (("CT at 3-6 months to confirm persistence; after that the solid component (6-8 mm) decides, which the "
              "encoded table does not cover (solid component < 6 mm: annual CT for 5 years; > 8 mm: PET/CT, biopsy or "
              "resection)."),
             ("3-6个月复查CT确认是否持续存在；之后的处理取决于实性成分（6-8 mm），本系统编码的表格未涵盖此范围（实性成分 < 6 mm："
              "每年复查CT至5年；> 8 mm：PET/CT、活检或切除）。")),
    "calcified": ("Calcified nodule (benign pattern): no follow-up for this nodule.", "钙化结节（良性表现）：该结节无需随访。"),
    "cxr": ("Further evaluation with chest CT is recommended.", "建议行胸部CT进一步检查。"),
}

_LR_MANAGEMENT = {
    "1": ("Continue annual screening with LDCT in 12 months.", "12个月后继续年度低剂量CT筛查。"),
    "2": ("Continue annual screening with LDCT in 12 months.", "12个月后继续年度低剂量CT筛查。"),
    "3": ("LDCT in 6 months.", "6个月后复查低剂量CT。"),
    "4A": ("LDCT in 3 months; PET/CT may be considered if there is a solid component >= 8 mm.",
           "3个月后复查低剂量CT；实性成分 ≥ 8 mm 时可考虑PET/CT。"),
    "4B": ("Diagnostic chest CT with or without contrast, PET/CT and/or tissue sampling.",
           "诊断性胸部CT（平扫或增强）、PET/CT和/或组织取样。"),
}


COMPARED = {  # temporality -> (en, zh): what the report says of the nodule compared with a prior exam
    "stable": ("stable compared with a prior exam", "与既往检查比较稳定"),
    "decreased": ("smaller than on a prior exam", "较既往检查缩小"),
    "prior": ("known from before", "既往已知"),
}
_NEW_NODULE_NOTE = ((" This schedule is for a newly found nodule; the report states this nodule is {state}: the "
                     "comparison and the time since that exam (how long it has been stable) decide which step applies "
                     "and whether follow-up is complete."),
                    "以上为新发现结节的随访方案；报告称该结节{state}：与既往检查的比较及其间隔时间（稳定了多久）决定处于哪一步、随访是否已可结束。")
"""Appended to a Fleischner row of a nodule the report compares with a prior exam. The table gives the schedule
from first detection; the stability rules beyond the rows' own steps (e.g. how long a solid nodule must be stable)
are not in the project's verified notes (domain-facts section 4), so no interval is derived from the comparison."""


def has_new_nodule_note(rec: Recommendation) -> bool:
    """Whether a Fleischner recommendation carries the note of :data:`_NEW_NODULE_NOTE` (a row other than "no
    routine follow-up" for a nodule compared with a prior exam)."""
    return any(note.split("{")[0].strip() in rec.text for note in _NEW_NODULE_NOTE)


def _say(key: str, lang: str) -> str:
    en, zh = _T[key]
    return zh if lang == "zh" else en


def nodule_type(f: Finding) -> str:
    """solid | part-solid | ground-glass | calcified (no attribute: solid, the usual reading; a stated solid
    component: part-solid)."""
    if "calcified" in f.attributes or f.type == "granuloma":
        return "calcified"
    if f.solid_component_mm is not None and f.solid_component_mm > 0:
        return "part-solid"  # "12 mm nodule with a 7 mm solid component": only a part-solid nodule has one
    if "part-solid" in f.attributes or "subsolid" in f.attributes:
        return "part-solid" if "subsolid" not in f.attributes or "ground-glass" not in f.attributes else "ground-glass"
    if "ground-glass" in f.attributes:
        return "ground-glass"
    return "solid"


def dominant_nodule(nodules: list[Finding]) -> Finding | None:
    """The sized, non-calcified nodule with the largest size: the one whose size picks the Fleischner row."""
    non_calc = [f for f in nodules if f.size is not None and nodule_type(f) != "calcified"]
    return max(non_calc, key=lambda f: f.size.mm) if non_calc else None  # type: ignore[union-attr]


def solid_component_uncovered(f: Finding) -> bool:
    """A single part-solid nodule >= 6 mm whose solid component, in whole mm, is 6-8 mm: the verified notes give
    the row's first step (CT at 3-6 months) and what follows for a solid component < 6 mm and > 8 mm only."""
    if f.solid_component_mm is None or f.size is None or nodule_type(f) != "part-solid":
        return False
    return 6 <= int(f.solid_component_mm + 0.5) <= 8 and int(f.size.mm + 0.5) >= 6


def fleischner(nodules: list[Finding], risk: str | None, lang: str) -> list[Recommendation]:
    """Fleischner 2017 for the present, sized nodules of one CT report. Several nodules (or one written as
    multiple) use the multiple-nodule rows with the dominant (largest) nodule's size. ``risk`` None gives both the
    low- and the high-risk recommendation where they differ.

    A dominant nodule the report compares with a prior exam (temporality stable, decreased or prior) keeps the row
    of its size, with a note that the row is the schedule for a newly found nodule and the time since the
    comparison decides the step (:data:`_NEW_NODULE_NOTE`). A single part-solid nodule's solid component of 6-8 mm
    (not covered by the verified rows) gives the row's first step only (:func:`solid_component_uncovered`)."""
    sized = [f for f in nodules if f.size is not None]
    if not sized:
        return []
    non_calc = [f for f in sized if nodule_type(f) != "calcified"]
    ids = [f.id for f in sized]
    if not non_calc:
        return [_rec("Fleischner 2017", "calcified", _say("calcified", lang), ids, "unspecified", FLEISCHNER, "V~")]
    dominant = dominant_nodule(non_calc)
    if dominant is None or dominant.size is None:
        return []
    mm = int(dominant.size.mm + 0.5)  # type: ignore[union-attr]
    if dominant.size.bound:  # type: ignore[union-attr]  # "<6 mm" -> 5 mm bucket, ">8 mm" -> 9 mm bucket
        mm = mm - 1 if dominant.size.bound == "<" else mm + 1  # type: ignore[union-attr]
    # count every present non-calcified nodule, sized or not: a second, unsized nodule still makes it "multiple"
    all_non_calc = [f for f in nodules if nodule_type(f) != "calcified"]
    multiple = len(all_non_calc) > 1 or any(f.count == "multiple" for f in all_non_calc)
    kind = nodule_type(dominant)
    ids = [f.id for f in non_calc]
    n = "multiple" if multiple else "single"
    bucket = "<6 mm" if mm < 6 else ("6-8 mm" if mm <= 8 else ">8 mm")
    cat = f"{kind} {n} {bucket}" if kind == "solid" else f"{kind} {n} {'<6 mm' if mm < 6 else '>=6 mm'}"
    src = FLEISCHNER
    if kind == "solid":
        if mm < 6:
            table = {"low": "none", "high": "opt12"}
        elif mm <= 8:
            table = {"low": "m68_low", "high": "m68_high"} if multiple else {"low": "s68_low", "high": "s68_high"}
        else:
            table = {"low": "m68_low", "high": "m68_high"} if multiple else {"low": "s8", "high": "s8"}
    elif multiple:
        table = {"low": "msub_small" if mm < 6 else "msub_big", "high": "msub_small" if mm < 6 else "msub_big"}
    elif kind == "ground-glass":
        table = {"low": "none" if mm < 6 else "gg6", "high": "none" if mm < 6 else "gg6"}
    else:  # single part-solid
        key = "none" if mm < 6 else "ps6"
        if dominant.solid_component_mm is not None and int(dominant.solid_component_mm + 0.5) > 8:
            key = "ps8"
        elif solid_component_uncovered(dominant):
            key = "ps68"
        table = {"low": key, "high": key}
    risks = [risk] if risk else (["low", "high"] if table["low"] != table["high"] else [None])
    out = []
    state = COMPARED.get(dominant.temporality or "")
    for r in risks:
        text = _say(table[r or "low"], lang)
        if state and table[r or "low"] != "none":
            text += _NEW_NODULE_NOTE[lang == "zh"].format(state=state[lang == "zh"])
        out.append(_rec("Fleischner 2017", cat, text, ids, r or "unspecified", src, "V~"))
    return out


def lung_rads(nodules: list[Finding], lang: str) -> list[Recommendation]:
    """Lung-RADS category of a screening CT: the highest category over its present nodules (category 1 when no
    nodule is present). Baseline thresholds unless the nodule is new or increased (growing); stable -> category 2
    (v1.1 rule; v2022 steps stable 4A nodules down through category 3: U, not encoded)."""
    cats: list[tuple[str, list[int], str]] = []
    for f in nodules:
        if f.size is None:
            continue
        mm = round(f.size.mm, 1)
        if f.size.bound:
            mm = round(mm - 0.1 if f.size.bound == "<" else mm + 0.1, 1)
        kind = nodule_type(f)
        t = f.temporality
        if kind == "calcified":
            cat = "1"
        elif t == "stable":
            cat = "2"
        elif kind == "ground-glass":
            cat = "2" if mm < 30 else "3"
        elif kind == "part-solid":
            solid = f.solid_component_mm
            if mm < 6:
                cat = "3" if t == "new" else "2"
            elif t in ("new", "increased"):  # new or growing: solid part >= 4 mm -> 4B, else (or unknown) 4A
                cat = "4B" if solid is not None and solid >= 4 else "4A"
            elif solid is None or solid < 6:
                cat = "3"
            else:
                cat = "4A" if solid < 8 else "4B"
        elif "perifissural" in f.attributes and mm < 10 and t != "increased":
            cat = "2"  # v1.1 table (V~): solid perifissural < 10 mm is category 2
        elif t == "new":
            cat = "2" if mm < 4 else "3" if mm < 6 else "4A" if mm < 8 else "4B"
        elif t == "increased":
            cat = "4A" if mm < 8 else "4B"
        else:
            cat = "2" if mm < 6 else "3" if mm < 8 else "4A" if mm < 15 else "4B"
        peri = " perifissural" if "perifissural" in f.attributes and kind == "solid" else ""
        cats.append((cat, [f.id], f"{kind}{peri} {mm:g} mm" + (f" {t}" if t else "")))
    order = ["1", "2", "3", "4A", "4B"]
    if not cats:
        cat, ids, why = "1", [], "no nodule"
    else:
        cat, ids, why = max(cats, key=lambda c: order.index(c[0]))
    en, zh = _LR_MANAGEMENT[cat]
    return [_rec("Lung-RADS v2022", f"{cat} ({why})", zh if lang == "zh" else en, ids, "unspecified", LUNG_RADS,
                 "V~ (v1.1 thresholds); U (v2022 changes)")]


def radiograph_nodule(nodules: list[Finding], lang: str) -> list[Recommendation]:
    """A nodule, lung mass or nodular opacity on a radiograph: CT, not a Fleischner interval. Category
    "radiograph nodule", or "radiograph nodular opacity" when every finding is an opacity with the attribute
    nodular (not a definite nodule)."""
    ids = [f.id for f in nodules]
    only_opacity = all(f.type == "opacity" for f in nodules)
    return [_rec("CT for radiograph nodule", "radiograph nodular opacity" if only_opacity else "radiograph nodule",
                 _say("cxr", lang), ids, "unspecified", RADIOGRAPH_CT, "V~ (scope statement); project rule")
            ] if ids else []


def _rec(guideline: str, category: str, text: str, ids: list[int], risk: str, source: str,
         verification: str) -> Recommendation:
    return Recommendation(guideline=guideline, category=category, text=text, finding_ids=ids, risk=risk,  # type: ignore[arg-type]
                          source=source, verification=verification)


# ---- ICD-10 --------------------------------------------------------------------------------------------------
# finding -> (ICD-10-CM code, English name, WHO ICD-10 code, Chinese name, verification mark from domain-facts)
ICD10: dict[str, tuple[str, str, str, str, str]] = {
    "nodule_single": ("R91.1", "Solitary pulmonary nodule", "R91", "肺诊断性影像异常", "U"),
    "nodule_multiple": ("R91.8", "Other nonspecific abnormal finding of lung field", "R91", "肺诊断性影像异常", "U"),
    "mass": ("R91.8", "Other nonspecific abnormal finding of lung field", "R91", "肺诊断性影像异常", "U"),
    "effusion": ("J90", "Pleural effusion, not elsewhere classified", "J90", "胸腔积液，不可归类在他处者", "V~ (CM); U (zh name)"),
    "pneumothorax": ("J93.9", "Pneumothorax, unspecified", "J93.9", "气胸，未特指", "U"),
    "cardiomegaly": ("I51.7", "Cardiomegaly", "I51.7", "心脏扩大", "U"),
    "atelectasis": ("J98.11", "Atelectasis", "J98.1", "肺萎陷", "U"),
    "pneumonia": ("J18.9", "Pneumonia, unspecified organism", "J18.9", "肺炎，未特指", "V~ (CM); U (zh name)"),
    "emphysema": ("J43.9", "Emphysema, unspecified", "J43.9", "肺气肿，未特指", "U"),
}


def codes(findings: list[Finding], lang: str, lung_lesion: bool = True) -> list[Code]:
    """ICD-10 codes of the present findings: ICD-10-CM for English, WHO ICD-10 (with Chinese names) for Chinese.
    A lung nodule is R91.1 when single, R91.8 when several; a mass outside the lung gets no code."""
    present = [f for f in findings if f.assertion == "present"]
    keyed: dict[str, list[int]] = {}
    nodules = [f for f in present if f.type == "nodule"]
    if nodules:
        multiple = len(nodules) > 1 or any(f.count == "multiple" for f in nodules)
        keyed["nodule_multiple" if multiple else "nodule_single"] = [f.id for f in nodules]
    for f in present:
        if f.type == "mass" and lung_lesion and any(a.key.endswith(("lung", "lobe")) or a.key == "lingula"
                                                    for a in f.anatomy):
            keyed.setdefault("mass", []).append(f.id)
        elif f.type in ICD10:
            keyed.setdefault(f.type, []).append(f.id)
    out: list[Code] = []
    seen = set()
    for key, ids in keyed.items():
        cm, en_name, who, zh_name, mark = ICD10[key]
        code, system, name = (who, "ICD-10", zh_name) if lang == "zh" else (cm, "ICD-10-CM", en_name)
        if code in seen:
            continue
        seen.add(code)
        out.append(Code(code=code, system=system, name=name, finding_ids=ids, verification=mark))  # type: ignore[arg-type]
    return out
