"""The learned party re-ranker: shipped weights and manifest, candidates, what it adds and what it leaves out.

Contracts here are written for the tests (no CUAD text)."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from sectorflow import BundleIntegrityError, ConfigError, Taskflow
from sectorflow_legal_extraction.rules_en import parties
from sectorflow_legal_extraction.rules_en.party_candidates import (FEATURES, MODEL_DIR, PartyReranker, candidates,
                                                                   covered)

BODY = "\n\n".join(f"{i}. Clause {i}. The parties shall perform their obligations under this Agreement in good faith."
                   for i in range(1, 30))
THREE = ("SUPPLY AGREEMENT\n\nThis Supply Agreement is made on June 2, 2011 among Harbor Lane Pharma AG (\"Harbor\"), "
         "Norcross Bio Laboratories S.A. (\"Norcross\") and Ridgeway Capital Partners Ltd., a company organised in "
         "Bermuda.\n\n" + BODY + "\n\nHARBOR LANE PHARMA AG\nBy: /s/ A\n\nNORCROSS BIO LABORATORIES S.A.\nBy: /s/ B\n\n"
         "RIDGEWAY CAPITAL PARTNERS LTD.\nBy: /s/ C\n")
TWO = ("SERVICES AGREEMENT\n\nThis Services Agreement is made as of May 1, 2010 between Acme Software, Inc., a Delaware "
       "corporation (\"Provider\"), and Beta Retail LLC, a New York limited liability company (\"Client\").\n\n" + BODY
       + "\n\n31. Provider may use Gamma Payments Ltd. to collect fees. Provider is a subsidiary of Omega Holdings "
       "Corporation.\n\n" + BODY + "\n\nACME SOFTWARE, INC.\nBy: /s/ A\n\nBETA RETAIL LLC\nBy: /s/ B\n")


def test_the_shipped_weights_match_their_manifest():
    manifest = json.loads((MODEL_DIR / "manifest.json").read_text(encoding="utf-8"))
    raw = (MODEL_DIR / "weights.json").read_bytes()
    assert manifest["files"]["weights.json"] == hashlib.sha256(raw).hexdigest()
    model = json.loads(raw)
    assert model["features"] == list(FEATURES) and len(model["weights"]) == len(FEATURES)
    assert manifest["version"] and "CUAD" in manifest["data"] and "test contracts never read" in manifest["data"]
    metrics = manifest["metrics"]
    # the re-ranker is shipped because it adds recall on the pool and on validation without giving precision away
    assert metrics["pool_cross_validated"]["f1"] > metrics["pool_rules"]["f1"]
    assert metrics["pool_cross_validated"]["precision"] >= metrics["pool_rules"]["precision"] - 0.01
    assert metrics["validation_rules_plus_reranker"]["f1"] > metrics["validation_rules"]["f1"]
    assert 0.0 < model["threshold"] < 1.0


def test_a_third_party_without_defined_term_is_added():
    rules = parties(THREE)
    assert [p.value["name"] for p in rules] == ["Harbor Lane Pharma AG", "Norcross Bio Laboratories S.A."]
    out = PartyReranker().add(THREE, rules)
    assert [p.value["name"] for p in out] == ["Harbor Lane Pharma AG", "Norcross Bio Laboratories S.A.",
                                              "Ridgeway Capital Partners Ltd."]
    added = out[-1]
    assert added.source == "model:en_party_reranker" and added.confidence >= PartyReranker().threshold
    assert THREE[added.start:added.end] == "Ridgeway Capital Partners Ltd."


def test_companies_named_deep_in_the_body_are_not_parties():
    rules = parties(TWO)
    names = {c.name for c in candidates(TWO, rules)}
    assert names == {"Gamma Payments Ltd.", "Omega Holdings Corporation"}  # the full stop is the sentence's
    assert [p.value["name"] for p in PartyReranker().add(TWO, rules)] == ["Acme Software, Inc.", "Beta Retail LLC"]


def test_candidates_leave_out_descriptions_places_and_the_rules_names():
    text = ("This Agreement is made between Acme Software, Inc., a Professional Corporation (\"Acme\"), and Managing "
            "Director NORTHWIND TRADERS INC. of 1 Main Street, BROOMFIELD, CO 80021, and Lenders and SUNTRON "
            "CORPORATION, and a Delaware Corporation.")
    rules = parties(text)
    names = [c.name for c in candidates(text, [p for p in rules if "Acme" in p.value["name"]])]
    assert "NORTHWIND TRADERS INC." in names and "SUNTRON CORPORATION" in names  # titles and lower-case words cut
    assert not [n for n in names if "Acme" in n or "Professional" in n or "BROOMFIELD" in n or "Delaware" in n]
    assert covered("lyleplc", ["tatelyleplc"]) and covered("acmebio", ["acme"]) and not covered("beta", ["acme"])


def test_weights_that_differ_from_the_manifest_are_refused(tmp_path):
    folder = tmp_path / "party_reranker"
    shutil.copytree(MODEL_DIR, folder)
    model = json.loads((folder / "weights.json").read_text(encoding="utf-8"))
    model["threshold"] = 0.01
    (folder / "weights.json").write_text(json.dumps(model), encoding="utf-8")
    with pytest.raises(BundleIntegrityError, match="SHA-256"):
        PartyReranker(folder)
    model["features"] = model["features"][:-1]
    raw = json.dumps(model).encode()
    (folder / "weights.json").write_bytes(raw)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["weights.json"] = hashlib.sha256(raw).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ConfigError, match="retrain"):
        PartyReranker(folder)


def test_the_pipeline_adds_them_unless_told_not_to(taskflow_factory):
    with_model = taskflow_factory(["Parties"])({"text": THREE, "language": "en"})
    assert [e.value["name"] for e in with_model.fields["Parties"]][-1] == "Ridgeway Capital Partners Ltd."
    rules_only = Taskflow("legal_extraction", schema=["Parties"], party_reranker=False)({"text": THREE, "language": "en"})
    assert len(rules_only.fields["Parties"]) == 2
    with pytest.raises(ConfigError, match="party_reranker"):
        Taskflow("legal_extraction", schema=["Parties"], party_reranker="yes")


def test_the_training_script_scores_candidates_as_the_pipeline_adds_them():
    import importlib.util

    import numpy as np

    path = MODEL_DIR.parents[2] / "scripts" / "train_party_reranker.py"
    spec = importlib.util.spec_from_file_location("train_party_reranker", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rules = parties(THREE)
    cands = candidates(THREE, rules)
    row = ([p.value["name"] for p in rules], ["Harbor Lane Pharma AG", "Norcross Bio Laboratories S.A.",
                                              "Ridgeway Capital Partners Ltd"], cands, [1] * len(cands))
    assert [c.name for c in cands] == ["Ridgeway Capital Partners Ltd."]
    alone = script._f1([row], [np.zeros(1)], 0.5)
    assert (alone["tp"], alone["predicted"], alone["gold"]) == (2, 2, 3)
    joined = script._f1([row], [np.array([0.7])], 0.5)
    assert (joined["tp"], joined["predicted"], joined["f1"]) == (3, 3, 1.0)
