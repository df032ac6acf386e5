"""INT8: ``sectorflow models quantize`` builds a checked INT8 bundle, ``Taskflow(precision="int8")`` runs it.

The model is real and small: an MLP trained here on scikit-learn's bundled digits (tests/quantize_support.py), with
measured accuracy. A second copy with one outlier weight row shows the margin check refusing a ruined model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from core_support import FakeProbe, registry_scope
from quantize_support import DigitsPlugin, add_outlier_row, digits_split, save_bundle, train_mlp
from sectorflow import (
    ConfigError,
    QuantizationError,
    Taskflow,
    UnsupportedPrecisionError,
    load_bundle,
    plugins,
    write_manifest,
)
from sectorflow.cli import main
from sectorflow.models.int8_store import int8_bundle_dir
from sectorflow.models.quantize import accuracy_rule, quantize_bundle

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    """The digits bundle, and the same model with an outlier weight row (fp32 outputs unchanged)."""
    root = tmp_path_factory.mktemp("digits")
    model = train_mlp(epochs=100)
    good = save_bundle(model, root / "fp32")
    bad = save_bundle(add_outlier_row(model), root / "outlier", version="1.0.0-outlier")
    return {"fp32": good, "outlier": bad}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sectorflow-home")


@pytest.fixture
def digits(trained, store, monkeypatch):
    """A registry with the digits task on the trained bundle; SECTORFLOW_HOME a private store for the module."""
    monkeypatch.setenv("SECTORFLOW_HOME", str(store))
    with registry_scope() as make:
        plugin = DigitsPlugin(trained["fp32"])
        make({"digits": plugin})
        yield plugin.spec


@pytest.fixture(scope="module")
def quantized(trained, store) -> dict:
    """``sectorflow models quantize digits --json`` run once for the module (the CLI path, end to end)."""
    with pytest.MonkeyPatch.context() as mp, registry_scope() as make:
        mp.setenv("SECTORFLOW_HOME", str(store))
        make({"digits": DigitsPlugin(trained["fp32"])})
        import contextlib
        import io

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(["models", "quantize", "digits", "--json"])
        assert code == 0
        return json.loads(buffer.getvalue())


def test_quantize_records_size_and_accuracy_against_fp32_in_the_manifest(digits, quantized, trained):
    fp32 = load_bundle(trained["fp32"])
    out = Path(quantized["out"])
    assert out == int8_bundle_dir("digits", fp32.sha256)
    bundle = load_bundle(out, expected_task="digits")  # every file hashed in the manifest
    assert (bundle.format, bundle.manifest["precision"]) == ("onnx", "int8")
    record = bundle.manifest["quantization"]
    assert record["source_bundle_sha256"] == fp32.sha256
    accuracy = record["accuracy"]
    assert accuracy["fp32"] > 0.93 and accuracy["int8"] > 0.93  # a real model, measured on 599 held-out images
    assert accuracy["loss_points"] == pytest.approx(100 * (accuracy["fp32"] - accuracy["int8"]), abs=1e-3)
    assert accuracy["relative"] == pytest.approx(accuracy["int8"] / accuracy["fp32"], abs=1e-6)
    assert accuracy["relative"] >= 0.995 and accuracy["margin_percent"] == 0.5
    size = record["size"]
    assert size["fp32_bytes"] == sum((trained["fp32"] / f).stat().st_size for f in ("model.json", "model.pdiparams"))
    assert size["int8_bytes"] == (out / "model.onnx").stat().st_size
    assert size["ratio"] < 0.35  # int8 weights: about a quarter of the fp32 bytes, plus scales and graph
    assert record["int8_tensors"] >= 2  # both Linear layers' weights are stored as int8
    assert (out / "labels.txt").read_text() == (trained["fp32"] / "labels.txt").read_text()  # other files kept


def test_taskflow_int8_runs_the_int8_bundle_and_agrees_with_fp32(digits, quantized):
    _, _, x_val, _ = digits_split()
    items = [{"pixels": row.tolist()} for row in x_val[:200]]
    fp32 = Taskflow("digits")(items)
    int8_tf = Taskflow("digits", precision="int8", batch_size=64)
    int8 = int8_tf(items)
    assert int8_tf.meta.precision == "int8"
    assert int8_tf.meta.bundle_sha256 == load_bundle(quantized["out"]).sha256
    agree = np.mean([a.label == b.label for a, b in zip(fp32, int8)])
    assert agree >= 0.98
    diffs = np.abs(np.array([r.scores for r in fp32]) - np.array([r.scores for r in int8]))
    assert 0 < diffs.max() < 5.0  # int8 really ran (outputs differ) and stays close to fp32 logits


def test_int8_before_quantize_tells_the_user_to_run_the_command(trained, monkeypatch, tmp_path):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path / "empty-home"))
    with registry_scope() as make:
        make({"digits": DigitsPlugin(trained["fp32"])})
        with pytest.raises(UnsupportedPrecisionError, match="`sectorflow models quantize digits`") as info:
            Taskflow("digits", precision="int8")
    assert info.value.details["looked_in"] == str(int8_bundle_dir("digits", load_bundle(trained["fp32"]).sha256))


def test_an_int8_bundle_of_other_weights_is_not_used(digits, quantized, tmp_path):
    """The store is keyed by the fp32 bundle's hash: new weights never run with an INT8 model of the old ones."""
    changed = tmp_path / "v2"
    shutil.copytree(digits.default_bundle, changed)
    manifest = json.loads((changed / "manifest.json").read_text())
    (changed / "manifest.json").unlink()
    write_manifest(changed, **{**{k: v for k, v in manifest.items() if k != "files"}, "version": "2.0.0"})
    with pytest.raises(UnsupportedPrecisionError, match="--task-path"):
        Taskflow("digits", precision="int8", task_path=changed)
    assert Taskflow("digits", precision="int8", task_path=quantized["out"]).meta.precision == "int8"


