"""Built-in default plugin: logs task events on logger ``sectorflow.events``.

It registers through the same entry-point group and hooks as any third-party plugin (see ``pyproject.toml``).
"""

from __future__ import annotations

import logging

from .hookspecs import hookimpl
from .spec import TaskEvent

log = logging.getLogger("sectorflow.events")


@hookimpl
def sectorflow_task_event(event: TaskEvent) -> None:
    """Log every event at DEBUG (failures at WARNING), with task, request id, item count and duration."""
    failed = event.kind.endswith("failed")
    # A caller's bad input is the caller's to handle (it gets InvalidInputError); only other failures warn.
    level = logging.WARNING if failed and not (event.error or "").startswith("InvalidInputError") else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(level, "%s task=%s request=%s items=%d ms=%s%s", event.kind, event.task, event.context.request_id,
                event.n_items, f"{event.duration_ms:.1f}" if event.duration_ms is not None else "-",
                f" error={event.error}" if event.error else "")
