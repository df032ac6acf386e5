"""The plugin ``federate`` (entry point of sectorflow-federated): adds ``sectorflow federate``
(see :mod:`sectorflow.federated.cli`).

Registered under the entry-point group ``sectorflow`` like every plugin; importing it loads neither Flower nor Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sectorflow import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    import typer


@hookimpl
def sectorflow_register_commands(app: typer.Typer) -> None:
    """Add the ``sectorflow federate`` command group."""
    from .cli import federate_app

    app.add_typer(federate_app, name="federate")
