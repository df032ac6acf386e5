"""Lung zones are not lobes (30 Nov): a chest radiograph names zones ("right lower lung", "left midlung", "lung
bases", 右下肺野, 左中肺野), where a shadow projects on the film; a lobe is an anatomical unit and is reported only
where the text says lobe / 叶 or lingula. "Right lower lung" and 右下肺(野) had been read as the right lower lobe.
"Left middle lobe" names no lobe (the left lung has an upper and a lower lobe, the lingula belongs to the upper one).
Sentences written for these tests."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import Anatomy, MedicalReport, ReportInput


def _report(text: str, **kw):
    return build_report(ReportInput(text=text, **kw), extract(text))


def _sites(rep, i: int = 0) -> list[tuple[str, str | None, str | None]]:
    return [(a.key, a.kind, a.laterality) for a in rep.findings[i].anatomy]


@pytest.mark.parametrize("text, key, side, impression", [
    ("Chest radiograph: 8 mm nodule in the right lower lung.", "right_lower_lung", "right",
     "8 mm nodule, right lower lung zone"),
    ("Chest radiograph: 8 mm nodule in the left lower lung zone.", "left_lower_lung", "left",
     "8 mm nodule, left lower lung zone"),
    ("Chest radiograph: Right upper zone 8 mm nodule.", "right_upper_lung", "right",
     "8 mm nodule, right upper lung zone"),
    ("Chest radiograph: 8 mm nodule projecting over the left upper lung.", "left_upper_lung", "left",
     "8 mm nodule, left upper lung zone"),
    ("Chest radiograph: 8 mm nodule in the left midlung.", "left_mid_lung", "left", "8 mm nodule, left midlung"),
    ("Chest radiograph: 8 mm nodule in the right middle zone.", "right_mid_lung", "right",
     "8 mm nodule, right midlung"),
])
def test_an_english_zone_is_a_zone_not_a_lobe(text, key, side, impression):
    rep = _report(text)
    assert _sites(rep) == [(key, "zone", side)]
    assert rep.findings[0].laterality == side
    assert impression in rep.impression and "lobe" not in rep.impression
    # still a lung nodule on a radiograph: the CT step
    assert [r.guideline for r in rep.recommendations] == ["CT for radiograph nodule"]


@pytest.mark.parametrize("text, key, side, impression", [
    ("胸片：右下肺野结节，约8mm。", "right_lower_lung", "right", "右下肺野结节，约8 mm"),
    ("胸片：右下肺结节，约8mm。", "right_lower_lung", "right", "右下肺野结节，约8 mm"),
    ("胸片：右肺下野结节，约8mm。", "right_lower_lung", "right", "右下肺野结节，约8 mm"),
    ("胸片：右上肺野结节，约8mm。", "right_upper_lung", "right", "右上肺野结节，约8 mm"),
    ("胸片：左上肺结节，约8mm。", "left_upper_lung", "left", "左上肺野结节，约8 mm"),
    ("胸片：左中肺野结节，约8mm。", "left_mid_lung", "left", "左中肺野结节，约8 mm"),
    ("胸片：右中肺结节，约8mm。", "right_mid_lung", "right", "右中肺野结节，约8 mm"),
])
def test_a_chinese_zone_is_a_zone_not_a_lobe(text, key, side, impression):
    rep = _report(text)
    assert _sites(rep) == [(key, "zone", side)]
    assert impression in rep.impression and "叶" not in rep.impression
    assert [r.guideline for r in rep.recommendations] == ["CT for radiograph nodule"]


@pytest.mark.parametrize("text, ftype, sites", [
    ("Chest radiograph: patchy opacity at the lung bases.", "opacity", [("lung_base", "zone", None)]),
    ("Chest radiograph: opacities in the upper lungs.", "opacity", [("upper_lung", "zone", None)]),
    ("Chest radiograph: atelectasis in the right base.", "atelectasis", [("lung_base", "zone", "right")]),
    ("胸片：左下肺炎。", "pneumonia", [("left_lower_lung", "zone", "left")]),  # the shared 肺 of 左下肺 + 肺炎
    ("胸片：两下肺野斑片影。", "opacity", [("lower_lung", "zone", "bilateral")]),
    ("胸片：双上肺斑片影。", "opacity", [("upper_lung", "zone", "bilateral")]),
])
def test_bases_and_unsided_zones_are_zones(text, ftype, sites):
    rep = _report(text)
    assert [f.type for f in rep.findings] == [ftype]
    assert _sites(rep) == sites


@pytest.mark.parametrize("text, key", [
    ("CT chest: 7 mm nodule in the right lower lobe.", "right_lower_lobe"),
    ("CT chest: RLL 7 mm nodule.", "right_lower_lobe"),
    ("CT chest: 7 mm nodule in the lingula.", "lingula"),
    ("CT chest: 7 mm nodule in the left upper lobe.", "left_upper_lobe"),
    ("胸部CT：右肺下叶结节，约7mm。", "right_lower_lobe"),
    ("胸部CT：右下叶结节，约7mm。", "right_lower_lobe"),
    ("胸部CT：右下肺叶结节，约7mm。", "right_lower_lobe"),  # 叶 written: a lobe (not the zone 右下肺 and a stray 叶)
    ("胸部CT：左肺舌段结节，约7mm。", "lingula"),
])
def test_a_lobe_is_a_lobe_only_where_the_text_says_lobe(text, key):
    rep = _report(text, patient_risk="low")
    assert [(a.key, a.kind) for a in rep.findings[0].anatomy] == [(key, "lobe")]
    assert [r.category for r in rep.recommendations] == ["solid single 6-8 mm"]


@pytest.mark.parametrize("text, written, lang, shown", [
    ("CT chest: 7 mm nodule in the left middle lobe.", "left middle lobe", "en",
     "7 mm nodule, left lung (written 'left middle lobe': no such lobe)"),
    ("CT chest: 7 mm nodule in the left-sided middle lobe.", "left-sided middle lobe", "en",
     "7 mm nodule, left lung (written 'left-sided middle lobe': no such lobe)"),
    ("CT chest: 7 mm nodule in the right lingula.", "right lingula", "en",
     "7 mm nodule, right lung (written 'right lingula': no such lobe)"),
    ("胸部CT：左肺中叶结节，约7mm。", "左肺中叶", "zh", "左肺（原文“左肺中叶”，无此肺叶）结节，约7 mm"),
    ("胸部CT：左中叶结节，约7mm。", "左中叶", "zh", "左肺（原文“左中叶”，无此肺叶）结节，约7 mm"),
])
def test_a_lobe_that_does_not_exist_keeps_its_text_and_is_flagged(text, written, lang, shown):
    rep = _report(text, patient_risk="low")
    (site,) = rep.findings[0].anatomy
    side = "right" if "right" in written else "left"
    assert (site.key, site.kind, site.laterality, site.nonexistent) == (f"{side}_lung", "lung", side, True)
    assert site.text == written == text[site.start:site.end]
    (warning,) = [w for w in rep.warnings if w.kind == "nonexistent_site"]
    assert warning.finding_ids == [rep.findings[0].id] and f"'{written}' names no lobe" in warning.message
    assert shown in rep.impression
    # still a nodule of that lung: its Fleischner row, neither a made-up lobe nor a guessed one
    assert [r.category for r in rep.recommendations] == ["solid single 6-8 mm"]
    assert rep.language == lang


def test_the_valid_left_sites_raise_no_nonexistent_site_warning():
    for text in ("CT chest: 7 mm nodule in the left upper lobe.", "Chest radiograph: 7 mm nodule in the left midlung.",
                 "CT chest: 7 mm nodule in the lingula.", "胸片：左中肺野结节，约7mm。", "胸部CT：右肺中叶结节，约7mm。"):
        rep = _report(text)
        assert not [w for w in rep.warnings if w.kind == "nonexistent_site"], text
        assert not any(a.nonexistent for f in rep.findings for a in f.anatomy), text


def test_a_zone_restated_in_the_impression_is_one_nodule():
    rep = _report("Chest radiograph: 8 mm nodule in the right lower lung. IMPRESSION: 8 mm right lower lung nodule.")
    assert [(f.type, f.same_as) for f in rep.findings] == [("nodule", None), ("nodule", 0)]
    # a zone restated as the lobe of the same name (or the other way round) is the same nodule; its sites stay
    rep = _report("Chest radiograph: 8 mm nodule in the right lower lung. IMPRESSION: 8 mm right lower lobe nodule.")
    assert [(f.same_as, [a.key for a in f.anatomy]) for f in rep.findings] == [
        (None, ["right_lower_lung"]), (0, ["right_lower_lobe"])]
    rep = _report("胸部CT：左上肺叶结节，约7mm。印象：左上肺野结节，约7mm。")
    assert [f.same_as for f in rep.findings] == [None, 0]
    # a zone and another lobe stay two nodules
    rep = _report("Chest radiograph: 8 mm nodule in the right lower lung. IMPRESSION: 8 mm right upper lobe nodule.")
    assert [f.same_as for f in rep.findings] == [None, None]
    rep = _report("胸部CT：右上肺结节，约7mm。印象：右上肺结节，约7mm。", patient_risk="low")
    assert [f.same_as for f in rep.findings] == [None, 0]
    assert [r.category for r in rep.recommendations] == ["solid single 6-8 mm"]  # not the multiple-nodule row


def test_the_output_schema_only_adds_fields():
    # the former fields keep their names and defaults; kind and nonexistent are new, filled from the key
    old = {"key": "right_lower_lobe", "laterality": "right", "text": "right lower lobe", "start": 0, "end": 16,
           "source": "rules"}
    a = Anatomy(**old)
    assert a.model_dump() == {**old, "kind": "lobe", "nonexistent": False}
    assert Anatomy(key="pleura", source="implied").kind == "other"
    assert Anatomy(key="model_span", source="model").kind is None
    schema = MedicalReport.model_json_schema()
    kinds = schema["$defs"]["ReportWarning"]["properties"]["kind"]["enum"]
    assert {"conflict", "guideline_incomplete", "nonexistent_site"} <= set(kinds)
