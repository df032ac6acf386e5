"""``sectorflow models export``: ONNX and Paddle bundles, checked against the Paddle predictor's outputs.

Models: a tiny transformer encoder (random weights; embedding, attention, layer norm, GELU) exported with
``paddle.jit.save``, and the digits MLP of tests/quantize_support.py (with validation data).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from core_support import registry_scope
from quantize_support import DigitsPlugin, TextPlugin, digits_split, save_bundle, save_tiny_transformer, train_mlp
from sectorflow import ConfigError, DeviceUnavailableError, ExportMismatchError, Taskflow, load_bundle
from sectorflow.cli import main
from sectorflow.models.export import export_bundle

pytestmark = pytest.mark.timeout(600)

TEXTS = ["hello", "where is my card?", "转账失败了怎么办", "a", "refund please, order 1234", "x" * 40]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return save_tiny_transformer(tmp_path_factory.mktemp("encoder") / "fp32")


@pytest.fixture
def text_task(encoder):
    with registry_scope() as make:
        plugin = TextPlugin(encoder)
        make({"tiny_text": plugin})
        yield plugin.spec


@pytest.fixture(scope="module")
def onnx_export(encoder, tmp_path_factory) -> dict:
    with registry_scope() as make:
        plugin = TextPlugin(encoder)
        make({"tiny_text": plugin})
        out = tmp_path_factory.mktemp("exports") / "tiny_text-onnx"
        return export_bundle(plugin.spec, out, fmt="onnx")


def test_onnx_export_reproduces_the_paddle_outputs_within_the_tolerance(text_task, onnx_export):
    assert onnx_export["inputs"] == "synthetic"  # the task gives no validation data
    assert 0 < onnx_export["max_abs_diff"] <= 1e-4  # two runtimes: not bit-identical, but close
    bundle = load_bundle(onnx_export["out"], expected_task="tiny_text")
    assert (bundle.format, bundle.manifest["precision"]) == ("onnx", "fp32")
    assert bundle.manifest["onnx_model"] == "model.onnx"
    assert set(bundle.manifest["files"]) == {"model.onnx"}
    assert bundle.manifest["export"]["check"]["max_abs_diff"] == onnx_export["max_abs_diff"]
    assert bundle.manifest["export"]["from_bundle_sha256"] == load_bundle(text_task.default_bundle).sha256


def test_the_exported_bundle_serves_the_task_through_onnx_runtime(text_task, onnx_export):
    paddle_tf = Taskflow("tiny_text")
    onnx_tf = Taskflow("tiny_text", task_path=onnx_export["out"])
    items = [{"text": t} for t in TEXTS]
    expected = np.array([r.scores for r in paddle_tf(items)])
    got = np.array([r.scores for r in onnx_tf(items)])
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert onnx_tf.meta.model_name == "tiny-encoder" and onnx_tf.meta.precision == "fp32"
    assert type(onnx_tf.pipeline.pool).__name__ == "OnnxSessionPool"
    assert onnx_tf.pipeline.pool.input_names == ["input_ids"]


def test_onnx_bundles_run_on_cpu_only(text_task, onnx_export):
    from core_support import FakeProbe

    with pytest.raises(DeviceUnavailableError, match="runs ONNX models on CPU only"):
        Taskflow("tiny_text", device="gpu", task_path=onnx_export["out"], device_probe=FakeProbe(gpus=1))


def test_a_difference_above_the_tolerance_fails_and_writes_nothing(text_task, onnx_export, tmp_path):
    tolerance = onnx_export["max_abs_diff"] / 2
    out = tmp_path / "strict"
    with pytest.raises(ExportMismatchError, match="differs from the Paddle predictor by") as info:
        export_bundle(text_task, out, fmt="onnx", tolerance=tolerance)
    assert info.value.details["max_abs_diff"] == pytest.approx(onnx_export["max_abs_diff"])
    assert info.value.details["tolerance"] == tolerance
    assert list(tmp_path.iterdir()) == []


def test_paddle_export_is_the_same_bundle(text_task, tmp_path, capsys):
    out = tmp_path / "paddle"
    assert main(["models", "export", "tiny_text", "--format", "paddle", "--out", str(out)]) == 0
    assert "largest absolute difference from the Paddle predictor 0 on every output (" in capsys.readouterr().err
    assert load_bundle(out).sha256 == load_bundle(text_task.default_bundle).sha256


def test_the_cli_exports_with_validation_inputs_when_the_task_has_them(tmp_path, capsys):
    bundle = save_bundle(train_mlp(epochs=5), tmp_path / "digits")
    with registry_scope() as make:
        make({"digits": DigitsPlugin(bundle)})
        out = tmp_path / "digits-onnx"
        assert main(["models", "export", "digits", "--format", "onnx", "--out", str(out)]) == 0
        assert "5 validation batches" in capsys.readouterr().err
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["export"]["check"]["inputs"] == "validation"
        assert set(manifest["files"]) == {"model.onnx", "labels.txt"}
        _, _, x_val, _ = digits_split()
        items = [{"pixels": row.tolist()} for row in x_val[:50]]
        assert [r.label for r in Taskflow("digits", task_path=out)(items)] == \
               [r.label for r in Taskflow("digits")(items)]
        assert main(["models", "export", "digits", "--format", "tflite"]) == 2  # click: invalid choice
        for bad in ("0", "-1", "inf"):  # a finite tolerance above 0: a parameter error, not a failed check
            assert main(["models", "export", "digits", "--format", "onnx", "--out", str(tmp_path / "t"),
                         "--tolerance", bad]) == 2
            assert "tolerance" in capsys.readouterr().err.lower()
        assert not (tmp_path / "t").exists()


def test_gather_quantization_stores_the_embedding_table_as_int8(encoder, tmp_path):
    """``--ops MatMul,Gather``: the embedding table too is stored int8 (weight-only), checked like MatMul-only."""
    from sectorflow.models.quantize import quantize_bundle

    plugin = TextPlugin(encoder, with_validation=True)
    # Random weights give 3 nearly equal logits, so INT8 noise flips some argmaxes: the margin is opened here (the
    # refusal itself is tested on the digits model) and the agreement is only checked to be measured and high.
    matmul = quantize_bundle(plugin.spec, out=tmp_path / "matmul", margin=100)
    both = quantize_bundle(plugin.spec, out=tmp_path / "both", margin=100, op_types=("MatMul", "Gather"))
    assert both["op_types"] == ["MatMul", "Gather"] and "Gather" in both["method"]
    assert both["size"]["int8_bytes"] < matmul["size"]["int8_bytes"]  # the 200 x 32 table is now int8
    import onnx

    def float_tables(path: Path) -> list[str]:
        model = onnx.load(str(path / "model.onnx"))
        return [t.name for t in model.graph.initializer
                if t.data_type == onnx.TensorProto.FLOAT and list(t.dims) == [200, 32]]

    assert float_tables(tmp_path / "matmul") and not float_tables(tmp_path / "both")
    assert both["accuracy"]["fp32"] == 1.0  # labels are fp32's own predictions
    assert 0.6 < both["accuracy"]["int8"] < 1.0 and 0.6 < matmul["accuracy"]["int8"] <= 1.0
    with pytest.raises(ConfigError, match="give one or more of MatMul, Gather"):
        quantize_bundle(plugin.spec, out=tmp_path / "x", op_types=("Conv",))
    # a task that declares quantize_ops gets them when the caller (the CLI without --ops) names none
    from dataclasses import replace

    declared = quantize_bundle(replace(plugin.spec, int8=replace(plugin.spec.int8, quantize_ops=("MatMul", "Gather"))), out=tmp_path / "declared",
                               margin=100)
    assert declared["op_types"] == ["MatMul", "Gather"] and matmul["op_types"] == ["MatMul"]


def test_a_task_without_a_bundle_has_nothing_to_export_or_quantize():
    from pydantic import BaseModel
    from sectorflow import BundleError, Pipeline, TaskResult, TaskSpec
    from sectorflow.models.export import source_bundle

    class Item(BaseModel):
        x: int

    spec = TaskSpec(name="bare", input_model=Item, output_model=TaskResult, pipeline=Pipeline)
    for action in ("export", "quantize"):
        with pytest.raises(BundleError, match=f"Task 'bare' has no model bundle: there is nothing to {action}."):
            source_bundle(spec, None, action)


@pytest.mark.parametrize("out", ["", "  ", ".", "..", "CWD"])
def test_an_out_folder_that_would_delete_the_working_folder_is_refused_before_any_work(text_task, tmp_path, out,
                                                                                        monkeypatch):
    # Path("") is the current folder: export_bundle(out="") from inside a bundle folder deleted that folder (and the
    # staged export with it) in replace_folder's rmtree. The API, not only the CLI, refuses it, before converting.
    work = tmp_path / "bundle-folder"
    work.mkdir()
    (work / "manifest.json").write_text("{}")  # looks like a bundle: the old check let it be replaced
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match="out is empty|current folder or a folder above it"):
        export_bundle(text_task, str(work) if out == "CWD" else out, fmt="onnx")
    assert sorted(p.name for p in work.iterdir()) == ["manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle-folder"]  # no staging folder left either


def test_an_out_that_is_a_file_is_refused(text_task, tmp_path):
    target = tmp_path / "model.onnx"
    target.write_text("not a folder")
    with pytest.raises(ConfigError, match="is a file"):
        export_bundle(text_task, target, fmt="onnx")
    assert target.read_text() == "not a folder"
