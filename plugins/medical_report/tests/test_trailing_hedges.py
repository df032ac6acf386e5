"""A hedge set off by a comma after the finding ("Pneumonia, likely.") grades it as the same hedge before it does
("Likely pneumonia."): fresh-user check of 2 Dec (the comma had ended every post-cue's scope, so the pneumonia was
present). Post-modifier forms follow pyConText's lexical knowledge base (``likely``, ``possible``, ``probable``,
``unlikely`` bidirectional, ``suspected`` backward). Sentences written for the tests."""

from __future__ import annotations

import pytest
from sectorflow_medical_report.certainty import trails
from sectorflow_medical_report.extract import extract
from sectorflow_medical_report.report import build_report
from sectorflow_medical_report.schema import ReportInput


def _graded(text: str) -> list[tuple[str, str, str | None]]:
    return [(f.type, f.assertion, f.certainty) for f in extract(text).findings]


@pytest.mark.parametrize(("text", "certainty"), [
    ("Pneumonia, likely.", "probable"),
    ("Right lower lobe pneumonia, probably.", "probable"),
    ("Pneumonia in the right lower lobe, most likely.", "probable"),
    ("Pneumonia, possibly.", "possible"),
    ("Pneumonia, suspected.", "possible"),
    ("Pneumonia is suspected.", "possible"),
    ("Pneumonia, less likely.", "possible"),
    ("Small pneumothorax, unlikely.", "unlikely"),
    ("右肺下叶肺炎，可能。", "possible"),
    ("右肺下叶肺炎，可能性大。", "probable"),
    ("右肺下叶肺炎，可能性小。", "unlikely"),
    ("左侧胸腔积液，待排。", "possible"),
    ("右肺下叶肺炎，不除外。", "possible"),
    ("考虑右肺下叶肺炎可能。", "possible"),
])
def test_a_hedge_after_the_finding_grades_it(text, certainty):
    assert _graded(text)[-1][1:] == ("uncertain", certainty)


def test_pneumonia_comma_likely_is_rendered_as_likely_pneumonia():
    after = build_report(ReportInput(text="Pneumonia, likely."), extract("Pneumonia, likely."))
    before = build_report(ReportInput(text="Likely pneumonia."), extract("Likely pneumonia."))
    assert after.impression == before.impression == "1. Probable pneumonia."
    assert after.codes == []  # an uncertain pneumonia gets no J18.9


@pytest.mark.parametrize(("text", "expected"), [
    # the hedge names, or qualifies, something else: the finding before the comma stays present
    ("Right lower lobe opacity, likely pneumonia.", [("opacity", "present", None),
                                                    ("pneumonia", "uncertain", "probable")]),
    ("Small effusion, possibly loculated.", [("effusion", "present", None)]),
    ("Small nodule, unlikely to be clinically significant.", [("nodule", "present", None)]),
    # only the finding just before the comma
    ("Atelectasis, pneumonia, likely.", [("atelectasis", "present", None), ("pneumonia", "uncertain", "probable")]),
    # a negation keeps its scope
    ("No pneumothorax, effusion or consolidation.", [("pneumothorax", "absent", None), ("effusion", "absent", None),
                                                     ("consolidation", "absent", None)]),
    ("No pneumothorax, effusion is present.", [("pneumothorax", "absent", None), ("effusion", "present", None)]),
    ("未见胸腔积液，右侧气胸。", [("effusion", "absent", None), ("pneumothorax", "present", None)]),
])
def test_what_a_trailing_hedge_does_not_govern(text, expected):
    assert _graded(text) == expected


def test_trails_directly():
    text = "Pneumonia, likely. Opacity, likely pneumonia."
    assert trails(text, 9, 11, 17)
    assert not trails(text, 26, 28, 34)  # followed by a finding, not the sentence end
    assert not trails("Pneumonia likely.", 9, 10, 16)  # no comma: the ordinary post-cue rules
