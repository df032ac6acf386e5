"""A finding's ConText assertion and certainty grade reach every rendering of it (fresh-user check of 2 Dec, item 6:
``report_text`` had stated "Possible left lower lobe pneumonia. Cannot exclude small pneumothorax." as
``Findings: pneumonia, left lower lobe; pneumothorax``, and "Probable" as "Possible"). Sentences written for the
tests; each asserts the rendered text."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.certainty import HYPOTHETICAL_CUES, PROBABLE_CUES, UNLIKELY_CUES, certainty_of, hedged
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.lexicon import CUES
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def _report(text: str, **kw):
    return build_report(ReportInput(text=text, **kw), extract(text))


def _line(rep, head: str) -> str:
    return next(line for line in rep.report_text.splitlines() if line.startswith(head))


def test_the_fresh_user_report_keeps_both_hedges():
    rep = _report("Possible left lower lobe pneumonia. Cannot exclude small pneumothorax.")
    assert [(f.type, f.assertion, f.certainty) for f in rep.findings] == [
        ("pneumonia", "uncertain", "possible"), ("pneumothorax", "uncertain", "possible")]
    assert _line(rep, "Findings: ") == "Findings: possible pneumonia, left lower lobe; possible pneumothorax"
    assert _line(rep, "Negative for: ") == "Negative for: nothing stated"
    assert rep.impression.splitlines() == ["1. Possible pneumonia, left lower lobe.", "2. Possible pneumothorax."]
    assert rep.codes == []


def test_probable_is_not_possible():
    rep = _report("CT chest: Probable 6 mm nodule in the right upper lobe. No pleural effusion.")
    (nodule, effusion) = rep.findings
    assert (nodule.assertion, nodule.certainty, effusion.assertion, effusion.certainty) == (
        "uncertain", "probable", "absent", None)
    assert _line(rep, "Findings: ") == "Findings: probable 6 mm nodule, right upper lobe"
    assert _line(rep, "Negative for: ") == "Negative for: pleural effusion"
    assert rep.impression.splitlines()[0] == "1. Probable 6 mm nodule, right upper lobe."
    assert "ossible" not in rep.report_text and rep.recommendations == [] and rep.codes == []


@pytest.mark.parametrize(("text", "line", "certainty"), [
    # "is likely" after the finding: only where nothing but a site follows it (it had been no cue: present)
    ("Right lower lobe pneumonia is likely.", "Findings: probable pneumonia, right lower lobe", "probable"),
    ("Pneumonia is likely in the right lower lobe.", "Findings: probable pneumonia, right lower lobe", "probable"),
    ("Small effusions are likely.", "Findings: probable multiple pleural effusions", "probable"),
    ("The opacity is likely atelectasis.", "Findings: opacity; probable atelectasis", "probable"),
    ("Likely right lower lobe pneumonia.", "Findings: probable pneumonia, right lower lobe", "probable"),
    ("Less likely right lower lobe pneumonia.", "Findings: possible pneumonia, right lower lobe", "possible"),
    ("Small effusion may represent atelectasis.", "Findings: pleural effusion; possible atelectasis", "possible"),
    ("Pneumothorax is not excluded.", "Findings: possible pneumothorax", "possible"),
    ("Pneumonia is unlikely.", "Findings: pneumonia (unlikely)", "unlikely"),  # had been present
    ("Pneumothorax very unlikely.", "Findings: pneumothorax (unlikely)", "unlikely"),
    ("Evaluate for pneumothorax.", "Findings: pneumothorax (hypothetical, not reported as seen)", "hypothetical"),
])
def test_english_hedges_are_rendered_with_their_grade(text, line, certainty):
    rep = _report(text)
    assert _line(rep, "Findings: ") == line
    assert rep.findings[-1].certainty == certainty


@pytest.mark.parametrize("text", ["Right basilar opacity is likely infectious.",
                                  "Small nodule, unlikely to be clinically significant.",
                                  "Nodule unlikely to be significant."])
def test_is_likely_or_unlikely_before_an_interpretation_leaves_the_finding_present(text):
    (finding,) = extract(text).findings
    assert (finding.assertion, finding.certainty) == ("present", None)


def test_a_possible_small_nodule_in_chinese_is_possible():
    (nodule,) = extract("右肺可能小结节。").findings
    assert (nodule.assertion, nodule.certainty) == ("uncertain", "possible")


def test_an_unhedged_finding_next_to_a_hedged_one_stays_plain():
    rep = _report("There is a small right pleural effusion. Possible left lower lobe pneumonia. No pneumothorax.")
    assert _line(rep, "Findings: ") == "Findings: pleural effusion, right; possible pneumonia, left lower lobe"
    assert _line(rep, "Negative for: ") == "Negative for: pneumothorax"
    assert "pneumothorax" not in _line(rep, "Findings: ") and "pneumothorax" not in rep.impression


@pytest.mark.parametrize(("text", "line", "first_impression", "certainty"), [
    ("胸部CT：右肺下叶可疑结节，约6mm。", "所见：右肺下叶结节，约6 mm（待排）", "1. 右肺下叶结节，约6 mm（待排）。", "possible"),
    ("左肺下叶肺炎可能。", "所见：左肺下叶肺炎（待排）", "1. 左肺下叶肺炎（待排）。", "possible"),
    ("不除外少量气胸。", "所见：气胸（待排）", "1. 气胸（待排）。", "possible"),
    ("考虑右肺下叶肺炎。", "所见：右肺下叶肺炎（待排）", "1. 右肺下叶肺炎（待排）。", "possible"),
    ("右肺下叶肺炎可能性大。", "所见：右肺下叶肺炎（可能性大）", "1. 右肺下叶肺炎（可能性大）。", "probable"),
    ("右肺下叶肺炎可能性小。", "所见：右肺下叶肺炎（可能性小）", "1. 右肺下叶肺炎（可能性小）。", "unlikely"),  # had been 可能
    ("如有气胸，请复查。", "所见：气胸（假设情形，非本次所见）", "1. 气胸（假设情形，非本次所见）。", "hypothetical"),
])
def test_chinese_hedges_are_rendered_with_their_grade(text, line, first_impression, certainty):
    rep = _report(text)
    assert _line(rep, "所见：") == line
    assert rep.impression.splitlines()[0] == first_impression
    assert rep.findings[0].certainty == certainty and rep.codes == []


def test_chinese_negated_findings_are_only_negative_findings():
    rep = _report("胸部CT：右肺上叶结节，约7mm。左肺下叶可疑结节。未见胸腔积液及气胸。")
    assert _line(rep, "所见：") == "所见：右肺上叶结节，约7 mm；左肺下叶结节（待排）"
    assert _line(rep, "阴性所见：") == "阴性所见：胸腔积液、气胸"
    assert rep.impression.splitlines()[:2] == ["1. 右肺上叶结节，约7 mm。", "2. 左肺下叶结节（待排）。"]


def test_a_history_or_family_line_keeps_the_grade_and_drops_a_negation():
    rep = _report("Indication: possible pneumonia. Findings: 7 mm nodule in the right upper lobe.", modality="CT")
    assert "History or indication (not a finding of this exam): possible pneumonia" in rep.impression
    rep = _report("No family history of tuberculosis. Mother had pneumonia. 7 mm nodule in the right upper lobe.",
                  modality="CT")
    family = next(line for line in rep.impression.splitlines() if line.startswith("Family history"))
    assert family == "Family history (not the patient): pneumonia"


def test_every_graded_cue_is_an_uncertainty_cue_of_the_lexicon():
    unc = {w.lower() for key in ("unc_pre", "unc_post") for forms in CUES[key] for w in forms}
    graded = (PROBABLE_CUES, UNLIKELY_CUES, HYPOTHETICAL_CUES)
    assert all(cues <= unc for cues in graded) and sum(map(len, graded)) == len(set().union(*graded))


def test_certainty_of_and_hedged_directly():
    text = "not likely effusion; probably nodule; ｌｉｋｅｌｙ mass"
    assert certainty_of(text, 4, 10) == "possible"
    assert certainty_of(text, 21, 29) == "probable"
    assert certainty_of(text, 38, 44) == "probable"
    assert hedged("nodule", "present", None, "en") == "nodule"
    assert hedged("nodule", "uncertain", None, "en", capital=True) == "Possible nodule"
    with pytest.raises(ValueError):
        hedged("nodule", "absent", None, "en")
