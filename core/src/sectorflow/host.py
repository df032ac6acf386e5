"""The host API: what the layers above the core use of a running sectorflow, beside the names of ``sectorflow.__all__``.

The HTTP server (``sectorflow.serving``), the audit log (``sectorflow.compliance``) and federated training
(``sectorflow.federated``) import only ``from sectorflow import <name in __all__>`` and this module, never the
core's own modules (``plugins``, ``spec``, ``taskflow``, ``paths``, ...): ``tests/test_architecture.py`` checks it, so
those modules can change behind them. A third-party layer of the same kind (another server, another audit sink) uses
the same names.

- :func:`get_plugin_manager` -> the ``pluggy.PluginManager`` holding every loaded plugin (the core's own,
  :data:`BUILTIN_PLUGINS`, registered in code; the others from entry-point group :data:`ENTRY_POINT_GROUP`); call a
  hook through its ``.hook``.
- :func:`registered_tasks` -> ``{name: TaskSpec}``; :func:`get_task` (name or alias) -> ``TaskSpec``, raises
  ``UnknownTaskError`` naming the closest task.
- :func:`registered_trainables` -> ``[TrainableSpec]`` offered through ``sectorflow_register_trainables``.
- :func:`emit` sends a ``TaskEvent`` to every ``sectorflow_task_event`` observer (raises ``PluginError`` when a
  required plugin has been unregistered).
- :func:`hook_may_block` -> whether an implementation of a hook declares now that it may block
  (:func:`sectorflow.may_block`): a caller on an event loop runs that hook in a worker thread.

The home folder is :func:`sectorflow.home`, every environment variable :func:`sectorflow.settings`.
"""

from __future__ import annotations

from .hookspecs import hook_may_block
from .plugins import (BUILTIN_PLUGINS, ENTRY_POINT_GROUP, emit, get_plugin_manager, get_task, registered_tasks,
                      registered_trainables)

__all__ = ["BUILTIN_PLUGINS", "ENTRY_POINT_GROUP", "emit", "get_plugin_manager", "get_task", "hook_may_block",
           "registered_tasks", "registered_trainables"]
