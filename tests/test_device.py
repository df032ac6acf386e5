"""Device resolution with an injected probe (no GPU/NPU/XPU exists here), the device reaching the Paddle predictor
config, and precision refusals (typed, never a silent fallback)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from core_support import ECHO_BUNDLE, FakeProbe
from sectorflow import (
    Device,
    DeviceUnavailableError,
    Taskflow,
    UnsupportedPrecisionError,
    load_bundle,
    resolve_device,
    set_default_probe,
)
from sectorflow._paddle import import_paddle
from sectorflow.bundle import make_predictor_config

ALL = ("cpu", "gpu", "npu", "mlu", "xpu")
paddle = import_paddle()


# --- resolve_device ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("probe", "supported", "expected"),
    [
        (FakeProbe(gpus=2, custom={"npu": 1, "mlu": 1}, xpus=1), ALL, Device("gpu", 0)),
        (FakeProbe(gpus=0, custom={"mlu": 4, "npu": 1}, xpus=1), ALL, Device("npu", 0)),
        (FakeProbe(gpus=0, custom={"mlu": 4, "npu": 0}, xpus=1), ALL, Device("mlu", 0)),
        (FakeProbe(gpus=0, custom={"sdaa": 1, "mlu": 1}), ALL + ("sdaa",), Device("mlu", 0)),
        (FakeProbe(gpus=0, custom={"sdaa": 1}, xpus=1), ALL + ("sdaa",), Device("sdaa", 0)),
        (FakeProbe(gpus=0, custom={}, xpus=3), ALL, Device("xpu", 0)),
        (FakeProbe(gpus=2, custom={"npu": 1}, xpus=1), ("cpu", "xpu"), Device("xpu", 0)),
        (FakeProbe(gpus=2, custom={"npu": 1}), ("cpu", "npu"), Device("npu", 0)),
    ],
)
def test_auto_prefers_gpu_then_custom_devices_then_xpu(probe, supported, expected, caplog):
    caplog.set_level(logging.WARNING, logger="sectorflow.device")
    assert resolve_device("auto", supported, probe) == expected
    assert not [r for r in caplog.records if r.name == "sectorflow.device"]


@pytest.mark.parametrize("probe", [FakeProbe(), FakeProbe(gpus=4, custom={"npu": 2}, xpus=1)])
def test_auto_falls_back_to_cpu_with_a_warning(probe, caplog):
    caplog.set_level(logging.WARNING, logger="sectorflow.device")
    supported = ("cpu",) if probe.gpus else ALL
    assert resolve_device("auto", supported, probe) == Device("cpu", 0)
    warnings = [r for r in caplog.records if r.name == "sectorflow.device" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "using CPU" in warnings[0].getMessage()


@pytest.mark.parametrize(
    ("requested", "expected"),
    [("cpu", Device("cpu", 0)), ("gpu", Device("gpu", 0)), ("GPU:1", Device("gpu", 1)), ("npu:1", Device("npu", 1)),
     ("mlu", Device("mlu", 0)), ("xpu:0", Device("xpu", 0))],
)
def test_explicit_device_is_honoured_exactly(requested, expected, caplog):
    probe = FakeProbe(gpus=2, custom={"npu": 2, "mlu": 1}, xpus=1)
    caplog.set_level(logging.WARNING, logger="sectorflow.device")
    assert resolve_device(requested, ALL, probe) == expected
    assert not caplog.records


@pytest.mark.parametrize(
    ("requested", "supported", "fragment"),
    [
        ("gpu", ALL, "has 0 gpu device(s)"),
        ("gpu:2", ALL, "has 2 gpu device(s)"),
        ("npu", ALL, "has 0 npu device(s)"),
        ("mlu:1", ALL, "has 1 mlu device(s)"),
        ("xpu", ALL, "has 0 xpu device(s)"),
        ("npu", ("cpu", "gpu"), "runs on cpu, gpu"),
        ("cpu:1", ALL, "use plain 'cpu'"),
        ("gpu:x", ALL, "is not of the form"),
    ],
)
def test_missing_or_malformed_device_is_a_typed_error(requested, supported, fragment):
    probe = FakeProbe(gpus=0 if requested == "gpu" else 2, custom={"mlu": 1})
    with pytest.raises(DeviceUnavailableError) as info:
        resolve_device(requested, supported, probe)
    assert fragment in str(info.value)


def test_default_probe_is_replaceable_and_real_probe_sees_no_accelerator_here():
    previous = set_default_probe(FakeProbe(gpus=1))
    try:
        assert resolve_device("auto", ALL) == Device("gpu", 0)
    finally:
        assert isinstance(set_default_probe(previous), FakeProbe)
    if not paddle.is_compiled_with_cuda():
        assert previous.gpu_count() == 0
        assert resolve_device("auto", ALL) == Device("cpu", 0)


# --- the resolved device reaches the predictor config --------------------------------------------------------------

RealConfig = paddle.inference.Config


class RecordingConfig(RealConfig):
    """The real ``paddle.inference.Config``, remembering the device calls made on it."""

    made: list[RecordingConfig] = []

    def __init__(self, *args):
        super().__init__(*args)
        self.calls: list[tuple] = []
        RecordingConfig.made.append(self)

    def _record(name):  # noqa: N805
        def method(self, *args):
            self.calls.append((name, *args))
            return getattr(RealConfig, name)(self, *args)
        return method

    enable_use_gpu = _record("enable_use_gpu")
    enable_xpu = _record("enable_xpu")
    set_xpu_device_id = _record("set_xpu_device_id")
    enable_custom_device = _record("enable_custom_device")
    disable_gpu = _record("disable_gpu")
    enable_mkldnn = _record("enable_mkldnn")
    enable_mkldnn_bfloat16 = _record("enable_mkldnn_bfloat16")
    set_cpu_math_library_num_threads = _record("set_cpu_math_library_num_threads")


@pytest.fixture
def recording(monkeypatch):
    RecordingConfig.made = []
    monkeypatch.setattr(paddle.inference, "Config", RecordingConfig)
    return RecordingConfig.made


def call_names(config) -> list[str]:
    return [call[0] for call in config.calls]


def test_cpu_is_honoured_even_when_accelerators_exist(echo_registry, recording):
    tf = Taskflow("echo", device="cpu", num_threads=3, device_probe=FakeProbe(gpus=4, custom={"npu": 8}))
    assert tf.device == Device("cpu", 0)
    assert tf({"text": "hello"}).meta.device == "cpu"
    (config,) = recording
    assert ("set_cpu_math_library_num_threads", 3) in config.calls
    assert "enable_use_gpu" not in call_names(config)
    assert (config.use_gpu(), config.mkldnn_enabled(), config.cpu_math_library_num_threads()) == (False, True, 3)


@pytest.mark.skipif(paddle.is_compiled_with_cuda(), reason="a CUDA build would really run on the GPU")
@pytest.mark.parametrize(("device", "precision", "index", "ptype"),
                         [("auto", "fp32", 0, "Float32"), ("gpu:1", "fp16", 1, "Half"), ("gpu", "bf16", 0, "Bfloat16")])
def test_gpu_choice_reaches_the_config_and_a_cpu_build_refuses_it(echo_registry, recording, device, precision,
                                                                   index, ptype):
    device_before = paddle.device.get_device()
    with pytest.raises(DeviceUnavailableError, match=r"no CUDA/ROCm support"):
        Taskflow("echo", device=device, precision=precision, device_probe=FakeProbe(gpus=2, custom={"npu": 1}))
    (config,) = recording
    assert config.calls == [("enable_use_gpu", 256, index, getattr(paddle.inference.PrecisionType, ptype))]
    assert paddle.device.get_device() == device_before  # no process-global set_device
    failed = echo_registry.events[-1]
    assert failed.kind == "model_load_failed" and failed.error.startswith("DeviceUnavailableError")
    assert failed.meta.device == f"gpu:{index}"


@pytest.mark.skipif(paddle.is_compiled_with_xpu(), reason="an XPU build would really run on the XPU")
def test_xpu_choice_reaches_the_config_and_a_cpu_build_refuses_it(echo_registry, recording):
    with pytest.raises(DeviceUnavailableError, match=r"xpu:0 was asked for, but this Paddle build has no XPU"):
        Taskflow("echo", device="auto", device_probe=FakeProbe(xpus=1))
    assert call_names(recording[0]) == ["enable_xpu"]


def test_custom_device_without_paddle_plugin_is_refused_before_paddle_aborts(echo_registry, recording):
    if "npu" in (paddle.device.get_all_custom_device_type() or []):
        pytest.skip("this machine has an npu plugin")
    with pytest.raises(DeviceUnavailableError, match=r"npu:1 was asked for, but Paddle has no custom-device plugin"):
        Taskflow("echo", device="npu:1", device_probe=FakeProbe(custom={"npu": 2}))
    assert "enable_custom_device" not in call_names(recording[0])


# --- precision -----------------------------------------------------------------------------------------------------

def cpu_has_bf16() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return "avx512_bf16" in flags or "amx_bf16" in flags


@pytest.mark.parametrize(
    ("precision", "message"),
    [("int8", "Task 'echo' runs at fp32, fp16, bf16; precision='int8' is not available for its model."),
     ("fp64", "precision='fp64' is not one of fp32, fp16, bf16, int8."),
     ("fp16", "precision='fp16' needs a GPU or NPU; on CPU use fp32, bf16 or int8.")],
)
def test_precision_the_task_or_device_cannot_run_is_refused(echo_registry, precision, message):
    with pytest.raises(UnsupportedPrecisionError) as info:
        Taskflow("echo", precision=precision)
    assert str(info.value) == message


def test_bf16_on_cpu_runs_only_where_the_cpu_has_bf16(echo_registry):
    fp32 = Taskflow("echo")({"text": "hello world"})
    if not cpu_has_bf16():
        with pytest.raises(UnsupportedPrecisionError, match="needs AVX-512 BF16 or AMX"):
            Taskflow("echo", precision="bf16")
        return
    bf16 = Taskflow("echo", precision="bf16")({"text": "hello world"})
    assert bf16.meta.precision == "bf16"
    np.testing.assert_allclose(bf16.scores, fp32.scores, atol=2e-2)


@pytest.mark.parametrize(
    ("device", "precision", "fragment"),
    [(Device("cpu"), "int8", "a CPU predictor does not convert weights"),
     (Device("gpu"), "int8", "runs through TensorRT, and this Paddle build has none"),
     (Device("npu", 1), "fp16", "sectorflow runs npu predictors at the bundle's stored precision only"),
     (Device("xpu"), "bf16", "sectorflow runs xpu predictors at the bundle's stored precision only")],
)
def test_predictor_config_refuses_precisions_instead_of_replacing_them(device, precision, fragment):
    with pytest.raises(UnsupportedPrecisionError) as info:
        make_predictor_config(load_bundle(ECHO_BUNDLE), device, precision)
    assert fragment in str(info.value)


def test_a_bundle_can_ask_for_a_cpu_predictor_without_onednn(echo_registry, echo_bundle, recording):
    """``cpu_onednn: false`` in the manifest (small MLPs run faster at batch 1 without oneDNN); default stays on."""
    import json

    from sectorflow import write_manifest

    manifest = json.loads((echo_bundle / "manifest.json").read_text())
    (echo_bundle / "manifest.json").unlink()
    write_manifest(echo_bundle, **{k: v for k, v in manifest.items() if k != "files"}, cpu_onednn=False)
    default = Taskflow("echo", device="cpu")
    tuned = Taskflow("echo", device="cpu", task_path=echo_bundle)
    with_onednn, without = recording
    assert "enable_mkldnn" in call_names(with_onednn) and with_onednn.mkldnn_enabled() is True
    assert "enable_mkldnn" not in call_names(without) and without.mkldnn_enabled() is False
    a, b = tuned({"text": "same"}), default({"text": "same"})
    assert a.text == b.text and a.scores == pytest.approx(b.scores, abs=1e-5)  # same weights, other kernels


@pytest.mark.parametrize(
    ("requested", "supported", "message"),
    [
        ("cuda", ("cpu", "gpu"), "This task runs on cpu, gpu; device 'cuda' is not supported by it. Did you mean 'gpu'?"),
        ("cuda:1", ALL, "This task runs on cpu, gpu, npu, mlu, xpu; device 'cuda:1' is not supported by it. "
                        "Did you mean 'gpu:1'?"),
        ("GPU0", ALL, "Device 'GPU0' is not of the form cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto. "
                      "Did you mean 'gpu:0'?"),
        ("ascend", ALL, "This task runs on cpu, gpu, npu, mlu, xpu; device 'ascend' is not supported by it. "
                        "Did you mean 'npu'?"),
        ("cuda", ("cpu",), "This task runs on cpu; device 'cuda' is not supported by it."),  # no gpu: no hint
        (3, ALL, "device=3 (int) is not a string: give one of cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto "
                 "(e.g. device='gpu:0')."),
    ],
)
def test_a_device_name_from_another_framework_or_of_the_wrong_type_says_what_to_write(requested, supported, message):
    with pytest.raises(DeviceUnavailableError) as info:
        resolve_device(requested, supported, FakeProbe(gpus=2, custom={"npu": 1}))
    assert str(info.value) == message


def test_none_is_auto():
    assert resolve_device(None, ALL, FakeProbe(gpus=1)) == Device("gpu", 0)


@pytest.mark.parametrize(("requested", "word"), [("", "empty"), ("   ", "blank"), ("\t\n", "blank")])
def test_an_empty_or_blank_device_is_refused_not_taken_as_auto(requested, word):
    """An empty device is almost always an unset environment variable in the caller's config (device="$DEVICE"):
    it used to be read as auto and ran on whatever accelerator was found."""
    with pytest.raises(DeviceUnavailableError) as info:
        resolve_device(requested, ("cpu", "gpu"), FakeProbe(gpus=1))
    assert str(info.value) == (
        f"device={requested!r} is {word}: give one of cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto (this task "
        "runs on cpu, gpu). An empty device is usually an unset environment variable in the configuration; leave "
        "the option out for its default.")


def test_taskflow_and_the_command_line_refuse_an_empty_device(echo_registry, tmp_path, capsys, monkeypatch):
    from sectorflow.cli import main

    monkeypatch.setenv("COLUMNS", "400")  # the message on one line

    with pytest.raises(DeviceUnavailableError, match=r"^device='' is empty: give one of cpu, gpu\[:N\]"):
        Taskflow("echo", device="", device_probe=FakeProbe(gpus=1))
    assert not [e for e in echo_registry.events if e.kind == "model_loaded"]
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "hello"}\n')
    capsys.readouterr()
    assert main(["run", "echo", str(source), "--device", ""]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "device='' is empty: give one of cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto" in err
