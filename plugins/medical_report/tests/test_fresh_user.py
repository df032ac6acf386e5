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
