"""INT8 risk scorer: ``sectorflow models quantize aml`` builds it from validation data; ``Taskflow("aml",
precision="int8")`` then scores through ONNX Runtime and raises the same alerts as fp32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sectorflow import (
    QuantizationError,
    Taskflow,
    UnsupportedPrecisionError,
    load_bundle,
)
from sectorflow.host import get_task
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.calibration import DATA, validation

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "aml" / "transactions.csv.gz"
SCORE_TOLERANCE = {"median": 0.01, "p99": 0.03, "max": 0.1}
"""Allowed differences between INT8 and fp32 model scores (in [0, 1]). The aml task quantizes weight-only
(``MatMulWeightOnly``: int8 weights, float32 activations), so scores move only by the weights' rounding: bundle
2.1.0 on the sample, median 0.0020, p99 0.0103, max 0.032, no alert flipped (2.0.0: 0.0019 / 0.0076 / 0.026).
(ONNX Runtime's dynamic MatMul quantization, which also rounds the activations per batch, moved one 2.0.0 score by
0.34 and lost 0.54 F1 points.)"""


def test_int8_without_a_quantized_bundle_names_the_quantize_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    with pytest.raises(UnsupportedPrecisionError, match="sectorflow models quantize aml"):
        Taskflow("aml", precision="int8")


def test_validation_without_the_data_is_a_typed_error(tmp_path):
    bundle = load_bundle(get_task("aml").default_bundle, expected_task="aml")
    with pytest.raises(QuantizationError, match="amlsim_sample|missing"):
        validation(bundle, data=tmp_path / "absent")


@pytest.mark.skipif(not (DATA / "20K_cycle200").is_dir(), reason="../shared/data/amlsim_sample not present")
def test_quantized_scorer_agrees_with_fp32(tmp_path, monkeypatch):
    from sectorflow.models.quantize import quantize_bundle

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # ONNX Runtime's shape inference may leave sym_shape_infer_temp.onnx in the cwd
    fp32 = Taskflow("aml")
    record = quantize_bundle(fp32.spec)  # the full validation set, default 0.5-point margin
    assert record["accuracy"]["metric"] == "account-level F1" and record["op_types"] == ["MatMulWeightOnly"]
    assert record["accuracy"]["loss_points"] <= 0.5
    assert record["size"]["int8_bytes"] < record["size"]["fp32_bytes"]

    int8 = Taskflow("aml", precision="int8", transaction_model=True)
    assert int8.pipeline.bundle.format == "onnx" and int8.pipeline.bundle.manifest["precision"] == "int8"
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    want, got = Taskflow("aml", transaction_model=True)(txns), int8(txns)  # the per-transaction scorer's scores
    a = np.array([r.model_score for r in want], dtype=np.float64)
    b = np.array([r.model_score for r in got], dtype=np.float64)
    diff = np.abs(a - b)
    flipped = sum(r.flagged != s.flagged for r, s in zip(want, got))  # the model's decision
    print(f"median {np.median(diff):.4f} p99 {np.quantile(diff, 0.99):.4f} max {diff.max():.4f} "
          f"alert flips {flipped}/{len(want)}")
    assert np.median(diff) <= SCORE_TOLERANCE["median"] and diff.max() <= SCORE_TOLERANCE["max"]
    assert np.quantile(diff, 0.99) <= SCORE_TOLERANCE["p99"]
    assert flipped <= max(1, len(want) // 100)  # a score near the threshold may flip; 99% must agree
    assert sum(r.flagged for r in got) > 0
