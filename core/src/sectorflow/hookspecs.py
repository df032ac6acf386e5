"""The hook specifications of sectorflow: the whole contract between the core and its plugins.

A plugin is a module (or object) with functions decorated by ``sectorflow.hookimpl`` and named like the specs
below, published under the entry-point group ``sectorflow``::

    [project.entry-points.sectorflow]
    my_plugin = "my_package.plugin"

Built-in behaviour registers through these same hooks. Every hook here is documented in ``docs/hooks.md`` with its
exact signature (``tests/test_hooks_documented.py`` checks this).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    import typer

    from .serving.web import FastAPI, WebHost  # fastapi's app class, through the server (core needs no fastapi)
    from .spec import TaskEvent, TaskSpec
    from .trainable import TrainableSpec

PROJECT_NAME = "sectorflow"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def sectorflow_register_tasks(register: Callable[[TaskSpec], None]) -> None:
    """Register the plugin's tasks.

    Called once per process, when the task registry is first needed (``Taskflow(...)``, ``Taskflow.tasks()``,
    ``sectorflow tasks``, the server's start). Call ``register(spec)`` once per task. Registering a name or alias
    that another plugin already registered raises :class:`~sectorflow.errors.PluginConflictError` naming both
    plugins. Returns nothing.

    A spec's reader factories (``TaskSpec.reader_factories``, ``factory(mapping=None, defaults=None) -> reader``) may
    also declare a keyword parameter ``context``: ``sectorflow run`` then calls the factory with the task's input
    context (the read-only validation context that ``TaskSpec.input_context`` makes of the run's options, ``{}`` for
    a task without one), also when no ``--column``/``--default`` is given, so that the reader knows how its rows will
    be read (aml's ``input_timezone``). Factories without the parameter are called as before
    (:func:`sectorflow.io.reader_for`).
    """


@hookspec
def sectorflow_register_trainables(register: Callable[[TrainableSpec], None]) -> None:
    """Offer trainable models to the federated layer.

    Called once per process when ``sectorflow.federated`` (or ``sectorflow federate``) looks for models. Call
    ``register(spec)`` with a :class:`~sectorflow.trainable.TrainableSpec` whose ``build(partition)`` returns a
    :class:`~sectorflow.trainable.Trainable` over one institution's data. Returns nothing.
    """


@hookspec
def sectorflow_task_event(event: TaskEvent) -> None:
    """Observe a task event: a call started, finished or failed; a model loaded, reloaded or unloaded; a
    configuration change; a plugin load.

    Called synchronously, in the thread that caused the event, for every event of every task (audit logging and
    metrics are built on it). ``event.inputs``/``event.outputs`` hold the call's items: never store them in clear.
    An observer that raises makes the call fail: a compliance log that cannot write must stop the work it
    records. Returns nothing.
    """


@hookspec
def sectorflow_access_decision(actor: str, tenant: str | None, resource: str, action: str, allowed: bool,
                               reason: str | None, source: str | None, request_id: str | None, roles: list[str],
                               channel: str) -> None:
    """Observe an access-control decision (authentication or authorisation, allowed or denied).

    Called synchronously by the HTTP server (``sectorflow serve``) for every request that needs a key, with the key
    id as ``actor`` (``"anonymous"`` when none was presented), the task or admin resource asked for, the route as
    ``action``, and why it was allowed or denied. The audit log records it (MLPS 2.0 8.1.4.3 a): access decisions
    are important security events). An observer that raises fails the request. Returns nothing.
    """


@hookspec
def sectorflow_register_commands(app: typer.Typer) -> None:
    """Add sub-commands to the ``sectorflow`` command line.

    Called once when the CLI starts, with the root ``typer.Typer`` app; add a command group with
    ``app.add_typer(sub_app, name="aml")`` or a command with ``app.command()``. Names must not clash with the
    built-in commands (``tasks``, ``run``, ``schema``, ``models``). Returns nothing.
    """


@hookspec
def sectorflow_register_metrics(registry: Any) -> None:
    """Add metric collectors to the server's Prometheus registry.

    Called once per server (``sectorflow serve``, :func:`sectorflow.serving.create_app`), after the server's own
    metric families exist, with its ``prometheus_client.CollectorRegistry``: call ``registry.register(collector)``
    with a collector whose ``collect()`` yields metric families, read at every scrape of ``/metrics`` (the audit log
    reports its replica's lag this way). Returns nothing. A collector that raises fails the scrape, not a task call.
    """



@hookspec
def sectorflow_register_web(app: FastAPI, host: WebHost) -> None:
    """Add web pages (HTML routes, static files) to the HTTP server.

    Called once per app, by ``sectorflow serve`` (:func:`sectorflow.serving.create_app`, after the task, admin and v2
    routes exist) and by :func:`sectorflow.serving.web_app` (an app with the web pages alone, e.g. ``sectorflow
    workbench``), with the ``fastapi.FastAPI`` app and a :class:`~sectorflow.serving.web.WebHost`: the server's
    key check (``host.authenticate``), its access-decision record (``host.record_access``), the plugin's own
    section of the server configuration (``host.settings(name)``, ``[web.NAME]``) and its state store URL. Mount
    routes under a prefix of the plugin's own (``/ui/`` for the AML workbench). Pages do their own sign-in (a key
    to a session cookie); the server's JSON error handlers still answer exceptions that escape them. Returns nothing.
    """
