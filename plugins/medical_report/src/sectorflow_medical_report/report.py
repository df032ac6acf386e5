"""Assemble the structured report: exam, guideline choice, codes, impression and rendered text (zh or en)."""

from __future__ import annotations

import re

from .certainty import hedged
from .extract import Extraction
from .guidelines import (
    COMPARED,
    codes,
    dominant_nodule,
    fleischner,
    has_new_nodule_note,
    lung_rads,
    nodule_type,
    radiograph_nodule,
    solid_component_uncovered,
)
from .schema import Exam, Finding, MedicalReport, ModelSpan, ReportInput, ReportWarning
from .text import detect_language, sentences

NAMES = {
    "nodule": ("nodule", "结节"), "mass": ("mass", "肿块"), "effusion": ("pleural effusion", "胸腔积液"),
    "pericardial_effusion": ("pericardial effusion", "心包积液"),
    "pneumothorax": ("pneumothorax", "气胸"), "consolidation": ("consolidation", "实变"), "opacity": ("opacity", "阴影"),
    "cardiomegaly": ("cardiomegaly", "心影增大"), "atelectasis": ("atelectasis", "肺不张"), "edema": ("edema", "水肿"),
    "fracture": ("fracture", "骨折"), "pneumonia": ("pneumonia", "肺炎"), "emphysema": ("emphysema", "肺气肿"),
    "granuloma": ("granuloma", "肉芽肿"), "calcification": ("calcification", "钙化灶"), "fibrosis": ("fibrosis", "纤维灶"),
    "lymphadenopathy": ("lymphadenopathy", "淋巴结肿大"), "pleural_thickening": ("pleural thickening", "胸膜增厚"),
    "cyst": ("cyst", "囊肿"), "tuberculosis": ("tuberculosis", "结核"), "bronchiectasis": ("bronchiectasis", "支气管扩张"),
    "hernia": ("hernia", "疝"), "copd": ("COPD", "慢性阻塞性肺疾病"),
    "hyperinflation": ("hyperinflation", "肺过度充气"), "congestion": ("vascular congestion", "肺淤血"),
}
SITES = {
    "right_upper_lobe": ("right upper lobe", "右肺上叶"), "right_middle_lobe": ("right middle lobe", "右肺中叶"),
    "right_lower_lobe": ("right lower lobe", "右肺下叶"), "left_upper_lobe": ("left upper lobe", "左肺上叶"),
    "left_lower_lobe": ("left lower lobe", "左肺下叶"), "lingula": ("lingula", "左肺舌段"),
    "right_lung": ("right lung", "右肺"), "left_lung": ("left lung", "左肺"), "both_lungs": ("both lungs", "双肺"),
    "lung": ("lung", "肺"), "pleura": ("pleura", "胸膜腔"), "heart": ("heart", "心脏"), "rib": ("rib", "肋骨"),
    "mediastinum": ("mediastinum", "纵隔"), "hilum": ("hilum", "肺门"), "lung_base": ("lung base", "肺底"),
    "lung_apex": ("lung apex", "肺尖"), "spine": ("spine", "脊柱"), "bone": ("bone", "骨"),
    "upper_lobe": ("upper lobe", "上叶"), "middle_lobe": ("middle lobe", "中叶"), "lower_lobe": ("lower lobe", "下叶"),
    "costophrenic_angle": ("costophrenic angle", "肋膈角"), "aorta": ("aorta", "主动脉"), "trachea": ("airway", "气管"),
    "diaphragm": ("diaphragm", "膈肌"), "clavicle": ("clavicle", "锁骨"), "lymph_node": ("lymph node", "淋巴结"),
    "liver": ("liver", "肝脏"), "kidney": ("kidney", "肾脏"), "thyroid": ("thyroid", "甲状腺"), "breast": ("breast", "乳腺"),
    "brain": ("brain", "脑"), "right_mid_lung": ("right midlung", "右中肺野"), "left_mid_lung": ("left midlung", "左中肺野"),
    "mid_lung": ("midlung", "中肺野"), "fissure": ("fissure", "叶间裂"),
    # radiographic zones, rendered as zones (右下肺野), never as lobes
    "right_upper_lung": ("right upper lung zone", "右上肺野"), "left_upper_lung": ("left upper lung zone", "左上肺野"),
    "right_lower_lung": ("right lower lung zone", "右下肺野"), "left_lower_lung": ("left lower lung zone", "左下肺野"),
    "upper_lung": ("upper lung zone", "上肺野"), "lower_lung": ("lower lung zone", "下肺野"),
}
LAT = {"right": ("right", "右侧"), "left": ("left", "左侧"), "bilateral": ("bilateral", "双侧")}
ATTR = {"solid": ("solid", "实性"), "part-solid": ("part-solid", "部分实性"), "ground-glass": ("ground-glass", "磨玻璃"),
        "calcified": ("calcified", "钙化"), "subsolid": ("subsolid", "亚实性"), "spiculated": ("spiculated", "毛刺"),
        "nodular": ("nodular", "结节状"), "reticulonodular": ("reticulonodular", "网格结节状"),
        "fibronodular": ("fibronodular", "纤维结节状"),
        "perifissural": ("perifissural", "叶间裂旁")}
