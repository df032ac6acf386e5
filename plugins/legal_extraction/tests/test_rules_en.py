"""English rules on project-written sentences: governing law forms, agreement dates, signature-block parties,
and the clause classifier's calibrated thresholds."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from sectorflow_legal_extraction import rules_en
from sectorflow_legal_extraction.plugin import BUNDLE_DIR, EXAMPLES
from sectorflow_legal_extraction.rules_en.law import governing_law


@pytest.mark.parametrize("sentence, value", [
    ("This Agreement shall be governed by the laws of the State of New York, without regard to its conflicts rules.",
     "New York"),
    ("This Agreement is accepted by Company in the State of Nevada and shall be governed by and construed in "
     "accordance with the laws thereof.", "Nevada"),
    ("This Agreement shall be construed in accordance with the laws of that State applicable to agreements made in "
     "the State of New Jersey.", "New Jersey"),
    ("This Agreement shall be governed by, and construed in accordance with, the laws of the State of California and "
     "the laws of Hong Kong.", "California; Hong Kong"),
    ("This Agreement shall be governed by the laws of England and Wales.", "England; Wales"),
    ("This Agreement will be governed by the laws of the state where a suit is filed, being either Illinois or New "
     "York.", "Illinois; New York"),
    ("This Agreement shall be construed in accordance with and governed by the laws ofthe State ofTexas.", "Texas"),
    ("The laws of the Province of Ontario and the federal laws of Canada applicable therein govern this Agreement.",
     "Ontario, Canada"),
    ("This AGREEMENT is controlled by the laws of the State of Texas.", "Texas"),
    ("Effective legislation of the Republic of Kazakhstan shall apply to any relations of the Parties.",
     "Republic of Kazakhstan"),
    ("Any such arbitration shall be subject to the application of the Italian Law.", "Italy"),
    ("This Agreement is governed by English law.", "England"),
    ("Any lawsuit arising under this Agreement may be initiated in a court located in the Commonwealth of "
     "Massachusetts or in any court in the Netherlands.", "Massachusetts; Netherlands"),
])
def test_governing_law_forms(sentence, value):
    (found,) = governing_law(sentence, [(0, len(sentence))])
    assert found.value == value and sentence[found.start:found.end] == found.text


def test_no_governing_law_is_absent():
    sentence = "Licensee is a corporation organized under the laws of Delaware."
    assert governing_law(sentence, [(0, len(sentence))]) == []


@pytest.mark.parametrize("text, iso", [
    ('This TRADEMARK LICENSE AGREEMENT is made and effective as of [·], 2019 (the "Effective Date"), by and among '
     'A LLC and B LLC.', "2019"),
    ("This Agreement is made and entered into this day of , 2009, by and between A Inc. and B Inc.", "2009"),
    ("This Outsourcing Agreement is executed as of this 1 st  day of May 2006, by and between A Inc. and B Inc.",
     "2006-05-01"),
    ("This Amendment is entered into this 15th day of July 1998 and amends the Distribution Agreement dated "
     "October 1, 1996.", "1998-07-15"),
    ("AMENDMENT #2 TO THE DISTRIBUTION AGREEMENT dated October 1, 1996\n\nTHIS AMENDMENT is entered into this 15th "
     "day of July 1998 by and between A Inc. and B Inc.", "1998-07-15"),
    ("WHEREAS, A, Inc. and B entered into a Split Dollar Agreement, dated as of December 5, 1995; and\n\n" + "x " * 800
     + "\n\nIN WITNESS WHEREOF, the parties hereto have executed this Agreement as of this 4th day of April, 2003.",
     "2003-04-04"),
    ("SUPPLY AGREEMENT\n\n" + "Terms. " * 400 + "\n\nIN WITNESS WHEREOF the parties sign below.\n\nBy: /s/ A\n"
     "Date: 7/1/98\n\nBy: /s/ B\nDate: 7/7/98\n", "1998-07-07"),
])
def test_agreement_date(text, iso):
    (found,) = rules_en.agreement_date(text)
    assert found.value == iso and text[found.start:found.end] == found.text


@pytest.mark.parametrize("text, iso", [
    ("SPONSORSHIP AGREEMENT\n\nTERM: The term shall commence on November 1, 2007 and end on October 31, 2008.\n\n"
     + "Benefits. " * 400 + "\n\nBy: /s/ A B\nDate: 3/21/08\n", "2008-03-21"),
    ("This First Amendment to the Development Agreement entered into on April 15, 2010 by and between A Inc. and B "
     "S.A.S. will be effective as of July 5, 2011.", "2011-07-05"),
])
def test_dates_of_other_events_are_not_the_agreement_date(text, iso):
    (found,) = rules_en.agreement_date(text)
    assert found.value == iso and text[found.start:found.end] == found.text


def test_joint_filing_parties_come_from_the_signature_blocks():
    text = ("JOINT FILING AGREEMENT\n\nIn accordance with Rule 13d-1(k) under the Securities Exchange Act of 1934, the "
            "undersigned agree to the joint filing of a Schedule 13G.\n\nDATED: April 8, 2020 ALPHA CAPITAL LP\n\n"
            "By: /s/ Jo Roe Jo Roe Chief Financial Officer ALPHA CAPITAL HOLDING CORPORATION\n\nBy: /s/ Jo Roe "
            "Chief Compliance Officer Beta One EQ, Ltd. By: Delta Advisors, LLC Its: Investment Manager By: /s/ Jo\n")
    names = [p.value["name"] for p in rules_en.parties(text)]
    assert names == ["ALPHA CAPITAL LP", "ALPHA CAPITAL HOLDING CORPORATION", "Beta One EQ, Ltd."]
    assert all(text[p.start:p.end] == p.text for p in rules_en.parties(text))


def test_party_lines_with_a_role_in_brackets():
    text = ("Road Transportation Agreement\n\nParty A (Shipper): Zeta Express Co., Ltd. Address: 1 Huazhi Road, "
            "Shanghai\n\nParty B (Carrier): Tongze Logistics Ltd. Address: 12 Yinchun Road, Tonglu\n")
    found = rules_en.parties(text)
    assert [(p.value["name"], p.value["role"]) for p in found] == [("Zeta Express Co., Ltd.", "party_a"),
                                                                   ("Tongze Logistics Ltd.", "party_b")]


@pytest.mark.skipif(not (BUNDLE_DIR / "manifest.json").is_file(), reason="the clause-classifier bundle is not built")
def test_only_calibrated_labels_are_predicted_clauses(taskflow_factory):
    config = json.loads((BUNDLE_DIR / "classifier.json").read_text(encoding="utf-8"))
    thresholds = config["thresholds"]
    assert thresholds["Most Favored Nation"] is None  # best validation F1 0: no threshold, not the grid's 0.05
    result = taskflow_factory(None)(EXAMPLES[1])
    assert result.clauses and "Governing Law" in {c.category for c in result.clauses}
    for label in result.clauses:
        assert thresholds[label.category] is not None and label.score >= thresholds[label.category]


def test_calibration_leaves_uncalibrated_categories_without_a_threshold():
    path = BUNDLE_DIR.parents[2] / "scripts" / "train_clause_classifier.py"
    spec = importlib.util.spec_from_file_location("train_clause_classifier", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    y = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 0], [0, 0, 0]], dtype=np.float32)
    scores = np.array([[0.9, 0.9, 0.01], [0.1, 0.8, 0.9], [0.8, 0.1, 0.02], [0.2, 0.1, 0.9]], dtype=np.float32)
    thresholds, f1 = script.calibrate(y, scores, ["good", "no positives", "never found"])
    assert 0.2 < thresholds["good"] <= 0.8 and f1["good"] == 1.0
    assert thresholds["no positives"] is None and thresholds["never found"] is None


@pytest.mark.parametrize("text, names", [
    ('This Agreement is entered into between the parties on 1 April, 2020.\n\nPARTIES (1) Kestrel Labs UK Limited '
     'is a company registered in England (the "Employer"); and (2) Jane Roe of [address removed] (the "Executive").',
     ["Kestrel Labs UK Limited", "Jane Roe"]),
    ('This Agreement is made between Ivan Petrov, director of CookWell (hereinafter referred to as "Client") and '
     'Mary Vale, director of Vale Web Works, PLC (hereinafter referred to as "Company").',
     ["CookWell", "Vale Web Works, PLC"]),
    ('This Agreement is made between Snapdragon Labs, Inc. a California corporation ("Snap"), and, Blue Air, Inc., '
     'a Delaware corporation ("Sponsor").', ["Snapdragon Labs, Inc.", "Blue Air, Inc."]),
    ('Road Transportation Agreement   Party A (Shipper): Zeta Express Co., Ltd. Address: 1 Huazhi Road   Party B '
     '(Carrier): Tongze Logistics Ltd. Address: 12 Yinchun Road   Due to the need for logistics.',
     ["Zeta Express Co., Ltd.", "Tongze Logistics Ltd."]),
])
def test_preamble_party_forms(text, names):
    found = rules_en.parties(text)
    assert [p.value["name"] for p in found] == names
    assert all(text[p.start:p.end] == p.text for p in found)
