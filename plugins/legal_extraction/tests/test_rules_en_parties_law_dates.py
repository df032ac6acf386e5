"""English rules, second round of general fixes (found on CUAD train/validation contracts and on the annotated
clauses of train/validation contracts whose text is not shipped). Every sentence here is project-written."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.rules_en.law import governing_law
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


def _names(text):
    return [p.value["name"] for p in rules_en.parties(text)]


def test_first_party_with_a_long_description_after_between():
    text = ('This Hosting Agreement is made on 2 May 2011 by and between:\n\nParties to this agreement\n\n'
            'NORTHWIND TRADING Pty Ltd, registration no 2001/123456/07, registered office at 4 Quay Road, Cape Town, '
            'represented by Anna Berg, Director, acting under the powers granted to her by the Board on the 3rd of '
            'March, 2011, whose authority is recorded in the minutes kept at its registered office and open to '
            'inspection (hereinafter referred to as "the Customer"),\n\nAND\n\nSOUTHWIND HOSTING, SA., a public '
            'limited company with place of business in Calle Mayor 12, Madrid, (hereinafter referred to as "SWH").')
    assert _names(text) == ["NORTHWIND TRADING Pty Ltd", "SOUTHWIND HOSTING, SA"]


@pytest.mark.parametrize("raw, name", [
    ("BLUE RIVER FOODS INC. 3rd Floor, Harbour House, Port Louis", "BLUE RIVER FOODS INC."),
    ("NORDIC PHARMA A/S of Fabriksvej 8, 2750 Ballerup, Denmark", "NORDIC PHARMA A/S"),
    ('professional skier, ANNA LINDQVIST,', "ANNA LINDQVIST"),
    ('Sam Okafor ("Presenter)', "Sam Okafor"),
    ("Bank of Example, N.A.", "Bank of Example, N.A"),
    ("Consent to Assignment and Amendment of Use Agreement dated May 2, 1999",
     "Consent to Assignment and Amendment of Use Agreement dated May 2, 1999"),
])
def test_party_name_is_cut_at_its_address_or_description(raw, name):
    assert rules_en._clean_name(raw) == name


def test_person_retained_by_a_letter_agreement_is_a_party():
    text = ('Dear Maya:\n\nOrbit Labs, Inc, a Delaware corporation (the "Company"), is pleased to offer this '
            'Consulting Agreement (this "Agreement") to retain Maya Chen ("Consultant") to perform the services below.')
    assert _names(text) == ["Orbit Labs, Inc", "Maya Chen"]


def test_second_party_after_an_address_without_a_comma():
    text = ('This Promotion Agreement (herein "Agreement") dated May 3, 2001, by and between Lark Media, Inc. (herein '
            '"Lark") located at 9 King Street, Toronto, Canada M5V 1A1 and Heron Paging Corporation located at 20 Oak '
            'Avenue, Austin, TX 78701, sets out the terms of a joint promotion.')
    assert _names(text) == ["Lark Media, Inc.", "Heron Paging Corporation"]


def test_roles_alone_are_not_party_names():
    text = ("STATEMENT OF WORK\n\nThis Statement of Work is part of the Services Agreement executed by and between "
            "Developer and Client on the Effective Date.")
    assert _names(text) == []


def test_unquoted_hereinafter_terms_and_street_addresses():
    text = ("SUPPLY AGREEMENT\n\nbetween\n\nFALKE CHEMIE GmbH & Co KG, Hafenweg 3, 20457 Hamburg,\n\nGermany\n\n"
            "— hereinafter referred to as Falke —\n\nand\n\nQuill Bio Inc, 12 Elm Court, Suite 4, Boston, MA 02110\n\n"
            "— hereinafter referred to as Quill —\n\nPreamble\n\nWhereas, Falke makes esters.")
    assert _names(text) == ["FALKE CHEMIE GmbH & Co KG", "Quill Bio Inc"]


def test_lower_case_legal_form_and_parenthesised_unquoted_term():
    text = ("This Agreement is entered into this 3 March, 1995 by and between ORBIS S.A., whose address is 4, rue Haute, "
            "75001 PARIS, FRANCE (hereinafter referred to as ORBIS) and LUMEN corporation whose address is 50 Pine "
            "Street, Denver, Colorado 80202 (hereinafter referred to as LUMEN) for support services.")
    assert _names(text) == ["ORBIS S.A.", "LUMEN corporation"]


def test_party_lines_win_over_a_company_described_in_between():
    text = ("Cooperation Agreement Heat Recovery Project Party A: Alder Energy Co., Ltd. Legal Representative: Wen Li "
            "Alder Energy Co., Ltd. is a subsidiary of Birch Power Corporation (the \"Company\"), a listed company. "
            "Party B: Cedar Gas Supply Co., Ltd. Legal Representative: Zhao Min Cedar Gas Supply Co., Ltd. is located "
            "in an industrial park.")
    assert _names(text) == ["Alder Energy Co., Ltd.", "Cedar Gas Supply Co., Ltd."]


@pytest.mark.parametrize("sentence, value", [
    ("This Agreement shall be governed by, and construed under, Vermont law.", "Vermont"),
    ("This Agreement shall be governed by the laws in force in Scotland.", "Scotland"),
    ("This agreement shall be subject to Norwegian law.", "Norway"),
    ("The applicable law is the law of Austria.", "Austria"),
])
def test_governing_law_phrasings_without_laws_of(sentence, value):
    (found,) = governing_law(sentence, [(0, len(sentence))])
    assert found.value == value


@pytest.mark.parametrize("sentence", [
    "Supplier is subject to Texas law enforcement background checks.",
    "All applicable laws of the State of Ohio shall be complied with by Supplier.",
])
def test_mentions_of_law_that_choose_no_law(sentence):
    assert governing_law(sentence, [(0, len(sentence))]) == []


def test_numbered_parties_under_a_parties_heading():
    text = ('THIS AGREEMENT IS MADE ON THE 4 DAY OF JUNE, 2012 PARTIES (1) KESTREL (ASIA) LTD, a company incorporated in '
            'Hong Kong whose registered office is at Unit 12, 8/F Sea Tower ("Kestrel"); and Pier Road, Hong Kong (2) '
            'OSPREY POWER HOLDINGS PLC a company incorporated in Jersey whose registered office is at 3 Bay Street '
            '("Osprey"), each a "Party".')
    assert _names(text) == ["KESTREL (ASIA) LTD", "OSPREY POWER HOLDINGS PLC"]


def test_individual_and_unquoted_upper_case_term():
    text = ('This ENDORSEMENT AGREEMENT (the "Agreement") is made this 2nd day of May, 2004 by and between Dana Wolfe, '
            'Individual ("ATHLETE"), with offices in Oregon; and Fit Path, a Nevada Corporation (the COMPANY), with '
            'offices at 10 Lake Road, Reno, Nevada 89501.')
    assert _names(text) == ["Dana Wolfe", "Fit Path"]


def test_limited_of_an_address_is_cut():
    assert rules_en._clean_name("Heron Learning UK Limited of Park House, 12 - 14 Mill Road, Reading") == \
        "Heron Learning UK Limited"


def test_signature_block_keeps_a_funds_number_with_its_name():
    from sectorflow_legal_extraction.rules_en.signatures import signature_parties

    text = ("JOINT FILING AGREEMENT\n\nThe undersigned agree to file one statement on Schedule 13D and have signed "
            "it below.\n\n"
            "THE HERON FUND VI-A, L.P.\n\nBy: Heron Partners, L.P., its General Partner\n\nBy: /s/ Ann Lee Name: Ann "
            "Lee Title: Counsel\n\nTHE HERON FUND XII (MASTER), L.P.\n\nBy: /s/ Ann Lee Name: Ann Lee Title: Counsel\n")
    assert [p.value["name"] for p in signature_parties(text)] == ["THE HERON FUND VI-A, L.P",
                                                                  "THE HERON FUND XII (MASTER), L.P"]


def test_apposition_after_a_name_and_recital_words_are_cut():
    assert rules_en._clean_name("NORTHERN NEWS SERVICE OF THE PRESS AGENCY, the unit within the agency that sells "
                                "news") == "NORTHERN NEWS SERVICE OF THE PRESS AGENCY"
    assert not rules_en.looks_like_party("WHEREAS")
    assert rules_en.looks_like_party("Now Foods Inc")


@pytest.mark.parametrize("raw, name", [
    ("Dunaj Telekom a.s., Hlavna 17, PO Box 5, 811 01 Bratislava, Slovakia", "Dunaj Telekom a.s."),
    ("Lakeside Robotics Oy, Satamakatu 4, 00160 Helsinki", "Lakeside Robotics Oy"),
    ("Merlion Foods Pte. Ltd., 8 Marina View, Singapore 018960", "Merlion Foods Pte. Ltd."),
])
def test_european_and_asian_legal_forms_end_a_name(raw, name):
    assert rules_en._clean_name(raw) == name


def test_role_in_bare_parentheses():
    text = ("GAS SERVICE AGREEMENT\n\nThis Gas Service Agreement (Agreement) is entered into by Lakes Gas Transmission "
            "Limited Partnership (Transporter) and NORTH PIPELINE COMPANY (Shipper).\n\nWHEREAS, Shipper needs gas.")
    assert _names(text) == ["Lakes Gas Transmission Limited Partnership", "NORTH PIPELINE COMPANY"]


def test_defined_terms_after_the_preamble_sentence_are_not_parties():
    text = ('This Sponsorship Agreement (the "Agreement") is entered into by and between Falcon Motorsport, Ltd., a Texas '
            'limited partnership ("Falcon"), and ROADSURE, INC., a Texas corporation (the "Sponsor").\n\nFalcon runs a '
            'racing team competing in endurance racing (the "Racing Team") and Sponsor sells insurance.')
    assert _names(text) == ["Falcon Motorsport, Ltd.", "ROADSURE, INC."]


def test_third_party_after_an_address_with_an_abbreviation():
    text = ('This LICENSE AGREEMENT (the "Agreement") is made by and between Pike Media, Inc., a Delaware corporation '
            '("Pike"), and TROUT INC., a Delaware corporation ("Trout US") and TROUT GAMES IRELAND LIMITED, having its '
            'registered office at The Quay, 4 Dock Road Co. Dublin Ireland ("Trout Ireland").')
    assert _names(text) == ["Pike Media, Inc.", "TROUT INC.", "TROUT GAMES IRELAND LIMITED"]


def test_signature_name_before_a_signature_and_by_line():
    from sectorflow_legal_extraction.rules_en.signatures import signature_parties

    text = ("JOINT FILING AGREEMENT The undersigned agree to file jointly. IN WITNESS WHEREOF, the undersigned sign "
            "below. ALDER EQUITY S.À R.L. /s/ Jan Novak By: Jan Novak Title: Manager BIRCH HOLDING S.A. /s/ Eva "
            "Maas By: Eva Maas Title: Director")
    assert [p.value["name"] for p in signature_parties(text)] == ["ALDER EQUITY S.À R.L", "BIRCH HOLDING S.A"]
