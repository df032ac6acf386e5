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
                out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the global model as a bundle "
                                                   "here (simulation; default: `bundle` of the config; Taskflow, "
                                                   "run --task-path and serve load it)."),
                force: bool = typer.Option(False, "--force", help="Replace the bundle that --out / bundle = "
                                           "already holds (as `sectorflow aml train --force`)."),
                report: Optional[Path] = typer.Option(None, help="Write the run report (JSON) here (simulation); "
                                                      "stdout then gets one line, not the report."),
                weights: Optional[Path] = typer.Option(None, help="Write the global weights (.npz) here "
                                                       "(simulation)."),
                dp_baseline: bool = typer.Option(True, "--dp-baseline/--no-dp-baseline",
                                                 help="With DP on: also run without DP to measure its cost "
                                                      "(dp.compare_without)."),
                verbose: bool = typer.Option(False, help="Show Flower's and Ray's logs.")) -> None:
    """Train TASK's model across the institutions of the config: in simulation, or on a SuperLink."""
    cfg = _config(task, config)
    if superlink:
        from .deploy import write_app

        out_dir = write_app(cfg, app_dir or Path(tempfile.mkdtemp(prefix="sectorflow-federation-")))
        typer.echo(f"Flower App written to {out_dir}; submitting to SuperLink {superlink!r}", err=True)
        code = subprocess.call([_flwr(), "run", str(out_dir), superlink, "--stream"])
        raise typer.Exit(code)
    from .registry import find_trainable
    from .runner import Current, RoundProgress, export_bundle, preflight, privacy_utility, stop_on_sigint, without_dp
    from .server import new_report
    from .simulation import check_simulation_config, simulate

    check_simulation_config(cfg)
    if out is None and cfg.bundle:  # one key for both engines; --out overrides it here
        out = Path(cfg.bundle)
    for path in (report, weights):  # made before the run, which may take hours: not a crash after it
        if path is not None:
            writable_file(path, what="run report" if path is report else "weights file",
                          setting="--report" if path is report else "--weights")
    spec = find_trainable(cfg.task, cfg.model)
    if out is not None and spec.export is None:
        raise ConfigError(f"{spec.task}/{spec.name} offers no bundle export: drop --out / bundle = (--weights "
                          "writes its weights).")
    if out is not None:
        _refuse_a_shipped_bundle(out)
    if out is not None and out.exists() and (out.is_file() or any(out.iterdir())) \
            and not (out / "manifest.json").is_file():
        raise ConfigError(f"--out / bundle = {out} exists and is not a bundle folder: give a new or empty folder.")
    if out is not None and (out / "manifest.json").is_file() and not force:
        # a bank's earlier bundle (a trained or federated model in use) was replaced without a word (fresh-user)
        held = sorted(p.name for p in out.iterdir())
        raise ConfigError(f"--out / bundle = {out} already holds a bundle ({len(held)} file(s), e.g. {held[0]}): give a "
                          "new or empty folder, or add --force to replace the bundle in it.",
                          details={"out": str(out), "entries": len(held)})
    if out is not None:  # a parent that is a file, no permission: said now, not as a traceback after the training
        writable_file(out / "manifest.json", what="bundle", setting="--out / bundle =")
    preflight(cfg, spec)

    def say(message: str) -> None:
        typer.echo(message, err=True)

    protections = (", SecAgg+" if cfg.secagg.enabled else "") + (f", DP {cfg.dp.mode}" if cfg.dp.mode != "off"
                                                                 else "")
    say(f"federated run of {spec.task}/{spec.name}: {len(cfg.institutions)} institutions, {cfg.rounds} rounds, "
        f"{cfg.strategy.name}{protections}; starting Flower's simulation engine and each institution's data "
        "(the first round waits for both) ...")
    current = Current()
    current.cfg, current.plugin = cfg, spec.plugin
    command = " ".join(["sectorflow", *sys.argv[1:]]) if len(sys.argv) > 1 else f"sectorflow federate {task}"
    with stop_on_sigint(current, say):
        current.report = new_report(cfg, spec)
        with RoundProgress(cfg) as progress:
            result = simulate(cfg, spec, verbose=verbose, report=current.report, on_round=progress)
        if cfg.dp.mode != "off" and cfg.dp.compare_without and dp_baseline:
            plain = without_dp(cfg)
            base = new_report(plain, spec)
            current.cfg, current.report = plain, base
            say("measuring what DP costs: the same federation without DP (same seed; --no-dp-baseline skips it) ...")
            with RoundProgress(plain, label=" without DP") as progress:
                base = simulate(plain, spec, verbose=verbose, report=base, on_round=progress)
            result.privacy_utility = privacy_utility(cfg, result, base)
            utility = result.privacy_utility
            if utility["warning"]:
                say(f"WARNING: {utility['warning']}")
            elif utility.get("cost") is not None:
                say(f"DP costs {utility['cost']:.4f} {utility['metric']} (margin {cfg.dp.utility_margin}).")
    summary = result.summary()
    if report:
        report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    kept = result.kept_weights()
    if weights and kept is not None:
        import numpy as np

        names = sorted(spec.build(dict(cfg.institutions[0])).get_weights())
        np.savez(weights, **dict(zip(names, kept)))
    if out is not None:
        manifest = export_bundle(cfg, spec, result, out, command)
        chosen = result.selection or {}
        if chosen.get("round") is not None:
            value = chosen.get("value")
            say(f"the bundle holds the global model of round {chosen['round']} of {len(result.rounds)} ("
                + (f"validation {chosen['metric']} {value:.4f}, " if value is not None else "")
                + f"keep = {cfg.keep!r}: {chosen['why']})")
        say(f"bundle written to {out} ({manifest.name}); serve it with Taskflow({cfg.task!r}, task_path=...) or "
            f"sectorflow run {cfg.task} --task-path {out}")
    if report:  # the report is in its file: one line on stdout, not the JSON again (fresh-user report)
        typer.echo(f"run {summary.get('run_id')}: {len(result.rounds)} round(s); report written to {report}")
    else:
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


def _refuse_a_shipped_bundle(out: Path) -> None:
    """Refuse an ``--out`` / ``bundle =`` that is (or lies inside) the default bundle a plugin ships with a task:
    writing there would replace the model every later default run uses (fresh-user report: ``federate aml --out
    .../sectorflow_aml/bundle`` replaced the shipped account model without a word).

    Raises:
        ConfigError: naming the folder, the task whose default it is, and what to do instead.
    """
    from sectorflow.host import registered_tasks

    target = out.resolve()
    for spec in registered_tasks().values():
        if spec.default_bundle is None:
            continue
        shipped = Path(spec.default_bundle).resolve()
        if target == shipped or shipped in target.parents:
            raise ConfigError(f"--out / bundle = {out} is the bundle shipped with task {spec.name!r} (plugin "
                              f"{spec.plugin!r}): it is never overwritten; pick another folder and serve it with "
                              "--task-path.")
