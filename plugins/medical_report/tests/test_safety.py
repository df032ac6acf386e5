"""The issue's safety rules, one test each, plus the warnings that replace silent guesses."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.lexicon import lexicon
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput

NORMAL = [
    "The cardiac silhouette and mediastinum size are within normal limits. Lungs are clear.",
    "Heart size normal. Well-expanded and clear lungs. Mediastinal contour within normal limits.",
    "心影大小正常，双肺纹理清晰，纵隔居中。",
    "Normal chest x-XXXX.",
]


@pytest.mark.parametrize("text", NORMAL)
def test_never_reports_a_finding_the_input_does_not_state(text):
    assert extract(text).findings == []
    rep = build_report(ReportInput(text=text, modality="radiograph"), extract(text))
    assert rep.findings == [] and rep.recommendations == [] and rep.codes == []


def test_every_finding_is_a_lexicon_surface_at_its_offsets():
    text = ("Stable 5 mm nodule in the RUL. No pneumothorax. Small left pleural effusion. "
            "右肺下叶见磨玻璃结节，约6mm；左侧少量胸腔积液。")
    table = lexicon().table
    for f in extract(text).findings:
        assert text[f.start:f.end] == f.text
        assert any(e.kind == "finding" and e.key == f.type for e in table[f.text.lower()])


def test_a_negated_finding_is_reported_absent_and_gets_no_code_or_recommendation():
    text = "No pulmonary nodules are identified. No pleural effusion."
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert [(f.type, f.assertion) for f in rep.findings] == [("nodule", "absent"), ("effusion", "absent")]
    assert rep.codes == [] and rep.recommendations == []


def test_a_later_no_acute_process_does_not_negate_an_earlier_specific_finding():
    for text in ("8 mm nodule in the right upper lobe. No acute cardiopulmonary process.",
                 "8 mm nodule in the right upper lobe; no acute process.",
                 "右肺上叶结节，约8mm。未见急性病变。"):
        (f,) = extract(text).findings
        assert (f.type, f.assertion) == ("nodule", "present")


def test_deidentification_tokens_create_nothing():
    ex = extract("XXXX XXXX. The XXXX is XXXX. XXXX mm XXXX in the XXXX.")
    assert ex.findings == [] and ex.modality is None
    (f,) = extract("XXXX-year-old. XXXX nodule in the XXXX lobe.").findings
    assert f.size is None and f.anatomy[0].source == "implied"


def test_an_implausible_size_warns_and_gets_no_guideline():
    text = "A 30 cm nodule in the right upper lobe."
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert [w.kind for w in rep.warnings] == ["implausible_size"] and rep.recommendations == []
    text = "A 4.5 cm nodule in the right upper lobe."
    rep = build_report(ReportInput(text=text, modality="CT"), extract(text))
    assert [w.kind for w in rep.warnings] == ["mass_size"] and rep.recommendations == []


def test_conflicting_statements_warn():
    ex = extract("Small right pleural effusion. No pleural effusion.")
    assert [w.kind for w in ex.warnings] == ["conflict"]
    ex = extract("Cardiomegaly. Heart size is normal.")
    assert [w.kind for w in ex.warnings] == ["conflict"]
    ex = extract("右侧胸腔积液。未见胸腔积液。")
    assert [w.kind for w in ex.warnings] == ["conflict"]


def test_statements_that_do_not_conflict_do_not_warn():
    for text in ("No new nodules. Stable 5 mm nodule in the right upper lobe.",
                 "Right pleural effusion. No left pleural effusion.",
                 "2 cm calcified granuloma in the right midlung. No other nodules or masses."):
        assert extract(text).warnings == [], text


@pytest.mark.parametrize("text", ["CT胸部：未见结节。", "所见：无结节。", "肺内：未见结节", "胸片：未见明确结节。",
                                  "CT胸部：无明确结节。", "CT胸部：未见明确结节影。", "肺结节：无", "右肺结节：未见"])
def test_a_negation_after_a_full_width_colon_is_absent_with_no_code(text):
    # "Header：未见 X" (the usual Chinese report layout) was reported as a present nodule with R91: the post-cue
    # "：未见" took the characters of the pre-cue "未见" and only looked backwards
    found = extract(text).findings
    assert [f.assertion for f in found] == ["absent"]
    rep = build_report(ReportInput(text=text), extract(text))
    assert rep.codes == [] and rep.recommendations == []


def test_a_heading_colon_does_not_negate_what_it_introduces():
    assert [f.assertion for f in extract("CT胸部：右肺上叶结节，直径约8mm。").findings] == ["present"]
    assert [(f.text, f.assertion) for f in extract("胸部CT：未见胸腔积液，右肺结节8mm。").findings] == \
        [("胸腔积液", "absent"), ("结节", "present")]


@pytest.mark.parametrize("text", ["右肺上叶结节：无增大，直径8mm", "结节：无钙化，直径8mm", "CT胸部：结节：未见增大，大小约7mm",
                                  "肺结节：无明显变化"])
def test_a_negated_change_or_attribute_after_the_colon_keeps_the_finding_present(text):
    # "结节：无增大" negates the growth, not the nodule (it was reported absent, with no code or recommendation)
    assert [(f.text, f.assertion) for f in extract(text).findings] == [("结节", "present")]
