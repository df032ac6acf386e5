"""Audit: task calls reach the real compliance audit log (SQLite) with the key id as actor, through the core's
task events; access decisions reach the ``sectorflow_access_decision`` hook with the key id (or ``anonymous``),
and the built-in audit plugin records them in the same log.
"""

from __future__ import annotations

from typing import Any

import pytest
from sectorflow import hookimpl, plugins

from .conftest import auth

compliance = pytest.importorskip("sectorflow.compliance")


class DecisionRecorder:
    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []

    @hookimpl
    def sectorflow_access_decision(self, actor: str, tenant: str | None, resource: str, action: str, allowed: bool,
                                   reason: str | None, source: str, request_id: str, roles: list[str],
                                   channel: str) -> None:
        self.decisions.append({"actor": actor, "tenant": tenant, "resource": resource, "action": action,
                               "allowed": allowed, "reason": reason, "source": source, "request_id": request_id,
                               "roles": roles, "channel": channel})


@pytest.fixture(scope="module")
def audited(tasks, tmp_path_factory, make_server):
    folder = tmp_path_factory.mktemp("audit")
    key_file = folder / "audit.key"
    compliance.generate_key_file(key_file)
    mp = pytest.MonkeyPatch()
    mp.setenv("SECTORFLOW_AUDIT_DB", str(folder / "audit.sqlite"))
    mp.setenv("SECTORFLOW_AUDIT_KEY", str(key_file))
    mp.setenv("SECTORFLOW_AUDIT_ADMINS", "auditor")
    compliance.reset()
    from sectorflow.compliance import plugin as audit_plugin

    pm = plugins.get_plugin_manager()
    recorder = DecisionRecorder()
    pm.register(audit_plugin, name="audit")
    pm.register(recorder, name="access_recorder")
    try:
        yield make_server(defaults={"max_queue_delay_ms": 0}), recorder
    finally:
        pm.unregister(name="access_recorder")
        pm.unregister(name="audit")
        compliance.reset()
        mp.undo()


def test_task_calls_are_in_the_audit_log_with_the_key_as_actor(audited):
    server, _ = audited
    r = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "Patient Zhang"}]})
    assert r.status_code == 200
    admin = compliance.AuditAdmin(compliance.get_log(), "auditor")
    records = list(admin.export())
    calls = [rec for rec in records if rec["event"] == "task.call_finished" and rec["object"]["task"] == "echo"]
    assert calls, [rec["event"] for rec in records]
    call = calls[-1]
    assert (call["actor"], call["tenant"], call["channel"], call["source"]) == ("alice", "bank-1", "http", "127.0.0.1")
    assert call["request_id"] == r.headers["x-sectorflow-call-id"]
    assert "Zhang" not in str(call) and "ZHANG" not in str(call)  # items are never stored in clear
    assert call["input_digest"].startswith("hmac-sha256:")


def test_access_decisions_reach_the_hook(audited):
    server, recorder = audited
    recorder.decisions.clear()
    assert server.client.post("/v1/tasks/echo", headers={**auth("alice"), "X-Request-ID": "ok-1"},
                              json={"inputs": [{"text": "hi"}]}).status_code == 200
    assert server.client.post("/v1/tasks/score", headers=auth("bob"), json={"inputs": []}).status_code == 403
    assert server.client.post("/v1/tasks/score", json={"inputs": []}).status_code == 401
    seen = [(d["actor"], d["allowed"], d["resource"], d["reason"]) for d in recorder.decisions]
    assert seen == [("alice", True, "echo", "ok"), ("bob", False, "score", "key lacks scope 'task:score'"),
                    ("anonymous", False, "score", "no API key")]
    first = recorder.decisions[0]
    assert (first["request_id"], first["action"], first["channel"], first["tenant"]) == (
        "ok-1", "POST /v1/tasks/echo", "http", "bank-1")
    assert first["roles"] == ["metrics", "task:*"]


def test_access_decisions_are_in_the_audit_log(audited):
    server, _ = audited
    assert server.client.post("/v1/tasks/score", headers={**auth("bob"), "X-Request-ID": "denied-1"},
                              json={"inputs": []}).status_code == 403
    admin = compliance.AuditAdmin(compliance.get_log(), "auditor")
    denied = [rec for rec in admin.export() if rec["event"] == "access.decision" and rec["request_id"] == "denied-1"]
    assert len(denied) == 1
    record = denied[0]
    assert (record["actor"], record["outcome"], record["object"]["task"], record["channel"]) == (
        "bob", "denied", "score", "http")
    assert record["reason"] == "key lacks scope 'task:score'"
