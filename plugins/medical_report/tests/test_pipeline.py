"""Taskflow("medical_report") end to end: the shipped bundle, model spans beside the rules, options, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sectorflow import ConfigError, InvalidInputError, Taskflow

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "medical_report" / "reports.jsonl"


@pytest.fixture(scope="module")
def tf():
    return Taskflow("medical_report")


def test_issue_examples_through_taskflow(tf):
    zh, en = tf([{"text": "胸片显示右肺结节，直径约8mm"},
                 {"text": "There is an 8 mm nodule in the left lower lobe.", "modality": "CT", "patient_risk": "low"}])
    assert zh.language == "zh" and zh.exam.modality == "radiograph" and zh.exam.modality_source == "text"
    (f,) = zh.findings
    assert (f.type, f.size.mm, f.laterality, f.model_agrees) == ("nodule", 8.0, "right", True)
    assert zh.recommendations[0].text == "建议行胸部CT进一步检查。" and zh.codes[0].code == "R91"
    assert en.exam.modality_source == "caller" and en.recommendations[0].category == "solid single 6-8 mm"
    assert zh.meta.model_name == "span-tagger-bigru" and len(zh.meta.bundle_sha256) == 64
    assert {(s.label, s.text) for s in en.model_spans} >= {("FIND", "nodule"), ("ANAT", "left lower lobe")}


def test_rules_decide_the_same_findings_with_or_without_the_model(tf):
    items = [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()]
    with_model = tf(items)
    rules_only = Taskflow("medical_report", use_model=False)(items)
    for a, b in zip(with_model, rules_only):
        strip = lambda r: [f.model_dump(exclude={"model_agrees", "anatomy"}) for f in r.findings]
        assert strip(a) == strip(b) and a.recommendations == b.recommendations
        assert b.model_spans == [] and all(f.model_agrees is None for f in b.findings)
    assert with_model[5].language == "zh" and with_model[5].report_text.startswith("检查：胸部 CT")
    assert with_model[3].recommendations[0].guideline == "Lung-RADS v2022"
    assert with_model[4].findings[-1].temporality == "prior"


def test_a_tagger_span_the_rules_do_not_know_is_only_a_warning(tf):
    from sectorflow_medical_report.extract import extract
    from sectorflow_medical_report.pipeline import combine

    text = "Bronchial wall thickening in the right lower lobe."
    ex = extract(text)
    spans = combine(text, ex, [(0, 25, "FIND"), (33, 48, "ANAT")])
    assert ex.findings == [] and spans[0].finding_id is None
    from sectorflow_medical_report.report import build_report
    from sectorflow_medical_report.schema import ReportInput

    rep = build_report(ReportInput(text=text), ex, spans)
    assert rep.findings == [] and [w.kind for w in rep.warnings] == ["unrecognised_span"]


def test_bad_input_and_options_are_typed_errors(tf):
    with pytest.raises(InvalidInputError):
        tf([{"text": ""}])
    with pytest.raises(InvalidInputError):
        tf([{"text": "nodule", "modality": "x-ray"}])
    with pytest.raises(ConfigError, match="use_model"):
        Taskflow("medical_report", use_model="yes")


def test_the_registered_examples_run(tf):
    from sectorflow_medical_report.plugin import EXAMPLES

    reports = tf(list(EXAMPLES))
    assert [len([f for f in r.findings if f.assertion == "present"]) for r in reports] == [1, 1, 1]
    assert [r.recommendations[0].guideline for r in reports] == ["CT for radiograph nodule", "Fleischner 2017",
                                                                 "Lung-RADS v2022"]


def test_model_spans_are_whole_words_and_never_deidentification_tokens():
    text = "The heart is normal in size. XXXX. No focal consolidation."
    report = Taskflow("medical_report")(text)
    for span in report.model_spans:
        assert span.text == text[span.start:span.end]
        assert set(span.text.upper()) - {"X"}, span
        assert span.start == 0 or not text[span.start - 1].isalnum(), span
        assert span.end == len(text) or not text[span.end].isalnum(), span
        assert len(span.text.strip()) >= 2, span
    assert [(f.type, f.assertion) for f in report.findings] == [("consolidation", "absent")]


@pytest.mark.parametrize(("text", "first_line"), [
    ("Stable appearance.", "Exam: not stated"),
    ("Lungs are clear.", "Exam: chest"),
    ("CT chest: no pleural effusion.", "Exam: chest CT"),
    ("右肺结节，直径约8mm。", "检查：胸部"),
])
def test_the_exam_line_names_what_is_known_once(text, first_line):
    report = Taskflow("medical_report")(text)
    assert report.report_text.splitlines()[0] == first_line