def test_a_model_that_int8_ruins_is_refused_and_nothing_is_saved(digits, trained, tmp_path):
    out = tmp_path / "refused"
    with pytest.raises(QuantizationError, match="more than the margin of 0.5") as info:
        quantize_bundle(digits, task_path=trained["outlier"], out=out)
    accuracy = info.value.details["accuracy"]
    assert accuracy["fp32"] > 0.93  # the outlier row does not change fp32 (it multiplies a pixel that is always 0)
    assert accuracy["loss_points"] > 20
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no staging folder left behind


def test_the_accuracy_rule_is_relative_to_fp32_not_points():
    """Issue 30: the customer-service INT8 model (bundle 0.2.0/0.3.x MiniLM head, banking77 validation slice of
    1,003 messages) got 931 right against fp32's 936: 0.50 points lost (the old absolute rule accepted it), 99.47 %
    of fp32 (the relative rule refuses it). One message more (932) is 99.57 %: accepted."""
    refused = accuracy_rule(936 / 1003, 931 / 1003)
    assert refused["loss_points"] == pytest.approx(0.4985, abs=1e-4)  # under the old 0.5-point margin
    assert refused["relative"] == pytest.approx(0.994658, abs=1e-6)
    assert refused["accepted"] is False
    assert accuracy_rule(936 / 1003, 932 / 1003)["accepted"] is True
    # exactly at the limit is accepted (float rounding does not refuse it); just under is refused
    assert accuracy_rule(1.0, 0.995)["accepted"] is True
    assert accuracy_rule(1.0, 0.9949)["accepted"] is False
    # relative, not points: a low-scoring metric (macro AUPR 32.12) may lose far fewer points than 0.5
    assert accuracy_rule(0.3212, 0.3190)["accepted"] is False  # 0.22 points, 99.32 %
    assert accuracy_rule(0.3212, 0.3209)["accepted"] is True   # 0.03 points, 99.91 % (the CUAD bundle's figures)
    assert accuracy_rule(0.0, 0.0)["accepted"] is True
    assert accuracy_rule(0.9, 0.8, margin=20)["accepted"] is True


