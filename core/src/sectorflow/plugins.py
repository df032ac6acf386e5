"""Plugin discovery (the core's own plugins, then the entry-point group ``sectorflow``) and the task registry.

The core's own plugins (:data:`BUILTIN_PLUGINS`: the event logger and ``sectorflow serve``) are registered in code,
as datasette and llm register theirs; entry points are for plugins of other distributions (the task plugins, the
audit log of sectorflow-compliance, the federated training of sectorflow-federated, third parties').

Environment:
    SECTORFLOW_LOAD_PLUGINS: comma-separated plugin names (built-in or entry-point) to load; unset loads every one, the
        empty string loads none (not even the built-in ones).
    SECTORFLOW_REQUIRED_PLUGINS: comma-separated plugin names that must be loaded (e.g. ``audit`` in a regulated
        deployment): loading fails if one is missing or left out, and every task event fails if one has since been
        unregistered, so that no plugin can switch the audit log off.
    SECTORFLOW_TRACE_HOOKS: ``1`` logs every hook call and result at DEBUG level on logger ``sectorflow.hooks``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import logging
import re
import threading
from typing import Any

import pluggy

from . import env, hookspecs
from .errors import PluginConflictError, PluginError, UnknownTaskError
from .spec import DEVICE_KINDS, PRECISIONS, TaskResult, TaskSpec
from .trainable import TrainableSpec

log = logging.getLogger("sectorflow.plugins")
ENTRY_POINT_GROUP = "sectorflow"
BUILTIN_PLUGINS = {"builtin_observers": "sectorflow.builtin", "serve": "sectorflow.serving.plugin"}
"""The core's own plugins, name -> module, registered in code before the entry-point plugins (selected by
``SECTORFLOW_LOAD_PLUGINS`` like them). Neither module imports more than the base dependencies when loaded."""
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_tasks: dict[str, TaskSpec] | None = None
_aliases: dict[str, str] = {}
_trace_hooks = False
_trace_log = logging.getLogger("sectorflow.hooks")


_required_cache: tuple[str, list[str]] = ("", [])


def required_plugins() -> list[str]:
    """The names listed in ``SECTORFLOW_REQUIRED_PLUGINS`` (empty when unset; read on every call, parsed once per
    value: :func:`emit` checks it twice a task call)."""
    global _required_cache
    raw = env.raw("required_plugins") or ""
    cached = _required_cache
    if cached[0] != raw:
        cached = _required_cache = (raw, [part.strip() for part in raw.split(",") if part.strip()])
    return list(cached[1])


def _check_required(pm: pluggy.PluginManager) -> None:
    missing = [name for name in required_plugins() if pm.get_plugin(name) is None]
    if missing:
        raise PluginError(f"Required plugin(s) {missing} (SECTORFLOW_REQUIRED_PLUGINS) are not loaded: install them, "
                          f"and do not leave them out with SECTORFLOW_LOAD_PLUGINS or unregister them.",
                          details={"missing": missing})


def _selected_names() -> set[str] | None:
    raw = env.raw("load_plugins")
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, with every selected entry-point plugin loaded (thread-safe, lazy)."""
    global _pm, _trace_hooks
    with _lock:
        if _pm is not None:
            return _pm
        pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        pm.add_hookspecs(hookspecs)
        selected = _selected_names()
        for name, module in BUILTIN_PLUGINS.items():
            if selected is None or name in selected:
                pm.register(importlib.import_module(module), name=name)
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if selected is not None and ep.name not in selected:
                continue
            if pm.get_plugin(ep.name) is not None:
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party plugin must not take the others down silently
                raise PluginError(f"Plugin {ep.name!r} ({ep.value}) failed to import: {exc!r}. "
                                  f"Reinstall it, or leave it out with SECTORFLOW_LOAD_PLUGINS.") from exc
            pm.register(plugin, name=ep.name)
            log.debug("loaded plugin %s from %s", ep.name, ep.value)
        _trace_hooks = (env.raw("trace_hooks") or "") not in ("", "0")
        if _trace_hooks:

            def before(hook_name: str, hook_impls: Any, kwargs: dict[str, Any]) -> None:
                _trace_log.debug("call %s(%s) -> %s", hook_name, ", ".join(kwargs),
                                 [impl.plugin_name for impl in hook_impls])

            def after(outcome: Any, hook_name: str, hook_impls: Any, kwargs: dict[str, Any]) -> None:
                _trace_log.debug("done %s: %r", hook_name, outcome.exception or "ok")

            pm.add_hookcall_monitoring(before, after)
        _check_required(pm)
        _pm = pm
        return pm


def reset() -> None:
    """Forget loaded plugins and tasks (tests, or after installing a plugin into a running process)."""
    global _pm, _tasks
    with _lock:
        _pm = None
        _tasks = None
        _aliases.clear()


