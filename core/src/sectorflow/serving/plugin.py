"""Built-in plugin ``serve`` (registered in code, ``sectorflow.plugins.BUILTIN_PLUGINS``) that adds ``sectorflow serve``
and ``sectorflow serve-key`` to the command line.

FastAPI and uvicorn are imported only when the command runs, so the CLI works without the ``serve`` extra.
"""

from __future__ import annotations

import json
import shlex

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .. import ConfigError, hookimpl, import_paddle

if TYPE_CHECKING:  # pragma: no cover
    import typer


@hookimpl
def sectorflow_register_commands(app: typer.Typer) -> None:
    """Add ``serve`` (run the HTTP server) and ``serve-key`` (make an API key and its stored hash)."""
    import typer

    @app.command("serve")
    def serve(
        host: str = typer.Option("127.0.0.1", help="Address to bind (loopback by default)."),
        port: int = typer.Option(8866, help="TCP port."),
        config: Optional[Path] = typer.Option(None, "--config", "-c", help="Server configuration (TOML or JSON)."),
        log_level: str = typer.Option("info", help="uvicorn log level."),
        forwarded_allow_ips: str = typer.Option(
            "127.0.0.1", help="Proxies whose X-Forwarded-For is trusted for the client address in audit records."),
        access_log: bool = typer.Option(True, help="uvicorn's access log line per request (audit records and "
                                                   "metrics do not need it; off saves CPU under load)."),
    ) -> None:
        """Serve every registered task over HTTP (POST /v1/tasks/NAME; docs at /docs)."""
        try:
            from .app import create_app
            from .server import run_server
        except ImportError as exc:
            raise ConfigError(f"sectorflow serve needs the serve extra: pip install 'sectorflow[serve]' ({exc}).") \
                from exc
        # Import Paddle now: it installs C++ handlers for SIGTERM/SIGINT that abort the process. Imported before
        # uvicorn installs its own handlers, it is overridden by them, so SIGTERM (systemd, Kubernetes) shuts the
        # server down gracefully instead of aborting in-flight requests.
        import_paddle()
        run_server(create_app(config), host=host, port=port, log_level=log_level,
                   forwarded_allow_ips=forwarded_allow_ips, access_log=access_log)

    @app.command("serve-key")
    def serve_key(
        key_id: str = typer.Argument(..., help="Key id (the actor in audit records)."),
        scope: list[str] = typer.Option(["task:*"], "--scope", "-s", help="Scope, repeatable."),
        tenant: Optional[str] = typer.Option(None, "--tenant", "-t",
                                   help="The institution the key belongs to: keys of one tenant share a stateful "
                                        "task's state (AML windows, same-day totals, cases), keys of different "
                                        "tenants never do. Give every bank its own."),
    ) -> None:
        """Print a new API key (give it to the client) and the [[keys]] entry to put in the server config."""
        from .auth import generate_key, hash_key

        secret = generate_key()
        typer.echo(f"# API key for {key_id} (shown once; only its SHA-256 goes into the config):\n# {secret}")
        scopes = ", ".join(f'"{s}"' for s in scope)
        lines = [f'id = "{key_id}"', f'sha256 = "{hash_key(secret)}"']
        if tenant is not None:
            lines.append(f"tenant = {json.dumps(tenant)}")
        lines.append(f"scopes = [{scopes}]")
        typer.echo("[[keys]]\n" + "\n".join(lines))
        if tenant is None:
            typer.echo(_no_tenant_note(key_id, scope), err=True)


def _no_tenant_note(key_id: str, scopes: list[str]) -> str:
    """``serve-key``'s note on a key made without ``--tenant``: it names the key and the stateful registered tasks
    its scopes reach, and the command that makes it with a tenant (the secret is never in it)."""
    from .. import host

    try:
        stateful = {name: spec for name, spec in host.registered_tasks().items() if spec.stateful}
    except Exception:  # noqa: BLE001 (a broken plugin must not stop the key being printed; the server names it)
        stateful = {}
    reached = sorted(name for name, spec in stateful.items() if "task:*" in scopes
                     or any(f"task:{n}" in scopes for n in (name, *spec.aliases)))
    again = " ".join(["sectorflow serve-key", shlex.quote(key_id), *(f"--scope {shlex.quote(s)}" for s in scopes),
                      "--tenant T"])
    if reached:
        what = ("stateful task " if len(reached) == 1 else "stateful tasks ") + ", ".join(map(repr, reached))
    elif stateful and "task:*" not in scopes:
        return (f"# no --tenant: key {key_id!r} calls no stateful task (the stateful ones: "
                f"{', '.join(map(repr, sorted(stateful)))}), so it shares no state now; a tenant only matters if its "
                "scopes grow to one")
    else:
        what = "stateful tasks"
    return (f"# no --tenant: key {key_id!r} shares the state of {what} with every other key without a tenant (the "
            f"default tenant's state); if it is another institution's key, make it with a tenant: {again}")