TEMP = {"new": ("new", "新发"), "stable": ("stable", "稳定"), "increased": ("increased", "增大"),
        "decreased": ("decreased", "缩小"), "prior": ("prior", "陈旧")}
MODALITY_ZH = {"radiograph": "X线片", "CT": "CT", "MR": "磁共振", "ultrasound": "超声", "PET/CT": "PET/CT",
               "mammography": "乳腺X线摄影"}
REGION_ZH = {"chest": "胸部", "abdomen": "腹部", "head": "头颅", "neck": "颈部", "pelvis": "盆腔", "spine": "脊柱",
             "breast": "乳腺", "musculoskeletal": "骨骼"}
_KIND_ZH = {"solid": "实性", "part-solid": "部分实性", "ground-glass": "磨玻璃", "calcified": "钙化"}
_CATEGORY_ZH = {**_KIND_ZH, **{k: v for k, (_, v) in TEMP.items()}, "single": "单发", "multiple": "多发",
                "no nodule": "无结节", "calcified": "钙化结节", "radiograph nodule": "胸片结节",
                "radiograph nodular opacity": "胸片结节状影", "perifissural": "叶间裂旁"}


def category_label(category: str, lang: str) -> str:
    """A recommendation's ``category`` as the rendered report shows it: as is in English; in Chinese word by word
    ("solid single 6-8 mm" -> "单发实性结节 6-8 mm", "4A (solid 7 mm new)" -> "4A类（实性 7 mm 新发）"); sizes and
    Lung-RADS category numbers stay as written. The ``category`` field itself stays English (a stable key)."""
    if lang != "zh":
        return category
    if category in _CATEGORY_ZH:
        return _CATEGORY_ZH[category]
    m = re.fullmatch(r"(solid|part-solid|ground-glass) (single|multiple) (.+)", category)  # Fleischner
    if m:
        return f"{_CATEGORY_ZH[m.group(2)]}{_KIND_ZH[m.group(1)]}结节 {m.group(3).replace('>=', '≥')}"
    m = re.fullmatch(r"(\w+) \((.*)\)", category)  # Lung-RADS: "3 (solid 7 mm)"
    if m:
        return f"{m.group(1)}类（{category_label(m.group(2), lang)}）"
    words = re.findall(r"[<>=]*[\d.]+(?:-[\d.]+)? mm|\S+", category)
    return " ".join(_KIND_ZH.get(w) or _CATEGORY_ZH.get(w, w) for w in words)


GUIDELINE_ZH = {"Fleischner 2017": "Fleischner学会2017指南", "Lung-RADS v2022": "Lung-RADS v2022",
                "CT for radiograph nodule": "胸片发现结节"}
_BENIGN_EXPLANATION = re.compile(
    r"\b(represents?|representing|consistent with|compatible with|due to|secondary to|related to|reflects?|"
    r"reflecting|characteristic of|typical of)\s+(an?\s+|the\s+)?([a-z-]+\s+){0,3}?(calcified granulomas?|granulomas?|"
    r"granulomatous disease|(healing|healed|old)\s+(rib\s+)?fractures?|(rib\s+)?fractures?|nipple( shadows?)?|nipples|"
    r"overlapping|superimposed|overlying|vessels?|"
    r"vascular|artifacts?|telemetry|bone island|costochondral)\b", re.IGNORECASE)
