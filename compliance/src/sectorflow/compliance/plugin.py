"""The plugin ``audit`` (entry point of sectorflow-compliance): records every task event in the audit log and adds
``sectorflow audit``.

It observes the core's ``sectorflow_task_event`` hook, so every task of every plugin is covered without plugin
code. The observer is a first-run hook wrapper: it writes the record before any ordinary observer runs (so no
observer can change or drop the event first), and an exception from it fails the call for tasks configured as
regulated (the core runs observers synchronously and lets their exceptions fail the call; ``call_started`` is
emitted before the pipeline runs, so a regulated call whose start cannot be recorded does no work).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sectorflow import AccessDecision, TaskEvent, hookimpl, may_block

from . import runtime

if TYPE_CHECKING:  # pragma: no cover
    import typer


@hookimpl(wrapper=True, tryfirst=True)
@may_block(lambda: _writes())
def sectorflow_task_event(event: TaskEvent) -> Generator[None, Any, Any]:
    """Record ``event`` (see :func:`sectorflow.compliance.runtime.record_task_event`), then let other observers run."""
    runtime.record_task_event(event)
    return (yield)


def _writes() -> bool:
    """Whether the hooks here write records now (the log is configured): a server then calls them off its event
    loop (:func:`sectorflow.may_block`), since an append waits for its fsync, and up to ``busy_timeout`` for a store
    another process holds locked."""
    try:
        return runtime.config().enabled
    except Exception:  # a configuration error is raised, and recorded or not, by the hook itself
        return True


@hookimpl
@may_block(_writes)
def sectorflow_access_decision(decision: AccessDecision) -> None:
    """Record an access decision of the HTTP server (see :func:`sectorflow.compliance.runtime.record_access`)."""
    runtime.record_access(actor=decision.actor, tenant=decision.tenant, resource=decision.resource,
                          action=decision.action, allowed=decision.allowed, reason=decision.reason,
                          source=decision.source, request_id=decision.request_id, roles=list(decision.roles),
                          channel=decision.channel)


@hookimpl
def sectorflow_register_commands(app: typer.Typer) -> None:
    """Add the ``sectorflow audit`` command group."""
    from .cli import audit_app

    app.add_typer(audit_app, name="audit")


@hookimpl
def sectorflow_register_metrics(registry: Any) -> None:
    """Report the audit log's replica on the server's ``/metrics``: ``sectorflow_audit_replica_lag_records``
    (records the replica is behind), ``sectorflow_audit_replica_up`` (0 while it cannot be written) and
    ``sectorflow_audit_replica_last_sync_timestamp_seconds``; nothing while the log is not open or has no replica."""
    from .metrics import ReplicaCollector

    registry.register(ReplicaCollector(runtime.opened_log))

