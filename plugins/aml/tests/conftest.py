"""Fixtures of the aml plugin's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture()
def cli_main() -> Callable[[list[str]], int]:
    """``sectorflow``'s ``main(argv) -> exit code`` with the ``aml`` command group registered (an earlier test may
    have loaded the CLI's plugin commands with no plugins selected)."""
    from sectorflow import cli
    from sectorflow_aml.cli import register

    if not any(group.name == "aml" for group in cli.app.registered_groups):
        register(cli.app)
    return cli.main