_HEDGED = re.compile(r"\b(may|might|could|possibly|probably|likely|perhaps|questionabl[ey]|or|versus)\s+$", re.IGNORECASE)
"""A nodule or nodular opacity the report itself explains, in its own sentence and without a hedge, as a benign
mimic or benign lesion ("Nodular density ... represents a healing rib fracture", "Nodular densities consistent
with chronic granulomatous disease"): no CT step after a radiograph (the radiologist has characterised it; calcified
granulomas need no follow-up in Fleischner 2017). A hedged explanation ("may represent overlying telemetry") keeps
the CT step."""
GGO_NOTE = ("a focal ground-glass opacity is not a definite nodule (Fleischner Society glossary, Hansell 2008): no "
            "Fleischner or Lung-RADS category; if the radiologist calls it a ground-glass nodule, give it as a nodule "
            "(GGN, 磨玻璃结节)")
NODULAR_NOTE = ("a nodular opacity is not a definite nodule (Fleischner Society glossary, Hansell 2008): no Fleischner "
                "category; if the radiologist calls it a nodule, give it as a nodule")
ANATOMY_REGION = {"lung": "chest", "pleura": "chest", "heart": "chest", "bone": "musculoskeletal",
                  "lymph_node": "chest"}


def _pick(pair: tuple[str, str], lang: str) -> str:
    return pair[1] if lang == "zh" else pair[0]


_COUNTABLE = {"nodule", "mass", "effusion", "pericardial_effusion", "opacity", "fracture", "granuloma", "calcification",
              "cyst", "hernia"}
"""Finding names that take a plural "s" ("multiple nodules"); not "lymphadenopathy", "emphysema", ..."""
_GENERIC = {"lung", "both_lungs", "upper_lobe", "middle_lobe", "lower_lobe", "lung_base", "lung_apex", "pleura",
            "upper_lung", "lower_lung"}


def describe(f: Finding, lang: str) -> str:
    """One finding as a short phrase: '8 mm solid nodule, right lower lobe (new)' / '右肺下叶实性结节，约8 mm（新发）'."""
    name = _pick(NAMES.get(f.type, (f.type, f.type)), lang)
    attrs = [_pick(ATTR[a], lang) for a in f.attributes if a in ATTR]
    # the most specific site first ("Lung cancer screening CT: 4 mm nodule in the RUL": RUL, not "lung")
    sites = sorted((a for a in f.anatomy if a.source != "implied"), key=lambda a: a.key in _GENERIC)
    site = _pick(SITES.get(sites[0].key, (sites[0].key.replace("_", " "), sites[0].text or sites[0].key)), lang) if sites else ""
    if sites and sites[0].nonexistent:  # "left middle lobe": the side's lung, and what was written
        site += f"（原文“{sites[0].text}”，无此肺叶）" if lang == "zh" else f" (written '{sites[0].text}': no such lobe)"
    if f.laterality and not any(w in site for w in ("right", "left", "both", "右", "左", "双")):
        site = (_pick(LAT[f.laterality], lang) + ("" if lang == "zh" else " ") + site).strip()
    size = f"{f.size.mm:g} mm" if f.size else ""
    many = f.count == "multiple"
    temp = f" ({_pick(TEMP[f.temporality], lang)})" if f.temporality else ""
    if lang == "zh":
        phrase = f"{site}{'多发' if many else ''}{''.join(attrs)}{name}"
        if size:
            phrase += f"，约{size}"
        return phrase + (f"（{_pick(TEMP[f.temporality], lang)}）" if f.temporality else "")
    head = " ".join(x for x in [size, "multiple" if many else "", *attrs, name + ("s" if many and f.type in _COUNTABLE and not name.endswith("s") else "")] if x)
    return head + (f", {site}" if site else "") + temp


