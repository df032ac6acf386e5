"""The Mahalanobis out-of-scope detector (``sectorflow_customer_service.oos``)."""

from __future__ import annotations

import numpy as np
import pytest

from sectorflow import BundleError
from sectorflow_customer_service.oos import MahalanobisScorer, calibrate_distance, wilson_lower


def test_distance_equals_the_quadratic_form_with_the_fitted_precision():
    rng = np.random.default_rng(7)
    cov = np.array([[4.0, 1.2, 0.0], [1.2, 1.0, 0.3], [0.0, 0.3, 0.5]])
    means = np.array([[0.0, 0.0, 0.0], [6.0, -2.0, 1.0]])
    labels = np.repeat([0, 1], 400)
    x = means[labels] + rng.multivariate_normal(np.zeros(3), cov, size=800)
    scorer = MahalanobisScorer.fit(x, labels)
    from sklearn.covariance import LedoitWolf

    mu = np.stack([x[labels == c].mean(0) for c in (0, 1)])
    precision = LedoitWolf().fit(x - mu[labels]).precision_
    queries = np.array([[0.5, 0.2, -0.1], [5.0, -1.0, 1.5], [20.0, 20.0, -9.0]])
    direct = np.array([min((q - m) @ precision @ (q - m) for m in mu) for q in queries])
    np.testing.assert_allclose(scorer.distance(queries), direct, rtol=1e-9)
    # a point far along the low-variance axis is further than one as far along the high-variance axis
    along_wide = scorer.distance(mu[:1] + [[3.0, 0.0, 0.0]])[0]
    along_narrow = scorer.distance(mu[:1] + [[0.0, 0.0, 3.0]])[0]
    assert along_narrow > 4 * along_wide


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 4))
    scorer = MahalanobisScorer.fit(x, np.arange(60) % 3)
    scorer.save(tmp_path / "oos.safetensors")
    again = MahalanobisScorer.load(tmp_path / "oos.safetensors")
    np.testing.assert_allclose(again.distance(x[:5]), scorer.distance(x[:5]), rtol=1e-5)
    with pytest.raises(ValueError, match=r"shape \[n, 4\]"):
        scorer.distance(np.zeros((2, 3)))


def test_mismatched_statistics_are_a_bundle_error(tmp_path):
    with pytest.raises(BundleError, match="expected"):
        MahalanobisScorer(np.eye(3), np.zeros((2, 4)))
    from safetensors.numpy import save_file

    save_file({"means": np.zeros((2, 3), dtype=np.float32)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(BundleError, match=r"lacks \['whitener'\]"):
        MahalanobisScorer.load(tmp_path / "bad.safetensors")


def test_wilson_lower_bound_textbook_values():
    assert wilson_lower(5, 10) == pytest.approx(0.2366, abs=1e-4)  # 5 of 10: Wilson 95% interval 0.237-0.763
    assert wilson_lower(0, 0) == 0.0
    assert wilson_lower(84, 100) >= 0.75 > wilson_lower(83, 100)  # why 100 oos_val messages need 84 caught


def test_calibration_keeps_the_recall_floor_at_95_percent_confidence():
    # 100 out-of-scope messages at distances 1..100; in scope: 10 messages at distance 0.5 (right) and 40..49
    d_out = np.arange(1.0, 101.0)
    d_in = np.r_[np.full(10, 0.5), np.arange(40.0, 50.0)]
    right = np.ones(20, dtype=bool)
    none_in, none_out = np.zeros(20, dtype=bool), np.zeros(100, dtype=bool)
    cal = calibrate_distance(d_in, right, none_in, d_out, none_out)
    # at t = 16 exactly 84 of 100 are caught (Wilson lower 0.755 >= 0.75); t = 17 catches 83 (0.744): refused
    assert cal["distance_threshold"] == 16.0 and cal["val_oos_recall"] == 0.84
    assert cal["val_in_scope_accuracy"] == 0.5 and cal["val_oos_recall_wilson_lower"] >= 0.75
    # messages already out of scope for another reason (the head's 'oos' class) count as caught
    forced = np.zeros(100, dtype=bool)
    forced[:30] = True  # the 30 nearest are caught by the head: the threshold may rise to 46 (84 caught)
    cal = calibrate_distance(d_in, right, none_in, d_out, forced)
    assert cal["distance_threshold"] == 46.0 and cal["val_in_scope_accuracy"] == 0.85
