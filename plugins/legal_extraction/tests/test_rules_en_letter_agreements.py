"""Kinds of errors seen on CUAD's development pool (contracts_more/), each fixed for the kind, tested on text
written here: letter agreements dated above the salutation, "entered on", a letter's date that is another
document's, "the 20 March day of 1998", signature dates such as 3-31-16, and the law the contract is governed by
when several sentences name laws."""

from __future__ import annotations

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.text import segments


def _date(text):
    found = rules_en.agreement_date(text)
    return found[0].value if found else None


def _law(text):
    found = rules_en.governing_law(text, segments(text, "en"))
    return found[0].value if found else None


def test_a_letter_agreement_is_dated_above_its_salutation():
    text = ("Exhibit 1.1\n\nNorthfield Bancorp, Inc.\nup to 1,000,000 Shares\n\nSALES AGENCY AGREEMENT\n\n"
            "June 3, 2015\n\nHarbor Securities LLC\n12 Main Street\nBoston, Massachusetts\n\nLadies and Gentlemen:\n\n"
            "Northfield Bancorp, Inc. (the \"Company\") offers shares to depositors of the Bank as of December 31, "
            "2013 (\"Eligible Holders\").")
    assert _date(text) == "2015-06-03"
    blank = text.replace("June 3, 2015", "        , 2016")
    assert _date(blank) == "2016"


def test_entered_on_wins_over_a_deemed_effective_date():
    text = ("SUPPORT AGREEMENT\n\nThis Support Agreement is entered on this 12th day of March, 2004 and is deemed "
            "effective as of March 1, 2004, by and between Alder Systems, Inc. (\"Alder\") and Birch LLC (\"Birch\").")
    assert _date(text) == "2004-03-12"


def test_a_letter_dated_is_another_document():
    text = ("HOSTING AGREEMENT between Alder and Birch, 4/10/2009\n\n1. Definitions.\n\n2. Background. Birch has "
            "confirmed by letter dated November 30, 2007 that it accepts the proposal.")
    assert _date(text) != "2007-11-30"


def test_a_day_written_after_its_month():
    assert _date("This AGREEMENT is made the 20 March day of 1998 BETWEEN Alder Ltd and Birch plc.") == "1998-03-20"


def test_a_signature_date_with_a_two_digit_year_and_hyphens():
    text = ("SUPPLY AGREEMENT\n\nAlder Pharma Ltd (\"Alder\") and Birch Medical Co (\"Birch\") agree as follows. "
            + "The parties shall cooperate in good faith. " * 60 + "\n\nIN WITNESS WHEREOF the parties sign below.\n\n"
            "/s/ A. Smith    /s/ B. Jones\nDate:   Date:\n4-2-2016   4-5-16\n")
    assert _date(text) == "2016-04-05"


def test_the_law_that_governs_the_contract_is_chosen_among_several():
    text = ("7. Compliance. Each party shall comply with the export laws of the United States governing the "
            "export of software.\n\n12. Governing Law. This Agreement shall be governed by and construed in "
            "accordance with the laws of the State of California, without regard to its conflict of laws rules.")
    assert _law(text) == "California"
    assert _law("This Amendment shall be governed by the laws of the Siate of Texas.") == "Texas"


def _names(text):
    return [p.value["name"] for p in rules_en.parties(text)]


def test_party_names_that_look_like_phrases_places_or_blanks():
    text = ('This agreement ("Agreement") is entered into as of March 1, 2001 by and between the In Touch Systems '
            'Corporation ("Touch"), located at 12 Main Street, Boston, and e-ventures, Inc., ("Provider"), a Delaware '
            'corporation, located at 4 Elm Road.')
    assert _names(text) == ["In Touch Systems Corporation", "e-ventures, Inc."]
    uk = ("THIS AGREEMENT is made on 1 May 2020 BETWEEN: (1) ALDER 2007 LIMITED (registered number 01234567) whose "
          "registered office is at 5 Dock Road, London (the \"Company\"); and (2) JANE ROE of (the \"Executive\").")
    assert _names(uk) == ["ALDER 2007 LIMITED", "JANE ROE"]


def test_the_addressee_of_a_letter_agreement_is_a_party():
    text = ("AGENCY AGREEMENT\n\nMay 3, 2012\n\nHarbor Lane Securities, Inc.\n10 Dock Street\nPortland, Maine\n\n"
            "Ladies and Gentlemen:\n\nNorthfield Bancorp, Inc., a Maryland corporation (the \"Company\"), confirms "
            "its agreement with you as follows.")
    assert _names(text) == ["Northfield Bancorp, Inc.", "Harbor Lane Securities, Inc."]
    person = ("CONSULTING AGREEMENT\n\nJuly 20, 2018\n\nMaria Lopez\n\nDear Maria:\n\nAlder Bio, Inc. (the "
              "\"Company\") is pleased to engage you as a consultant.")
    assert "Maria Lopez" in _names(person)


def test_a_one_line_text_that_names_its_filing_keeps_its_dates():
    text = ("Alder Energy, Inc. 8-K Exhibit 10.1 SUPPLY AGREEMENT This Supply Agreement is made and entered into "
            "this 10th day of January, 2020 between Birch Fuels (USA) Inc. (\"Birch\") and Alder Energy, Inc. "
            "(\"Alder\").")
    assert _date(text) == "2020-01-10"


def test_a_letter_dated_with_a_blank_day():
    text = ("AGENCY AGREEMENT\n\n                    November ___, 2006\n\nHarbor Lane Securities, L.P.\n10 Dock "
            "Street\n\nLadies and Gentlemen:\n\nNorthfield Bancorp, Inc. (the \"Company\") has adopted a plan on "
            "June 21, 2006.")
    assert _date(text) == "2006-11"


def test_a_labelled_signature_date_with_a_two_digit_year():
    text = ("SERVICES AGREEMENT\n\nAlder Inc. (\"Alder\") and Birch LLC (\"Birch\") agree as follows. "
            + "The parties shall cooperate in good faith. " * 60 + "\n\nBy: /s/ A. Smith  By: /s/ B. Jones  "
            "Date: 3-14-18 Date: 3-7-18\n")
    assert _date(text) == "2018-03-14"
