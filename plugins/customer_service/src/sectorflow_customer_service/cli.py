"""``sectorflow customer-service ...`` commands."""

from __future__ import annotations

from pathlib import Path

import typer

cs_app = typer.Typer(help="Customer-service tools: adopt a PaddleNLP checkpoint as the backbone.",
                     no_args_is_help=True)


@cs_app.command("adopt")
def adopt(folder: Path = typer.Argument(..., help="A PaddleNLP save_pretrained folder (ERNIE 3.0, BERT ...)."),
          name: str = typer.Option(None, help="Model name recorded in the manifest (default: the folder name)."),
          version: str = typer.Option("0.0.0", help="Model version recorded in the manifest.")) -> None:
    """Check the checkpoint and write its manifest.json; then use it with task_path=FOLDER."""
    from .adopt import adopt_checkpoint

    typer.echo(str(adopt_checkpoint(folder, name=name, version=version)))


def register(app: typer.Typer) -> None:
    app.add_typer(cs_app, name="customer-service")