def test_the_cli_refuses_with_exit_code_2(digits, trained, tmp_path, capsys):
    code = main(["models", "quantize", "digits", "--task-path", str(trained["outlier"]), "--out",
                 str(tmp_path / "x"), "--margin", "5"])
    assert code == 2
    assert "more than the margin of 5" in capsys.readouterr().err
    for bad in ("-1", "101", "inf", "nan"):
        assert main(["models", "quantize", "digits", "--margin", bad]) == 2


def test_a_task_without_validation_data_cannot_be_quantized(trained, monkeypatch, tmp_path):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    plugin = DigitsPlugin(trained["fp32"], with_validation=False)
    with pytest.raises(QuantizationError, match="TaskSpec.validation"):
        quantize_bundle(plugin.spec)
    assert list(tmp_path.iterdir()) == []


def test_int8_on_a_gpu_without_tensorrt_is_a_typed_error(digits):
    """No GPU here: the fake probe says there is one; this Paddle build has no TensorRT, which the error names."""
    with pytest.raises(UnsupportedPrecisionError, match="runs through TensorRT, and this Paddle build has none"):
        Taskflow("digits", device="gpu", precision="int8", device_probe=FakeProbe(gpus=1))


def test_the_cli_tells_how_to_use_a_bundle_written_with_out(digits, trained, tmp_path, capsys):
    out = tmp_path / "int8-here"
    assert main(["models", "quantize", "digits", "--task-path", str(trained["fp32"]), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"use it:  Taskflow('digits', precision='int8', task_path='{out.resolve()}')" in err  # not the store


def test_models_list_shows_the_built_int8_bundle(digits, quantized, capsys):
    assert main(["models", "list", "--json"]) == 0
    rows = {row["task"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["digits"]["int8_bundle"] == quantized["out"]
    assert rows["digits"]["quantizable"] is True
    assert plugins.get_task("digits").int8.validation is not None


def test_a_plugin_that_builds_its_paddle_bundle_gets_the_int8_session_from_predictor_pool(trained, monkeypatch,
                                                                                         tmp_path):
    """As customer_service: the shipped bundle has the plugin's own format; the pipeline builds a paddle-inference
    bundle and asks predictor_pool() for it. At int8 the pool is the INT8 twin of that built bundle."""
    from quantize_support import WrappedPlugin, save_wrapped_bundle

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path / "home"))
    shipped = save_wrapped_bundle(trained["fp32"], tmp_path / "wrapped")
    with registry_scope() as make:
        make({"wrapped": WrappedPlugin(shipped)})
        with pytest.raises(UnsupportedPrecisionError) as info:
            Taskflow("digits_wrapped", precision="int8")
        fix = info.value.details["fix"]
        assert fix == f"sectorflow models quantize digits_wrapped --task-path {shipped / 'inner'}"
        assert main(fix.split()[1:]) == 0
        tf = Taskflow("digits_wrapped", precision="int8")
        assert type(tf.pipeline.pool).__name__ == "OnnxSessionPool"
        assert tf.meta.bundle_sha256 == load_bundle(shipped).sha256  # results name the bundle the user installed
        _, _, x_val, y_val = digits_split()
        labels = [int(r.label) for r in tf([{"pixels": row.tolist()} for row in x_val[:100]])]
        assert np.mean(np.array(labels) == y_val[:100]) > 0.9


def test_a_failed_symbolic_shape_inference_leaves_nothing_in_the_working_folder(digits, trained, tmp_path,
                                                                                 monkeypatch):
    """ONNX Runtime saves ``sym_shape_infer_temp.onnx`` into the current folder when its symbolic shape inference
    gives up (it does on the CUAD clause classifier); quantization retries without it and the file must not land in
    the user's folder. The first attempt here fails the way ONNX Runtime's does, writing that file first."""
    from onnxruntime.quantization import shape_inference

    real = shape_inference.quant_pre_process
    calls = []

    def failing_once(source, target, **kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            Path("sym_shape_infer_temp.onnx").write_bytes(b"partial model")
            raise Exception("Incomplete symbolic shape inference")
        return real(source, target, **kwargs)

    monkeypatch.setattr(shape_inference, "quant_pre_process", failing_once)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    manifest = quantize_bundle(digits, out=tmp_path / "int8")
    assert calls == [{}, {"skip_symbolic_shape": True}]
    assert list(work.iterdir()) == []
    assert json.loads((tmp_path / "int8" / "manifest.json").read_text())["precision"] == "int8"
    assert manifest["out"] == str(tmp_path / "int8")


def test_quantizing_only_the_embedding_gather_counts_its_uint8_table(tmp_path):
    """ONNX Runtime's dynamic quantizer stores a Gather-only table as uint8 (one scale); that is a quantized model,
    not 'Quantization changed nothing' (which refused ``--ops Gather`` before)."""
    import onnx
    from quantize_support import save_tiny_transformer
    from sectorflow.models.export import paddle_to_onnx
    from sectorflow.models.quantize import quantize_onnx

    fp32 = paddle_to_onnx(load_bundle(save_tiny_transformer(tmp_path / "fp32")), tmp_path / "fp32.onnx")
    assert quantize_onnx(fp32, tmp_path / "gather.onnx", ("Gather",)) == 2  # the table and its zero point
    quantized = [(init.data_type, len(init.dims)) for init in onnx.load(str(tmp_path / "gather.onnx")).graph.initializer
                 if init.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)]
    assert sorted(quantized) == [(onnx.TensorProto.UINT8, 0), (onnx.TensorProto.UINT8, 2)]


def test_weight_only_matmul_keeps_float_activations_and_is_not_combined_with_matmul(digits, trained, tmp_path):
    record = quantize_bundle(digits, task_path=trained["fp32"], out=tmp_path / "wo", op_types=("MatMulWeightOnly",))
    assert "activations and arithmetic float32" in record["method"]
    assert record["accuracy"]["int8"] > 0.93 and record["accuracy"]["relative"] >= 0.995
    assert record["size"]["ratio"] < 0.35  # int8 weights, like the dynamic MatMul choice
    import onnx

    model = onnx.load(str(tmp_path / "wo" / "model.onnx"))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("DequantizeLinear") >= 2 and "MatMulInteger" not in ops and "DynamicQuantizeLinear" not in ops
    with pytest.raises(ConfigError, match="two ways to store the same layers"):
        quantize_bundle(digits, task_path=trained["fp32"], out=tmp_path / "both", op_types=("MatMul",
                                                                                            "MatMulWeightOnly"))
    assert not (tmp_path / "both").exists()


def test_json_output_is_the_only_thing_on_stdout(digits, trained, tmp_path, capfd):
    # paddle2onnx's native code printed "[Paddle2ONNX] Start parsing ..." on the process's stdout, so
    # `sectorflow models quantize --json | jq` got three lines of text before the JSON (capfd sees descriptor 1)
    code = main(["models", "quantize", "digits", "--task-path", str(trained["fp32"]), "--out", str(tmp_path / "q"),
                 "--json"])
    captured = capfd.readouterr()
    assert code == 0
    assert json.loads(captured.out)["accuracy"]["metric"]
    assert "[Paddle2ONNX]" not in captured.err and "\x1b[" not in captured.err  # third-party banners: not shown
    code = main(["models", "export", "digits", "--format", "onnx", "--task-path", str(trained["fp32"]), "--out",
                 str(tmp_path / "e")])
    captured = capfd.readouterr()
    assert code == 0 and "[Paddle2ONNX]" not in captured.out and str(tmp_path / "e") in captured.err


@pytest.mark.parametrize("out", ["", ".", ".."])
def test_quantize_refuses_an_out_that_would_delete_the_working_folder(digits, tmp_path, out, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text("{}")
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match="out is empty|current folder or a folder above it"):
        quantize_bundle(digits, out=out)
    assert [p.name for p in work.iterdir()] == ["manifest.json"]
