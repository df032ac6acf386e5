"""Fixes made after reading errors on the development part of IU X-ray (benchmarks/medical_eval.py): nodular
opacities (Hansell 2008), texture adjectives, sizes in the next sentence (anaphora), a pneumothorax's apex
distance, and the exam region named inside a modality word (胸部CT)."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def report(text, **kw):
    item = ReportInput(text=text, **kw)
    return build_report(item, extract(item.text))


# ---- nodular opacity: an opacity with the attribute nodular, not a definite nodule ---------------------------------

@pytest.mark.parametrize("text", ["There is a 6 mm nodular opacity in the right upper lobe.",
                                  "6 mm nodular density in the right upper lobe."])
def test_a_nodular_opacity_on_a_radiograph_is_an_opacity_that_still_leads_to_ct(text):
    rep = report(text, modality="radiograph")
    (f,) = rep.findings
    assert (f.type, f.attributes, f.assertion, f.size.mm) == ("opacity", ["nodular"], "present", 6.0)
    assert text[f.start:f.end].lower().startswith("nodular ")
    (rec,) = rep.recommendations
    assert (rec.guideline, rec.category, rec.finding_ids) == ("CT for radiograph nodule", "radiograph nodular opacity",
                                                              [f.id])
    assert rec.text == "Further evaluation with chest CT is recommended."
    assert rep.codes == []  # not coded as a solitary pulmonary nodule (R91.1)
    assert "6 mm nodular opacity, right upper lobe" in rep.report_text


def test_a_nodular_opacity_on_ct_gets_no_fleischner_row_but_a_warning():
    rep = report("8 mm nodular opacity in the right upper lobe.", modality="CT", patient_risk="low")
    assert rep.recommendations == []
    (w,) = [w for w in rep.warnings if w.kind == "guideline_not_applied"]
    assert w.finding_ids == [0] and "not a definite nodule" in w.message


def test_a_nodular_opacity_on_screening_ct_is_never_lung_rads_1():
    rep = report("8 mm nodular opacity in the right upper lobe.", modality="CT", screening=True)
    assert rep.recommendations == []
    assert any(w.kind == "guideline_not_applied" and 0 in w.finding_ids for w in rep.warnings)


def test_a_nodule_beside_a_nodular_opacity_keeps_its_fleischner_row_on_ct():
    rep = report("7 mm solid nodule in the left lower lobe. Nodular opacity in the right midlung.", modality="CT",
                 patient_risk="low")
    assert [r.category for r in rep.recommendations] == ["solid single 6-8 mm"]
    assert [f.type for f in rep.findings] == ["nodule", "opacity"]


def test_a_negated_nodular_opacity_is_absent_and_leads_to_nothing():
    rep = report("No nodular opacity.", modality="radiograph")
    (f,) = rep.findings
    assert (f.type, f.assertion) == ("opacity", "absent")
    assert rep.recommendations == [] and rep.codes == []


def test_chinese_nodular_shadow_is_an_opacity_and_a_plain_nodule_stays_a_nodule():
    (f,) = extract("右肺上叶结节状影").findings
    assert (f.type, f.attributes, f.text) == ("opacity", ["nodular"], "结节状影")
    (g,) = extract("右肺上叶结节影").findings
    assert g.type == "nodule"


@pytest.mark.parametrize(("text", "ftype", "attribute"), [
    ("Nodular right lower lobe opacity.", "opacity", "nodular"),
    ("Diffuse reticulonodular opacities.", "opacity", "reticulonodular"),
    ("Biapical fibronodular pleural thickening.", "pleural_thickening", "fibronodular"),
])
def test_texture_adjectives_are_attributes_and_make_no_nodule(text, ftype, attribute):
    rep = report(text, modality="radiograph")
    assert [(f.type, f.attributes) for f in rep.findings] == [(ftype, [attribute])]
    categories = [r.category for r in rep.recommendations]
    # a nodular opacity goes to CT; an interstitial pattern or scarring is no nodule
    assert categories == (["radiograph nodular opacity"] if attribute == "nodular" else [])


# ---- sizes in the sentence after the finding ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "ftype", "size_text", "mm"), [
    ("A mass is present in the left midlung zone. This measures approximately 3.2 cm in diameter.", "mass", "3.2 cm",
     32.0),
    ("Multiple calcified granulomas. The largest measures 3.5 mm.", "granuloma", "3.5 mm", 3.5),
    ("There is a focal density over the right first rib. It is approximately 1.2 cm in diameter.", "opacity",
     "1.2 cm", 12.0),
    ("Nodule in the right upper lobe. The nodule measures 8 mm.", "nodule", "8 mm", 8.0),
    ("右肺上叶见一结节。其大小约8mm。", "nodule", "8mm", 8.0),
])
def test_a_size_in_the_next_sentence_belongs_to_the_finding_the_anaphor_names(text, ftype, size_text, mm):
    found = [f for f in extract(text).findings if f.size is not None]
    (f,) = found
    assert (f.type, f.size.text, f.size.mm) == (ftype, size_text, mm)
    first_stop = min(i for i in (text.find("."), text.find("。")) if i >= 0)
    assert text[f.size.start:f.size.end] == size_text and f.size.start > first_stop  # offsets in the 2nd sentence


@pytest.mark.parametrize("text", [
    "Nodule in the right upper lobe. The aorta measures 3 cm.",   # no anaphor: the aorta's size
    "The lungs are clear. It measures 3 cm.",                     # no lesion before
    "XXXX XXXX. This measures 3 cm.",                             # de-identification tokens name nothing
    "Nodule in the right upper lobe. Heart size normal. This measures 3 cm.",  # only the sentence just before
    "右肺上叶见一结节。心影不大。其大小约8mm。",
])
def test_an_anaphoric_size_without_a_lesion_just_before_is_attached_to_nothing(text):
    ex = extract(text)
    assert all(f.size is None for f in ex.findings)
    assert [f.type for f in ex.findings] == (["nodule"] if text.startswith(("Nodule", "右肺")) else [])


def test_a_pneumothorax_measured_from_the_apex_has_that_size_and_no_other_finding_takes_it():
    text = "Small left apical pneumothorax, now measuring approximately 0.9 cm from the thoracic apex."
    (f,) = extract(text).findings
    assert (f.type, f.size.mm, f.size.text) == ("pneumothorax", 9.0, "0.9 cm")
    (g,) = extract("8 mm nodule. It lies 2 cm from the apex.").findings
    assert g.type == "nodule" and g.size.mm == 8.0  # a distance is no nodule size
    assert extract("Tube tip 3 cm above the carina. No pneumothorax.").findings[0].size is None


# ---- exam region inside the modality word ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "modality"), [("胸部CT示右肺上叶结节", "CT"), ("胸片示右肺结节", "radiograph"),
                                                ("Chest x-ray: 8 mm nodule in the right lung.", "radiograph"),
                                                ("CT chest: 8 mm nodule in the right lung.", "CT")])
def test_the_region_named_inside_the_modality_word_is_read(text, modality):
    rep = report(text)
    assert (rep.exam.modality, rep.exam.modality_source) == (modality, "text")
    assert (rep.exam.body_region, rep.exam.body_region_source) == ("chest", "text")


def test_a_bare_ct_names_no_region_from_the_text():
    rep = report("CT示肝脏囊肿")
    assert rep.exam.modality == "CT" and rep.exam.body_region_source != "text"


# ---- a nodule or nodular opacity the report itself explains as benign: no CT step -------------------------------

@pytest.mark.parametrize(("text", "explanation"), [
    ("Nodular density overlying the anterior left 4th rib represents a healing rib fracture.",
     "represents a healing rib fracture"),
    ("Nodular densities consistent with chronic granulomatous disease.",
     "consistent with chronic granulomatous disease"),
    ("8 mm nodule in the right upper lobe consistent with a granuloma.", "consistent with a granuloma"),
])
def test_a_lesion_the_report_explains_as_benign_gets_no_ct_step_but_a_warning_that_says_why(text, explanation):
    rep = report(text, modality="radiograph")
    assert rep.recommendations == []
    (w,) = [w for w in rep.warnings if w.kind == "guideline_not_applied"]
    assert f"('{explanation}')" in w.message and w.finding_ids == [0]
    assert rep.findings[0].assertion == "present"  # still reported as stated


@pytest.mark.parametrize("text", [
    "Nodular opacity over the upper lungs may represent overlying telemetry leads.",   # hedged
    "3-4 mm nodular opacity in the right lung is probably a small calcified granuloma.",  # no linking verb
    "4 cm mass in the right upper lobe representing a vascular malformation.",          # a mass always goes to CT
    "Nodular opacity in the right upper lobe. Old healed rib fractures on the left.",   # another sentence
])
def test_a_hedged_or_unrelated_explanation_keeps_the_ct_step(text):
    rep = report(text, modality="radiograph")
    assert [r.guideline for r in rep.recommendations] == ["CT for radiograph nodule"]
