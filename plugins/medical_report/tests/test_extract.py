"""Rule extraction: findings, offsets, sizes, ConText assertion and scope, temporality, count and attributes."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.text import detect_language, find_sizes


def one(text, ftype=None):
    found = [f for f in extract(text).findings if ftype is None or f.type == ftype]
    assert len(found) == 1, [(f.type, f.text) for f in found]
    return found[0]


def test_chinese_issue_example():
    text = "胸片显示右肺结节，直径约8mm"
    ex = extract(text)
    (f,) = ex.findings
    assert (f.type, f.assertion, f.laterality, f.size.mm, f.size.text) == ("nodule", "present", "right", 8.0, "8mm")
    assert text[f.start:f.end] == "结节" and text[f.size.start:f.size.end] == "8mm"
    assert [a.key for a in f.anatomy] == ["right_lung"] and text[f.anatomy[0].start:f.anatomy[0].end] == "右肺"
    assert ex.modality == "radiograph" and detect_language(text) == "zh"


def test_english_issue_example():
    text = "There is an 8 mm nodule in the left lower lobe."
    f = one(text)
    assert (f.type, f.laterality, f.size.mm, f.anatomy[0].key) == ("nodule", "left", 8.0, "left_lower_lobe")
    assert text[f.start:f.end] == "nodule"


@pytest.mark.parametrize(("text", "axes", "mm"), [
    ("8 mm", [8.0], 8.0), ("0.8cm", [8.0], 8.0), ("8毫米", [8.0], 8.0), ("1.9 x 1.8 cm", [19.0, 18.0], 18.5),
    ("1.2×0.8cm", [12.0, 8.0], 10.0), ("1.2 cm x 0.9 cm", [12.0, 9.0], 10.5), ("6-8 mm", [6.0, 8.0], 8.0),
])
def test_sizes_normalised_to_mm_with_the_text_kept(text, axes, mm):
    (s,) = find_sizes(f"a {text} nodule")
    assert (s.text, s.axes_mm, s.mm) == (text, axes, mm)


def test_bare_numbers_distances_and_deid_tokens_are_no_sizes():
    assert find_sizes("T8 vertebra, tube tip 3 cm above the carina, XXXX mm, level 5") == []


@pytest.mark.parametrize(("text", "ftype", "cue"), [
    ("No evidence of pneumothorax.", "pneumothorax", "No evidence of"),
    ("Negative for pneumonia.", "pneumonia", "Negative for"),
    ("Pneumothorax: none.", "pneumothorax", ": none"),
    ("No displaced rib fractures, pneumothorax, or pleural effusion identified.", "effusion", "No"),
    ("There are no XXXX of a pleural effusion.", "effusion", "There are no"),
    ("双肺未见实变。", "consolidation", "未见"),
    ("无胸腔积液。", "effusion", "无"),
    ("胸腔积液：无。", "effusion", "：无"),
])
def test_negated_findings_are_absent(text, ftype, cue):
    f = one(text, ftype)
    assert f.assertion == "absent" and f.cue.text == cue


@pytest.mark.parametrize(("text", "ftype", "cue"), [
    ("Pneumonia not ruled out.", "pneumonia", "not ruled out"),
    ("Small effusion cannot be excluded.", "effusion", "cannot be excluded"),
    ("Possible right lower lobe pneumonia.", "pneumonia", "Possible"),
    ("肺炎不除外。", "pneumonia", "不除外"),
    ("左侧胸腔积液待排。", "effusion", "待排"),
    ("右肺下叶结节，考虑炎性可能。", "nodule", None),
])
def test_uncertain_cues(text, ftype, cue):
    f = one(text, ftype)
    if cue is None:  # 考虑 ... 可能 governs what follows it, not the nodule in the clause before
        assert f.assertion == "present"
    else:
        assert f.assertion == "uncertain" and f.cue.text == cue


def test_scope_stops_at_but_and_at_a_chinese_clause_break():
    ex = extract("No pneumothorax, but there is a small left pleural effusion.")
    assert {f.type: f.assertion for f in ex.findings} == {"pneumothorax": "absent", "effusion": "present"}
    assert next(f for f in ex.findings if f.type == "effusion").laterality == "left"
    ex = extract("未见气胸，但见左侧胸腔积液。")
    assert {f.type: f.assertion for f in ex.findings} == {"pneumothorax": "absent", "effusion": "present"}
    ex = extract("双肺未见实变，右肺下叶见结节。")
    assert {f.type: f.assertion for f in ex.findings} == {"consolidation": "absent", "nodule": "present"}


def test_english_scope_ends_at_a_new_subject_after_a_comma():
    ex = extract("There is no pleural effusion, the heart is enlarged.")
    assert {f.type: f.assertion for f in ex.findings} == {"effusion": "absent", "cardiomegaly": "present"}


@pytest.mark.parametrize(("text", "temporality"), [
    ("New 7 mm nodule in the right upper lobe.", "new"), ("Stable 5 mm nodule in the RUL.", "stable"),
    ("The left lower lobe nodule has increased in size.", "increased"), ("No change in the 6 mm nodule.", "stable"),
    ("右肺下叶结节，大小约8mm，较前增大。", "increased"), ("右肺上叶结节较前无明显变化。", "stable"),
    ("Healed right rib fracture.", "prior"), ("陈旧性骨折。", "prior"), ("右肺新发结节。", "new"),
])
def test_temporality(text, temporality):
    f = one(text, None if "fracture" not in text and "骨折" not in text else "fracture")
    assert f.temporality == temporality and f.assertion == "present"


def test_laterality_does_not_cross_a_sentence():
    ex = extract("Small bilateral pleural effusions, left greater than right. Mild pulmonary edema.")
    assert [(f.type, f.laterality) for f in ex.findings] == [("effusion", "bilateral"), ("edema", None)]


def test_count_and_attributes():
    f = one("Multiple ground-glass nodules in both lungs.")
    assert (f.count, f.attributes, f.laterality) == ("multiple", ["ground-glass"], "bilateral")
    f = one("双肺多发磨玻璃结节。")
    assert (f.count, f.attributes, f.laterality) == ("multiple", ["ground-glass"], "bilateral")
    f = one("右肺上叶见一部分实性结节，大小约1.2×1.0cm，实性成分约5mm。")
    assert (f.count, f.attributes, f.size.mm, f.solid_component_mm) == ("single", ["part-solid"], 11.0, 5.0)
    f = one("Calcified 5 mm granuloma in the right upper lobe.")
    assert "calcified" in f.attributes and f.size.mm == 5.0
    assert one("右肺结节，无钙化。").attributes == []
    assert one("Noncalcified nodule in the left upper lobe.").attributes == []


def test_a_decimal_comma_before_a_unit_is_a_decimal_point():
    # "6,5 mm" was read as 5 mm: the nodule fell from Fleischner's 6-8 mm row to < 6 mm
    from sectorflow_medical_report.text import find_sizes

    assert [(s.text, s.mm) for s in find_sizes("nodule measuring 6,5 mm")] == [("6,5 mm", 6.5)]
    assert [(s.text, s.axes_mm) for s in find_sizes("mass 1,9 x 1,8 cm")] == [("1,9 x 1,8 cm", [19.0, 18.0])]
    assert [s.text for s in find_sizes("nodules 1, 2 mm")] == ["2 mm"]  # a list, not a decimal
