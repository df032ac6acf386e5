"""The nearest-neighbour out-of-scope scorer (oos.NearestNeighbourScorer) and the CLINC150 rule of bundle 0.3.1."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from sectorflow import BundleError
from sectorflow_customer_service.oos import (
    MahalanobisScorer,
    NearestNeighbourScorer,
    load_scorer,
)

BUNDLE = Path(__file__).resolve().parents[1] / "src" / "sectorflow_customer_service" / "bundle"


def test_cosine_distance_to_the_nearest_stored_vector():
    scorer = NearestNeighbourScorer(np.array([[2.0, 0.0], [0.0, 3.0]]))  # stored at unit length
    d = scorer.distance(np.array([[5.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]]))
    assert d == pytest.approx([0.0, 1 - 1 / math.sqrt(2), 1.0, 1 + 1 / math.sqrt(2)], abs=1e-6)
    # chunking does not change the result
    x = np.random.default_rng(0).normal(size=(37, 2))
    assert np.allclose(scorer.distance(x, chunk=5), scorer.distance(x, chunk=512))


def test_saved_as_float16_unit_vectors_and_read_back(tmp_path):
    rng = np.random.default_rng(1)
    train = rng.normal(size=(50, 8)) * 7.0
    scorer = NearestNeighbourScorer(train)
    scorer.save(tmp_path / "knn.safetensors")
    from safetensors.numpy import load_file

    stored = load_file(str(tmp_path / "knn.safetensors"))["vectors"]
    assert stored.dtype == np.float16 and stored.shape == (50, 8)
    assert np.allclose(np.linalg.norm(stored.astype(np.float32), axis=1), 1.0, atol=2e-3)
    again = load_scorer("knn", tmp_path / "knn.safetensors")
    assert isinstance(again, NearestNeighbourScorer)
    query = rng.normal(size=(10, 8))
    assert np.allclose(again.distance(query), scorer.distance(query), atol=2e-3)
    assert np.allclose(again.distance(train[:5]), 0.0, atol=2e-3)  # a training message is its own neighbour


def test_bad_statistics_and_inputs_are_named(tmp_path):
    with pytest.raises(BundleError, match=r"\[n, d\]"):
        NearestNeighbourScorer(np.zeros((0, 4)))
    with pytest.raises(BundleError, match="zero row"):
        NearestNeighbourScorer(np.array([[1.0, 0.0], [0.0, 0.0]]))
    save_file({"means": np.zeros((2, 3), dtype=np.float32)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(BundleError, match="lacks 'vectors'"):
        NearestNeighbourScorer.load(tmp_path / "bad.safetensors")
    with pytest.raises(BundleError, match="Unknown out-of-scope method 'lof'"):
        load_scorer("lof", tmp_path / "bad.safetensors")
    scorer = NearestNeighbourScorer(np.eye(3))
    with pytest.raises(ValueError, match=r"\[n, 3\]"):
        scorer.distance(np.ones((2, 4)))
    with pytest.raises(ValueError, match="all zeros"):
        scorer.distance(np.zeros((1, 3)))


def test_shipped_clinc150_rule_is_the_nearest_neighbour_distance():
    """Bundle 0.3.1 (scripts/fit_oos_operating_point.py): kNN k=1 over the 15,000 CLINC150 train vectors, threshold
    at the most oos_val recall with val in-scope accuracy >= 95.5; 0.3.0's Mahalanobis statistics stay in the bundle.
    Unchanged in 0.3.2 (only the banking77 e5 head was refit) and 0.3.3 (ensemble gate, banking77 fallback)."""
    manifest = json.loads((BUNDLE / "manifest.json").read_text())
    cal = json.loads((BUNDLE / "calibration.json").read_text())["clinc150"]
    assert manifest["version"] == "0.3.3"
    assert cal["method"] == "knn" and cal["statistics"] == "oos_clinc150_knn.safetensors"
    assert cal["val_in_scope_accuracy"] >= 0.955 and cal["val_oos_recall"] == 0.92
    assert 0.0 < cal["distance_threshold"] < 1.0
    assert cal["previous_operating_point"]["val_oos_recall"] == 0.84
    knn = load_scorer(cal["method"], BUNDLE / cal["statistics"])
    assert isinstance(knn, NearestNeighbourScorer) and knn.vectors.shape == (15000, 384)
    assert isinstance(load_scorer("mahalanobis", BUNDLE / cal["mahalanobis_statistics"]), MahalanobisScorer)
