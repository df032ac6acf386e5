"""Inputs a hospital IT engineer tried as a fresh user (sentences written for these tests), each a failure found
before the fix: the exact reading is asserted."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput
from sectorflow_medical_report.text import find_sizes


def _report(text: str, **kw):
    return build_report(ReportInput(text=text, **kw), extract(text))


@pytest.mark.parametrize("text, size_text, mm", [
    ("胸部CT：右肺上叶实性结节，大小约８ｍｍ。", "８ｍｍ", 8.0),
    ("胸部CT：右肺上叶结节，大小约６－８ｍｍ。", "６－８ｍｍ", 8.0),
    ("胸部CT：右肺上叶结节，大小约１．２×１．０ｃｍ。", "１．２×１．０ｃｍ", 11.0),
    ("胸部CT：右肺上叶结节，大小约８毫米。", "８毫米", 8.0),
])
def test_full_width_digits_and_units_are_sizes(text, size_text, mm):
    # full-width digits (common from Chinese input methods) had given no size: missing_size, no Fleischner row
    (f,) = extract(text).findings
    assert f.size is not None and f.size.text == size_text and f.size.mm == mm
    assert text[f.size.start:f.size.end] == size_text
    rep = _report(text)
    assert [w.kind for w in rep.warnings] == []
    assert rep.recommendations and rep.recommendations[0].guideline == "Fleischner 2017"


def test_full_width_modality_and_finding_words_keep_the_written_surface():
    text = "ＣＴ：右肺上叶结节，约７ｍｍ。"
    ex = extract(text)
    assert ex.modality == "CT"
    (f,) = ex.findings
    assert (f.text, f.size.mm, f.size.text) == ("结节", 7.0, "７ｍｍ")


def test_find_sizes_keeps_the_written_text_and_offsets():
    (sz,) = find_sizes("约８ｍｍ")
    assert (sz.start, sz.end, sz.text, sz.axes_mm, sz.mm) == (1, 4, "８ｍｍ", [8.0], 8.0)


@pytest.mark.parametrize("text, category, advice", [
    # the ">" closing an HTML tag had read as "greater than": an 8 mm nodule went to the >8 mm row
    ("<p>CT chest: There is a <b>8 mm</b> nodule in the right upper lobe.</p>", "solid single 6-8 mm",
     "CT at 6-12 months, then consider CT at 18-24 months."),
    ("<td>CT chest</td><td>5 mm nodule in the right upper lobe</td>", "solid single <6 mm", "No routine follow-up."),
    # a real bound still counts
    ("CT chest: nodule >8 mm in the right upper lobe.", "solid single >8 mm",
     "Consider CT at 3 months, PET/CT, or tissue sampling."),
])
def test_an_html_tag_is_no_size_bound(text, category, advice):
    rep = _report(text, patient_risk="low")
    (f,) = rep.findings
    assert f.size.bound == (">" if "nodule >8" in text else None)
    (rec,) = rep.recommendations
    assert (rec.category, rec.text) == (category, advice)

