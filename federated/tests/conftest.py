"""Fixtures of the federated tests: the core tests' helpers (``tests/core_support.py``) and their ``registry``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pluggy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from core_support import registry_scope  # noqa: E402


@pytest.fixture
def registry() -> Iterator[Callable[..., pluggy.PluginManager]]:
    """``registry({name: plugin}, installed=False) -> PluginManager``, as in ``tests/conftest.py``."""
    with registry_scope() as make:
        yield make
