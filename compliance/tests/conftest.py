"""Fixtures for the audit-log tests: key files and stores in tmp dirs, a real PostgreSQL when configured, and a tiny
in-process task registered through the plugin manager (no model, no other plugin).

PostgreSQL: tests parametrised with ``pg`` use ``SECTORFLOW_TEST_POSTGRES_DSN`` (start a server with
``scripts/start_postgres.sh``). Unset: skipped with a reason, except under CI (``CI=true``) where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_support import ScorePipeline, TinyPlugin, pg_dsn  # noqa: E402

from sectorflow.compliance import AuditConfig, runtime  # noqa: E402

if importlib.util.find_spec("cryptography") is None:  # the compliance extra is missing
    if os.environ.get("CI", "").lower() == "true":
        raise ImportError("compliance/tests need the compliance extra (cryptography, psycopg): scripts/install.sh "
                          "must install '.[test,compliance]'.")
    collect_ignore_glob = ["test_*.py"]  # outside CI: nothing to test without the extra


@pytest.fixture
def keyfile(tmp_path: Path) -> Any:
    from sectorflow.compliance import generate_key_file

    return generate_key_file(tmp_path / "keys" / "audit-key.json")


@pytest.fixture(params=["sqlite", "pg"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(url, pg_schema)`` of an empty store: a SQLite file in tmp, or a fresh schema on the PostgreSQL server."""
    if request.param == "sqlite":
        yield str(tmp_path / "db" / "audit.db"), "sectorflow_audit"
        return
    dsn = pg_dsn()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield dsn, schema
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def make_log(store_url: tuple[str, str], keyfile: Any) -> Iterator[Callable[..., Any]]:
    """``make_log(**config) -> AuditLog`` on the parametrised store; closed afterwards."""
    from sectorflow.compliance import AuditLog, open_store

    opened: list[Any] = []

    def make(**cfg: Any) -> Any:
        url, schema = store_url
        lg = AuditLog(open_store(url, pg_schema=schema), keyfile, AuditConfig(pg_schema=schema, **cfg))
        opened.append(lg)
        return lg

    yield make
    for lg in opened:
        try:
            lg.store.close()
        except Exception:
            pass


@pytest.fixture
def audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """``audited(extra_plugins={}, **env) -> AuditLog | None``: configure the audit log through the environment
    (SQLite store and key file in tmp, the current user as audit admin), register the built-in audit plugin and the
    tiny task plugin (no entry-point plugins), and return the process-wide log."""
    import getpass

    from sectorflow import plugins
    from sectorflow.compliance import generate_key_file
    from sectorflow.compliance import plugin as audit_plugin

    key = tmp_path / "keys" / "audit-key.json"
    generate_key_file(key)

    def make(extra_plugins: dict[str, Any] | None = None, **env: str | None) -> Any:
        base = {"SECTORFLOW_AUDIT_DB": str(tmp_path / "db" / "audit.db"), "SECTORFLOW_AUDIT_KEY": str(key),
                "SECTORFLOW_AUDIT_ADMINS": getpass.getuser(), "SECTORFLOW_AUDIT_REGULATED": None,
                "SECTORFLOW_AUDIT_OPERATORS": None, "SECTORFLOW_AUDIT_CONFIG": None, "SECTORFLOW_AUDIT": None}
        base.update(env)
        for name, value in base.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "")
        runtime.reset()
        plugins.reset()
        pm = plugins.get_plugin_manager()
        pm.register(audit_plugin, name="audit")
        pm.register(TinyPlugin(), name="tiny")
        for name, plugin in (extra_plugins or {}).items():
            pm.register(plugin, name=name)
        return runtime.get_log()

    yield make
    ScorePipeline.probe = None
    ScorePipeline.observed = []
    runtime.reset()
    plugins.reset()
