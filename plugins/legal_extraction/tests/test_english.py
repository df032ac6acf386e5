"""English contracts: a project-written license agreement (CUAD-style preamble) through the task, and the CUAD
clause classifier served from the shipped bundle."""

from __future__ import annotations

import json

import pytest

from sectorflow import load_bundle
from sectorflow_legal_extraction.plugin import BUNDLE_DIR

CONTRACT = """SOFTWARE LICENSE AGREEMENT

This Software License Agreement (the "Agreement") is made and entered into as of Sept 1st, 2005 (the "Effective
Date") by and between Acme Software, Inc., a Delaware corporation with its principal place of business at 100 Main
Street, Boston, Massachusetts 02110 ("Licensor"), and Beta Retail LLC, a Texas limited liability company having its
principal place of business at 9 Elm Road, Austin, Texas 78701 ("Licensee").

1. Term. The initial term of this Agreement shall be three (3) years from the Effective Date. Thereafter, this
Agreement shall automatically renew for successive one (1) year periods unless either party gives written notice
of non-renewal at least ninety (90) days prior to the end of the then-current term.

2. Fees. Licensee shall pay Licensor a total license fee of USD 120,000.00 within thirty (30) days of invoice.

3. Assignment. Licensee may not assign this Agreement without the prior written consent of Licensor.

4. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the State of
New York, without regard to its conflict of laws principles.
"""


def test_license_agreement_fields(taskflow_factory):
    tf = taskflow_factory(["Licensor", "Licensee", "Agreement Date", "Effective Date", "Term", "Renewal Term",
                           "Notice Period", "Governing Law", "Assignment", "Liquidated Damages", "Contract Amount"])
    result = tf({"text": CONTRACT})
    assert result.language == "en"
    (licensor,), (licensee,) = result.fields["Licensor"], result.fields["Licensee"]
    assert licensor.value["name"] == "Acme Software, Inc." and licensee.value["name"] == "Beta Retail LLC"
    assert licensor.relations["address"][0].value == "100 Main Street, Boston, Massachusetts 02110"
    assert licensee.relations["address"][0].value == "9 Elm Road, Austin, Texas 78701"  # not the licensor's
    assert result.fields["Agreement Date"][0].value == "2005-09-01"
    assert result.fields["Effective Date"][0].value == "2005-09-01"
    assert result.fields["Term"][0].value == {"duration": "P3Y"}
    renewal = result.fields["Renewal Term"][0].value
    assert (renewal["iso"], renewal["successive"]) == ("P1Y", True)
    assert result.fields["Notice Period"][0].value["iso"] == "P90D"
    assert result.fields["Governing Law"][0].value == "New York"
    assert result.fields["Contract Amount"][0].value == {"amount": "120000.00", "currency": "USD"}
    assert "prior written consent" in result.fields["Assignment"][0].text
    assert result.absent == ["Liquidated Damages"]
    for found in result.fields.values():
        for e in found:
            assert CONTRACT[e.start:e.end] == e.text


@pytest.mark.skipif(not (BUNDLE_DIR / "manifest.json").is_file(), reason="the clause-classifier bundle is not built")
def test_clause_classifier_bundle(taskflow_factory):
    bundle = load_bundle(BUNDLE_DIR, expected_task="legal_extraction")  # every file's SHA-256 checked
    assert len(bundle.labels) == 41 and bundle.labels[7] == "Governing Law"
    assert 0 < bundle.manifest["metrics"]["test_macro_aupr"] < 1
    assert "not CUAD's span-extraction AUPR" in bundle.manifest["metrics"]["note"]
    assert json.loads((BUNDLE_DIR / "classifier.json").read_text())["categories"] == bundle.labels
    result = taskflow_factory(["Governing Law"])({"text": CONTRACT})
    assert result.meta.model_name == "cuad-clause-classifier" and result.meta.bundle_sha256 == bundle.sha256
    law = [c for c in result.clauses if c.category == "Governing Law"]
    assert law and "governed by" in CONTRACT[law[0].start:law[0].end]
    assert {c.category for c in result.clauses if "may not assign" in CONTRACT[c.start:c.end]} >= {"Anti-Assignment"}
