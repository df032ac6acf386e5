"""Assertion scopes found missing while reading the nodule errors of IU X-ray's development part (issue 7): a
negation written after the finding ("is not evident"), a finding seen poorly ("not well seen"), "interval
resolution of", "question", and numbered impression items written without a full stop. Every sentence here is
written for the test, none is copied from a report."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput
from sectorflow_medical_report.text import sentences


def report(text, **kw):
    item = ReportInput(text=text, **kw)
    return build_report(item, extract(item.text))


def nodules(text):
    return [f for f in extract(text).findings if f.type == "nodule"]


# ---- negations after the finding: "not" alone only looks forward ---------------------------------------------------

@pytest.mark.parametrize("text,cue", [
    ("The left upper lobe nodule described last year is not evident today.", "not evident"),
    ("A right basilar nodule is no longer apparent.", "no longer apparent"),
    ("The small lingular nodule is not appreciated on this examination.", "not appreciated"),
    ("The nodule reported on the outside CT is not visible on these radiographs.", "not visible"),
    ("A discrete nodule cannot be identified.", "cannot be identified"),
    ("The right apical nodule is not demonstrated on the current film.", "not demonstrated"),
])
def test_a_negation_after_the_nodule_makes_it_absent_with_no_code_or_ct(text, cue):
    (f,) = nodules(text)
    assert (f.assertion, f.cue.text, f.cue.category) == ("absent", cue, "neg_post")
    rep = report(text, modality="radiograph")
    assert rep.recommendations == [] and rep.codes == []


def test_a_post_negation_stops_at_a_comma_and_at_but():
    (f,) = nodules("A 7 mm nodule in the right upper lobe, not evident on the prior study, is new.")
    assert f.assertion == "present" and f.size.mm == 7.0
    found = extract("The effusion is not evident but a 6 mm nodule is seen in the left base.").findings
    assert [(f.type, f.assertion) for f in found] == [("effusion", "absent"), ("nodule", "present")]


@pytest.mark.parametrize("text,cue", [
    ("The known left lower lobe nodule is not well seen on this portable film.", "not well seen"),
    ("The nodule from the prior CT is not definitely visualized.", "not definitely visualized"),
])
def test_a_nodule_seen_poorly_is_uncertain_neither_present_nor_absent(text, cue):
    (f,) = nodules(text)
    assert (f.assertion, f.cue.text) == ("uncertain", cue)


# ---- resolution --------------------------------------------------------------------------------------------------

def test_interval_resolution_of_a_finding_is_absent():
    (f,) = extract("Interval resolution of the small left pleural effusion.").findings
    assert (f.type, f.assertion, f.cue.text) == ("effusion", "absent", "Interval resolution of")
    (f,) = nodules("There has been interval resolution of the right midlung nodule.")
    assert f.assertion == "absent"


@pytest.mark.parametrize("text", ["Partial interval resolution of the right midlung nodule.",
                                  "Near-complete resolution of the right midlung nodule.",
                                  "Incomplete resolution of the right midlung nodule."])
def test_partial_resolution_leaves_the_finding_present_and_smaller(text):
    (f,) = nodules(text)
    assert (f.assertion, f.temporality) == ("present", "decreased")


def test_a_hoped_for_resolution_negates_nothing():
    (f,) = extract("Follow-up films are advised to ensure complete resolution of the pneumonia.").findings
    assert (f.type, f.assertion) == ("pneumonia", "present")


# ---- "question" ----------------------------------------------------------------------------------------------------

def test_question_before_a_finding_is_uncertain_and_the_finding_in_question_is_not():
    (f,) = nodules("Question of a tiny nodule projecting over the left fifth rib.")
    assert f.assertion == "uncertain"
    (f,) = nodules("Question tiny nodule projecting over the left fifth rib.")
    assert (f.assertion, f.cue.text) == ("uncertain", "Question")
    found = extract("The nodule in question is a calcified granuloma.").findings
    assert [(f.type, f.assertion) for f in found] == [("nodule", "present"), ("granuloma", "present")]


# ---- numbered items without a full stop ----------------------------------------------------------------------------

def test_a_numbered_item_starts_a_new_sentence():
    text = "1. No acute cardiopulmonary process 2. Right upper lobe nodule"
    assert [text[s:e] for s, e in sentences(text)] == ["1. No acute cardiopulmonary process ",
                                                       "2. Right upper lobe nodule"]
    # decimals, sizes and a numbered item after a full stop are unchanged
    other = "A 1.2 cm nodule. 2. No effusion."
    assert [other[s:e] for s, e in sentences(other)] == ["A 1.2 cm nodule.", " 2. No effusion."]


def test_a_negation_in_one_numbered_item_does_not_reach_the_next():
    rep = report("Impression: 1. No pneumothorax or effusion 2. 9 mm nodule in the left upper lobe",
                 modality="radiograph")
    assert [(f.type, f.assertion) for f in rep.findings] == [("pneumothorax", "absent"), ("effusion", "absent"),
                                                             ("nodule", "present")]
    assert rep.findings[2].size.mm == 9.0
    assert [r.text for r in rep.recommendations] == ["Further evaluation with chest CT is recommended."]
    assert [c.code for c in rep.codes] == ["R91.1"]


def test_a_later_numbered_no_acute_process_negates_no_earlier_item():
    (f,) = nodules("1. Right upper lobe nodule 2. No acute process")
    assert f.assertion == "present"


def test_a_numbered_item_may_open_with_an_anaphor_for_the_size():
    (f,) = nodules("1. Several nodules in both lungs 2. The largest measures 7 mm")
    assert (f.count, f.size.mm) == ("multiple", 7.0)
