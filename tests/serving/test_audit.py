"""Access decisions and task calls reach the real compliance audit log (SQLite) with the key id as actor, and
the audit routes apply the audit-admin scope with separation of duties."""

from __future__ import annotations

import pytest

compliance = pytest.importorskip("sectorflow.compliance")
from sectorflow import plugins  # noqa: E402

from .conftest import auth  # noqa: E402


@pytest.fixture(scope="module")
def audited(tasks, tmp_path_factory, make_server):
    folder = tmp_path_factory.mktemp("audit")
    key_file = folder / "audit.key"
    compliance.generate_key_file(key_file)
    mp = pytest.MonkeyPatch()
    mp.setenv("SECTORFLOW_AUDIT_DB", str(folder / "audit.sqlite"))
    mp.setenv("SECTORFLOW_AUDIT_KEY", str(key_file))
    compliance.reset()
    from sectorflow.compliance import plugin as audit_plugin

    pm = plugins.get_plugin_manager()
    pm.register(audit_plugin, name="audit")
    try:
        yield make_server(defaults={"max_queue_delay_ms": 0})
    finally:
        pm.unregister(name="audit")
        compliance.reset()
        mp.undo()


def test_access_decisions_and_calls_are_audited(audited):
    server = audited
    assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "hi"}]}
                              ).status_code == 200
    assert server.client.post("/v1/tasks/score", headers=auth("bob"), json={"inputs": []}).status_code == 403
    assert server.client.post("/v1/tasks/score", json={"inputs": []}).status_code == 401
    records = server.client.get("/v1/audit/records", headers=auth("watcher")).json()
    decisions = [(r["actor"], r["outcome"], r["object"]["task"]) for r in records if r["event"] == "access.decision"]
    assert ("alice", "success", "echo") in decisions
    assert ("bob", "denied", "score") in decisions
    assert ("anonymous", "denied", "score") in decisions
    calls = [r for r in records if r["event"] == "task.call_finished" and r["object"]["task"] == "echo"]
    assert calls and calls[-1]["actor"] == "alice" and calls[-1]["tenant"] == "bank-1"
    assert calls[-1]["channel"] == "http" and calls[-1]["source"] == "127.0.0.1"
    assert "hi" not in str(calls[-1])  # items are digested, never stored in clear

    proof = server.client.get("/v1/audit/proof/0", headers=auth("watcher"))
    assert proof.status_code == 200 and proof.json()["leaf_index"] == 0


def test_audit_routes_need_the_audit_scope_without_operator_rights(audited):
    server = audited
    assert server.client.get("/v1/audit/records", headers=auth("alice")).status_code == 403  # no audit scope
    both = server.client.get("/v1/audit/records", headers=auth("fuzz"))  # audit + admin: separation of duties
    assert both.status_code == 403 and both.json()["error"] == "AuditAccessDenied"
    missing = server.client.get("/v1/audit/proof/999999", headers=auth("watcher"))
    assert missing.status_code == 400 and missing.json()["error"] == "ProofError"
