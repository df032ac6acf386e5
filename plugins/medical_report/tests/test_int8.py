"""ONNX export and INT8 of the span tagger: ``sectorflow models export|quantize medical_report`` on the tagger's
validation split (padded batches), and ``Taskflow("medical_report", precision="int8")`` giving the same reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sectorflow import (
    QuantizationError,
    Taskflow,
    UnsupportedPrecisionError,
    import_paddle,
    load_bundle,
)
from sectorflow.models.export import cpu_paddle_pool, export_bundle, run_batches
from sectorflow.host import get_task
from sectorflow_medical_report import tagger, trainable
from sectorflow_medical_report.plugin import EXAMPLES
from sectorflow_medical_report.calibration import span_f1, validation

pytestmark = pytest.mark.timeout(600)

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "medical_report" / "reports.jsonl"


def _items() -> list[dict]:
    return list(EXAMPLES) + [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()]


def _reports(tf) -> list[dict]:
    return [r.model_dump(exclude={"meta"}) for r in tf(_items())]


@pytest.fixture(scope="module")
def spec():
    return get_task("medical_report")


@pytest.fixture(scope="module")
def bundle(spec):
    return load_bundle(spec.default_bundle, expected_task="medical_report")


@pytest.fixture(scope="module")
def fp32_reports():
    return _reports(Taskflow("medical_report"))


def test_export_layer_is_the_trained_function_on_padded_rows():
    paddle = import_paddle()
    vocab, weights = trainable.load_vocab_and_weights()
    layer = tagger.make_layer(len(vocab))
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    layer.eval()
    export = tagger.make_export_layer(layer)
    index = {c: i for i, c in enumerate(vocab)}
    texts = ["右肺上叶结节，约8mm。", "There is a small left pleural effusion.", "No pneumothorax."]
    ids = [tagger.encode(t, index) for t in texts]
    chars = np.zeros((len(ids), max(map(len, ids))), dtype=np.int64)
    for row, x in enumerate(ids):
        chars[row, :len(x)] = x
    lengths = np.asarray([len(x) for x in ids], dtype=np.int64)
    with paddle.no_grad():
        want = layer(paddle.to_tensor(chars), paddle.to_tensor(lengths)).numpy()
        got = export(paddle.to_tensor(chars), paddle.to_tensor(lengths)).numpy()
    assert np.abs(want - got).max() < 1e-5
    assert len(set(lengths.tolist())) == 3  # two rows shorter than the batch


def test_validation_set_reproduces_the_manifest_f1_with_padded_batches(bundle):
    val = validation(bundle)
    assert len(val.labels) == 600 and len(val.batches) == 10
    first = val.batches[0]
    assert first["lengths"].min() < first["chars"].shape[1] == first["lengths"].max()
    f1 = span_f1(run_batches(cpu_paddle_pool(bundle), val.batches), val.labels)
    assert f1 == pytest.approx(bundle.manifest["metrics"]["validation"]["f1"], abs=1e-4)


def test_span_f1_of_the_gold_tags_is_one_and_of_all_outside_is_zero(bundle):
    val = validation(bundle, n=40)
    gold = [[np.eye(len(tagger.TAGS), dtype=np.float32)[np.pad(y, (0, 300 - len(y)))][None] for y in val.labels]]
    outputs = [[np.concatenate(gold[0], axis=0)]]
    assert span_f1(outputs, val.labels) == 1.0
    outside = [[np.eye(len(tagger.TAGS), dtype=np.float32)[np.zeros((40, 300), dtype=np.int64)]]]
    assert span_f1(outside, val.labels) == 0.0
    with pytest.raises(ValueError, match="labels"):
        span_f1(outputs, val.labels[:-1])


def test_onnx_export_passes_its_check_and_serves_the_same_reports(spec, tmp_path, fp32_reports):
    check = export_bundle(spec, tmp_path / "onnx", fmt="onnx")
    assert check["inputs"] == "validation" and check["batches"] == 10
    assert check["max_abs_diff"] <= 1e-4  # was 0.76 with the GRU's sequence_length (docs/performance.md)
    onnx = Taskflow("medical_report", task_path=tmp_path / "onnx")
    assert onnx.pipeline.bundle.manifest["format"] == "onnx"
    assert _reports(onnx) == fp32_reports


def test_int8_without_a_quantized_bundle_names_the_quantize_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    with pytest.raises(UnsupportedPrecisionError, match="sectorflow models quantize medical_report"):
        Taskflow("medical_report", precision="int8")
    rules_only = Taskflow("medical_report", precision="int8", use_model=False)  # no model runs: none needed
    report = rules_only("There is an 8 mm nodule in the left lower lobe.")
    assert report.meta.model_name is None and report.findings and not report.model_spans


def test_quantized_tagger_gives_the_same_reports(spec, tmp_path, monkeypatch, fp32_reports):
    from sectorflow.models.quantize import quantize_bundle

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # ONNX Runtime's shape inference may leave sym_shape_infer_temp.onnx in the cwd
    with pytest.raises(QuantizationError, match="margin"):  # the output layer too loses 0.04 F1 points
        quantize_bundle(spec, margin=0.0, op_types=("MatMul", "Gather"))
    record = quantize_bundle(spec)  # the plugin's default: embedding (Gather) and GRU weights, weight-only
    assert record["op_types"] == ["Gather", "GRU"] and record["accuracy"]["metric"] == "span_f1"
    assert 0 <= record["accuracy"]["loss_points"] <= 0.5
    assert record["size"]["int8_bytes"] <= 0.3 * record["size"]["fp32_bytes"]  # issue 10's size target
    assert "DequantizeLinear" in record["method"]
    int8 = Taskflow("medical_report", precision="int8")
    assert int8.pipeline.bundle.manifest["precision"] == "int8"
    assert _reports(int8) == fp32_reports
