"""Hook implementations of the aml plugin: the ``aml`` task and the ``sectorflow aml ...`` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sectorflow import Int8Spec, TaskSpec, hookimpl, input_formats

from . import __version__
from .loaders import READER_FACTORIES, READERS
from .pipeline import OPTIONS, AMLPipeline
from .schema import Transaction, TransactionAssessment, input_context
from .calibration import validation

BUNDLE_DIR = Path(__file__).resolve().parent / "bundle"
"""The shipped risk-scorer bundle (made by ``plugins/aml/scripts/train_scorer.py``)."""

EXAMPLES: tuple[dict[str, Any], ...] = (
    {"transaction_id": "t1", "timestamp": "2024-03-01T09:15:00", "sender_account": "C001",
     "receiver_account": "A100", "amount": "49900.00", "currency": "CNY", "channel": "cash_deposit"},
    {"transaction_id": "t2", "timestamp": "2024-03-01T11:40:00", "sender_account": "C001",
     "receiver_account": "A100", "amount": "49800.00", "currency": "CNY", "channel": "cash_deposit"},
    {"transaction_id": "t3", "timestamp": "2024-03-02T10:00:00", "sender_account": "A100",
     "receiver_account": "B200", "amount": "95000.00", "currency": "CNY", "channel": "wire",
     "sender_country": "CN", "receiver_country": "HK", "customer_type": "individual"},
)
"""Valid sample inputs (the first two are same-day cash deposits just under RMB 50,000: a structuring alert)."""


def _formats() -> dict[str, Any]:
    """The task's input formats; the amlsim and amlworld readers number ids by row (``amlsim-<row>``)."""
    import dataclasses

    formats = input_formats(READERS, READER_FACTORIES)
    for name in ("amlsim", "amlworld"):
        if name in formats:
            formats[name] = dataclasses.replace(formats[name], ids_by_row=True)
    return formats


def spec() -> TaskSpec:
    """The ``aml`` task spec."""
    bundle = BUNDLE_DIR if (BUNDLE_DIR / "manifest.json").is_file() else None
    return TaskSpec(
        name="aml", input_model=Transaction, output_model=TransactionAssessment, pipeline=AMLPipeline,
        version=__version__, aliases=("anti_money_laundering",),
        description="Anti-money-laundering: typology rules + learned risk score over a sliding transaction window; "
                    "alerts with zh/en reasons, large-value/CTR and suspicious transaction report drafts.",
        default_bundle=bundle, devices=("cpu", "gpu", "npu", "xpu", "mlu"), precisions=("fp32", "int8"),
        languages=("zh", "en"), formats=_formats(),
        options=dict(OPTIONS), examples=EXAMPLES, stateful=True,
        model_switch="model", context_from_options=input_context, id_fields=("transaction_id",),
        state_reset="sectorflow aml state reset",
        # weight-only: the scorer's standardised inputs span a wide range, and ONNX Runtime's per-batch uint8
        # rounding of them cost bundle 2.0.0 0.54 F1 points on validation accounts (more than the 0.5 margin)
        int8=Int8Spec(validation=validation, quantize_ops=("MatMulWeightOnly",)))


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register the ``aml`` task."""
    register(spec())


@hookimpl
def sectorflow_register_commands(app: Any) -> None:
    """Add ``sectorflow aml ...`` (explain, alerts, reports) from :mod:`sectorflow_aml.cli`."""
    from .cli import register

    register(app)


@hookimpl
def sectorflow_register_trainables(register: Any) -> None:
    """Offer the federated layer (``sectorflow federate aml``) the account MLP over a bank's own files
    (``account_mlp``, :mod:`sectorflow_aml.account_federated`) and the AMLSim risk scorer (``risk_mlp``,
    :mod:`sectorflow_aml.trainable`)."""
    from .account_federated import trainable_spec as account_spec
    from .trainable import trainable_spec

    register(trainable_spec())
    register(account_spec())


@hookimpl
def sectorflow_register_web(app: Any, host: Any) -> None:
    """Mount the AML analyst workbench under ``/ui/`` when the server configuration has ``[web.aml]``
    (:mod:`sectorflow_aml.workbench`)."""
    from .workbench import register_web

    register_web(app, host)
