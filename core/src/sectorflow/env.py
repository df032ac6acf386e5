"""Every environment variable sectorflow reads, in one settings object (pydantic-settings), and ``home()``.

:class:`Settings` declares each variable once: its name, what it does and its default. Code reads the variables
through it (``settings().num_threads``, ``settings(environ).audit_db`` for a mapping given in place of
``os.environ``) or, on a hot path, through :func:`raw` (one dictionary lookup: ``SECTORFLOW_REQUIRED_PLUGINS`` is
read twice a task call). Values are kept as the text the variable holds (``""`` stays ``""``); each is interpreted
where it is used, with the error message that names the variable (``SECTORFLOW_NUM_THREADS='x' is not an
integer``). Variables are read at each call, so a change of ``os.environ`` (a test's ``monkeypatch``) is seen at once.

``docs/configuration.md`` holds the table :func:`markdown_table` makes; ``tests/test_env_settings.py`` keeps the two
equal, and checks that no other module reads a ``SECTORFLOW_`` variable itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PREFIX = "SECTORFLOW_"


def _var(name: str, default: str | None, description: str) -> Any:
    return Field(default, alias=PREFIX + name.upper(), description=description)


class Settings(BaseSettings):
    """The environment variables of sectorflow and its built-in layers (audit log, server) and plugins; each field's
    alias is the variable's name. ``None``: the variable is not set."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    home: str | None = _var("home", None, "Folder where sectorflow keeps what it builds or records on a machine: "
                            "INT8 bundles, inference caches, the default state store, the embedded audit log and "
                            "its key. Default `~/.cache/sectorflow` (`sectorflow.home()`).")
    cache_dir: str | None = _var("cache_dir", None, "customer_service: where the e5 predictor program is exported. "
                                 "Default: the home folder.")
    num_threads: str | None = _var("num_threads", None, "CPU threads of each predictor when `Taskflow(num_threads=)` "
                                   "and `sectorflow run --num-threads` are not given (1 to 1024). Default 1.")
    load_plugins: str | None = _var("load_plugins", None, "Comma-separated entry-point names: load only these "
                                    "plugins (empty: none). Default: every installed plugin.")
    required_plugins: str | None = _var("required_plugins", None, "Comma-separated plugin names that must be "
                                        "loaded, else every task call fails (e.g. `audit`). Default: none.")
    trace_hooks: str | None = _var("trace_hooks", None, "Not empty and not `0`: log every hook call at debug level "
                                   "(logger `sectorflow.hooks`). Default off.")
    progress_interval: str | None = _var("progress_interval", None, "`sectorflow run` with standard error not a "
                                         "terminal: seconds between two progress lines (0: after every chunk). "
                                         "Default 5.")
    state_sync: str | None = _var("state_sync", None, "SQLite state stores: `FULL` (fsync every commit) or "
                                  "`NORMAL`. Default `FULL`.")
    aml_max_future_days: str | None = _var("aml_max_future_days", None, "aml: days a transaction's timestamp may lie "
                                           "ahead of the wall clock (UTC) before it is refused as invalid input, or "
                                           "`off`. Default 1.")
    serve_config: str | None = _var("serve_config", None, "`uvicorn --factory sectorflow.serving.app:app_from_env`: "
                                    "the server configuration file. Default: none (built-in defaults).")
    serve_keys: str | None = _var("serve_keys", None, "A JSON list of API key objects added to the server "
                                  "configuration's `[[keys]]`. Default: none.")
    audit: str | None = _var("audit", None, "`on` or `off` (also `1`/`0`, `true`/`false`): the audit log. "
                             "Default on.")
    audit_config: str | None = _var("audit_config", None, "A TOML file whose `[audit]` table configures the audit "
                                    "log (the variables below override it). Default: none.")
    audit_db: str | None = _var("audit_db", None, "The audit store: a SQLite file or a `postgresql://` URL. "
                                "Default: `audit/audit.db` under the home folder (the embedded store).")
    audit_key: str | None = _var("audit_key", None, "The key file of `sectorflow audit keygen` "
                                 "(required with `SECTORFLOW_AUDIT_DB`). Default: `keys/audit-key.json` under the home "
                                 "folder, with the embedded store.")
    audit_regulated: str | None = _var("audit_regulated", None, "Comma-separated task names (or `*`, `access`, "
                                       "`federated`) whose work fails when its record cannot be written. Default: "
                                       "none.")
    audit_admins: str | None = _var("audit_admins", None, "Comma-separated actor ids holding the audit-admin role "
                                    "(never also operators). Default: the OS user, with the embedded store.")
    audit_operators: str | None = _var("audit_operators", None, "Comma-separated actor ids holding the operator role. "
                                       "Default: none.")
    audit_retention_days: str | None = _var("audit_retention_days", None, "Days operation records stay in the live store "
                                            "before `sectorflow audit archive` moves them (at least 180). "
                                            "Default 180.")
    audit_sqlite_synchronous: str | None = _var("audit_sqlite_synchronous", None, "SQLite audit stores: `FULL` or "
                                                "`NORMAL`. Default `FULL`.")
    audit_commit: str | None = _var("audit_commit", None, "`sync` (each record committed before the call goes on) or "
                                    "`group` (unregulated calls' records committed by a writer thread, many per "
                                    "fsynced commit). Default `sync`.")
    audit_replica: str | None = _var("audit_replica", None, "A second audit store written with every commit or in "
                                     "the background (`SECTORFLOW_AUDIT_REPLICA_MODE`). Default: none.")
    audit_replica_mode: str | None = _var("audit_replica_mode", None, "`sync` (written with every commit) or `async` "
                                          "(from a background thread). Default `sync`.")

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of ``field`` (``"home"`` -> ``"SECTORFLOW_HOME"``).

        Raises:
            KeyError: ``field`` is not a setting.
        """
        return cls.model_fields[field].alias  # type: ignore[return-value]


class _Given(Settings):
    """:class:`Settings` read from a mapping only (no ``os.environ``): what :func:`settings` builds for ``environ``."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   **_: Any) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


_VARIABLES = {name: field.alias for name, field in Settings.model_fields.items()}


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from ``environ`` (default ``os.environ``), read now."""
    if environ is None:
        return Settings()
    return _Given(**{alias: environ[alias] for alias in _VARIABLES.values() if alias in environ})


def raw(field: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The text of ``field``'s variable in ``environ`` (default ``os.environ``), ``None`` when unset: one lookup, for
    a hot path (:class:`Settings` parses every variable).

    Raises:
        KeyError: ``field`` is not a setting.
    """
    return (os.environ if environ is None else environ).get(_VARIABLES[field])


def home(environ: Mapping[str, str] | None = None) -> Path:
    """``$SECTORFLOW_HOME`` (``~`` expanded) or ``~/.cache/sectorflow``: where sectorflow keeps what it builds or
    records on a machine (INT8 bundles, inference caches, the default state store, the embedded audit log).
    ``environ`` defaults to ``os.environ``."""
    value = raw("home", environ)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "sectorflow"


def markdown_table() -> str:
    """The table of ``docs/configuration.md``: one row per variable, its name and what it does (with its default)."""
    rows = ["| variable | what it does |", "| --- | --- |"]
    rows += [f"| `{field.alias}` | {field.description} |" for field in Settings.model_fields.values()]
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover
    print(markdown_table())
