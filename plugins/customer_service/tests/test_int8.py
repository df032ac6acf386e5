"""INT8 intent model: the pipeline builds its ``paddle-inference`` bundle at load; ``sectorflow models quantize
customer_service --task-path <that bundle>`` (the command the error names) quantizes it from the banking77
validation slice; ``Taskflow("customer_service", precision="int8")`` then answers with the same intents as fp32."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sectorflow import (
    QuantizationError,
    Taskflow,
    UnsupportedPrecisionError,
    load_bundle,
)
from sectorflow_customer_service.calibration import DATA, validation

PROBABILITY_TOLERANCE = 0.1
"""Largest allowed difference of the top intent's probability, INT8 against fp32 (measured: at most 0.06 on these
messages with MatMul and Gather quantized)."""
MESSAGES = ["I lost my card", "my transfer has not arrived yet", "how do I change my PIN",
            "why was I charged a fee", "I want to top up my account with a cheque", "what is the exchange rate"]


def test_int8_without_a_quantized_bundle_names_the_quantize_command_for_the_built_bundle(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    with pytest.raises(UnsupportedPrecisionError) as raised:
        Taskflow("customer_service", precision="int8")
    command = re.search(r"`(sectorflow models quantize customer_service --task-path \S+)`", str(raised.value))
    assert command, str(raised.value)
    built = Path(command.group(1).split("--task-path ")[1])
    assert built.is_relative_to(tmp_path) and load_bundle(built).format == "paddle-inference"


def test_validation_refuses_the_shipped_bundle():
    from sectorflow_customer_service.plugin import BUNDLE_DIR

    with pytest.raises(QuantizationError, match="banking77"):  # the shipped format has no banking77 output name
        validation(load_bundle(BUNDLE_DIR))


@pytest.mark.skipif(not (DATA / "train.csv").is_file(), reason="../shared/data/banking77 not present")
def test_quantized_intents_agree_with_fp32(tmp_path, monkeypatch):
    import dataclasses
    import functools

    from sectorflow.models.quantize import quantize_bundle

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # ONNX Runtime's shape inference may leave sym_shape_infer_temp.onnx in the cwd
    fp32 = Taskflow("customer_service")
    with pytest.raises(UnsupportedPrecisionError) as raised:
        Taskflow("customer_service", precision="int8")
    built = Path(re.search(r"--task-path (\S+)`", str(raised.value)).group(1))
    with pytest.raises(QuantizationError, match="missing"):
        validation(load_bundle(built), data=tmp_path / "absent")
    quick = dataclasses.replace(fp32.spec, int8=dataclasses.replace(fp32.spec.int8, validation=functools.partial(validation, limit=320)))  # ~ 10 batches
    # 320 texts: one flipped answer is 0.3 points, so the subset gets a wider margin than the default 0.5
    record = quantize_bundle(quick, task_path=built, op_types=("MatMul", "Gather"), margin=2.0)
    assert record["accuracy"]["metric"] == "banking77 accuracy"
    assert record["size"]["ratio"] <= 0.3

    int8 = Taskflow("customer_service", precision="int8")
    want, got = fp32(MESSAGES), int8(MESSAGES)
    assert [r.intent for r in got] == [r.intent for r in want]
    assert all(abs(a.intent_probability - b.intent_probability) <= PROBABILITY_TOLERANCE for a, b in zip(want, got))


def test_quantize_and_export_start_from_the_built_paddle_bundle_without_task_path(tmp_path, monkeypatch):
    # `sectorflow models quantize customer_service` (no --task-path) used to stop at "format 'sectorflow-cs-int8'"
    from sectorflow.models.export import source_bundle
    from sectorflow.host import get_task

    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    spec = get_task("customer_service")
    built = source_bundle(spec, None, "quantize")
    assert built.format == "paddle-inference" and built.manifest["precision"] == "fp32"
    assert Path(built.path).is_relative_to(tmp_path)  # rebuilt into this SECTORFLOW_HOME
    shipped = load_bundle(spec.default_bundle, expected_task="customer_service")
    assert built.manifest["source_bundle_sha256"] == shipped.sha256
