"""Hook implementations of the customer_service plugin: the ``customer_service`` task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sectorflow import Int8Spec, TaskSpec, hookimpl

from . import __version__
from .options import OPTIONS
from .schema import CustomerServiceResult, Message
from .calibration import validation

BUNDLE_DIR = Path(__file__).resolve().parent / "bundle"
"""The shipped intent bundle (made by ``plugins/customer_service/scripts/build_bundle.py``)."""

EXAMPLES: tuple[dict[str, Any], ...] = (
    {"text": "I am still waiting on my card?"},
    {"text": "我的银行卡被冻结了怎么办"},
    {"text": "This is ridiculous, I want to speak to a human now or I'm going to the CFPB"},
)


def spec() -> TaskSpec:
    """The ``customer_service`` task spec."""
    bundle = BUNDLE_DIR if (BUNDLE_DIR / "manifest.json").is_file() else None
    return TaskSpec(
        name="customer_service", input_model=Message, output_model=CustomerServiceResult,
        pipeline="sectorflow_customer_service.pipeline:CustomerServicePipeline", version=__version__, aliases=("cs",),
        description="Customer-service messages (zh/en): intent with top-k, out-of-scope fallback, FAQ answers, "
                    "escalation (anger, complaint, regulator/court, the press, human requested) and language.",
        default_bundle=bundle, devices=("cpu", "gpu"), precisions=("fp32", "int8"), languages=("zh", "en"),
        options=dict(OPTIONS), examples=EXAMPLES,
        # MatMul-only INT8 lost 0.80 banking77 validation points (margin 0.5); with the embedding table too, 0.20
        int8=Int8Spec(validation=validation, quantize_ops=("MatMul", "Gather"), inference_bundle=_inference_bundle))


def _inference_bundle(bundle: Any) -> Any:
    """The Paddle Inference bundle rebuilt from the shipped int8 weights (what ``models quantize|export`` read)."""
    from .runtime import inference_bundle

    return inference_bundle(bundle)


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register the ``customer_service`` task."""
    register(spec())


@hookimpl
def sectorflow_register_commands(app: Any) -> None:
    """Add ``sectorflow customer-service adopt DIR``."""
    from .cli import register

    register(app)


@hookimpl
def sectorflow_register_trainables(register: Any) -> None:
    """Offer the banking77 intent head (over frozen sentence vectors) to the federated layer."""
    from .trainable import trainable_spec

    register(trainable_spec())
