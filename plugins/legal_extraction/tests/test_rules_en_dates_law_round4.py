"""English rules, issue #27 round (found on CUAD train and contracts_more misses, never the test split): the date
a contract is made on over the date it takes effect, another date's "Date:" label, two signers' dates side by side,
and a legal opinion's laws. Every text here is project-written."""

from __future__ import annotations

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.rules_en.law import governing_law
from sectorflow_legal_extraction.text import segments


def _date(text: str) -> str | None:
    found = rules_en.agreement_date(text)
    return found[0].value if found else None


def test_date_it_is_made_on_wins_over_the_date_it_takes_effect():
    text = ("SUPPLY AGREEMENT This Supply Agreement shall be effective as of June 1, 2021 (the \"Commencement Date\") "
            "and is made and entered into this 12th day of March, 2021 between Alpha Fuels Inc. and Beta Oil LLC.")
    assert _date(text) == "2021-03-12"


def test_effective_date_alone_still_gives_the_agreement_date():
    text = "This Supply Agreement is effective as of June 1, 2021 between Alpha Fuels Inc. and Beta Oil LLC."
    assert _date(text) == "2021-06-01"


def test_date_of_another_agreement_does_not_replace_the_effective_date():
    text = ("This Schedule is effective as of March 3, 2011 and is made under the License Agreement between Alpha "
            "Inc. and Beta, N.A., dated November 5, 2010, as amended.")
    assert _date(text) == "2011-03-03"


def test_event_date_labels_are_no_signature_dates():
    body = "Alpha Inc. and Beta LLC agree to the service below.\n\n" + "The service is firm. " * 250
    text = (body + "\n\nIN WITNESS WHEREOF the parties sign below.\n\nAlpha Inc.\nBy: /s/ A. Smith\n"
            "Dated: March 2, 2015\n\nAPPENDIX A\n\nEffective Date: November 1, 2016\nTermination Date: "
            "October 31, 2020\n")
    assert _date(text) == "2015-03-02"  # the signer's date, not the appendix's effective or termination date


def test_two_signers_dates_side_by_side_take_the_later():
    text = ("Alpha Inc. and Beta LLC agree as follows. " + "The goods are sold. " * 250 +
            "\n\nALPHA INC.   BETA LLC\nBy: /s/ A. Smith   By: /s/ B. Jones\nDate:   Date:   3-29-2016   3-31-16\n\n"
            "SCHEDULE 1\n\n" + "Each product is listed with its price. " * 100)
    assert _date(text) == "2016-03-31"


def test_laws_an_opinion_is_limited_to_are_not_the_governing_law():
    text = ("Counsel's opinion shall be limited to matters governed by federal laws and by the laws of Ohio.\n\n"
            "Section 17. Construction. This Agreement shall be construed in accordance with the laws of the State "
            "of New York without regard to principles of conflicts of law.")
    (found,) = governing_law(text, segments(text, "en"))
    assert found.value == "New York"


def test_page_number_is_no_day_of_a_footer_date():
    from sectorflow_legal_extraction import normalize as nz

    assert [d[3] for d in nz.dates_in("Commercial in Confidence   Page 2   May 2004")] == ["2004-05"]
    assert [d[3] for d in nz.dates_in("signed on 2 May 2004")] == ["2004-05-02"]


def test_letter_agreement_written_in_capitals_keeps_its_date_line():
    text = ("AGENCY AGREEMENT\n\n                    MAY 14, 2014\n\nKEEFE, BRUYETTE & WOODS, INC.\n"
            "787 SEVENTH AVENUE\nNEW YORK, NEW YORK 10019\n\nLADIES AND GENTLEMEN:\n\n"
            "ALPHA BANCORP, INC., A MARYLAND CORPORATION, "
            "PROPOSES TO SELL SHARES TO DEPOSITORS WITH ACCOUNTS AS OF DECEMBER 31, 2013.")
    assert _date(text) == "2014-05-14"


def test_widely_spaced_preamble_keeps_its_date():
    cover = "TABLE    OF    CONTENTS\n" + "Article    1    Definitions    and    terms\n" * 100
    text = (cover + "\nThis    Agreement    is    entered    into    as    of    May    31,    2019    by    Alpha    "
            "Inc.    and    Beta    LLC.\n\n" + "The goods are sold. " * 200)
    (found,) = rules_en.agreement_date(text)
    assert text.index("May    31") > 4000 and (found.value, found.confidence) == ("2019-05-31", 0.85)
