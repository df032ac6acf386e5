"""``sectorflow federate ...``: federated training from the command line.

::

    sectorflow federate TASK --config federation.toml               # simulation: one virtual node per [[institutions]]
    sectorflow federate TASK --config federation.toml --superlink NAME   # deployment: `flwr run` on a SuperLink
    sectorflow federate app TASK --config federation.toml --out DIR       # write the Flower App only
    sectorflow federate certs DIR --host superlink.example.org --supernode bank_a --supernode bank_b
    sectorflow federate certs DIR --keys-only --supernode bank_a          # an institution makes its own key pair

``NAME`` is a SuperLink connection of the Flower configuration (``$FLWR_HOME/config.toml``: address and
``root-certificates``). Errors are :class:`sectorflow.ConfigError` (the ``sectorflow`` script prints the message and
exits with 2).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import click
import typer
from typer.core import TyperGroup

from sectorflow import ConfigError, writable_file


class _TaskOrCommand(TyperGroup):
    """``sectorflow federate TASK ...`` is ``sectorflow federate run TASK ...`` unless TASK names a sub-command."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


federate_app = typer.Typer(cls=_TaskOrCommand, no_args_is_help=True,
                           help="Federated training across institutions with Flower (see docs/federated.md).")


def _config(task: str, config: Path) -> Any:
    from .config import load_config

    cfg = load_config(config)
    if cfg.task != task:
        raise ConfigError(f"{config} trains task {cfg.task!r}, not {task!r}: fix `task` in the file or the command.")
    return cfg


def _flwr() -> str:
    candidate = Path(sys.executable).parent / "flwr"
    return str(candidate) if candidate.exists() else "flwr"


@federate_app.command("run")
def run_command(task: str = typer.Argument(..., help="Task whose trainable model is trained (e.g. aml)."),
                config: Path = typer.Option(..., "--config", "-c", help="federation.toml"),
                superlink: Optional[str] = typer.Option(
                    None, help="Run on this SuperLink connection (Flower configuration) instead of simulating."),
                app_dir: Optional[Path] = typer.Option(None, help="Where to write the Flower App (deployment)."),
                report: Optional[Path] = typer.Option(None, help="Write the run report (JSON) here (simulation)."),
                weights: Optional[Path] = typer.Option(None, help="Write the global weights (.npz) here "
                                                       "(simulation)."),
                verbose: bool = typer.Option(False, help="Show Flower's and Ray's logs.")) -> None:
    """Train TASK's model across the institutions of the config: in simulation, or on a SuperLink."""
    cfg = _config(task, config)
    if superlink:
        from .deploy import write_app

        out = write_app(cfg, app_dir or Path(tempfile.mkdtemp(prefix="sectorflow-federation-")))
        typer.echo(f"Flower App written to {out}; submitting to SuperLink {superlink!r}", err=True)
        code = subprocess.call([_flwr(), "run", str(out), superlink, "--stream"])
        raise typer.Exit(code)
    from .simulation import simulate

    for out in (report, weights):  # made before the run, which may take hours: not a crash after it
        if out is not None:
            writable_file(out, what="run report" if out is report else "weights file",
                          setting="--report" if out is report else "--weights")
    result = simulate(cfg, verbose=verbose)
    summary = result.summary()
    if report:
        report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if weights and result.weights is not None:
        import numpy as np

        from .registry import find_trainable

        names = sorted(find_trainable(cfg.task, cfg.model).build(dict(cfg.institutions[0])).get_weights())
        np.savez(weights, **dict(zip(names, result.weights)))
    typer.echo(json.dumps(summary, indent=2))


@federate_app.command("app")
def app_command(task: str = typer.Argument(...), config: Path = typer.Option(..., "--config", "-c"),
                out: Path = typer.Option(..., "--out", help="Folder for the Flower App.")) -> None:
    """Write the Flower App for a deployed run (then: flwr run OUT SUPERLINK --stream)."""
    from .deploy import write_app

    typer.echo(str(write_app(_config(task, config), out)))


@federate_app.command("certs")
def certs_command(out: Path = typer.Argument(..., help="Folder to write to."),
                  host: list[str] = typer.Option([], "--host", help="Host name or IP the SuperNodes dial "
                                                 "(repeat; subject alternative names of the SuperLink certificate)."),
                  supernode: list[str] = typer.Option([], "--supernode", help="Make a P-384 key pair for this "
                                                      "SuperNode (repeat)."),
                  keys_only: bool = typer.Option(False, help="Only SuperNode key pairs (at an institution).")) -> None:
    """Make the federation's CA, the SuperLink's TLS certificate and SuperNode authentication keys."""
    from .certs import make_all, make_supernode_keys

    if keys_only:
        if not supernode:
            raise ConfigError("--keys-only needs at least one --supernode NAME.")
        paths = [str(p) for name in supernode for p in make_supernode_keys(out, name)]
        typer.echo(json.dumps({"supernodes": paths}, indent=2))
        return
    if not host:
        raise ConfigError("Give the SuperLink's host name or IP with --host (e.g. --host 10.0.0.5).")
    typer.echo(json.dumps(make_all(out, list(host), list(supernode)), indent=2))
