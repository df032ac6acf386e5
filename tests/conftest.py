"""Shared fixtures for the core tests.

Tests get a clean task registry holding exactly the plugins they choose (``registry``, ``echo_registry``); the
registry the test found is put back afterwards, so nothing leaks into other tests or suites. Helpers live in
``core_support.py``.
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

from core_support import ECHO_BUNDLE, EventRecorder, echo_plugin, registry_scope  # noqa: E402


@pytest.fixture
def registry() -> Iterator[Callable[..., pluggy.PluginManager]]:
    """``registry({name: plugin}, installed=False) -> PluginManager``: a registry holding exactly the chosen plugins
    (see ``core_support.registry_scope``); the registry the test started with is put back afterwards."""
    with registry_scope() as make:
        yield make


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
