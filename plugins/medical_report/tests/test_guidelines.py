"""Fleischner 2017, Lung-RADS v2022, radiograph nodules and ICD-10 codes, through the report builder."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def report(text, **kw):
    item = ReportInput(text=text, **kw)
    return build_report(item, extract(item.text))


@pytest.mark.parametrize(("text", "risk", "category", "advice"), [
    ("4 mm solid nodule in the right upper lobe.", "low", "solid single <6 mm", "No routine follow-up."),
    ("4 mm solid nodule in the right upper lobe.", "high", "solid single <6 mm", "Optional CT at 12 months."),
    ("7 mm nodule in the left lower lobe.", "low", "solid single 6-8 mm",
     "CT at 6-12 months, then consider CT at 18-24 months."),
    ("7 mm nodule in the left lower lobe.", "high", "solid single 6-8 mm", "CT at 6-12 months, then CT at 18-24 months."),
    ("1.2 x 1.0 cm nodule in the left lower lobe.", "low", "solid single >8 mm",
     "Consider CT at 3 months, PET/CT, or tissue sampling."),
    ("Multiple solid nodules, the largest 7 mm in the right lower lobe.", "low", "solid multiple 6-8 mm",
     "CT at 3-6 months, then consider CT at 18-24 months."),
    ("8 mm ground-glass nodule in the right upper lobe.", "low", "ground-glass single >=6 mm",
     "CT at 6-12 months to confirm persistence, then CT every 2 years until 5 years."),
    ("8 mm part-solid nodule in the right upper lobe.", "high", "part-solid single >=6 mm",
     "CT at 3-6 months to confirm persistence; if unchanged and the solid component stays < 6 mm, annual CT for 5 years."),
    ("Multiple 4 mm ground-glass nodules in both lungs.", "low", "ground-glass multiple <6 mm",
     "CT at 3-6 months; if stable, consider CT at 2 and 4 years."),
])
def test_fleischner_2017(text, risk, category, advice):
    rep = report(text, modality="CT", patient_risk=risk)
    (rec,) = rep.recommendations
    assert (rec.guideline, rec.category, rec.text, rec.risk) == ("Fleischner 2017", category, advice, risk)
    assert "Radiology 2017;284(1):228-243" in rec.source


def test_fleischner_rounds_the_mean_diameter_to_whole_mm():
    (rec,) = report("8.4 x 8.2 mm solid nodule in the RUL.", modality="CT", patient_risk="low").recommendations
    assert rec.category == "solid single 6-8 mm"  # mean 8.3 -> 8 mm
    (rec,) = report("8.6 x 8.6 mm solid nodule in the RUL.", modality="CT", patient_risk="low").recommendations
    assert rec.category == "solid single >8 mm"


def test_unknown_risk_gives_the_low_and_the_high_risk_advice():
    recs = report("右肺下叶实性结节，直径约7mm。", modality="CT").recommendations
    assert [(r.risk, r.text) for r in recs] == [("low", "6-12个月复查CT，之后考虑18-24个月复查CT。"),
                                               ("high", "6-12个月复查CT，之后18-24个月复查CT。")]


def test_fleischner_exclusions_and_missing_size_warn():
    rep = report("7 mm nodule in the RUL.", modality="CT", age=30)
    assert rep.recommendations == [] and rep.warnings[0].kind == "guideline_not_applied"
    assert "age under 35" in rep.warnings[0].message
    rep = report("Nodule in the right upper lobe.", modality="CT")
    assert rep.recommendations == [] and [w.kind for w in rep.warnings] == ["missing_size"]
    rep = report("7 mm nodule in the RUL.")
    assert rep.recommendations == [] and [w.kind for w in rep.warnings] == ["guideline_not_applied"]


@pytest.mark.parametrize(("text", "category"), [
    ("Low-dose CT: 5 mm solid nodule in the RUL.", "2"),
    ("Low-dose CT: 7 mm solid nodule in the RUL.", "3"),
    ("Low-dose CT: new 7 mm solid nodule in the RUL.", "4A"),
    ("Low-dose CT: 16 mm solid nodule in the RUL.", "4B"),
    ("Low-dose CT: 20 mm ground-glass nodule in the RUL.", "2"),
    ("Low-dose CT: stable 9 mm solid nodule in the RUL.", "2"),
    ("Low-dose CT: no pulmonary nodules.", "1"),
    ("Low-dose CT: 12 mm part-solid nodule in the RUL, solid component 7 mm.", "4A"),
    ("Low-dose CT: 12 mm part-solid nodule in the RUL, solid component 4 mm.", "3"),
    ("Low-dose CT: new 12 mm part-solid nodule in the RUL, solid component 5 mm.", "4B"),
])
def test_lung_rads_for_screening_ct(text, category):
    rep = report(text, modality="CT", screening=True)
    (rec,) = rep.recommendations
    assert rec.guideline == "Lung-RADS v2022" and rec.category.split(" ")[0] == category
    assert rep.exam.screening


def test_screening_is_inferred_from_low_dose_ct_in_the_text():
    rep = report("低剂量CT筛查：右肺上叶新发实性结节，大小约0.7 x 0.6 cm。")
    assert rep.exam.modality == "CT" and rep.exam.screening
    assert rep.recommendations[0].category.startswith("4A") and rep.recommendations[0].text.startswith("3个月后")


def test_a_radiograph_nodule_leads_to_ct_not_a_fleischner_interval():
    rep = report("胸片显示右肺结节，直径约8mm")
    (rec,) = rep.recommendations
    assert rep.exam.modality == "radiograph" and rec.guideline == "CT for radiograph nodule"
    assert rec.text == "建议行胸部CT进一步检查。"
    (rec,) = report("8 mm nodule in the left lower lobe.", modality="radiograph", language="en").recommendations
    assert rec.text == "Further evaluation with chest CT is recommended."


def test_icd10_codes_by_language():
    rep = report("8 mm nodule in the left lower lobe. Small left pleural effusion. No pneumothorax.", modality="CT")
    assert [(c.code, c.system, c.name) for c in rep.codes] == [
        ("R91.1", "ICD-10-CM", "Solitary pulmonary nodule"),
        ("J90", "ICD-10-CM", "Pleural effusion, not elsewhere classified")]
    rep = report("双肺多发结节，最大约5mm。左侧胸腔积液。", modality="CT")
    assert [(c.code, c.system, c.name) for c in rep.codes] == [("R91", "ICD-10", "肺诊断性影像异常"),
                                                               ("J90", "ICD-10", "胸腔积液，不可归类在他处者")]
    assert [c.code for c in report("Multiple nodules in both lungs.", language="en").codes] == ["R91.8"]


def test_report_text_in_the_requested_language():
    rep = report("胸片显示右肺结节，直径约8mm", language="en")
    assert rep.language == "en" and rep.report_text.startswith("Exam: chest radiograph")
    assert "8 mm nodule, right lung" in rep.impression
    rep = report("There is an 8 mm nodule in the left lower lobe.", modality="CT", language="zh", patient_risk="low")
    assert rep.report_text.startswith("检查：胸部 CT") and "左肺下叶结节，约8 mm" in rep.impression
