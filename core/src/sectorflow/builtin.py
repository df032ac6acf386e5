"""Built-in default plugin: logs task events on logger ``sectorflow.events``.

The core registers it in code (``sectorflow.plugins.BUILTIN_PLUGINS``, name ``builtin_observers``) through the same
hooks as any other plugin.
"""

from __future__ import annotations

import logging

from .hookspecs import hookimpl
from .spec import TaskEvent

log = logging.getLogger("sectorflow.events")

#: Error classes of failures the caller caused and is told about directly (see :func:`sectorflow_task_event`).
CALLER_ERRORS = frozenset({"InvalidInputError", "ConfigError", "UnsupportedPrecisionError", "DeviceUnavailableError",
                           "UnknownTaskError"})


@hookimpl
def sectorflow_task_event(event: TaskEvent) -> None:
    """Log every event at DEBUG (failures at WARNING), with task, request id, item count and duration.

    A failure the caller caused and receives as a typed error (bad input, an unknown option or schema name, a
    precision or device the task cannot give) stays at DEBUG: the caller already gets the message, and a warning
    would print it twice on the command line. Other failures (a corrupt bundle, a pipeline error) warn.
    """
    failed = event.kind.endswith("failed")
    error_class = (event.error or "").partition(":")[0]
    level = logging.WARNING if failed and error_class not in CALLER_ERRORS else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(level, "%s task=%s request=%s items=%d ms=%s%s", event.kind, event.task, event.context.request_id,
                event.n_items, f"{event.duration_ms:.1f}" if event.duration_ms is not None else "-",
                f" error={event.error}" if event.error else "")
