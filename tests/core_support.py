"""Helpers shared by the core tests (importable because tests/conftest.py puts tests/ on ``sys.path``)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pluggy

from sectorflow import hookimpl, plugins

REPO_ROOT = Path(__file__).resolve().parents[1]
ECHO_DIR = REPO_ROOT / "tests" / "plugins" / "sectorflow-echo"
ECHO_SRC = ECHO_DIR / "src"
ECHO_BUNDLE = ECHO_SRC / "sectorflow_echo" / "bundle"
VENV_BIN = REPO_ROOT / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable


def echo_plugin() -> Any:
    """The echo test plugin's hook module (``sectorflow_echo.plugin``), imported from its source folder."""
    if str(ECHO_SRC) not in sys.path:
        sys.path.insert(0, str(ECHO_SRC))
    return importlib.import_module("sectorflow_echo.plugin")


def load_make_bundle() -> Any:
    """The echo plugin's committed bundle script as a module (``make_bundle(out_dir, task=, seed=, version=)``)."""
    spec = importlib.util.spec_from_file_location("echo_make_bundle", ECHO_DIR / "make_bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class EventRecorder:
    """A plugin that keeps every :class:`~sectorflow.TaskEvent` it observes, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    @hookimpl
    def sectorflow_task_event(self, event: Any) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]


class FakeProbe:
    """Hardware that is not on this machine (GPU, NPU, MLU, XPU), for device resolution tests."""

    def __init__(self, gpus: int = 0, custom: dict[str, int] | None = None, xpus: int = 0) -> None:
        self.gpus, self.custom, self.xpus = gpus, dict(custom or {}), xpus

    def gpu_count(self) -> int:
        return self.gpus

    def custom_devices(self) -> dict[str, int]:
        return dict(self.custom)

    def xpu_count(self) -> int:
        return self.xpus


def child_env(**overrides: str | None) -> dict[str, str]:
    """The current environment for a child process, with overrides (``None`` removes a variable)."""
    env = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@contextmanager
def registry_scope() -> Iterator[Callable[..., pluggy.PluginManager]]:
    """Yields ``make({name: plugin}, installed=False) -> PluginManager``; afterwards puts back the registry and the
    ``SECTORFLOW_LOAD_PLUGINS`` value it found.

    ``make`` resets sectorflow's plugin manager and task registry. ``installed=False`` loads no entry-point plugin
    (``SECTORFLOW_LOAD_PLUGINS=""``); ``installed=True`` loads every installed one, as a user's process would. The
    given plugins (modules or objects with hook implementations) are then registered under their names.
    """
    saved = (plugins._pm, plugins._tasks, dict(plugins._aliases), plugins._trace_hooks)
    saved_env = os.environ.get("SECTORFLOW_LOAD_PLUGINS")

    def make(plugins_by_name: dict[str, Any] | None = None, *, installed: bool = False) -> pluggy.PluginManager:
        if installed:
            os.environ.pop("SECTORFLOW_LOAD_PLUGINS", None)
        else:
            os.environ["SECTORFLOW_LOAD_PLUGINS"] = ""
        plugins.reset()
        pm = plugins.get_plugin_manager()
        for name, plugin in (plugins_by_name or {}).items():
            pm.register(plugin, name=name)
        return pm

    try:
        yield make
    finally:
        plugins.reset()
        plugins._pm, plugins._tasks, aliases, plugins._trace_hooks = saved
        plugins._aliases.update(aliases)
        if saved_env is None:
            os.environ.pop("SECTORFLOW_LOAD_PLUGINS", None)
        else:
            os.environ["SECTORFLOW_LOAD_PLUGINS"] = saved_env
