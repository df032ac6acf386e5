"""Audit records of federated runs and rounds, sent as core task events (``sectorflow_task_event``).

The audit log (``sectorflow.compliance``) and any other observer receive them like every task event; this layer does
not import the audit log. Kinds (``TaskEvent.kind``): ``training_run_started``, ``training_round`` (one per
round: participants, sample counts, failures, aggregated metrics, SHA-256 of the global model after the round),
``training_run_finished`` and ``training_run_failed``. ``context.channel`` is ``federated``, ``context.request_id``
the run id.
"""

from __future__ import annotations

import uuid
from typing import Any

from sectorflow import CallContext, ResultMeta, TaskEvent

TRAINING_EVENT_KINDS = ("training_run_started", "training_round", "training_run_finished", "training_run_failed")


def emit_training(kind: str, *, task: str, run_id: str, model_name: str, plugin: str, details: dict[str, Any],
                  actor: str = "federated", model_sha256: str | None = None, error: str | None = None,
                  n_items: int = 0, duration_ms: float | None = None) -> str:
    """Send one training event to every ``sectorflow_task_event`` observer (an observer's exception propagates:
    a regulated audit log that cannot write stops the run). Returns the event's id (``details.event_id``, a random
    128-bit hex string, stored in the audit record's details: the bundle's manifest lists the run's ids).

    Raises:
        ValueError: ``kind`` is not one of :data:`TRAINING_EVENT_KINDS`.
    """
    if kind not in TRAINING_EVENT_KINDS:
        raise ValueError(f"training event kind {kind!r} is not one of {TRAINING_EVENT_KINDS}")
    from sectorflow import host

    context = CallContext(actor=actor, source="superlink", request_id=run_id, channel="federated")
    meta = ResultMeta(task=task, plugin=plugin, model_name=model_name, bundle_sha256=model_sha256)
    event_id = uuid.uuid4().hex
    details = {"run_id": run_id, "event_id": event_id, **details}
    if model_sha256:
        details["model_sha256"] = model_sha256
    host.emit(TaskEvent(kind=kind, task=task, context=context, meta=meta,  # type: ignore[arg-type]
                           n_items=n_items, duration_ms=duration_ms, error=error, details=details))
    return event_id
