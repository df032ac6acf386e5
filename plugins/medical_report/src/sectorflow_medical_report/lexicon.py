"""Bilingual (en + zh) radiology lexicon: findings, anatomy, exam modalities, attributes and ConText cues.

Every surface form is a literal (English matched case-insensitively on word boundaries, with ``-``/space variants
generated; Chinese matched as written). :class:`Lexicon` compiles all of them into one alternation sorted longest
first, so at any position the longest entry wins ("胸腔积液" is one effusion, not 胸腔 + 积液; "not ruled out" is one
uncertainty cue, not the negation "not").

Cue categories follow ConText (Harkema et al., J Biomed Inform 2009;42(5):839-851): ``neg_pre``/``neg_post``
(negated existence, scope forward/backward), ``unc_pre``/``unc_post`` (possible existence), ``pseudo`` (looks like a
negation, is not: "no change" -> temporality stable), ``term`` (scope terminators: "but", 但).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .text import fold_width


@dataclass(frozen=True)
class Entry:
    """One lexicon entry. ``kind``: finding, anatomy, modality, region, attribute, count, temporal, lat or a cue
    category; ``key``: canonical value; ``data``: extra fields (implied anatomy, CMeEE type, laterality...)."""

    kind: str
    key: str
    data: dict = field(default_factory=dict, hash=False, compare=False)


# ---- findings: key -> (English forms, Chinese forms, CMeEE type, implied anatomy) -------------------------------
FINDINGS: dict[str, tuple[list[str], list[str], str, str | None]] = {
    "nodule": (["nodule", "nodules", "pulmonary nodule", "pulmonary nodules", "lung nodule", "lung nodules", "ggn",
                "ggns", "ggo nodule", "ggo nodules", "micronodule", "micronodules"],
               ["结节", "小结节", "结节影", "结节灶", "微结节", "小结节影", "微小结节", "磨玻璃结节", "磨玻璃结节影",
                "纯磨玻璃结节", "磨玻璃密度结节", "磨玻璃小结节", "磨玻璃微结节", "磨玻璃样结节"], "sym", "lung"),
    "mass": (["mass", "masses", "mass lesion"], ["肿块", "团块", "团块影", "肿块影", "占位", "占位性病变"], "sym", None),
    "effusion": (["pleural effusion", "pleural effusions", "effusion", "effusions", "pleural fluid"],
                 ["胸腔积液", "胸水", "积液", "胸腔少量积液"], "sym", "pleura"),
    # not a pleural effusion (J90): "心包积液" had been read as one (积液, with the pleura implied)
    "pericardial_effusion": (["pericardial effusion", "pericardial effusions", "pericardial fluid"],
                             ["心包积液", "心包腔积液", "心包少量积液"], "sym", "heart"),
    "pneumothorax": (["pneumothorax", "pneumothoraces"], ["气胸"], "dis", "pleura"),
    "consolidation": (["consolidation", "consolidations", "airspace disease", "air space disease",
                       "airspace consolidation", "air space consolidation"], ["实变", "实变影", "肺实变"], "sym", "lung"),
    # "nodular opacity" is an opacity with the attribute nodular, not a definite nodule (see NODULAR_FORMS)
    "opacity": (["opacity", "opacities", "opacification", "airspace opacity", "airspace opacities", "infiltrate",
                 "infiltrates", "density", "densities", "nodular opacity", "nodular opacities", "nodular density",
                 "nodular densities", "ggo", "ggos"],
                ["阴影", "密度增高影", "片状影", "斑片影", "斑片状影", "模糊影", "高密度影", "渗出影", "渗出", "浸润影", "磨玻璃影",
                 "磨玻璃密度影", "结节状影", "结节样影", "结节状密度影", "结节样密度影", "结节状高密度影", "致密影",
                 "结节状致密影", "结节样致密影"], "sym", "lung"),
    "cardiomegaly": (["cardiomegaly", "enlarged heart", "cardiac enlargement", "enlarged cardiac silhouette",
                      "heart is enlarged", "heart size is enlarged", "cardiac silhouette is enlarged"],
                     ["心影增大", "心脏增大", "心脏扩大", "心影扩大", "心脏肥大"], "sym", "heart"),
    "atelectasis": (["atelectasis", "atelectases", "atelectatic change", "atelectatic changes", "lung collapse"],
                    ["肺不张", "不张"], "dis", "lung"),
    "congestion": (["vascular congestion", "pulmonary vascular congestion", "pulmonary congestion"], ["肺淤血"], "sym", "lung"),
    "edema": (["edema", "oedema", "pulmonary edema", "pulmonary oedema"],
              ["肺水肿", "水肿"], "sym", None),
    "fracture": (["fracture", "fractures", "fx"], ["骨折"], "dis", "bone"),
    "pneumonia": (["pneumonia", "pneumonias", "bronchopneumonia"], ["肺炎", "支气管肺炎", "肺部感染", "炎症", "感染"], "dis", "lung"),
    "emphysema": (["emphysema", "emphysematous change", "emphysematous changes"], ["肺气肿"], "dis", "lung"),
    "copd": (["copd", "chronic obstructive pulmonary disease"], ["慢阻肺", "慢性阻塞性肺疾病"], "dis", "lung"),
    "hyperinflation": (["hyperinflation", "hyperinflated lungs", "hyperexpanded lungs", "hyperexpansion"],
                       ["肺过度充气"], "sym", "lung"),
    "granuloma": (["granuloma", "granulomas", "granulomata", "calcified granuloma", "calcified granulomas"],
                  ["肉芽肿"], "dis", "lung"),
    "calcification": (["calcification", "calcifications"], ["钙化灶", "钙化影", "钙化斑"], "sym", None),
    "fibrosis": (["fibrosis", "scarring", "scar", "scars", "fibrotic change", "fibrotic changes"],
                 ["纤维化", "纤维灶", "索条影", "条索影", "纤维条索影"], "sym", "lung"),
    "lymphadenopathy": (["lymphadenopathy", "adenopathy", "enlarged lymph node", "enlarged lymph nodes",
                         "enlarged mediastinal lymph node", "enlarged mediastinal lymph nodes", "enlarged hilar lymph node",
                         "enlarged hilar lymph nodes"],
                        ["淋巴结肿大", "肿大淋巴结", "淋巴结增大"], "sym", "lymph_node"),
    "pleural_thickening": (["pleural thickening"], ["胸膜增厚"], "sym", "pleura"),
    "cyst": (["cyst", "cysts"], ["囊肿", "囊性灶"], "sym", None),
    "tuberculosis": (["tuberculosis", "tb"], ["结核", "肺结核"], "dis", "lung"),
    "bronchiectasis": (["bronchiectasis"], ["支气管扩张", "支扩"], "dis", "lung"),
    "hernia": (["hernia", "hiatal hernia", "hiatus hernia"], ["疝", "食管裂孔疝"], "dis", None),
}
"""Finding lexicon. Plural forms are listed so that a plural can set the count to multiple (:data:`PLURALS`)."""

NODULAR_FORMS = {"nodular opacity", "nodular opacities", "nodular density", "nodular densities", "结节状影", "结节样影",
                 "结节状密度影", "结节样密度影", "结节状高密度影", "结节状致密影", "结节样致密影"}
"""Opacity forms that carry the attribute ``nodular``. The Fleischner Society glossary (Hansell DM et al., Radiology
2008;246(3):697-722) defines a nodule as a rounded opacity up to 3 cm; a radiologist who writes "nodular opacity"
or "nodular density" instead of "nodule" leaves open whether it is one (overlapping structures, a nipple, a healing
rib fracture, a calcified granuloma). Such a finding is reported as an opacity with the attribute nodular: on a
radiograph it still leads to "further evaluation with CT", on CT it gets no Fleischner row (the radiologist has
not called it a nodule)."""

PLURALS = {"nodules", "nodular opacities", "nodular densities", "pulmonary nodules", "lung nodules", "masses",
           "effusions", "pleural effusions", "opacities", "airspace opacities", "infiltrates", "densities",
           "granulomas", "granulomata", "calcified granulomas", "calcifications", "fractures", "cysts",
           "consolidations", "pneumothoraces", "enlarged lymph nodes", "enlarged mediastinal lymph nodes",
           "enlarged hilar lymph nodes", "scars", "pericardial effusions", "ggns", "ggo nodules", "micronodules",
           "ggos"}

LUNG_LESIONS = {"nodule", "mass", "granuloma"}
"""Findings that take a lung-lesion size check (> 30 mm is a mass; > 100 mm is implausible)."""

# ---- anatomy: key -> (English, Chinese, laterality, body region) -------------------------------------------------
ANATOMY: dict[str, tuple[list[str], list[str], str | None, str]] = {
    "lung": (["lung", "lungs", "pulmonary", "lung field", "lung fields", "parenchyma"], ["肺", "肺部", "肺野", "肺内", "肺实质"], None, "chest"),
    "right_lung": (["right lung"], ["右肺", "右侧肺", "右肺野"], "right", "chest"),
    "left_lung": (["left lung"], ["左肺", "左侧肺", "左肺野"], "left", "chest"),
    "both_lungs": (["both lungs", "bilateral lungs"], ["双肺", "两肺", "双侧肺", "两侧肺", "双肺野"], "bilateral", "chest"),
    # lobes only where the text says lobe / 叶 (or lingula); "right lower lung", 右下肺, 右下肺野 are zones (below)
    "right_upper_lobe": (["right upper lobe", "rul"], ["右肺上叶", "右上叶", "右上肺叶"], "right", "chest"),
    "right_middle_lobe": (["right middle lobe", "rml"], ["右肺中叶", "右中叶", "右中肺叶"], "right", "chest"),
    "right_lower_lobe": (["right lower lobe", "rll"], ["右肺下叶", "右下叶", "右下肺叶"], "right", "chest"),
    "left_upper_lobe": (["left upper lobe", "lul"], ["左肺上叶", "左上叶", "左上肺叶"], "left", "chest"),
    "lingula": (["lingula", "lingular"], ["舌段", "左肺舌段"], "left", "chest"),
    "left_lower_lobe": (["left lower lobe", "lll"], ["左肺下叶", "左下叶", "左下肺叶"], "left", "chest"),
    "upper_lobe": (["upper lobe", "upper lobes"], ["上叶", "上肺叶"], None, "chest"),
    "middle_lobe": (["middle lobe"], ["中叶"], None, "chest"),
    "lower_lobe": (["lower lobe", "lower lobes"], ["下叶", "下肺叶"], None, "chest"),
    # the left lung has no middle lobe (upper and lower lobes; the lingula is part of the upper lobe): read as the
    # left lung with a nonexistent_site warning, the text kept as written (extract.NONEXISTENT_LOBES)
    "left_middle_lobe": (["left middle lobe"], ["左肺中叶", "左中叶", "左中肺叶"], "left", "chest"),
    # lung zones of a radiograph, not lobes: "right midlung" had lost its side, 右中肺野 had been the middle lobe;
    # "right lower lung", 右下肺, 右下肺野 had been the lower lobe (a zone is where a shadow projects on the film, a
    # lobe an anatomical unit; the lower zone also shows parts of the upper or middle lobe)
    "right_upper_lung": (["right upper lung", "right upper lung zone", "right upper zone", "right upper lung field"],
                         ["右上肺", "右上肺野", "右肺上野", "右上肺区"], "right", "chest"),
    "left_upper_lung": (["left upper lung", "left upper lung zone", "left upper zone", "left upper lung field"],
                        ["左上肺", "左上肺野", "左肺上野", "左上肺区"], "left", "chest"),
    "right_lower_lung": (["right lower lung", "right lower lung zone", "right lower zone", "right lower lung field"],
                         ["右下肺", "右下肺野", "右肺下野", "右下肺区"], "right", "chest"),
    "left_lower_lung": (["left lower lung", "left lower lung zone", "left lower zone", "left lower lung field"],
                        ["左下肺", "左下肺野", "左肺下野", "左下肺区"], "left", "chest"),
    "upper_lung": (["upper lung", "upper lungs", "upper zone", "upper zones", "upper lung zone", "upper lung zones",
                    "upper lung field", "upper lung fields"], ["上肺", "上肺野", "上肺区"], None, "chest"),
    "lower_lung": (["lower lung", "lower lungs", "lower zone", "lower zones", "lower lung zone", "lower lung zones",
                    "lower lung field", "lower lung fields"], ["下肺", "下肺野", "下肺区"], None, "chest"),
    "right_mid_lung": (["right midlung", "right mid lung", "right mid-lung", "right mid zone", "right midzone",
                        "right middle lung zone", "right mid lung zone", "right midlung zone", "right middle zone",
                        "right middle lung"],
                       ["右中肺野", "右肺中野", "右中肺区", "右中肺"], "right", "chest"),
    "left_mid_lung": (["left midlung", "left mid lung", "left mid-lung", "left mid zone", "left midzone",
                       "left middle lung zone", "left mid lung zone", "left midlung zone", "left middle zone",
                       "left middle lung"],
                      ["左中肺野", "左肺中野", "左中肺区", "左中肺"], "left", "chest"),
    "mid_lung": (["midlung", "mid lung", "mid-lung", "midlungs", "mid lungs", "mid zone", "midzone", "mid zones",
                  "middle lung zone", "mid lung zone", "midlung zone", "midlung zones", "middle zone", "middle zones"],
                 ["中肺野", "双中肺野", "两中肺野", "中肺区"], None, "chest"),
    "fissure": (["fissure", "fissures", "minor fissure", "major fissure", "horizontal fissure", "oblique fissure"],
                ["叶间裂", "水平裂", "斜裂", "叶间胸膜"], None, "chest"),
    "lung_base": (["base", "bases", "lung base", "lung bases", "basilar", "basal"], ["肺底", "基底段"], None, "chest"),
    "lung_apex": (["apex", "apices", "apical"], ["肺尖", "尖段"], None, "chest"),
    "hilum": (["hilum", "hila", "hilar"], ["肺门"], None, "chest"),
    "pleura": (["pleura", "pleural", "pleural space"], ["胸膜", "胸腔"], None, "chest"),
    "costophrenic_angle": (["costophrenic angle", "costophrenic angles", "costophrenic sulcus"], ["肋膈角"], None, "chest"),
    "heart": (["heart", "cardiac", "cardiac silhouette", "cardiomediastinal silhouette"], ["心脏", "心影"], None, "chest"),
    "mediastinum": (["mediastinum", "mediastinal"], ["纵隔"], None, "chest"),
    "aorta": (["aorta", "aortic"], ["主动脉"], None, "chest"),
    "trachea": (["trachea", "tracheal", "bronchus", "bronchi"], ["气管", "支气管"], None, "chest"),
    "diaphragm": (["diaphragm", "hemidiaphragm", "hemidiaphragms"], ["膈", "膈肌", "膈面"], None, "chest"),
    "rib": (["rib", "ribs"], ["肋骨", "肋"], None, "chest"),
    "spine": (["spine", "thoracic spine", "lumbar spine", "vertebra", "vertebrae", "vertebral body"],
              ["脊柱", "胸椎", "腰椎", "椎体"], None, "spine"),
    "clavicle": (["clavicle", "clavicles"], ["锁骨"], None, "chest"),
    "lymph_node": (["lymph node", "lymph nodes"], ["淋巴结"], None, "chest"),
    "bone": (["bone", "bones", "osseous structures", "skeletal"], ["骨", "骨质"], None, "musculoskeletal"),
    "liver": (["liver", "hepatic"], ["肝", "肝脏"], None, "abdomen"),
    "kidney": (["kidney", "kidneys", "renal"], ["肾", "肾脏"], None, "abdomen"),
    "thyroid": (["thyroid"], ["甲状腺"], None, "neck"),
    "breast": (["breast", "breasts"], ["乳腺", "乳房"], None, "breast"),
    "brain": (["brain"], ["脑", "颅内"], None, "head"),
}

LOBES = frozenset({"right_upper_lobe", "right_middle_lobe", "right_lower_lobe", "left_upper_lobe", "left_lower_lobe",
                   "lingula", "upper_lobe", "middle_lobe", "lower_lobe"})
"""Anatomical lobes (and the lingula, the left upper lobe's lingular segments): a site is a lobe only where the text
says lobe / 叶 or lingula / 舌段."""
ZONES = frozenset({"right_upper_lung", "right_mid_lung", "right_lower_lung", "left_upper_lung", "left_mid_lung",
                   "left_lower_lung", "upper_lung", "mid_lung", "lower_lung", "lung_base", "lung_apex"})
"""Radiographic lung zones (upper / middle / lower zone of a lung, its base and apex): where a shadow projects on the
film, not a lobe ("right lower lung", "left midlung", "lung bases", 右下肺野, 左中肺野, 右下肺)."""
WHOLE_LUNGS = frozenset({"lung", "right_lung", "left_lung", "both_lungs"})


def site_kind(key: str) -> str | None:
    """The kind of a site key: ``"lobe"`` (:data:`LOBES`), ``"zone"`` (:data:`ZONES`), ``"lung"`` (a whole lung or
    the lungs), ``"other"`` (pleura, heart, fissure, liver, ...); none for a key the lexicon does not know (a tagger
    span, ``model_span``)."""
    if key in LOBES:
        return "lobe"
    if key in ZONES:
        return "zone"
    if key in WHOLE_LUNGS:
        return "lung"
    return "other" if key in ANATOMY else None


MODALITIES: dict[str, tuple[list[str], list[str]]] = {
    "CT": (["ct", "computed tomography", "cta", "hrct", "ct scan", "low-dose ct", "low dose ct", "ldct", "ct chest",
            "chest ct"], ["CT", "低剂量CT", "胸部CT", "增强CT", "平扫CT", "螺旋CT", "计算机断层"]),
    "radiograph": (["x-ray", "xray", "x ray", "radiograph", "radiographs", "radiography", "chest film", "plain film",
                    "pa and lateral", "frontal and lateral", "cxr", "chest x-ray", "chest radiograph", "portable chest"],
                   ["胸片", "X线", "x线", "平片", "DR", "X光", "胸部正位片", "正侧位", "摄片", "X线片", "胸部X线片"]),
    "MR": (["mri", "mr", "magnetic resonance"], ["磁共振", "核磁", "MRI", "核磁共振"]),
    "ultrasound": (["ultrasound", "sonography", "sonogram", "ultrasonography"], ["超声", "B超", "彩超"]),
    "PET/CT": (["pet/ct", "pet-ct", "pet ct", "pet"], ["PET/CT", "PET-CT"]),
    "mammography": (["mammogram", "mammography"], ["钼靶", "乳腺X线"]),
}
MODALITY_REGION: dict[str, str] = {form: "chest" for form in (
    "ct chest", "chest ct", "chest film", "cxr", "chest x-ray", "chest radiograph", "portable chest", "胸部CT", "胸片",
    "胸部正位片", "胸部X线片")}
"""Modality forms that also name the body region ("胸部CT": CT of the chest; "chest x-ray": a chest radiograph)."""
SCREENING_HINTS = {"low-dose ct", "low dose ct", "ldct", "低剂量ct", "screening", "筛查"}

REGIONS: dict[str, tuple[list[str], list[str]]] = {
    "chest": (["chest", "thorax", "thoracic"], ["胸部", "胸廓"]),
    "abdomen": (["abdomen", "abdominal"], ["腹部", "腹腔"]),
    "head": (["head", "cranial"], ["头颅", "颅脑", "头部"]),
    "neck": (["neck"], ["颈部"]),
    "pelvis": (["pelvis", "pelvic"], ["盆腔", "骨盆"]),
}

ATTRIBUTES: dict[str, tuple[list[str], list[str]]] = {
    "solid": (["solid"], ["实性"]),
    "part-solid": (["part-solid", "part solid", "partly solid", "partially solid", "mixed attenuation", "semisolid",
                    "semi-solid"], ["部分实性", "混杂磨玻璃", "混合磨玻璃", "混杂密度", "部分实性磨玻璃"]),
    "subsolid": (["subsolid", "sub-solid"], ["亚实性"]),
    "ground-glass": (["ground-glass", "ground glass", "nonsolid", "non-solid"], ["磨玻璃", "毛玻璃", "纯磨玻璃", "磨玻璃密度"]),
    "calcified": (["calcified", "calcific"], ["钙化", "钙化性"]),
    "spiculated": (["spiculated", "spiculation"], ["毛刺", "分叶"]),
    # texture adjectives: "nodular right lower lobe opacity"; reticulonodular is an interstitial pattern (Hansell
    # 2008), fibronodular describes scarring (apical caps): neither makes a nodule
    "nodular": (["nodular", "nodular-appearing"], ["结节状", "结节样"]),
    "reticulonodular": (["reticulonodular", "reticular nodular", "reticulo-nodular"], ["网格结节状", "网状结节"]),
    "fibronodular": (["fibronodular", "fibro-nodular"], ["纤维结节状"]),
    # along a fissure: Lung-RADS v1.1 category 2 below 10 mm (juxtapleural in v2022, U)
    "perifissural": (["perifissural", "peri-fissural", "juxtafissural"], ["叶间裂旁", "叶裂旁"]),
}

COUNTS: dict[str, tuple[list[str], list[str]]] = {
    "multiple": (["multiple", "several", "numerous", "scattered", "a few", "few", "two", "three", "four", "five",
                  "innumerable", "multifocal"], ["多发", "多个", "数个", "多枚", "散在", "多处", "两个", "两枚", "数枚", "多"]),
    "single": (["single", "solitary", "a single", "one", "isolated", "an isolated"], ["单发", "一个", "一枚", "孤立", "单个", "一"]),
}

TEMPORAL: dict[str, tuple[list[str], list[str]]] = {
    "new": (["new", "newly", "interval development", "new since"], ["新发", "新出现", "新见", "新增", "新"]),
    "stable": (["stable", "unchanged", "no change", "no significant change", "no interval change",
                "no significant interval change", "not significantly changed", "without change", "similar",
                # pseudo-negations (ConText): they name a change, not an absent finding
                "no interval increase", "no increase", "no significant increase", "no growth", "no interval growth",
                "no significant growth", "no enlargement", "no interval enlargement", "not new", "is not new",
                "again seen", "again noted", "again identified", "persistent", "no appreciable change"],
               ["稳定", "无明显变化", "较前无变化", "变化不大", "同前", "大致同前", "未见明显变化", "较前相仿", "相仿", "未见变化",
                "较前无明显变化", "无变化", "无明显改变", "未见明显增大", "无明显增大"]),
    "increased": (["increased", "increasing", "larger", "enlarging", "growing", "grown", "interval increase",
                   "increase in size", "worsened", "worsening", "progressed"],
                  ["较前增大", "增大", "增多", "较前增多", "进展", "较前进展"]),
    "decreased": (["decreased", "decreasing", "smaller", "decrease in size", "improved", "improving", "resolving",
                   "interval decrease",
                   # still there, smaller (not the negation "interval resolution of")
                   "partial resolution of", "partial interval resolution of", "near-complete resolution of",
                   "near-complete interval resolution of", "nearly complete resolution of", "incomplete resolution of"],
                  ["较前缩小", "缩小", "减少", "较前减少", "吸收", "好转", "较前吸收"]),
    "prior": (["prior", "previous", "old", "history of", "healed", "chronic", "remote", "known"],
              ["陈旧", "陈旧性", "既往", "术后", "慢性"]),
}
"""Temporality cues (scope: the clause). "stable" phrases such as "no change" are ConText pseudo-negations."""

CUES: dict[str, tuple[list[str], list[str]]] = {
    "neg_pre": (["no", "not", "without", "no evidence of", "no evidence for", "no definite", "no definite evidence of",
                 "negative for", "free of", "absence of", "no sign of", "no signs of", "there is no", "there are no",
                 "denies", "no suspicious", "no focal", "no acute", "no visible", "nor", "no significant",
                 "no radiographic evidence of", "no findings of", "clear of", "rules out", "status post resection of",
                 "s/p resection of", "status post removal of", "post resection of", "neither",
                 "interval resolution of",
                 # after a heading's colon: the post-cue ": negative" would take the characters of "Negative for"
                 ": negative for", ":negative for"],
                ["无", "未见", "未见明显", "未发现", "未显示", "未及", "没有", "否认", "无明显", "未见确切", "未见异常", "不伴",
                 "未探及", "未见明确", "无确切", "已排除", "已除外",
                 # "no suspicious ...": 可疑 alone is an uncertainty cue, nearer than 未见
                 "未见可疑", "未见明显可疑", "未见明确可疑", "无可疑", "未发现可疑", "：未见可疑", ":未见可疑", "：无可疑",
                 ":无可疑"]),
    "neg_post": (["not seen", "is not seen", "are not seen", "not identified", "not present", "is absent",
                  "are absent", "absent", "resolved", "has resolved", "have resolved", ": none", ":none", ": negative",
                  ": absent", "- none", "ruled out", "has been ruled out", "was ruled out", "excluded",
                  "is not identified", "are not identified", "not visualized",
                  "no longer seen", "no longer visualized", "no longer visible", "no longer present", "no longer identified",
                  "no longer evident", "no longer demonstrated", "removed", "resected", "excised",
                  # "X is not evident/visible/appreciated on this study": "not" alone only looks forward
                  "not evident", "not apparent", "no longer apparent", "not appreciated", "no longer appreciated",
                  "not visible", "not demonstrated", "not detected", "cannot be identified", "cannot be seen",
                  "can not be identified", "can not be seen", "could not be identified", "could not be seen"],
                 ["：无", ":无", "：阴性", "：未见", "消失", "已吸收", "已消失", "阴性", "已切除", "切除术后", "已摘除",
                  "已排除", "已除外"]),
    "unc_pre": (["possible", "possibly", "probable", "probably", "likely", "may represent", "may be", "could represent",
                 "could be", "is likely", "are likely", "is probable", "are probable", "suspicious for",
                 "concerning for", "questionable", "question of", "cannot rule out",
                 "can not rule out", "cannot exclude", "can not exclude", "suggestive of", "suspected", "equivocal",
                 "differential diagnosis includes", "versus", "presumed", "consider", "may reflect", "might be",
                 # ConText "hypothetical" triggers, reported as uncertain
                 "if", "rule out", "r/o", "evaluate for", "to evaluate", "to exclude", "to identify", "to assess",
                 "could obscure", "would", "should", "detecting", "question"],
                ["可能", "疑似", "可疑", "疑", "考虑", "倾向", "怀疑", "不除外", "不排除", "待排", "待排除", "未除外", "无法除外",
                 "无法排除", "除外", "似见",
                 # hypothetical (ConText): "复查CT排除肺炎", "如有气胸"
                 "排除", "以排除", "进一步排除", "如有", "若有", "如出现", "若出现"]),
    "unc_post": (["not ruled out", "not excluded", "cannot be excluded", "can not be excluded", "cannot be ruled out",
                  "can not be ruled out", "is suspected", "not entirely excluded", "is possible", "is not excluded",
                  "are not excluded", "is questioned",
                  # "Pneumonia is likely.": governs what precedes it only where nothing but a site follows it
                  # (extract._END_ONLY_POST); as a pre-cue it is "likely" ("The opacity is likely atelectasis")
                  "is likely", "are likely", "is probable", "are probable",
                  # low probability (certainty "unlikely"), the same end-of-clause rule: "Pneumonia is unlikely."
                  "unlikely", "is unlikely", "are unlikely", "very unlikely", "is very unlikely",
                  # seen poorly on this study: neither stated present nor absent
                  "not well seen", "not well visualized", "not clearly seen", "not clearly visualized",
                  "not definitely seen", "not definitely visualized", "not definitely identified"],
                 ["可能", "可能性大", "可能大", "可能性小", "可能性不大", "不除外", "不排除", "待排", "待排除", "待除外", "待查",
                  "未除外", "？", "?"]),
    "pseudo": (["not without", "not only", "no doubt", "without doubt", "in question"], ["无疑"]),
    "term": (["but", "however", "although", "though", "yet", "except", "aside from", "apart from", "which",
              "there is", "there are", "there has been", "otherwise", "whereas", "with the exception of",
              "other than", "except for", "besides", "save for", "excluding"],
             ["但", "但是", "然而", "而", "另见", "另", "余", "其余"]),
}

LATERALITY: dict[str, tuple[list[str], list[str]]] = {
    "right": (["right", "right-sided", "right sided", "on the right"], ["右", "右侧"]),
    "left": (["left", "left-sided", "left sided", "on the left"], ["左", "左侧"]),
    "bilateral": (["bilateral", "bilaterally", "both", "on both sides"], ["双侧", "两侧", "双", "两"]),
}


def _variants(term: str) -> set[str]:
    """Hyphen/space variants of an English term, lower case."""
    term = term.lower()
    out = {term}
    if "-" in term:
        out.add(term.replace("-", " "))
        out.add(term.replace("-", ""))
    return out


def _norm(text: str) -> str:
    """Lookup key of a matched surface: lower case, runs of white space -> one space."""
    return re.sub(r"\s+", " ", text.lower())


class Lexicon:
    """All entries compiled into one longest-first alternation; :meth:`scan` yields non-overlapping matches.

    Shapes: ``scan(text)`` -> list of ``(start, end, Entry)`` in text order, ``end`` exclusive (Python slicing).
    """

    def __init__(self) -> None:
        table: dict[str, list[Entry]] = {}

        def add(kind: str, key: str, en: list[str], zh: list[str], **data: object) -> None:
            for form in en:
                for v in _variants(form):
                    table.setdefault(v, []).append(Entry(kind, key, {**data, "lang": "en", "form": form}))
            for form in zh:
                table.setdefault(form.lower(), []).append(Entry(kind, key, {**data, "lang": "zh", "form": form}))

        for key, (en, zh, cmeee, implied) in FINDINGS.items():
            add("finding", key, en, zh, cmeee=cmeee, implied=implied)
        for key, (en, zh, lat, region) in ANATOMY.items():
            add("anatomy", key, en, zh, laterality=lat, region=region)
        for key, (en, zh) in MODALITIES.items():
            for form in en + zh:
                extra = {"region": MODALITY_REGION[form]} if form in MODALITY_REGION else {}
                add("modality", key, [form] if form in en else [], [form] if form in zh else [], **extra)
        for group, kind in ((REGIONS, "region"), (ATTRIBUTES, "attribute"),
                            (COUNTS, "count"), (TEMPORAL, "temporal"), (CUES, "cue"), (LATERALITY, "lat")):
            for key, (en, zh) in group.items():
                add(kind, key, en, zh)
        # one entry per surface; where a surface is listed twice (e.g. 可能 pre and post uncertainty), keep all in data
        self.table = table
        forms = sorted(table, key=lambda s: (-len(s), s))
        parts = []
        for form in forms:
            ascii_word = form[:1].isascii() and form[:1].isalnum()
            pat = re.escape(form).replace(r"\ ", r"\s+")
            if ascii_word:
                pat = r"(?<![A-Za-z0-9])" + pat
            if form[-1:].isascii() and form[-1:].isalnum():
                pat = pat + r"(?![A-Za-z0-9])"
            parts.append(pat)
        self.pattern = re.compile("|".join(parts), re.IGNORECASE)

    def scan(self, text: str) -> list[tuple[int, int, list[Entry]]]:
        """Non-overlapping longest-first matches: ``(start, end, entries)`` (one surface may carry several entries,
        e.g. 可能 is a pre- and a post-uncertainty cue). Full-width Latin letters and digits match as ASCII ("ＣＴ"
        is CT; :func:`~.text.fold_width`, offsets unchanged)."""
        out = []
        folded = fold_width(text)
        for match in self.pattern.finditer(folded):
            entries = self.table.get(_norm(match.group(0)))
            if entries:
                out.append((match.start(), match.end(), entries))
        return self._shared_lung_character(folded, out)

    def _shared_lung_character(self, text: str, out: list[tuple[int, int, list[Entry]]]
                               ) -> list[tuple[int, int, list[Entry]]]:
        """A Chinese site ending in 肺 followed by a finding that starts with 肺 share the character: "左下肺炎" is
        the site 左下肺 and the finding 肺炎 (pneumonia), "双肺气肿" 双肺 + 肺气肿. Longest-first matching gives the 肺
        to the site and the finding is lost, so the finding is added overlapping the site by that one character
        (only where nothing else was matched after the site)."""
        added = []
        for k, (start, end, entries) in enumerate(out):
            if not text.endswith("肺", start, end) or not any(e.kind == "anatomy" for e in entries):
                continue
            match = self.pattern.match(text, end - 1)
            found = self.table.get(_norm(match.group(0))) if match else None
            if not found or not any(e.kind == "finding" for e in found) or match.end() <= end:  # type: ignore[union-attr]
                continue
            nxt = out[k + 1][0] if k + 1 < len(out) else len(text)
            if nxt >= match.end():  # type: ignore[union-attr]
                added.append((end - 1, match.end(), found))  # type: ignore[union-attr]
        return sorted(out + added, key=lambda m: m[0]) if added else out


_LEXICON: Lexicon | None = None


def lexicon() -> Lexicon:
    """The process-wide compiled lexicon (built on first use, about 0.1 s)."""
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = Lexicon()
    return _LEXICON
