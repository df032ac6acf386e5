"""Inputs a radiology user would try, found breaking the rules and fixed; each case asserts the exact reading."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def _read(text: str) -> list[tuple[str, str]]:
    return [(f.type, f.assertion) for f in extract(text).findings]


@pytest.mark.parametrize("text", [
    "The previously seen nodule is no longer seen.", "The nodule is no longer visualized.",
    "Pneumothorax is no longer present.", "The nodule was removed.",
    "Status post resection of the left upper lobe nodule.", "右肺上叶结节已切除。", "右肺结节较前消失。",
    "The right upper lobe nodule has resolved.",
])
def test_a_finding_that_is_gone_is_absent(text):
    ((_, assertion),) = _read(text)
    assert assertion == "absent"
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert rep.recommendations == [] and rep.codes == [] and rep.warnings == []


def test_a_removal_word_does_not_reach_across_after():
    assert _read("Small right pneumothorax after the chest tube was removed.") == [("pneumothorax", "present")]


@pytest.mark.parametrize("text, expected", [
    ("No focal consolidation, 8 mm nodule in the right upper lobe.",
     [("consolidation", "absent"), ("nodule", "present")]),
    ("No focal consolidation with 8 mm nodule in the right upper lobe.",
     [("consolidation", "absent"), ("nodule", "present")]),
    ("No pneumothorax and a 7 mm nodule in the left lower lobe.", [("pneumothorax", "absent"), ("nodule", "present")]),
    ("No pneumothorax, pleural effusion is present.", [("pneumothorax", "absent"), ("effusion", "present")]),
    # a list without sizes or a new predicate stays negated
    ("No pleural effusion, pneumothorax, or focal consolidation.",
     [("effusion", "absent"), ("pneumothorax", "absent"), ("consolidation", "absent")]),
    ("No effusion, pneumothorax or consolidation.",
     [("effusion", "absent"), ("pneumothorax", "absent"), ("consolidation", "absent")]),
    ("未见胸腔积液、气胸及实变。", [("effusion", "absent"), ("pneumothorax", "absent"), ("consolidation", "absent")]),
    ("未见胸腔积液，气胸及实变。", [("effusion", "absent"), ("pneumothorax", "absent"), ("consolidation", "absent")]),
    # ... but a Chinese clause with its own site or size after the comma is its own statement
    ("未见胸腔积液，右侧气胸。", [("effusion", "absent"), ("pneumothorax", "present")]),
    ("未见胸腔积液，结节约8mm。", [("effusion", "absent"), ("nodule", "present")]),
])
def test_negation_scope_ends_where_a_new_statement_starts(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text, temporality", [
    ("No interval increase in the size of the 6 mm nodule.", "stable"),
    ("Nodule is not new.", "stable"),
    ("Not without pneumothorax.", None),
])
def test_pseudo_negations_do_not_negate(text, temporality):
    (f,) = extract(text).findings
    assert (f.assertion, f.temporality) == ("present", temporality)


def test_each_size_goes_to_the_nodule_it_modifies():
    calc, solid = extract("5 mm calcified nodule and a 7 mm solid nodule.").findings
    assert (calc.size.mm, calc.attributes, solid.size.mm, solid.attributes) == (5.0, ["calcified"], 7.0, ["solid"])
    rep = build_report(ReportInput(text="5 mm calcified nodule and a 7 mm solid nodule.", modality="CT",
                                   patient_risk="low"), extract("5 mm calcified nodule and a 7 mm solid nodule."))
    assert [(r.category, r.finding_ids) for r in rep.recommendations] == [("solid single 6-8 mm", [1])]
    a, b = extract("Nodule measuring 8 mm in the right upper lobe and 4 mm nodule in the left lower lobe.").findings
    assert (a.size.mm, a.laterality, a.anatomy[0].key) == (8.0, "right", "right_upper_lobe")
    assert (b.size.mm, b.laterality, b.anatomy[0].key) == (4.0, "left", "left_lower_lobe")


@pytest.mark.parametrize("text, mm", [
    ("8 mm nodule in the right upper lobe, previously 10 mm.", 8.0),
    ("A 1.0 x 0.8 cm nodule, previously 0.6 x 0.5 cm.", 9.0),
    ("右肺结节约6mm，原约4mm。", 6.0),
])
def test_a_former_size_is_not_the_current_size(text, mm):
    (f,) = extract(text).findings
    assert f.size.mm == mm


def test_a_solid_component_written_after_its_size():
    (f,) = extract("A 7 mm part-solid nodule with a 3 mm solid component.").findings
    assert (f.size.mm, f.solid_component_mm, f.attributes) == (7.0, 3.0, ["part-solid"])


@pytest.mark.parametrize("text", ["Family history of tuberculosis.", "Mother had pneumonia.", "家族史：父亲肺结核。"])
def test_a_relatives_finding_is_not_the_patients(text):
    (f,) = extract(text).findings
    assert f.experiencer == "other"
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert rep.codes == [] and rep.recommendations == []
    assert rep.impression.splitlines()[0] in ("No reportable abnormality stated.", "未见明确异常。")
    assert rep.impression.splitlines()[1].startswith(("Family history (not the patient): ", "家族史（非患者本人）："))


def test_a_relatives_nodule_gets_no_guideline_and_the_patients_does():
    text = "Mother had a lung nodule. 6 mm nodule in the right upper lobe."
    rep = build_report(ReportInput(text=text, modality="CT", patient_risk="low"), extract(text))
    assert [(f.experiencer, f.assertion) for f in rep.findings] == [("other", "present"), ("patient", "present")]
    assert [(r.category, r.finding_ids) for r in rep.recommendations] == [("solid single 6-8 mm", [1])]


@pytest.mark.parametrize("text, applies", [
    ("History of breast cancer. 7 mm nodule in the right upper lobe.", False),
    ("7 mm nodule in the right upper lobe in a patient with known lung cancer.", False),
    ("乳腺癌术后。右肺上叶结节约7mm。", False),
    ("Family history of lung cancer. 7 mm nodule in the right upper lobe.", True),
    ("No history of cancer. 7 mm nodule in the right upper lobe.", True),
])
def test_a_known_cancer_in_the_text_stops_fleischner(text, applies):
    rep = build_report(ReportInput(text=text, modality="CT", patient_risk="high"), extract(text))
    if applies:
        assert [r.guideline for r in rep.recommendations] == ["Fleischner 2017"] and rep.warnings == []
    else:
        assert rep.recommendations == [] and [w.kind for w in rep.warnings] == ["guideline_not_applied"]
        assert "known cancer stated in the text" in rep.warnings[0].message


def test_a_sub_millimetre_nodule_is_a_unit_slip_not_a_follow_up_bucket():
    rep = build_report(ReportInput(text="0.8 mm nodule in the right upper lobe.", modality="CT"),
                       extract("0.8 mm nodule in the right upper lobe."))
    assert [w.kind for w in rep.warnings] == ["implausible_size"] and rep.recommendations == []


@pytest.mark.parametrize("text", [
    "No acute cardiopulmonary abnormality other than an 8 mm nodule in the right upper lobe.",
    "No acute abnormality apart from 8 mm nodule in the right upper lobe.",
    "No acute process except for an 8 mm nodule in the right upper lobe.",
])
def test_no_acute_abnormality_other_than_keeps_the_nodule(text):
    (f,) = extract(text).findings
    assert (f.assertion, f.size.mm, f.laterality) == ("present", 8.0, "right")


def test_neither_nor_negates_both():
    assert _read("Neither effusion nor pneumothorax.") == [("effusion", "absent"), ("pneumothorax", "absent")]


def _screen(text: str, modality: str = "CT"):
    rep = build_report(ReportInput(text=text, modality=modality, screening=modality == "CT"), extract(text))
    return [r.category for r in rep.recommendations], [w.kind for w in rep.warnings]


@pytest.mark.parametrize("text, expected", [
    # a nodule above 30 mm (a mass by the glossary) is still Lung-RADS 4B, never "1 (no nodule)"
    ("4 cm nodule in the right upper lobe.", (["4B (solid 40 mm)"], ["mass_size"])),
    ("4 cm mass in the right upper lobe.", (["4B (solid 40 mm)"], [])),
    # a nodule without a usable size or a mass without a lung site: no category rather than a guessed one
    ("Right upper lobe nodule.", ([], ["guideline_not_applied"])),
    ("30 cm nodule in the right upper lobe.", ([], ["implausible_size", "guideline_not_applied"])),
    ("Mediastinal mass.", ([], ["guideline_not_applied"])),
    ("No nodules.", (["1 (no nodule)"], [])),
])
def test_screening_ct_never_calls_an_unclassified_lesion_category_1(text, expected):
    assert _screen(text) == expected


@pytest.mark.parametrize("text", ["4 cm mass in the right upper lobe.", "5 cm nodule in the right lung.",
                                  "Right lower lobe nodule."])
def test_any_lung_nodule_or_mass_on_a_radiograph_goes_to_ct(text):
    cats, _ = _screen(text, "radiograph")
    assert cats == ["radiograph nodule"]


def test_an_unsized_second_nodule_blocks_a_too_mild_fleischner_row():
    text = "5 mm nodule in the right upper lobe. Left lower lobe nodule."
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert rep.recommendations == [] and [(w.kind, w.finding_ids) for w in rep.warnings] == [("missing_size", [1])]
    text = "Multiple nodules: 7 mm ground-glass nodule and 4 mm solid nodule."
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert [r.category for r in rep.recommendations] == ["ground-glass multiple >=6 mm"]


@pytest.mark.parametrize("text", ["Fever: none. 6 mm nodule in the right upper lobe.", "发热：无。右肺上叶结节约6mm。"])
def test_a_negated_symptom_creates_nothing_and_negates_nothing_else(text):
    assert _read(text) == [("nodule", "present")]


@pytest.mark.parametrize("text, bound, category", [
    ("<6 mm nodule in the right upper lobe.", "<", "solid single <6 mm"),
    ("右肺上叶结节，直径小于6mm。", "<", "solid single <6 mm"),
    ("Nodule greater than 8 mm in the right upper lobe.", ">", "solid single >8 mm"),
    ("Nodule up to 8 mm in the right upper lobe.", None, "solid single 6-8 mm"),
    ("A 5-6 mm nodule in the right upper lobe.", None, "solid single 6-8 mm"),  # a range: its upper bound
])
def test_size_bounds_pick_the_fleischner_bucket(text, bound, category):
    rep = build_report(ReportInput(text=text, modality="CT", patient_risk="low"), extract(text))
    assert rep.findings[0].size.bound == bound and [r.category for r in rep.recommendations] == [category]


def test_size_bounds_in_lung_rads():
    text = "<6 mm solid nodule in the right upper lobe."
    rep = build_report(ReportInput(text=text, modality="CT", screening=True), extract(text))
    assert [r.category for r in rep.recommendations] == ["2 (solid 5.9 mm)"]


@pytest.mark.parametrize("text, expected", [
    ("右肺上叶结节，约7mm，建议随访。如有症状，复查CT排除肺炎。", [("nodule", "present"), ("pneumonia", "uncertain")]),
    ("如出现气胸，及时复查。", [("pneumothorax", "uncertain")]),
    ("If symptoms persist, consider CT to evaluate for pneumonia.", [("pneumonia", "uncertain")]),
    ("肺炎已排除。", [("pneumonia", "absent")]),
    ("已排除肺炎。", [("pneumonia", "absent")]),
])
def test_hypothetical_and_ruled_out_in_both_languages(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text, expected", [
    # found as regressions of the scope fixes above; a negated list with a verb at its end stays negated
    ("No focal consolidation, large pleural effusion, or pneumothorax is identified.",
     [("consolidation", "absent"), ("effusion", "absent"), ("pneumothorax", "absent")]),
    ("No acute, displaced rib fractures are demonstrated.", [("fracture", "absent")]),
    ("The opacity could be followed up after treatment of edema.", [("opacity", "present"), ("edema", "uncertain")]),
])
def test_scope_fixes_keep_ordinary_negated_lists(text, expected):
    assert _read(text) == expected
