"""English rules, second round of general fixes (found on CUAD train/validation contracts and on the annotated
clauses of train/validation contracts whose text is not shipped). Every sentence here is project-written."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.rules_en_law import governing_law
from sectorflow_legal_extraction.text import segments


@pytest.mark.parametrize("sentence, value", [
    ("This Contract is made under and subject to the provisions of the substantive laws of the State of Ohio.",
     "Ohio"),
    ("This Handbook is governed in every respect by the applicable regulations of the Republic of Peru.",
     "Republic of Peru"),
    ("This Agreement is governed by the laws of Queensland, Australia and the courts there have jurisdiction.",
     "Queensland, Australia"),
    ("Disputes about this Agreement shall be governed by the Laws of China.", "China"),
    ("This Agreement shall be governed by the State of Oregon law.", "Oregon"),
    ("This Agreement shall be governed by the laws of the State of Texas, U.S.A., without regard to conflicts.",
     "Texas"),
])
def test_more_governing_law_forms(sentence, value):
    (found,) = governing_law(sentence, [(0, len(sentence))])
    assert found.value == value and sentence[found.start:found.end] == found.text


def test_rules_and_regulations_of_a_party_are_no_governing_law():
    sentence = "Any failure to follow the rules and regulations of ACME shall not be construed as a waiver."
    assert governing_law(sentence, [(0, len(sentence))]) == []


def test_governing_law_sentence_cut_by_blank_lines_is_joined():
    text = "12. Law. This Agreement shall be construed in accordance with the\n\n\n\nlaws of the State of Idaho."
    (found,) = governing_law(text, segments(text, "en"))
    assert found.value == "Idaho"


@pytest.mark.parametrize("text, iso", [
    ('THIS SERVICES AGREEMENT (the "Agreement") is dated as of this ____ day of ________, 2015, but made effective '
     'as of March 9, 2015 ("Effective Date") between Alpha LLC and Beta Inc.', "2015-03-09"),
    ("Swap Confirmation\n\nDate:          12 June 2007\n\nTo:   Gamma Bank\n\nEffective Date:   1 June 2007\n",
     "2007-06-12"),
])
def test_more_agreement_dates(text, iso):
    (found,) = rules_en.agreement_date(text)
    assert found.value == iso and text[found.start:found.end] == found.text
