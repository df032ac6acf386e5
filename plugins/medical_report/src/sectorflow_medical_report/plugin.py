"""Hook implementations of the medical_report plugin: the ``medical_report`` task and its federated tagger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sectorflow import Int8Spec, TaskSpec, hookimpl, input_formats

from . import __version__
from .options import OPTIONS
from .readers import READER_FACTORIES, READERS
from .schema import MedicalReport, ReportInput
from .calibration import validation

QUANTIZE_OPS = ("Gather", "GRU")
"""What ``sectorflow models quantize medical_report`` stores as 8-bit by default: the character embedding (Gather)
and the GRU's weights (int8 per gate row behind DequantizeLinear: ONNX Runtime's dynamic quantizer has no GRU),
both weight-only, so the arithmetic stays fp32: 0.29x the size, the same validation F1. The output layer (MatMul) is
left out: quantizing its input per batch at run time flips a near-tie character tag ("右" in "胸片显示右肺结节": B-ANAT
0.58 in fp32, B-FIND 0.53 with MatMul) for almost no gain in size (docs/performance.md)."""

BUNDLE_DIR = Path(__file__).resolve().parent / "bundle"
"""The shipped span-tagger bundle (made by ``plugins/medical_report/scripts/train_tagger.py``)."""

EXAMPLES: tuple[dict[str, Any], ...] = (
    {"text": "胸片显示右肺结节，直径约8mm"},
    {"text": "There is an 8 mm nodule in the left lower lobe. No pleural effusion or pneumothorax.",
     "modality": "CT", "patient_risk": "low"},
    {"text": "低剂量CT筛查：右肺上叶新发实性结节，大小约0.7 x 0.6 cm。双肺未见实变，胸腔积液待排。"},
)
"""Valid sample inputs (project-written)."""


def spec() -> TaskSpec:
    """The ``medical_report`` task spec."""
    bundle = BUNDLE_DIR if (BUNDLE_DIR / "manifest.json").is_file() else None
    return TaskSpec(
        name="medical_report", input_model=ReportInput, output_model=MedicalReport,
        pipeline="sectorflow_medical_report.pipeline:MedicalReportPipeline",
        version=__version__, aliases=("radiology_report",),
        description="Radiology findings text (zh/en) to a structured report: findings with anatomy, size (mm), "
                    "ConText assertion and temporality; Fleischner 2017 / Lung-RADS v2022 recommendations; ICD-10.",
        default_bundle=bundle, devices=("cpu", "gpu"), precisions=("fp32", "int8"), languages=("zh", "en"),
        options=dict(OPTIONS), examples=EXAMPLES, formats=input_formats(READERS, READER_FACTORIES),
        int8=Int8Spec(validation=validation, quantize_ops=QUANTIZE_OPS), model_switch="use_model")


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register the ``medical_report`` task."""
    register(spec())


@hookimpl
def sectorflow_register_trainables(register: Any) -> None:
    """Offer the span tagger to the federated layer (:mod:`sectorflow_medical_report.trainable`)."""
    from .trainable import trainable_spec

    register(trainable_spec())
