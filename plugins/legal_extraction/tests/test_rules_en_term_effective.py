"""English term (start vs end) and effective date (fresh-user report, 2 Dec 2026): texts written for these tests."""

import pytest

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.text import segments


def _term(text: str) -> tuple[dict, list[str]]:
    (found,) = rules_en.term(text, segments(text, "en"))
    return found.value, found.warnings


@pytest.mark.parametrize(("text", "value"), [
    # a start only: the end is redacted in the filed copy (it was read as the end before)
    ("1. TERM. The Term of this Agreement shall be for a period of [* ****] years and [*****] months commencing the "
     "1st day of September 2004 and terminating the [*****] day of [*****].", {"start": "2004-09-01"}),
    ("For the entire term of this Agreement, from September 1, 2004 through [*****] the Company shall pay the "
     "Consultant a base fee.", {"start": "2004-09-01"}),
    # start and end
    ("The term of this Agreement shall commence on January 1, 2020 and shall continue until December 31, 2022.",
     {"start": "2020-01-01", "end": "2022-12-31"}),
    ("The term of this Agreement is from June 1, 2019 to May 31, 2020.", {"start": "2019-06-01", "end": "2020-05-31"}),
    ("The Term shall begin on March 1, 2021 and end on February 28, 2023.", {"start": "2021-03-01",
                                                                             "end": "2023-02-28"}),
    ("The initial term of this Agreement shall be June 1, 2019 through May 31, 2020.",
     {"start": "2019-06-01", "end": "2020-05-31"}),
    # an end only
    ("This Agreement shall continue in full force and effect until December 31, 2006.", {"end": "2006-12-31"}),
    ("The term of this Agreement shall expire on June 30, 2025.", {"end": "2025-06-30"}),
    # a duration, with its start when given
    ("The term of this Agreement shall be three (3) years starting on January 1, 2020.",
     {"duration": "P3Y", "start": "2020-01-01"}),
    ("The initial term of this Agreement shall be three (3) years from the Effective Date.", {"duration": "P3Y"}),
])
def test_term_reads_start_and_end(text, value):
    assert _term(text)[0] == value


def test_a_redacted_end_is_left_out_with_a_warning():
    value, warnings = _term("For the entire term of this Agreement, from September 1, 2004 through [*****] the "
                            "Company shall pay the Consultant a base fee.")
    assert value == {"start": "2004-09-01"}
    assert warnings == ["the term's end is redacted in the text ([*****]): left out"]
    value, warnings = _term("The term of this Agreement is from June 1, 2019 to May 31, 2020.")
    assert warnings == []


def test_a_date_named_neither_start_nor_end_is_not_taken():
    text = "The term of this Agreement shall be as set out in the order dated May 5, 2020."
    assert rules_en.term(text, segments(text, "en")) == []


ENDORSEMENT = ("ENDORSEMENT AGREEMENT\n\nThis Agreement is entered into between Birdie Clubs, Inc. (\"BIRDIE\") and "
               "John Fairway (\"CONSULTANT\").\n\n1. TERM OF CONTRACT\n\nThe Term of this Agreement shall be for a "
               "period of [* ****] years and [*****] months commencing the 1st day of September 2004 and "
               "terminating the [*****] day of [*****].\n\n8. COMPENSATION\n\nFor the entire term of this "
               "Agreement, from September 1, 2004 through [*****] BIRDIE shall pay CONSULTANT a base compensation "
               "of [*****] dollars.\n\nIN WITNESS WHEREOF the parties have signed this Agreement.\n\nDate: "
               "January 13, 2005\n")


def test_effective_date_is_the_term_start_when_none_is_named():
    (effective,) = rules_en.effective_date(ENDORSEMENT, "MDY", segments(ENDORSEMENT, "en"))
    assert (effective.value, effective.text, effective.source) == ("2004-09-01", "the 1st day of September 2004",
                                                                   "rule:en_effective_term_start")
    assert ENDORSEMENT[effective.start:effective.end] == effective.text


def test_effective_date_named_wins_then_agreement_date():
    named = ('This Agreement is made on March 3, 2011 and is effective as of April 1, 2011 between Alpha LLC and Beta '
             'Inc. The term of this Agreement shall commence on May 1, 2011.')
    (effective,) = rules_en.effective_date(named, "MDY", segments(named, "en"))
    assert (effective.value, effective.source) == ("2011-04-01", "rule:en_effective_date")
    made = "This Agreement is made and entered into as of November 2, 2019 by and between Alpha LLC and Beta Inc."
    (effective,) = rules_en.effective_date(made, "MDY", segments(made, "en"))
    assert (effective.value, effective.source, effective.confidence) == ("2019-11-02",
                                                                         "rule:en_effective_agreement_date", 0.5)
    assert rules_en.effective_date("Alpha LLC and Beta Inc. agree as follows.", "MDY", []) == []


def test_taskflow_gives_term_start_and_effective_date(taskflow_factory):
    result = taskflow_factory(["Effective Date", "Term"])(ENDORSEMENT)
    assert result.fields["Term"][0].value == {"start": "2004-09-01"}
    assert result.fields["Effective Date"][0].value == "2004-09-01"


@pytest.mark.parametrize(("text", "value", "source"), [
    ('"Commencement Date" means: 1st January 2013.', "2013-01-01", "rule:en_effective_date"),
    ('"EFFECTIVE DATE" means 12:01 a.m. Eastern Standard Time on March 3, 2003.', "2003-03-03",
     "rule:en_effective_date"),
    ("The Supplier and the Buyer agree as follows. This Agreement shall commence on March 15, 2018 and will expire "
     "on March 14, 2020.", "2018-03-15", "rule:en_effective_term_start"),
    ('The duration of this Venture (the "Term") will begin on March 1, 2020 and continue in full force and effect '
     "until February 28, 2025.", "2020-03-01", "rule:en_effective_term_start"),
    ("The term of this Agreement for the Hosted Site shall commence upon April 1, 1999 and shall continue for a "
     "period of six (6) months.", "1999-04-01", "rule:en_effective_term_start"),
])
def test_effective_date_phrasings(text, value, source):
    (effective,) = rules_en.effective_date(text, "MDY", segments(text, "en"))
    assert (effective.value, effective.source) == (value, source)


def test_effective_date_set_by_the_last_signature():
    body = ('This Hosting Agreement is entered into and effective as of the later of the two signature dates below '
            '(the "Effective Date") between Alpha LLC and Beta Inc.\n\nIN WITNESS WHEREOF the parties sign.\n\n'
            "Alpha LLC   Date: July 7, 1997\n\nBeta Inc.   Date: July 27, 1997\n")
    (effective,) = rules_en.effective_date(body, "MDY", segments(body, "en"))
    assert (effective.value, effective.text, effective.source) == ("1997-07-27", "July 27, 1997",
                                                                   "rule:en_effective_last_signature")
    after = body.replace("effective as of the later of the two signature dates below",
                         "effective on the day after the date of last signature")
    (effective,) = rules_en.effective_date(after, "MDY", segments(after, "en"))
    assert (effective.value, effective.text) == ("1997-07-28", "July 27, 1997")