def build_exam(item: ReportInput, ex: Extraction) -> Exam:
    modality, msrc = (item.modality, "caller") if item.modality else ((ex.modality, "text") if ex.modality else (None, "none"))
    if item.body_region:
        region, rsrc = item.body_region, "caller"
    elif ex.region:
        region, rsrc = ex.region, "text"
    else:
        keys = [a.key for f in ex.findings for a in f.anatomy] + [a.key for a in ex.anatomy_mentions]
        regions = [ANATOMY_REGION.get(k, "chest" if ("lobe" in k or "lung" in k) else None) for k in keys]
        region = next((r for r in regions if r), None)
        rsrc = "anatomy" if region else "none"
    screening = item.screening if item.screening is not None else (ex.screening_hint and modality == "CT")
    return Exam(modality=modality, modality_source=msrc, body_region=region, body_region_source=rsrc,  # type: ignore[arg-type]
                screening=bool(screening))


def build_report(item: ReportInput, ex: Extraction, model_spans: list[ModelSpan] | None = None) -> MedicalReport:
    """The full report of one input from the rule extraction (and the tagger's advisory spans)."""
    lang = item.language if item.language != "auto" else detect_language(item.text)
    exam = build_exam(item, ex)
    warnings = list(ex.warnings)
    bad_size = {i for w in warnings if w.kind in ("implausible_size", "mass_size") for i in w.finding_ids}
    # a restatement (``same_as``: an impression repeating the findings) is not counted, coded or listed again
    # nor is a finding of the history or indication ("Indication: nodule on chest x-ray.": the reason for the exam)
    own = [f for f in ex.findings if f.experiencer == "patient" and f.same_as is None and not f.historical]
    lung_nodules = [f for f in own if f.type in ("nodule", "granuloma") and f.assertion == "present"
                    and f.id not in bad_size and _in_lung(f, exam)]
    recs = []
    chest = exam.body_region in (None, "chest")
    # every present lung nodule or mass of the patient, whatever its size warning: a radiograph sends them all to CT,
    # and a screening CT may not be called category 1 while one of them is left out
    lesions = [f for f in own if f.assertion == "present" and (
        (f.type in ("nodule", "granuloma") and _in_lung(f, exam))
        or (f.type == "mass" and any(a.key.endswith(("lung", "lobe")) or a.key == "lingula" for a in f.anatomy)))]
    implausible = {i for w in warnings if w.kind == "implausible_size" for i in w.finding_ids}
    # "nodular opacity" (Hansell 2008: the radiologist's hedge, not a definite nodule): CT after a radiograph, no
    # Fleischner row and no Lung-RADS category 1 on CT
    nodular = [f for f in own if f.assertion == "present" and chest and f.type == "opacity"
               and "nodular" in f.attributes and "calcified" not in f.attributes]
    # a focal ground-glass opacity ("8 mm GGO", 右肺上叶磨玻璃影，约8mm; one with a size, or a single one) is handled
    # the same way: it may be a ground-glass nodule, but the radiologist has not called it one
    ggo = [f for f in own if f.assertion == "present" and chest and f.type == "opacity" and f not in nodular
           and "ground-glass" in f.attributes and (f.size is not None or f.count != "multiple")]
    if nodular and exam.modality == "CT":
        warnings.append(ReportWarning(kind="guideline_not_applied", finding_ids=[f.id for f in nodular],
                                      message=NODULAR_NOTE))
    if ggo and exam.modality == "CT":
        warnings.append(ReportWarning(kind="guideline_not_applied", finding_ids=[f.id for f in ggo],
                                      message=GGO_NOTE))
    if exam.modality != "radiograph":  # on a radiograph the CT step is for nodules and nodular opacities only
        nodular += ggo
    if lung_nodules or exam.screening or lesions or nodular:
        if exam.modality == "radiograph":
            to_ct = [f for f in lesions if f.type != "granuloma"] + nodular
            explained = {f.id: _benign_explanation(item.text, f) for f in to_ct if f.type != "mass"}
            for f in to_ct:
                if explained.get(f.id):
                    warnings.append(ReportWarning(
                        kind="guideline_not_applied", finding_ids=[f.id],
                        message=f"no CT step for '{f.text}': the report explains it as benign "
                                f"('{explained[f.id]}')"))
            recs = radiograph_nodule([f for f in to_ct if not explained.get(f.id)], lang)
        elif exam.modality == "CT" and exam.screening:
            unsure = [f.id for f in lesions if f.size is None or f.id in implausible]
            unsure += [f.id for f in own if f.assertion == "present" and f.type == "mass" and f not in lesions]
            unsure += [f.id for f in nodular]
            if unsure:
                warnings.append(ReportWarning(
                    kind="guideline_not_applied", finding_ids=unsure,
                    message="Lung-RADS needs a plausible size for every nodule and a lung site for every mass: no "
                            "category given (it would be a guess)"))
            else:
                recs = lung_rads(lesions, lang)
        elif exam.modality == "CT":
            meta = _metastatic_reading(item.text, lung_nodules)
            if masses := [f.id for f in lesions if f.type == "mass"]:
                # a lung mass had got nothing at all on a diagnostic CT: no row, and no word that none was applied
                warnings.append(ReportWarning(
                    kind="guideline_not_applied", finding_ids=masses,
                    message="a lung mass: Fleischner 2017 is for nodules (up to 30 mm, Hansell 2008) and has no row "
                            "for a mass; no guideline applied (its work-up is a clinician's decision)"))
            excluded = [why for why, on in (("age under 35", item.age is not None and item.age < 35),
                                            ("known primary cancer", item.known_cancer),
                                            (f"known cancer stated in the text ('{ex.known_cancer}')",
                                             bool(ex.known_cancer) and not item.known_cancer),
                                            ("immunocompromised patient", item.immunocompromised),
                                            (f"the report reads the nodules as metastases ('{meta}')",
                                             bool(meta))) if on]
            if excluded:
                warnings.append(ReportWarning(kind="guideline_not_applied", finding_ids=[f.id for f in lung_nodules],
                                              message="Fleischner 2017 does not apply: " + ", ".join(excluded)))
            elif grown := [f.id for f in lung_nodules if f.temporality == "increased" and nodule_type(f) != "calcified"]:
                # Fleischner 2017's table is for a nodule found incidentally, managed from its first detection; it
                # has no row for one that has grown (a 4 mm nodule had been told "No routine follow-up.")
                warnings.append(ReportWarning(
                    kind="guideline_not_applied", finding_ids=grown,
                    message="Fleischner 2017 not applied: the report states that this nodule has grown; the table's "
                            "intervals are for a newly found nodule, and growth calls for a radiologist's decision"))
            else:
                unsized = [f.id for f in lung_nodules if f.size is None]
                # calcified ones and a plural heading ("Multiple nodules: 7 mm ... and 4 mm ...") do not block
                calcified_only = all(f.type == "granuloma" or "calcified" in f.attributes or f.count == "multiple"
                                     for f in lung_nodules if f.size is None)
                # an unsized non-calcified nodule may be the largest one: no Fleischner row rather than a guessed one
                recs = fleischner(lung_nodules, item.patient_risk, lang) if not unsized or calcified_only else []
                if recs:
                    warnings += _fleischner_caveats(lung_nodules, recs)
                if unsized:
                    warnings.append(ReportWarning(kind="missing_size", finding_ids=unsized,
                                                  message="no size written for this nodule: no Fleischner category"
                                                  + ("" if calcified_only or len(lung_nodules) == len(unsized) else
                                                     " for any nodule of this report (the unsized one may be the "
                                                     "largest)")))
        elif lung_nodules:
            warnings.append(ReportWarning(kind="guideline_not_applied", finding_ids=[f.id for f in lung_nodules],
                                          message="exam modality unknown (give modality='CT' or 'radiograph'): no "
                                                  "nodule guideline applied"))
    icd = codes([f for f in own if f.type != "nodule" or _in_lung(f, exam)], lang)
    unknown = [s for s in model_spans or [] if s.label == "FIND" and s.finding_id is None and len(s.text.strip()) >= 2]
    if unknown:
        listed = ", ".join(f"'{s.text}' ({s.start}-{s.end})" for s in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        warnings.append(ReportWarning(kind="unrecognised_span", message=f"the tagger marks {listed} as findings the "
                                      "rules do not know; not reported (review the text or the lexicon)"))
    impression = render_impression(own, recs, lang)
    past = [f for f in ex.findings if f.historical and f.experiencer == "patient" and f.assertion != "absent"]
    if past:
        names = dict.fromkeys(hedged(_pick(NAMES[f.type], lang), f.assertion, f.certainty, lang) for f in past)
        impression += ("\n病史/检查指征（非本次检查所见）：" + "、".join(names) if lang == "zh"
                       else "\nHistory or indication (not a finding of this exam): " + ", ".join(names))
    # a relative's finding the text negates ("no family history of lung cancer") is not listed as one they had
    others = [f for f in ex.findings if f.experiencer == "other" and f.assertion != "absent"]
    if others:
        names = [hedged(_pick(NAMES[f.type], lang), f.assertion, f.certainty, lang) for f in others]
        impression += ("\n家族史（非患者本人）：" + "、".join(dict.fromkeys(names)) if lang == "zh"
                       else "\nFamily history (not the patient): " + ", ".join(dict.fromkeys(names)))
    report_text = render_report(exam, [f for f in ex.findings if f.same_as is None], impression, recs, lang)
    return MedicalReport(language=lang, exam=exam, findings=ex.findings, recommendations=recs, codes=icd,  # type: ignore[arg-type]
                         impression=impression, report_text=report_text, warnings=warnings,
                         model_spans=model_spans or [])


def _fleischner_caveats(nodules: list[Finding], recs: list) -> list[ReportWarning]:
    """``guideline_incomplete`` warnings for a Fleischner row whose dominant nodule the report compares with a prior
    exam, or whose part-solid nodule has a 6-8 mm solid component (see :func:`~.guidelines.fleischner`)."""
    dominant = dominant_nodule(nodules)
    out = []
    if dominant is None:
        return out
    if dominant.temporality in COMPARED and any(has_new_nodule_note(r) for r in recs):
        out.append(ReportWarning(
            kind="guideline_incomplete", finding_ids=[dominant.id],
            message=f"the report states this nodule is {COMPARED[dominant.temporality][0]}: the Fleischner row is the "
                    "schedule for a newly found nodule; the comparison and the time since that exam decide the step "
                    "(stability rules beyond the row's own steps are not encoded)"))
    if solid_component_uncovered(dominant):
        out.append(ReportWarning(
            kind="guideline_incomplete", finding_ids=[dominant.id],
            message=f"part-solid nodule with a {dominant.solid_component_mm:g} mm solid component: the solid "
                    "component decides the management after the first CT; the encoded Fleischner rows cover a solid "
                    "component < 6 mm and > 8 mm only"))
    return out


LUNG_SITES = {"lung", "right_lung", "left_lung", "both_lungs", "right_upper_lobe", "right_middle_lobe",
              "right_lower_lobe", "left_upper_lobe", "left_lower_lobe", "lingula", "upper_lobe", "middle_lobe",
              "lower_lobe", "lung_base", "lung_apex", "pleura", "costophrenic_angle", "mid_lung", "right_mid_lung",
              "left_mid_lung", "fissure", "right_upper_lung", "left_upper_lung", "right_lower_lung", "left_lower_lung",
              "upper_lung", "lower_lung"}
"""Sites that make a nodule a lung nodule (a juxtapleural nodule is one too)."""


def _in_lung(f: Finding, exam: Exam) -> bool:
    """Whether nodule ``f`` is a lung nodule (Fleischner, Lung-RADS, R91): a lung site is written for it (also on an
    abdominal CT's lung bases), or no site is written and the exam is of the chest (or of no stated region). A site
    written outside the lung ("nodule in the liver", 甲状腺左叶结节, "right breast nodule") makes it no lung nodule
    on CT and other cross-sectional exams; on a radiograph such a site is where the nodule projects, so it is
    still a lung-field nodule that goes to CT."""
    sites = [a.key for a in f.anatomy if a.source == "rules"]
    if any(k in LUNG_SITES for k in sites):
        return True
    if sites and exam.modality != "radiograph":
        return False
    return exam.body_region in (None, "chest")


_METASTATIC = re.compile(r"\bmetasta(?:sis|ses|tic|tatic)\b[\w ]{0,20}|转移(?:瘤|灶|性病变)?", re.IGNORECASE)
_NEGATED_BEFORE = re.compile(r"\b(no|not|without|negative for)\b[^.;,]*$|(无|未见|非)[^。；，,]*$", re.IGNORECASE)


def _metastatic_reading(text: str, nodules: list[Finding]) -> str | None:
    """The words by which the report reads its present nodules as metastases ("Innumerable pulmonary nodules,
    consistent with metastatic disease", 考虑转移瘤), if any: in a present nodule's sentence, not negated ("no
    evidence of metastatic disease"). Fleischner 2017 is for incidental nodules, not for known primary cancer
    (domain-facts §4, V~); nodules read as metastases are not managed by its table."""
    spans = sentences(text)
    for f in nodules:
        start, end = spans[f.sentence] if f.sentence < len(spans) else (0, len(text))
        for m in _METASTATIC.finditer(text, start, end):
            if not _NEGATED_BEFORE.search(text[start:m.start()]):
                return m.group(0).strip()
    return None


def _benign_explanation(text: str, f: Finding) -> str | None:
    """The unhedged benign explanation after ``f`` in its sentence (see :data:`_BENIGN_EXPLANATION`), if any."""
    spans = sentences(text)
    end = spans[f.sentence][1] if f.sentence < len(spans) else len(text)
    for m in _BENIGN_EXPLANATION.finditer(text, f.end, end):
        if not _HEDGED.search(text[max(f.end, m.start() - 24):m.start()]):
            return m.group(0)
    return None


def render_impression(findings: list[Finding], recs: list, lang: str) -> str:
    present = [f for f in findings if f.assertion == "present"]
    uncertain = [f for f in findings if f.assertion == "uncertain"]
    parts = []
    for i, f in enumerate(present, 1):
        parts.append(f"{i}. {describe(f, lang)}" + ("。" if lang == "zh" else "."))
    for f in uncertain:
        parts.append(f"{len(parts) + 1}. " + hedged(describe(f, lang), f.assertion, f.certainty, lang, capital=True)
                     + ("。" if lang == "zh" else "."))
    if not parts:
        parts.append("未见明确异常。" if lang == "zh" else "No reportable abnormality stated.")
    for r in recs:
        label = f"{GUIDELINE_ZH.get(r.guideline, r.guideline)}（{category_label(r.category, lang)}" + (f"，{'低危' if r.risk == 'low' else '高危'}" if r.risk != "unspecified" else "") + "）" \
            if lang == "zh" else f"{r.guideline} ({r.category}" + (f", {r.risk} risk" if r.risk != "unspecified" else "") + ")"
        parts.append(f"{label}: {r.text}" if lang == "en" else f"{label}：{r.text}")
    return "\n".join(parts)


def render_report(exam: Exam, findings: list[Finding], impression: str, recs: list, lang: str) -> str:
    unstated = "未注明" if lang == "zh" else "not stated"
    findings = [f for f in findings if f.experiencer == "patient" and not f.historical]
    absent = [f for f in findings if f.assertion == "absent"]
    # each finding with its ConText grade ("possible pneumonia, left lower lobe"): an uncertain one is never stated as
    # present, an absent one only among the negative findings
    stated = [hedged(describe(f, lang), f.assertion, f.certainty, lang) for f in findings if f.assertion != "absent"]
    if lang == "zh":
        named = [REGION_ZH.get(exam.body_region, exam.body_region) if exam.body_region else None,
                 MODALITY_ZH.get(exam.modality, exam.modality) if exam.modality else None]
        lines = [f"检查：{' '.join(n for n in named if n) or unstated}" + ("（筛查）" if exam.screening else ""),
                 "所见：" + ("；".join(stated) or "无阳性所见"),
                 "阴性所见：" + ("、".join(dict.fromkeys(_pick(NAMES[f.type], lang) for f in absent)) or "无"),
                 "印象：", impression]
    else:
        named = [n for n in (exam.body_region, exam.modality) if n]
        lines = [f"Exam: {' '.join(named) or unstated}" + (" (screening)" if exam.screening else ""),
                 "Findings: " + ("; ".join(stated) or "none positive"),
                 "Negative for: " + (", ".join(dict.fromkeys(_pick(NAMES[f.type], lang) for f in absent)) or "nothing stated"),
                 "Impression:", impression]
    return "\n".join(lines)
