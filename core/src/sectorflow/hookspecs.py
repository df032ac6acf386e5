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
    from .spec import AccessDecision, TaskEvent, TaskSpec
    from .trainable import TrainableSpec

PROJECT_NAME = "sectorflow"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

BLOCKING_HOOKS = frozenset({"sectorflow_task_event", "sectorflow_access_decision"})
"""The hooks whose implementations may declare that they block (:func:`may_block`)."""

_BLOCKING = "sectorflow_may_block"


def may_block(when: bool | Callable[[], bool] = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare that a hook implementation of :data:`BLOCKING_HOOKS` may block (disk or network I/O: the audit log's
    fsynced append): ``True``, or a callable answering it at each call (e.g. only while the audit log is on). A caller
    on an event loop (the HTTP server) then runs that hook in a worker thread and awaits it. Put it under
    ``@hookimpl``::

        @hookimpl
        @may_block(lambda: log_is_on())
        def sectorflow_access_decision(decision): ...

    Raises:
        ValueError: on a function that is not named after one of :data:`BLOCKING_HOOKS`.
    """

    def mark(function: Callable[..., Any]) -> Callable[..., Any]:
        if function.__name__ not in BLOCKING_HOOKS:
            raise ValueError(f"may_block: {function.__name__} is not one of {', '.join(sorted(BLOCKING_HOOKS))}")
        setattr(function, _BLOCKING, when)
        return function

    return mark


def hook_may_block(manager: pluggy.PluginManager, hook_name: str) -> bool:
    """Whether an implementation of ``hook_name`` registered with ``manager`` declares now that it may block
    (:func:`may_block`)."""
    for impl in getattr(manager.hook, hook_name).get_hookimpls():
        flag = getattr(impl.function, _BLOCKING, False)
        if flag() if callable(flag) else flag:
            return True
    return False


@hookspec
def sectorflow_register_tasks(register: Callable[[TaskSpec], None]) -> None:
    """Register the plugin's tasks.

    Called once per process, when the task registry is first needed (``Taskflow(...)``, ``Taskflow.tasks()``,
    ``sectorflow tasks``, the server's start). Call ``register(spec)`` once per task. Registering a name or alias
    that another plugin already registered raises :class:`~sectorflow.errors.PluginConflictError` naming both
    plugins. Returns nothing.

    A spec's reader factories (``InputFormat.factory`` in ``TaskSpec.formats``, ``factory(mapping=None,
    defaults=None) -> reader``) may also declare a keyword parameter ``context``: ``sectorflow run`` then calls the factory with the task's input
    context (the read-only validation context that ``TaskSpec.input_context`` makes of the run's options, ``{}`` for
    a task without one), also when no ``--column``/``--default`` is given, so that the reader knows how its rows will
    be read (aml's ``input_timezone``). Factories without the parameter are called as before
    (:func:`sectorflow.input_files.reader_for`).
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
    """Observe a task event: a call started, finished or failed; a model loaded, reloaded or unloaded; a state
    reset, shown or exported; a federated training run.

    Called synchronously, in the thread that caused the event, for every event of every task (audit logging and
    metrics are built on it). ``event.inputs``/``event.outputs`` hold the call's items: never store them in clear.
    An observer that raises makes the call fail: a compliance log that cannot write must stop the work it
    records; one that may block says so with :func:`may_block`. Returns nothing.
    """


@hookspec
def sectorflow_access_decision(decision: AccessDecision) -> None:
    """Observe an access-control decision (authentication or authorisation, allowed or denied).

    Called synchronously by the HTTP server (``sectorflow serve``) for every request that needs a key, with a
    :class:`~sectorflow.spec.AccessDecision`: the key id as ``actor`` (``"anonymous"`` when none was presented), the
    task or admin resource asked for, the route as ``action``, and why it was allowed or denied. The audit log
    records it (MLPS 2.0 8.1.4.3 a): access decisions are important security events). An observer that raises fails
    the request; one that may block says so with :func:`may_block`. Returns nothing.
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
