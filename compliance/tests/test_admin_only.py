"""Auditing cannot be stopped by the audited (issue 23, item 6): only an audit admin may turn the log off, change
its settings (the pinned audit policy), archive or restore; an operator's, another user's or a task key's attempt
is refused and recorded as ``access.decision`` ``denied``."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import pytest

from audit_support import ScorePipeline, raw_sql
from sectorflow import Taskflow, cli
from sectorflow.compliance import AuditAccessDenied, AuditWriteError, runtime
from sectorflow.compliance import plugin as audit_plugin
from sectorflow.compliance.admin import AuditAdmin
from sectorflow.compliance.store import open_store

TXNS = [{"customer_id": "c-100", "amount": 5.0}]
ME = getpass.getuser()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def records(path: Path) -> list[dict[str, Any]]:
    store = open_store(path)
    try:
        return [json.loads(r.body) for r in store.iter_records() if r.body]
    finally:
        store.close()


def denials(path: Path) -> list[tuple[str, str]]:
    return [(r["actor"], r["details"]["action"]) for r in records(path)
            if r["event"] == "access.decision" and r["outcome"] == "denied"]


def test_a_non_admin_may_not_archive_restore_or_pin_and_each_refusal_is_recorded(
        audited: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audited(SECTORFLOW_AUDIT_ADMINS="auditor1", SECTORFLOW_AUDIT_OPERATORS=ME)
    Taskflow("score")(TXNS)
    replica = tmp_path / "replica.db"
    for argv in (["audit", "archive", str(tmp_path / "arch")], ["audit", "restore", "--from", str(replica)],
                 ["audit", "policy", "--set", "retention_days=365"]):
        replica.write_bytes(b"")
        code, out = run(argv, capsys)
        assert code == 2 and ("needs the audit-admin role" in out or "may not run" in out), out
    runtime.reset()
    db = tmp_path / "db" / "audit.db"
    assert denials(db) == [(ME, "audit.archive"), (ME, "audit.restore"), (ME, "audit.policy")]
    assert not (tmp_path / "arch").exists()


def test_a_task_key_or_an_operator_key_over_http_is_refused_and_recorded(audited: Any, tmp_path: Path) -> None:
    lg = audited()
    with pytest.raises(AuditAccessDenied, match="audit.policy needs the audit-admin role"):
        AuditAdmin(lg, "key-task", roles={"task:*"}, action="audit.policy")
    with pytest.raises(AuditAccessDenied, match="separation of duties"):
        AuditAdmin(lg, "key-both", roles={"audit", "admin"}, action="audit.archive")
    AuditAdmin(lg, "key-audit", roles={"audit"}).set_policy({"retention_days": 365})
    runtime.reset()
    assert denials(tmp_path / "db" / "audit.db") == [("key-task", "audit.policy"), ("key-both", "audit.archive")]


def test_a_pinned_policy_wins_over_a_non_admins_settings(audited: Any, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    audited()
    code, out = run(["audit", "policy", "--set", "regulated=score", "--set", "audit_admins=auditor1"], capsys)
    assert code == 0 and '"regulated": ["score"]' in out, out
    # Another process of this user (no longer an audit admin): tries to drop the task from the regulated list and to
    # make itself an audit admin through its own environment.
    lg = audited(SECTORFLOW_AUDIT_REGULATED="", SECTORFLOW_AUDIT_ADMINS=ME)
    assert runtime.config().is_regulated("score") and runtime.config().audit_admins == frozenset({"auditor1"})
    raw_sql(lg.store, "CREATE TRIGGER fail_inserts BEFORE INSERT ON records WHEN NEW.event LIKE 'task.%' BEGIN "
                      "SELECT RAISE(ABORT, 'simulated: disk is full'); END")
    ScorePipeline.probe = lambda: "ran"
    with pytest.raises(AuditWriteError):
        Taskflow("score")(TXNS)  # still fails closed
    assert ScorePipeline.observed == []
    refused = [r for r in records(tmp_path / "db" / "audit.db") if r["event"] == "access.decision"
               and r["details"]["action"] == "audit.settings"]
    assert len(refused) == 1 and refused[0]["actor"] == ME and refused[0]["outcome"] == "denied"
    assert refused[0]["details"]["refused"] == ["audit_admins", "regulated"]
    code, out = run(["audit", "policy", "--set", "regulated="], capsys)
    assert code == 2 and "is not an audit admin" in out


def test_only_an_audit_admin_turns_an_existing_log_off(audited: Any, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "db" / "audit.db"
    audited()
    Taskflow("score")(TXNS)
    # an operator's process: SECTORFLOW_AUDIT=off is refused, the log stays on and records the attempt
    with caplog.at_level("WARNING", logger="sectorflow.audit"):
        lg = audited(SECTORFLOW_AUDIT="off", SECTORFLOW_AUDIT_ADMINS="auditor1")
    assert lg is not None and any("SECTORFLOW_AUDIT=off refused" in r.getMessage() for r in caplog.records)
    Taskflow("score")(TXNS)
    runtime.reset()
    after = records(db)
    assert (ME, "audit.off") in denials(db)
    assert [r["event"] for r in after].count("task.call_finished") == 2
    # the audit admin may: the gap is announced by an audit.disabled record, then nothing more is written
    assert audited(SECTORFLOW_AUDIT="off") is None
    Taskflow("score")(TXNS)
    runtime.reset()
    final = records(db)
    assert final[-1]["event"] == "audit.disabled" and final[-1]["actor"] == ME
    assert [r["event"] for r in final].count("task.call_finished") == 2


def test_a_process_whose_settings_match_the_policy_records_nothing(audited: Any, tmp_path: Path) -> None:
    lg = audited()
    AuditAdmin(lg, ME).set_policy({"regulated": ["score", "federated"]})
    audited(SECTORFLOW_AUDIT_REGULATED="federated,score", SECTORFLOW_AUDIT_ADMINS="someone-else")
    runtime.reset()
    settings = [r for r in records(tmp_path / "db" / "audit.db") if r["event"] in ("access.decision", "config.changed")]
    assert [r["reason"] for r in settings] == ["audit policy pinned"]  # admins were not pinned: not compared


def test_a_policy_changed_in_the_database_fails_verify(audited: Any, capsys: pytest.CaptureFixture[str]) -> None:
    lg = audited()
    AuditAdmin(lg, ME).set_policy({"regulated": ["score"]})
    code, out = run(["audit", "verify"], capsys)
    assert code == 0, out
    raw_sql(lg.store, "UPDATE meta SET v = ? WHERE k = 'policy'", (json.dumps({"regulated": []}),))
    code, out = run(["audit", "verify"], capsys)
    assert code == 1 and "pinned audit policy in the store differs" in out
