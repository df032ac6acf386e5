"""Fixtures of the aml plugin's tests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # shared test helpers (aml_cycle_support) import by name


@pytest.fixture()
def cli_main() -> Callable[[list[str]], int]:
    """``sectorflow``'s ``main(argv) -> exit code`` with the ``aml`` command group registered (an earlier test may
    have loaded the CLI's plugin commands with no plugins selected)."""
    from sectorflow import cli
    from sectorflow_aml.cli import register

    if not any(group.name == "aml" for group in cli.app.registered_groups):
        register(cli.app)
    return cli.main
