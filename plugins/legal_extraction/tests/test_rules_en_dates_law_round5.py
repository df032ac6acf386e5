"""Agreement date and governing law, issue 27's fifth round: kinds found among the misses of CUAD's development
contracts (train, validation, contracts_more; never the test split), each a general rule. Texts written for these
tests."""

from __future__ import annotations

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.text import segments

_FILLER = ("The Provider shall perform the services described in the schedules with due care and skill, and shall "
           "keep the Owner informed of every material matter. ") * 14  # about 2,000 characters without a date


def _date(text: str) -> str | None:
    found = rules_en.agreement_date(text)
    return found[0].value if found else None


def _law(text: str) -> str | None:
    found = rules_en.governing_law(text, segments(text, "en"))
    return found[0].value if found else None


def test_another_documents_dated_is_no_witness_date():
    # "UNDER THAT CERTAIN LEASE DATED APRIL ___, 2011" (an exhibit) was read as the agreement's own "Dated ..."
    text = ("OPERATIONS AGREEMENT\n\nThis Operations Agreement is made by and between Acme Solar LLC (\"Owner\") and "
            "Beta Power, Inc. (\"Provider\").\n\n" + _FILLER + "\n\nIN WITNESS WHEREOF, the parties have signed this "
            "Agreement effective as of the latest date set forth below.\n\nOWNER:\n\nDate: March 3, 2011\n\nACME SOLAR "
            "LLC\n\nBy: /s/ J. Doe\n\nPROVIDER:\n\nDate: March 4, 2011\n\nBETA POWER, INC.\n\nBy: /s/ R. Roe\n\n"
            "EXHIBIT A\n\nSITE OBLIGATIONS UNDER THAT CERTAIN LEASE DATED APRIL ___, 2011 BETWEEN OWNER AND LANDLORD.")
    assert _date(text) == "2011-03-04"


def test_an_appendixs_date_is_no_signature_date():
    # the signature block after the preamble's first 4,000 characters, an appendix with a later "Date:" after it
    text = ("FIRM TRANSPORTATION AGREEMENT\n\nThis Agreement is made by and between North Gas Pipeline Company "
            "(\"Transporter\") and East Energy LLC (\"Shipper\").\n\n" + 2 * _FILLER + "\n\nAGREED TO BY:\n\nNORTH GAS "
            "PIPELINE COMPANY\n\n/s/ A. Smith\n\nEAST ENERGY LLC\n\n/s/ B. Jones\n\nDated: December 14, 2015 Dated: "
            "December 14, 2015\n\nAPPENDIX A\n\nContract Identification 1234\n\nDate: November 01, 2016 Supersedes "
            "Appendix Dated: November 01, 2015\n\nMaximum Daily Quantity: 10,000 Dth/Day")
    assert _date(text) == "2015-12-14"


_CONTENTS = "TABLE OF CONTENTS\n\n" + "".join(f"Article {n}  Provisions of Part {n} ........ {n + 2}\n" for n in range(1, 90))


def test_a_preamble_after_a_long_table_of_contents():
    # the preamble stands after a cover page and a table of contents of more than 4,000 characters
    text = ("MASTER FRANCHISE AGREEMENT\n\n" + _CONTENTS + "\n\nMASTER FRANCHISE AGREEMENT\n\nAGREEMENT made as of the "
            "_____ day of __________________, 2015 (the \"Effective Date\") by and between Kiosk Ventures, Inc., a New "
            "York corporation (\"Franchisor\"), and Soup Partners LLC (\"Master Franchisee\").\n\n" + _FILLER)
    assert len(_CONTENTS) > 4000
    assert _date(text) == "2015"


def test_a_cover_pages_effective_date_gives_way_to_the_preambles_made_date():
    text = ("SECOND AMENDED AND RESTATED SUPPLY AGREEMENT\n\nby and between\n\nACME SEEDS COMPANY and GREEN LAWN LLC\n\n"
            "Effective as of March 1, 2001\n\n" + _CONTENTS + "\n\nTHIS SECOND AMENDED AND RESTATED SUPPLY AGREEMENT by "
            "and between Acme Seeds Company, a Delaware corporation (\"Acme\"), and Green Lawn LLC, an Ohio limited "
            "liability company (\"Green\"), is entered into on June 5, 2019 (the \"Execution Date\"), and amends and "
            "restates the Supply Agreement dated as of March 1, 2001.\n\n" + _FILLER)
    assert _date(text) == "2019-06-05"
    # without a made / entered into date after the contents, the cover page's date stays
    assert _date(text.replace("is entered into on June 5, 2019 (the \"Execution Date\"), and ", "")) == "2001-03-01"


def test_a_letter_agreements_blank_date_line():
    text = ("1,000,000 Shares\n\nCOMMON STOCK\n\nAGENCY AGREEMENT\n\n                    ___________ __, 2000\n\n"
            "Webb & Company\n12 Main Street\nDublin, Ohio\n\nLadies and Gentlemen:\n\n    Acme Financial Corporation "
            "(the \"Company\") proposes to offer shares to depositors with account balances of $50.00 or more as of "
            "September 30, 1998 (\"Eligible Account Holders\").\n\n" + _FILLER)
    assert _date(text) == "2000"


def test_two_signers_dates_side_by_side_give_the_later():
    text = ("RESELLER AGREEMENT THIS RESELLER AGREEMENT (\"Agreement\") is entered into as of the Effective Date by and "
            "between Roam Inc. (\"Roam\") and Para Corporation (\"Partner\"). IN WITNESS WHEREOF, the parties have "
            "executed this Agreement as of the Effective Date. Partner: Roam Inc.: By: /s/ V. Bell By: /s/ C. Gard "
            "Chief Executive Officer VP Finance Title Title 4/24/2018 04/25/2018 Date Date\n\nTERMS AND CONDITIONS\n\n"
            + _FILLER)
    assert _date(text) == "2018-04-25"


def test_the_law_whose_own_sentence_names_the_contract():
    text = ("Article 25\n\nThe Joint Venture Company shall be an enterprise legal person under the laws of China. The "
            "activities of the Joint Venture Company shall be governed by the laws, decrees, rules and regulations of "
            "China, and its lawful rights shall be protected.\n\n" + _FILLER + "\n\nArticle 60\n\nThe formation, "
            "validity, interpretation and implementation of this Contract shall be governed by the published laws of "
            "the People's Republic of China.")
    assert _law(text) == "People's Republic of China"


def test_a_law_named_by_where_something_is():
    # it gave "State" (the word after "laws of the"): a rule, not a place, kept as the contract words it
    assert _law("THIS AGREEMENT SHALL BE CONSTRUED UNDER THE LAWS OF THE STATE IN WHICH THE FRANCHISED STORE IS "
                "LOCATED, EXCEPT AS OTHERWISE PROVIDED.") == "the state in which the franchised store is located"
    assert _law("This Guarantee shall be governed by the laws of the jurisdiction where the Lender has its principal "
                "office, without regard to conflicts of law.") == "the jurisdiction where the Lender has its principal office"
    # a named place, or a choice of two, as before
    assert _law("This Agreement will be governed by the laws of the state where a suit is filed, being either Ohio "
                "or Texas.") == "Ohio; Texas"
    assert _law("This Agreement shall be governed by the laws of the State of Oregon.") == "Oregon"
