"""INT8 clause classifier: ``sectorflow models quantize legal_extraction`` builds it from the CUAD validation
contracts; ``Taskflow("legal_extraction", precision="int8")`` then labels the same clauses as fp32."""

from __future__ import annotations

import pytest
from sectorflow import (
    QuantizationError,
    Taskflow,
    UnsupportedPrecisionError,
    load_bundle,
)
from sectorflow.host import get_task
from sectorflow_legal_extraction import cuad
from sectorflow_legal_extraction.calibration import DATA, validation

SCORE_TOLERANCE = 0.05
"""Largest allowed difference between the INT8 and fp32 probability of a clause label both runs give."""


def test_int8_without_a_quantized_bundle_names_the_quantize_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    with pytest.raises(UnsupportedPrecisionError, match="sectorflow models quantize legal_extraction"):
        Taskflow("legal_extraction", precision="int8")


def test_validation_without_the_data_is_a_typed_error(tmp_path):
    bundle = load_bundle(get_task("legal_extraction").default_bundle, expected_task="legal_extraction")
    with pytest.raises(QuantizationError, match="cuad"):
        validation(bundle, data=tmp_path / "absent")


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/cuad not present")
def test_quantized_classifier_agrees_with_fp32(tmp_path, monkeypatch):
    from sectorflow.models.quantize import quantize_bundle

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # ONNX Runtime's shape inference may leave sym_shape_infer_temp.onnx in the cwd
    fp32 = Taskflow("legal_extraction")
    record = quantize_bundle(fp32.spec)  # every validation contract, default 0.5-point margin
    assert record["accuracy"]["metric"] == "macro AUPR"
    assert record["accuracy"]["loss_points"] <= 0.5
    assert record["op_types"] == ["MatMul", "Gather"]  # the plugin's default: the embedding table 8-bit too
    assert record["size"]["int8_bytes"] <= 0.3 * record["size"]["fp32_bytes"]  # issue 10's size target

    int8 = Taskflow("legal_extraction", precision="int8")
    assert int8.pipeline.bundle.manifest["precision"] == "int8"
    contracts = [c for c in cuad.load(DATA) if c.split == "validation"][:4]
    items = [{"text": c.text, "language": "en"} for c in contracts]
    compared = 0
    for want, got in zip(fp32(items), int8(items)):
        a = {(c.category, c.start, c.end): c.score for c in want.clauses}
        b = {(c.category, c.start, c.end): c.score for c in got.clauses}
        both = a.keys() & b.keys()
        assert len(both) >= 0.9 * max(len(a), len(b))  # labels right at a threshold may flip
        assert all(abs(a[k] - b[k]) <= SCORE_TOLERANCE for k in both)
        compared += len(both)
    assert compared > 0
