"""Hook implementations of the medical_report plugin: the ``medical_report`` task and its federated tagger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sectorflow import TaskSpec, hookimpl

from . import __version__
from .pipeline import OPTIONS, MedicalReportPipeline
from .readers import READERS
from .schema import MedicalReport, ReportInput

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
        name="medical_report", input_model=ReportInput, output_model=MedicalReport, pipeline=MedicalReportPipeline,
        version=__version__, aliases=("radiology_report",),
        description="Radiology findings text (zh/en) to a structured report: findings with anatomy, size (mm), "
                    "ConText assertion and temporality; Fleischner 2017 / Lung-RADS v2022 recommendations; ICD-10.",
        default_bundle=bundle, devices=("cpu", "gpu"), precisions=("fp32",), languages=("zh", "en"),
        options=dict(OPTIONS), examples=EXAMPLES, readers=dict(READERS))


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register the ``medical_report`` task."""
    register(spec())


@hookimpl
def sectorflow_register_trainables(register: Any) -> None:
    """Offer the span tagger to the federated layer (:mod:`sectorflow_medical_report.trainable`)."""
    from .trainable import trainable_spec

    register(trainable_spec())
