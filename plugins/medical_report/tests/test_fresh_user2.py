"""Second fresh-user pass (30 Nov, afternoon): problems left by the first pass and found by trying new reports
(sentences written for these tests). Each test asserts the exact reading; each failed before its fix."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def _report(text: str, **kw):
    return build_report(ReportInput(text=text, **kw), extract(text))


@pytest.mark.parametrize("text, modality, region", [
    # an exam of the history came first and was taken as this exam (mammography: no nodule guideline at all)
    ("Screening mammogram last year. CT chest: 7 mm nodule in the right upper lobe.", "CT", "chest"),
    ("Clinical history: abnormal chest x-ray. CT chest: 7 mm nodule in the right upper lobe.", "CT", "chest"),
    ("CT chest. History: mammogram last year. Findings: 7 mm nodule in the right upper lobe.", "CT", "chest"),
    ("Chest x-ray 2 weeks ago showed pneumonia. CT chest today: 7 mm nodule in the right upper lobe.", "CT", "chest"),
    ("Abdominal ultrasound last year. Chest CT: 7 mm nodule in the right upper lobe.", "CT", "chest"),
    ("去年乳腺钼靶检查未见异常。胸部CT：右肺上叶结节，约7mm。", "CT", "chest"),
    ("外院胸片提示右下肺炎。胸部CT：右肺上叶结节，约7mm。", "CT", "chest"),
    # this exam named once, and an age's "old" or a section header before it change nothing
    ("65-year-old male, chest x-ray: 8 mm nodule in the right lower lobe.", "radiograph", "chest"),
    ("History: cough FINDINGS: CT chest shows a 7 mm nodule in the right upper lobe.", "CT", "chest"),
])
def test_an_exam_of_the_history_is_not_this_exam(text, modality, region):
    rep = _report(text, patient_risk="low")
    assert (rep.exam.modality, rep.exam.modality_source, rep.exam.body_region) == (modality, "text", region)
    expected = "Fleischner 2017" if modality == "CT" else "CT for radiograph nodule"
    assert [r.guideline for r in rep.recommendations] == [expected]


def test_an_exam_only_in_the_history_leaves_the_modality_unknown():
    rep = _report("Screening mammogram last year. 7 mm nodule in the right upper lobe.")
    assert rep.exam.modality is None and rep.recommendations == []
    assert [w.kind for w in rep.warnings] == ["guideline_not_applied"]
