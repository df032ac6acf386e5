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
