"""Audit: task calls reach the real compliance audit log (SQLite) with the key id as actor, through the core's
task events; access decisions reach the ``sectorflow_access_decision`` hook with the key id (or ``anonymous``),
and the built-in audit plugin records them in the same log.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from sectorflow import hookimpl, plugins

from .conftest import auth

compliance = pytest.importorskip("sectorflow.compliance")


class DecisionRecorder:
    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        self.decisions.append({**dataclasses.asdict(decision), "roles": list(decision.roles)})


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


class ThreadRecorder:
    def __init__(self) -> None:
        self.threads: list[tuple[str, str]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        import threading

        self.threads.append(("decision", threading.current_thread().name))

    @hookimpl
    def sectorflow_task_event(self, event: Any) -> None:
        import threading

        if event.kind == "call_failed":
            self.threads.append(("call_failed", threading.current_thread().name))


def test_audit_writes_never_run_on_the_event_loop(audited, tasks):
    """Fresh-user finding: with the audit log on, each access decision was appended (and fsynced) on the event loop,
    so while another process held the SQLite store locked (a backup, `sqlite3`), /healthz and every task waited:
    /healthz took 6.5 s during an 8-second lock. The audit plugin declares its hooks blocking while the log is on,
    and the server calls them in its observer thread (fast path, FastAPI route, 401s and 422s alike)."""
    from sectorflow.serving.access import observers_block

    server, _ = audited
    assert observers_block("sectorflow_access_decision") and observers_block("sectorflow_task_event")
    recorder = ThreadRecorder()
    plugins.get_plugin_manager().register(recorder, name="thread_recorder")
    try:
        assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "a"}]}
                                  ).status_code == 200  # the fast path
        assert server.client.post("/v1/tasks/echo?x=1", headers=auth("alice"), json={"inputs": [{"text": "a"}]}
                                  ).status_code == 200  # the FastAPI route
        assert server.client.post("/v1/tasks/echo", json={"inputs": []}).status_code == 401
        assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": ""}]}
                                  ).status_code == 422
    finally:
        plugins.get_plugin_manager().unregister(name="thread_recorder")
    assert [kind for kind, _ in recorder.threads] == ["decision"] * 4 + ["call_failed"]
    assert {thread for _, thread in recorder.threads} == {"sectorflow-observers_0"}


def test_an_oversized_body_leaves_its_refusal_in_the_audit_log(audited):
    """An oversized body with a valid key leaves the allowed access decision and a task.call_failed record naming
    the key, the task and why (never the body); without a key, the denied decision. Neither body is read."""
    from .test_oversized import declared_only

    server, _ = audited
    big = 2 * 1048576  # over the default max_body_bytes; only declared, never sent
    code, _, _ = declared_only(server, "/v1/tasks/echo", {**auth("alice"), "X-Request-ID": "big-1"}, big)
    assert code == 413
    code, _, _ = declared_only(server, "/v1/tasks/echo", {"X-Request-ID": "big-2"}, big)
    assert code == 401
    admin = compliance.AuditAdmin(compliance.get_log(), "auditor")
    records = [rec for rec in admin.export() if rec["request_id"] in ("big-1", "big-2")]
    seen = [(r["request_id"], r["event"], r["actor"], r["outcome"], r["object"]["task"], r["n_items"],
             r["input_digest"]) for r in records]
    assert seen == [("big-1", "access.decision", "alice", "success", "echo", 0, None),
                    ("big-1", "task.call_failed", "alice", "failure", "echo", 0, None),
                    ("big-2", "access.decision", "anonymous", "denied", "echo", 0, None)]
    assert records[1]["reason"] == ("RequestTooLarge: The request body exceeds 1048576 bytes (the server's [server] "
                                    "max_body_bytes): split the inputs into several requests (e.g. a few hundred "
                                    "items each), or ask the operator to raise max_body_bytes.")
    assert (records[1]["tenant"], records[1]["channel"], records[1]["source"]) == ("bank-1", "http", "127.0.0.1")
    assert records[2]["reason"] == "no API key"


def test_a_tenants_state_reset_is_in_the_audit_log_with_the_admin_key_as_actor(audited):
    server, _ = audited
    assert server.client.post("/v1/tasks/ledger", headers=auth("alice"),
                              json={"inputs": [{"account": "acc-1", "amount": 1.0}]}).status_code == 200
    done = server.client.post("/v1/admin/state/ledger/reset", headers={**auth("admin"), "X-Request-ID": "reset-1"},
                              json={"tenant": "bank-1"})
    assert done.status_code == 200 and done.json()["had_state"] is True
    records = list(compliance.AuditAdmin(compliance.get_log(), "auditor").export())
    (reset,) = [rec for rec in records if rec["event"] == "task.state_reset"]
    assert (reset["actor"], reset["tenant"], reset["request_id"], reset["object"]["task"]) == (
        "admin", None, "reset-1", "ledger")
    assert reset["details"] == {"tenant": "bank-1", "had_state": True}
    decision = [rec for rec in records if rec["event"] == "access.decision" and rec["request_id"] == "reset-1"]
    assert len(decision) == 1 and decision[0]["actor"] == "admin"
