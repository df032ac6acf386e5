"""``sectorflow aml state show|export|reset``: an operator's view of the AML state kept by ``sectorflow run aml
--state STATE`` and ``sectorflow serve`` (one state per tenant), each action an audited task event
(``state_shown``, ``state_exported``, ``state_reset``; :mod:`sectorflow.state_admin`).

::

    sectorflow aml state show [--tenant T] [--state STATE]
    sectorflow aml state export --tenant T [--state STATE] [-O model=false ...] > state.json
    sectorflow aml state reset --tenant T [--state STATE] --yes

``--state`` defaults to ``$SECTORFLOW_HOME/state.sqlite`` (a ``postgresql://`` URL is accepted).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer

from sectorflow import (ConfigError, StateStore, Taskflow, default_state_path, export_state, open_state_store,
                        option_values, reset_stored_state, state_lock, state_lock_holder, state_summary)

state_app = typer.Typer(help="The AML state kept across runs and server restarts: show, export, reset.",
                        no_args_is_help=True)
STATE_HELP = ("The state store: an existing SQLite file (a missing one is refused, not created) or a postgresql:// "
              "URL (default $SECTORFLOW_HOME/state.sqlite).")


def open_existing_store(state: str | None) -> StateStore:
    """The state store ``--state`` names (default :func:`sectorflow.default_state_path`), which must exist: these
    commands read a store, and opening a SQLite file that is not there creates an empty one (a mistyped ``--state
    typo.sqlite`` was shown as "no AML state" and left an empty store behind). PostgreSQL URLs are opened as given.

    Raises:
        ConfigError: naming the missing file and what makes one.
    """
    text = None if state is None else str(state)
    if text is None or not text.startswith(("postgresql://", "postgres://")):
        path = default_state_path() if text is None else Path(text.removeprefix("sqlite://")).expanduser()
        if not Path(path).is_file():
            where = f"--state {text}" if text is not None else "the default state store"
            raise ConfigError(f"{where}: no state store at {path} (nothing was created). Give the --state that "
                              "`sectorflow run aml --state` or the server's state store wrote (a SQLite file or a "
                              "postgresql:// URL).", details={"state": str(path)})
    return open_state_store(state)


def _window_summary(snapshot: dict[str, Any] | None) -> dict[str, Any]:
    """Counts and span of the window in a snapshot (the journal after it is counted by the store)."""
    if snapshot is None:
        return {"window_transactions": 0, "accounts": 0, "window_from": None, "window_to": None}
    window = snapshot["window"]
    edges = window["edges"]

    def iso(ts: float) -> str:
        return datetime.fromtimestamp(ts, timezone.utc).isoformat()

    return {"window_transactions": len(edges), "accounts": len(window["accounts"]),
            "window_from": iso(min(e[1] for e in edges)) if edges else None,
            "window_to": iso(float(window["now"])) if edges else None,
            "report_days": len(snapshot["reports"]["days"]), "model": snapshot.get("model"),
            "lookback_days": snapshot.get("lookback_days")}


@state_app.command("show")
def show_command(tenant: Optional[str] = typer.Option(None, "--tenant", help="One tenant (default: every one)."),
                 state: Optional[str] = typer.Option(None, "--state", help=STATE_HELP),
                 as_json: bool = typer.Option(False, "--json", help="One JSON object per tenant.")) -> None:
    """Tenants with AML state: snapshot and journal sizes, last commit, an unfinished run's progress."""
    store = open_existing_store(state)
    if tenant is not None and tenant not in store.tenants("aml"):  # was: a row of zeros, as if its state were empty
        raise ConfigError(f"The store {store.url} holds no aml state for tenant {tenant!r}; tenants: "
                          f"{', '.join(store.tenants('aml')) or 'none'}.", details={"tenant": tenant})
    rows = state_summary(store, "aml", tenant)
    holder = state_lock_holder(state)  # a run holding the store's lock is live, not a killed one
    for row in rows:
        row.update(_window_summary(store.load("aml", row["tenant"])[0]))
        row["in_progress"] = holder if row["run"] else None
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if not rows:
        typer.echo(f"no AML state in {store.url}")
    for row in rows:
        typer.echo(_show_line(row))


def _show_line(row: dict[str, Any]) -> str:
    """One tenant's line of ``state show`` (its window at the last snapshot; the journal after it is replayed on
    top when the state loads, so a state whose items are all in the journal shows an empty window)."""
    run = row["run"]
    window = (f"{row['window_transactions']:,} transaction(s) of {row['accounts']:,} account(s) in the window "
              f"({row['window_from']} .. {row['window_to']})" if row["window_transactions"]
              else "no transactions in the window")
    return (f"{row['tenant']}: at the last snapshot {window}; "
            f"{row['bytes']:,} bytes (snapshot {row['snapshot_bytes']:,} of "
            f"{row['snapshot_time'] or 'never'}; journal after it {row['journal_calls']} call(s), "
            f"{row['journal_items']:,} item(s), replayed on load); last commit {row['last_commit'] or 'none'}"
            + (_run_text(run, row.get("in_progress")) if run else ""))


def _run_text(run: dict[str, Any], holder: dict[str, Any] | None) -> str:
    """The unfinished run of ``state show``: in progress while a process holds the store's lock (``holder``, from
    ``sectorflow.state_lock_holder``), else UNFINISHED (killed or stopped: the same command resumes it). Before 2 Dec
    2026 a live run was shown as UNFINISHED too."""
    if holder is not None:
        pid = holder.get("pid")
        return (f"; run of {run['input']} IN PROGRESS: {run['rows_done']} row(s) done at its last checkpoint (the "
                f"store's lock is held by {holder.get('doing') or 'run'} pid {pid if pid is not None else 'unknown'})")
    return (f"; UNFINISHED run of {run['input']}: {run['rows_done']} row(s) done (no process holds the store: run the "
            "same command again to resume it)")


@state_app.command("export")
def export_command(tenant: str = typer.Option("default", "--tenant", help="Whose state."),
                   state: Optional[str] = typer.Option(None, "--state", help=STATE_HELP),
                   option: list[str] = typer.Option([], "--option", "-O", help="The task options the state was made "
                                                    "with (KEY=VALUE, e.g. model=false), repeatable.")) -> None:
    """Print the tenant's state as JSON (AMLPipeline.state_dict: window, report aggregates, feature state, ...):
    window span and counts are in it; it loads with AMLPipeline.load_state_dict."""
    store = open_existing_store(state)
    tf = Taskflow("aml", **option_values(option))
    typer.echo(json.dumps(export_state(tf, store, tenant), ensure_ascii=False, allow_nan=False))


@state_app.command("reset")
def reset_command(tenant: str = typer.Option(..., "--tenant", help="Whose state to forget."),
                  state: Optional[str] = typer.Option(None, "--state", help=STATE_HELP),
                  yes: bool = typer.Option(False, "--yes", help="Confirm: the window, report aggregates and "
                                           "cooldowns of this tenant are forgotten.")) -> None:
    """Forget one tenant's AML state (its next run or call starts with an empty window)."""
    if not yes:
        raise typer.BadParameter("reset forgets the tenant's 30-day window and open report aggregates: add --yes.")
    open_existing_store(state).close()  # before the lock, whose STATE.lock file would be made next to a typo
    with state_lock(state, what="reset"):  # never under a run that is still going (sectorflow.state_lock)
        store = open_state_store(state)
        had = reset_stored_state(store, "aml", tenant)
    typer.echo(f"tenant {tenant}: {'state forgotten' if had else 'had no state'} in {store.url}")
