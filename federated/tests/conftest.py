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


# Ray's node start on 2 cores sometimes times out ("The current node timed out during startup ... GCS or head
# node's raylet may not have started successfully"), which Flower's simulation engine reports as "An error was
# encountered. Ending simulation." / "Simulation Runtime crashed." (seen in CI twice on 1 Dec 2026, once on a quiet
# machine). A test of Flower's simulation engine that fails with exactly that runs once more (pytest-rerunfailures);
# any other failure, or the same one twice, fails the test.
RAY_START_FAILED = [r"An error was encountered\. Ending simulation", r"Simulation Runtime crashed",
                    r"timed out during startup"]
# Under pytest-xdist (scripts/test.sh) these modules are one unit of work: one worker runs them one after another, so
# two Ray clusters never start at once (the root conftest.py reads XDIST_GROUPS, a literal).
XDIST_GROUPS = {"ray": ["test_simulation.py", "test_bank_bundle.py", "test_text_bundles.py"]}
SIMULATION_MODULES = set(XDIST_GROUPS["ray"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SIMULATION_MODULES and item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=RAY_START_FAILED))