def _check_spec(spec: TaskSpec) -> None:
    where = f"task {spec.name!r} of plugin {spec.plugin!r}"
    if not _NAME_RE.match(spec.name):
        raise PluginError(f"{where}: the name must match {_NAME_RE.pattern}.")
    if not issubclass(spec.output_model, TaskResult):
        raise PluginError(f"{where}: output_model must subclass sectorflow.TaskResult.")
    if isinstance(spec.pipeline, str) and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", spec.pipeline):
        raise PluginError(f"{where}: pipeline {spec.pipeline!r} must be a Pipeline subclass or its import path "
                          "'package.module:ClassName' (imported when the task is first run).")
    bad = [d for d in spec.devices if d not in DEVICE_KINDS] + [p for p in spec.precisions if p not in PRECISIONS]
    if bad:
        raise PluginError(f"{where}: unknown devices/precisions {bad}; allowed {DEVICE_KINDS} and {PRECISIONS}.")


def _plugin_of(pm: pluggy.PluginManager, impl_plugin: Any) -> str:
    return pm.get_name(impl_plugin) or repr(impl_plugin)


def _call_impl(hook_name: str, impl: Any, plugin_name: str, **kwargs: Any) -> None:
    """Call one plugin's implementation of a hook directly (the registry must know which plugin registered what),
    traced like pluggy's monitored calls when ``SECTORFLOW_TRACE_HOOKS`` is on."""
    if _trace_hooks:
        _trace_log.debug("call %s(%s) -> %s", hook_name, ", ".join(kwargs), [plugin_name])
    try:
        impl.function(**kwargs)
    except Exception as exc:
        if _trace_hooks:
            _trace_log.debug("done %s: %r", hook_name, exc)
        raise
    if _trace_hooks:
        _trace_log.debug("done %s: %r", hook_name, "ok")


def registered_tasks() -> dict[str, TaskSpec]:
    """All registered tasks by name (loads plugins on first use).

    Raises:
        PluginConflictError: two plugins register the same name or alias; the message names both.
        PluginError: a spec is malformed.
    """
    global _tasks
    with _lock:
        if _tasks is not None:
            return _tasks
        pm = get_plugin_manager()
        tasks: dict[str, TaskSpec] = {}
        aliases: dict[str, str] = {}
        for impl in pm.hook.sectorflow_register_tasks.get_hookimpls():
            plugin_name = _plugin_of(pm, impl.plugin)

            def register(spec: TaskSpec, _plugin: str = plugin_name) -> None:
                # A copy: a plugin's module-level spec must not keep the name of the first plugin manager it met.
                spec = dataclasses.replace(spec, plugin=spec.plugin or _plugin)
                _check_spec(spec)
                for name in (spec.name, *spec.aliases):
                    owner = tasks.get(name) or tasks.get(aliases.get(name, ""))
                    if owner is not None:
                        raise PluginConflictError(
                            f"Task name {name!r} is registered by both plugin {owner.plugin!r} and plugin "
                            f"{spec.plugin!r}. Uninstall one, or leave one out with SECTORFLOW_LOAD_PLUGINS.",
                            details={"task": name, "plugins": [owner.plugin, spec.plugin]})
                tasks[spec.name] = spec
                for alias in spec.aliases:
                    aliases[alias] = spec.name

            _call_impl("sectorflow_register_tasks", impl, plugin_name, register=register)
        _tasks = tasks
        _aliases.clear()
        _aliases.update(aliases)
        return tasks


def get_task(name: str) -> TaskSpec:
    """The spec registered under ``name`` or one of its aliases.

    Raises:
        UnknownTaskError: no such task; the error lists the known tasks and the closest match.
    """
    tasks = registered_tasks()
    key = name.strip().lower() if isinstance(name, str) else name
    if key in tasks:
        return tasks[key]
    if key in _aliases:
        return tasks[_aliases[key]]
    known = list(tasks) + list(_aliases)
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.5)
    closest = _aliases.get(close[0], close[0]) if close else None
    raise UnknownTaskError(str(name), list(tasks), closest)


def registered_trainables() -> list[TrainableSpec]:
    """Every trainable model offered through ``sectorflow_register_trainables``."""
    pm = get_plugin_manager()
    found: list[TrainableSpec] = []
    for impl in pm.hook.sectorflow_register_trainables.get_hookimpls():
        plugin_name = _plugin_of(pm, impl.plugin)

        def register(spec: TrainableSpec, _plugin: str = plugin_name) -> None:
            spec.plugin = spec.plugin or _plugin
            found.append(spec)

        _call_impl("sectorflow_register_trainables", impl, plugin_name, register=register)
    return found


def emit(event: Any) -> None:
    """Send a :class:`~sectorflow.spec.TaskEvent` to every ``sectorflow_task_event`` observer.

    Raises:
        PluginError: a plugin named in ``SECTORFLOW_REQUIRED_PLUGINS`` has been unregistered since loading.
    """
    pm = get_plugin_manager()
    _check_required(pm)
    pm.hook.sectorflow_task_event(event=event)
