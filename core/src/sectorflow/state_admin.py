"""Operator actions on a stateful task's stored state: show, export, reset; each one an audited task event.

Plugins build their commands on these (``sectorflow aml state show|export|reset``). Each action emits a
:class:`~sectorflow.TaskEvent` (``state_shown``, ``state_exported``, ``state_reset``; ``context.tenant`` the tenant
acted on, ``details`` the store and what was done), which the audit log records as ``task.state_*``.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from . import plugins
from .errors import ConfigError
from .spec import CallContext, TaskEvent
from .state_keeper import StateKeeper
from .state_store import StateStore
from .taskflow import Taskflow


def _emit(kind: str, task: str, context: CallContext | None, tenant: str | None, details: dict[str, Any]) -> None:
    if context is None:  # an operator at the command line: the OS user on this host (as sectorflow run records)
        from .batch import cli_context

        context = cli_context()
    plugins.emit(TaskEvent(kind, task, replace(context, tenant=tenant),  # type: ignore[arg-type]
                           details={"tenant": tenant, **details}))


def state_summary(store: StateStore, task: str, tenant: str | None = None,
                  context: CallContext | None = None) -> list[dict[str, Any]]:
    """Per tenant (all of ``task``'s, or ``tenant`` alone): snapshot and journal sizes, the last commit and an
    unfinished run's progress, as JSON values. Emits ``state_shown``."""
    tenants = store.tenants(task) if tenant is None else [tenant]
    rows = []
    for name in tenants:
        info = store.info(task, name)
        row = asdict(info)
        row["bytes"] = info.snapshot_bytes + info.journal_bytes
        rows.append(row)
    _emit("state_shown", task, context, tenant, {"store": store.url, "tenants": tenants})
    return rows


def export_state(taskflow: Taskflow, store: StateStore, tenant: str,
                 context: CallContext | None = None) -> dict[str, Any]:
    """The tenant's state as :meth:`~sectorflow.Pipeline.state_dict` gives it after a restore (snapshot + journal),
    for a pipeline built with the options the state was made with. Emits ``state_exported``.

    Raises:
        ConfigError: no state for ``tenant``, or one ``taskflow``'s pipeline cannot continue (other options).
    """
    task = taskflow.spec.name
    if tenant not in store.tenants(task):
        raise ConfigError(f"The store {store.url} holds no {task} state for tenant {tenant!r}; tenants: "
                          f"{', '.join(store.tenants(task)) or 'none'}.")
    replayed = StateKeeper(taskflow, store, tenant).restore(taskflow.pipeline)
    state = taskflow.pipeline.state_dict()
    _emit("state_exported", task, context, tenant, {"store": store.url, "journal_items_replayed": replayed})
    return state


def reset_stored_state(store: StateStore, task: str, tenant: str,
                       context: CallContext | None = None) -> bool:
    """Forget ``tenant``'s stored state of ``task`` (snapshot, journal, unfinished run); whether there was any.
    Emits ``state_reset``."""
    with store.transaction():
        had = store.reset(task, tenant)
    _emit("state_reset", task, context, tenant, {"store": store.url, "had_state": had})
    return had
