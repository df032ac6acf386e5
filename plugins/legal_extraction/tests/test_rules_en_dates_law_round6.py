"""Issue 27, sixth round (fresh-user report, 3 Dec 2026): an amendment's own date, never the date of the agreement it
amends; a term that starts on an event names the event ("first shipment"), never a bare "date". CUAD's development
contracts (train, validation, contracts_more) label an amendment with its own date: its "dated as of", its effective
date, or its signature date. Then kinds found among the development misses: a title in capitals above the preamble,
another agreement's definition ("means the ... Agreement dated"), a second law for a part after "except". Texts
written for these tests."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.normalize import REDACTED_TERM_END
from sectorflow_legal_extraction.text import segments

_FILLER = ("Section 4.2 of the Agreement is deleted and replaced by the wording below, and every reference to the "
           "Territory in the Agreement includes the Province named in Schedule B. ") * 14  # no date, about 2,400 chars


def _date(text: str) -> str | None:
    found = rules_en.agreement_date(text)
    return found[0].value if found else None


@pytest.mark.parametrize(("text", "expected"), [
    # the amendment names only the agreement it amends: no agreement date of its own, so none (it took 2010-03-03)
    ("FIRST AMENDMENT\n\nThis First Amendment (the \"Amendment\") is made by and between Orchard Software Corp. "
     "(\"Licensor\") and Pebble Analytics LLC (\"Licensee\") and amends the License Agreement dated March 3, 2010 "
     "between them.\n\n" + _FILLER, None),
    ("AMENDMENT NO. 2\n\nThe Supply Agreement dated March 3, 2010 between Orchard Foods Inc. and Pebble Retail LLC "
     "is hereby amended as follows.\n\n" + _FILLER, None),
    ("AMENDMENT NO. 4\n\nOrchard Foods Inc. and Pebble Retail LLC hereby amend and restate the Supply Agreement "
     "entered into as of March 3, 2010 as follows.\n\n" + _FILLER, None),
    # its own date wins: "dated as of", "effective as of", the signature date
    ("FIRST AMENDMENT\n\nThis First Amendment, dated as of June 1, 2012, is made by Orchard Software Corp. and "
     "Pebble Analytics LLC and amends the License Agreement dated March 3, 2010.\n\n" + _FILLER, "2012-06-01"),
    ("SECOND AMENDMENT\n\nOrchard Software Corp. and Pebble Analytics LLC amend the License Agreement dated March 3, "
     "2010, as set out below, effective as of September 15, 2014.\n\n" + _FILLER, "2014-09-15"),
    ("AMENDMENT NO. 3\n\nOrchard Foods Inc. and Pebble Retail LLC hereby amend the Supply Agreement dated March 3, "
     "2010 as follows.\n\n" + _FILLER + "\n\nIN WITNESS WHEREOF the parties have signed this Amendment.\n\nORCHARD "
     "FOODS INC.\nBy: /s/ A. Grant\nDate: July 9, 2013\n\nPEBBLE RETAIL LLC\nBy: /s/ B. Stone\nDate: July 11, 2013\n",
     "2013-07-11"),
    ("AMENDMENT NO. 5\n\nJanuary 20, 2016\n\nOrchard Foods Inc. and Pebble Retail LLC amend the Supply Agreement "
     "dated March 3, 2010 as follows.\n\n" + _FILLER, "2016-01-20"),
    # "Amended and Restated" / "Amending" are the agreement's own name: its date stays its own
    ("AMENDED AND RESTATED DISTRIBUTION AGREEMENT\n\nThis Amended and Restated Distribution Agreement dated as of "
     "April 2, 2018 is made between Orchard Foods Inc. and Pebble Retail LLC.\n\n" + _FILLER, "2018-04-02"),
    ("THIS AMENDING AGREEMENT dated as of May 5, 2017 is made between Orchard Foods Inc. and Pebble Retail LLC."
     "\n\n" + _FILLER, "2017-05-05"),
])
def test_an_amendments_own_date_or_none(text, expected):
    assert _date(text) == expected


def _term(text: str):
    return [(e.value, e.text, e.warnings) for e in rules_en.term(text, segments(text, "en"))]


@pytest.mark.parametrize(("text", "event"), [
    ("3. Term. This Agreement shall commence on the date of first shipment and continue through [***], unless "
     "terminated earlier as provided below.", "first shipment"),
    ("The Term shall commence upon first shipment of Product and shall continue through [***].", "first shipment"),
    ("The Term shall commence on the date of first commercial sale of a Product in the Territory and continue "
     "through [*****].", "first commercial sale"),
    ("The Term shall commence on the date on which the Distributor places its first order and continue through "
     "[***].", "the Distributor places its first order"),
    ("The term of this Agreement shall begin on the date of execution hereof and end on [***].", "execution hereof"),
    ("This Agreement shall commence on the Launch Date and continue through [***].", "Launch Date"),
])
def test_a_start_named_by_an_event_is_the_event(text, event):
    ((value, span, warnings),) = _term(text)
    assert value == {"start_event": event} and span == event and warnings == [REDACTED_TERM_END]


@pytest.mark.parametrize(("text", "value"), [
    # fresh-user report: with an end that is a date, the event start was dropped (only the redacted end kept it)
    ("The term of this Agreement shall commence on the date of first shipment and continue through December 31, 2023.",
     {"start_event": "first shipment", "end": "2023-12-31"}),
    ("The term of this Agreement shall commence upon first shipment of Product and shall continue through "
     "December 31, 2023.", {"start_event": "first shipment", "end": "2023-12-31"}),
    ("The term of this Agreement shall commence on the date of execution hereof and continue through June 30, 2025.",
     {"start_event": "execution hereof", "end": "2025-06-30"}),
    # a start date wins over any event words
    ("The term of this Agreement shall commence on January 1, 2019 and continue through June 30, 2025.",
     {"start": "2019-01-01", "end": "2025-06-30"}),
])
def test_a_start_named_by_an_event_is_kept_beside_an_end_date(text, value):
    ((found, _, warnings),) = _term(text)
    assert found == value and warnings == []


@pytest.mark.parametrize("text", [
    "The Term shall commence on the date and continue through [***].",  # a bare "date" is no event
    "The Term shall commence on [***] and continue through [***].",
    "The Term shall commence on the date of and continue through [***].",
])
def test_no_event_no_start_event(text):
    assert all("start_event" not in value for value, _, _ in _term(text))


def test_a_title_in_capitals_above_the_preamble_is_no_other_agreement():
    # "... UNDER THE SECURITIES ACT ..., AS AMENDED SUPPLY AGREEMENT This Supply Agreement ... entered into as of":
    # read as "under the ... agreement ... entered into as of" (another agreement's date), so the preamble's was lost
    text = ("CONFIDENTIAL PORTIONS HAVE BEEN OMITTED PURSUANT TO RULE 24B-2 UNDER THE SECURITIES EXCHANGE ACT OF 1934, "
            "AS AMENDED\n\nSUPPLY AGREEMENT\n\nThis Supply Agreement (\"Agreement\") is made and entered into as of "
            "the 8th day of October, 2019 by and between Orchard Foods Inc. and Pebble Retail LLC.\n\n" + _FILLER)
    assert _date(text) == "2019-10-08"


def test_another_agreements_definition_gives_no_date():
    # the preamble gives no date; a definition names another agreement's: no agreement date, no effective date
    text = ("LICENSE AGREEMENT\n\nThis License Agreement is made and entered into by and between Orchard Software "
            "Corp. and Pebble Analytics LLC and is made effective as of the Effective Date (defined below).\n\n"
            + _FILLER + "\n\n\"Services Agreement\" means the Services Agreement entered into by and between Orchard "
            "Software Corp. and Pebble Holdings Ltd., dated as of July 27, 2009.\n\n" + _FILLER)
    assert _date(text) is None
    assert rules_en.effective_date(text) == []


def test_a_definition_of_another_agreement_gives_no_date():
    # ""MTA" shall mean the ... Agreement entered into by X and Y on June 28, 2011" was read as the contract's
    # "entered into ... on" (a preamble after a table of contents)
    text = ("COLLABORATION AGREEMENT\n\nThis Collaboration Agreement is made by and among Orchard Bio, Inc. "
            "(\"Orchard\") and Pebble Pharma GmbH (\"Pebble\").\n\n" + _CONTENTS + "\n\n1. DEFINITIONS\n\n1.1 \"MTA\" "
            "shall mean the Material Transfer Agreement entered into by Orchard and Pebble Pharma Inc. on June 28, "
            "2011 attached as Appendix 4.\n\n" + _FILLER)
    assert _date(text) is None


_CONTENTS = "TABLE OF CONTENTS\n\n" + "".join(f"Article {n}  Provisions of Part {n} ........ {n + 2}\n" for n in range(1, 30))


def _law(text: str) -> str | None:
    found = rules_en.governing_law(text, segments(text, "en"))
    return found[0].value if found else None


@pytest.mark.parametrize(("text", "expected"), [
    ("18.1 This Agreement shall be governed by and construed in accordance with the laws of the State of Oregon, "
     "except that the covenants in Section 9.2 shall be governed by the laws of the state in which the Outlet is "
     "located.", "Oregon; the state in which the Outlet is located"),
    ("This Agreement shall be construed in accordance with and governed by the laws of the State of New York, except "
     "Section 12 below, which shall be construed in accordance with and governed by the laws of the State of Ohio, in "
     "each case without regard to conflict of laws principles.", "New York; Ohio"),
    # a kind of law after "except" is no second choice of law
    ("This Agreement shall be governed by the laws of the State of Oregon, except with respect to matters governed by "
     "the patent laws of the United States.", "Oregon"),
    ("This Agreement shall be governed by the laws of the State of Oregon, without regard to its conflict of laws "
     "rules, except as otherwise required by applicable law.", "Oregon"),
])
def test_a_second_law_for_a_part_after_except(text, expected):
    assert _law(text) == expected
