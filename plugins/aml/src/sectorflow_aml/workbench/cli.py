"""``sectorflow workbench`` (the workbench alone) and ``sectorflow aml dispositions export`` (decisions as labels).

::

    sectorflow workbench --config serve.toml [--host 127.0.0.1] [--port 8867]
    sectorflow aml dispositions export --out labels.csv [--tenant bank-1] [--state STORE] [--force]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from sectorflow import ConfigError, default_state_path

from ..cli_state import open_existing_store
from ..outputs import check_out_file
from .decisions import TASK, DecisionBook, write_labels

dispositions_app = typer.Typer(help="Analysts' case decisions (the workbench's): export them as a labels file.",
                               no_args_is_help=True)


@dispositions_app.command("export")
def export_command(out: Path = typer.Option(..., "--out", "-o", help="The labels CSV to write: a new file (or "
                                            "--force)."),
                   tenant: str = typer.Option("default", "--tenant", help="Whose decisions."),
                   state: Optional[str] = typer.Option(None, "--state", help="The state store: an existing SQLite "
                                                       "file or a postgresql:// URL (default "
                                                       "$SECTORFLOW_HOME/state.sqlite)."),
                   force: bool = typer.Option(False, "--force", help="Replace the file --out names.")
                   ) -> None:
    """Write the tenant's decided cases as `case_id,account_id,period,disposition,reason,decided_by,decided_at`
    (disposition true_positive, false_positive, escalated or str_approved), for `sectorflow aml train --labels`.

    An existing --out is refused unless --force; a tenant with no decided case, or a --state that is not there, is
    an error (exit 2, naming the tenants that have decisions) that writes nothing: no file, no folder."""
    _refuse_the_store_itself(out, state)
    if Path(out).expanduser().is_file() and not force:  # refused before the store is opened, as before
        check_out_file(out, force, what="labels file")
    store = open_existing_store(state)
    try:
        rows = DecisionBook(store, tenant).labels()
        if not rows:
            tenants = sorted(store.tenants(TASK))
            raise ConfigError(f"No decided cases of tenant {tenant!r} in {store.url}: nothing written to {out}. "
                              + (f"Tenants with decisions there: {', '.join(tenants)}; give one with --tenant."
                                 if tenants else "No tenant has decisions there: decide cases in the workbench "
                                 "first, or give the --state the workbench uses."),
                              details={"tenant": tenant, "tenants": tenants})
        # only now (the store opened, decisions read): a failed export creates nothing, not even --out's folder
        # (fresh-user report: a bad --state left --out newdir/x.csv's newdir behind)
        check_out_file(out, force, what="labels file")
        n = write_labels(rows, out)
    finally:
        store.close()
    typer.echo(f"{n} decided cases of tenant {tenant} -> {out}", err=True)


def _refuse_the_store_itself(out: Path, state: Optional[str]) -> None:
    """``--out`` naming the SQLite store it reads (or its -wal, -shm, -journal or .lock file) is refused even with
    --force (fresh-user report, 3 Dec 2026: ``--out dec.sqlite --state dec.sqlite --force`` replaced every decision
    with a 251-byte CSV)."""
    if state is not None and str(state).startswith(("postgresql://", "postgres://")):
        return
    store = default_state_path() if state is None else Path(str(state).removeprefix("sqlite://")).expanduser()
    target = Path(out).expanduser().resolve()
    base = Path(store).resolve()
    if target in {base, *(base.with_name(base.name + end) for end in ("-wal", "-shm", "-journal", ".lock"))}:
        raise ConfigError(f"--out {out} is the state store {store} (or one of its files) that the decisions are read "
                          "from: give another file name.", details={"out": str(out), "state": str(store)})


def workbench_command(config: Path = typer.Option(..., "--config", "-c", help="Server configuration (TOML/JSON) "
                                                  "with [web.aml] and the users' [[keys]]."),
                      host: str = typer.Option("127.0.0.1", "--host"),
                      port: int = typer.Option(8867, "--port")) -> None:
    """Serve the AML workbench alone (no task routes, no models loaded) at http://HOST:PORT/ui/."""
    try:
        from sectorflow.serving import load_config, run_server, web_app

        import fastapi  # noqa: F401 - the serve extra (FastAPI, uvicorn) is what the workbench runs on
    except ImportError as exc:
        raise ConfigError(f"The workbench needs the serve extra ({exc.name} is missing): "
                          f"pip install 'sectorflow[serve]'.") from exc
    cfg = load_config(config)
    if "aml" not in cfg.web:
        raise typer.BadParameter(f"{config} has no [web.aml] section: name the results and transactions of each "
                                 f"tenant there (docs/workbench.md).", param_hint="--config")
    run_server(web_app(cfg), host=host, port=port)


def register(app: Any, aml_app: Any) -> None:
    """Add ``sectorflow workbench`` and ``sectorflow aml dispositions``."""
    if not any(group.name == "dispositions" for group in aml_app.registered_groups):
        aml_app.add_typer(dispositions_app, name="dispositions")
    if not any(cmd.name == "workbench" for cmd in app.registered_commands):
        app.command("workbench")(workbench_command)
