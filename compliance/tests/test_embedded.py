"""On by default, embedded (issue 23, item 3): with nothing configured, the first audited event creates a SQLite
store and a key file (0600) under SECTORFLOW_HOME and says so once, in one line; ``audit verify`` and ``audit
status`` work on a fresh install; SECTORFLOW_AUDIT=off turns it off."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from audit_support import TinyPlugin
from sectorflow import Taskflow, cli, plugins
from sectorflow.compliance import AuditKeyError, runtime
from sectorflow.compliance import plugin as audit_plugin

TXNS = [{"customer_id": "c-100", "amount": 5.0}]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh install: SECTORFLOW_HOME in tmp, no SECTORFLOW_AUDIT_* setting, the audit and tiny plugins."""
    import os

    for name in list(os.environ):
        if name.startswith("SECTORFLOW_AUDIT"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "")

    def start(**env: str) -> None:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        runtime.reset()
        plugins.reset()
        pm = plugins.get_plugin_manager()
        pm.register(audit_plugin, name="audit")
        pm.register(TinyPlugin(), name="tiny")

    yield start
    runtime.reset()
    plugins.reset()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_first_event_creates_store_and_key_under_home_and_says_so_once(fresh: Any, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    home = tmp_path / "home"
    fresh()
    with caplog.at_level("WARNING", logger="sectorflow.audit"):
        tf = Taskflow("score")
        tf(TXNS)
        tf(TXNS)
        fresh()  # a second process on the same home: the store and key exist, nothing more is said
        Taskflow("score")(TXNS)
    db, key = home / "audit" / "audit.db", home / "keys" / "audit-key.json"
    assert db.is_file() and key.is_file()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    notices = [r.getMessage() for r in caplog.records if r.name == "sectorflow.audit"]
    assert len(notices) == 1 and "\n" not in notices[0]
    assert str(db) in notices[0] and str(key) in notices[0] and "SECTORFLOW_AUDIT_DB" in notices[0]
    events = [json.loads(r.body)["event"] for r in runtime.get_log().store.iter_records()]
    assert events.count("task.call_finished") == 3


def test_verify_and_status_on_a_fresh_install(fresh: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    fresh()
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "OK: no tampering found" in out
    Taskflow("score")(TXNS)
    code, out = run(["audit", "status", "--json"], capsys)
    assert code == 0, out
    info = json.loads(out)
    assert info["store"] == f"{tmp_path / 'home' / 'audit' / 'audit.db'} (embedded default)"
    assert info["key"].startswith(str(tmp_path / "home" / "keys" / "audit-key.json") + " (ed25519:")
    assert info["records"] >= 6 and info["size_bytes"] > 0 and info["last_checkpoint"].startswith("size ")
    code, out = run(["audit", "status"], capsys)
    assert code == 0 and "replica_lag:" in out and "store:" in out


def test_off_writes_nothing(fresh: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fresh(SECTORFLOW_AUDIT="off")
    Taskflow("score")(TXNS)
    assert not (tmp_path / "home").exists()
    code, out = run(["audit", "verify"], capsys)
    assert code == 2 and "SECTORFLOW_AUDIT=off" in out


def test_a_store_without_its_key_is_not_given_a_new_key(fresh: Any, tmp_path: Path) -> None:
    fresh()
    Taskflow("score")(TXNS)
    runtime.reset()
    (tmp_path / "home" / "keys" / "audit-key.json").unlink()
    fresh(SECTORFLOW_AUDIT_REGULATED="score")
    with pytest.raises(AuditKeyError, match="exists but its key file"):
        Taskflow("score")(TXNS)
    assert not (tmp_path / "home" / "keys" / "audit-key.json").exists()
