"""Shared fixtures for the core tests.

Tests get a clean task registry holding exactly the plugins they choose (``registry``, ``echo_registry``); the
registry is reset afterwards, so nothing leaks into other tests. Helpers live in ``core_support.py``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from core_support import ECHO_BUNDLE, EventRecorder, echo_plugin  # noqa: E402


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., pluggy.PluginManager]]:
    """``registry({name: plugin}, installed=False) -> PluginManager``.

    Resets sectorflow's plugin manager and task registry. ``installed=False`` loads no entry-point plugin
    (``SECTORFLOW_LOAD_PLUGINS=""``); ``installed=True`` loads every installed one, as a user's process would. The
    given plugins (modules or objects with hook implementations) are then registered under their names. Everything is
    reset again after the test.
    """
    from sectorflow import plugins

    def make(plugins_by_name: dict[str, Any] | None = None, *, installed: bool = False) -> pluggy.PluginManager:
        if installed:
            monkeypatch.delenv("SECTORFLOW_LOAD_PLUGINS", raising=False)
        else:
            monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "")
        plugins.reset()
        pm = plugins.get_plugin_manager()
        for name, plugin in (plugins_by_name or {}).items():
            pm.register(plugin, name=name)
        return pm

    yield make
    plugins.reset()


@pytest.fixture
def echo_registry(registry: Callable[..., pluggy.PluginManager]) -> EventRecorder:
    """A registry holding only the echo test plugin and an event recorder; returns the recorder."""
    recorder = EventRecorder()
    registry({"echo": echo_plugin(), "recorder": recorder})
    return recorder


@pytest.fixture
def echo_bundle(tmp_path: Path) -> Path:
    """A private copy of the echo plugin's model bundle (safe to tamper with)."""
    target = tmp_path / "bundle"
    shutil.copytree(ECHO_BUNDLE, target)
    return target
