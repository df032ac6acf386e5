"""The audit log's replica lag is a Prometheus metric of the server (``sectorflow_register_metrics`` hook, registered
by the audit plugin): 0 records behind and up while the replica is written with every commit; once a write to it
fails, ``up`` drops to 0 and the lag counts the records it missed (the log holds an ``audit.replica_failed`` alarm)."""

from __future__ import annotations

import pytest
from sectorflow import plugins

from .conftest import auth

compliance = pytest.importorskip("sectorflow.compliance")


@pytest.fixture(scope="module")
def replicated(tasks, tmp_path_factory, make_server):
    folder = tmp_path_factory.mktemp("audit-replica")
    key_file = folder / "audit.key"
    compliance.generate_key_file(key_file)
    mp = pytest.MonkeyPatch()
    mp.setenv("SECTORFLOW_AUDIT_DB", str(folder / "audit.sqlite"))
    mp.setenv("SECTORFLOW_AUDIT_KEY", str(key_file))
    mp.setenv("SECTORFLOW_AUDIT_REPLICA", str(folder / "replica.sqlite"))
    mp.setenv("SECTORFLOW_AUDIT_ADMINS", "auditor")
    compliance.reset()
    from sectorflow.compliance import plugin as audit_plugin

    pm = plugins.get_plugin_manager()
    pm.register(audit_plugin, name="audit")
    try:
        yield make_server(defaults={"max_queue_delay_ms": 0}), folder
    finally:
        pm.unregister(name="audit")
        compliance.reset()
        mp.undo()


def test_replica_lag_and_state_are_metrics(replicated):
    server, folder = replicated
    assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "a"}]}).status_code == 200
    label = {"replica": str(folder / "replica.sqlite")}
    assert server.metric("sectorflow_audit_replica_up", **label) == 1.0
    assert server.metric("sectorflow_audit_replica_lag_records", **label) == 0.0
    assert server.metric("sectorflow_audit_replica_last_sync_timestamp_seconds", **label) > 1.7e9
    # the replica goes away: its store is closed and its path now lies under a plain file, so it cannot be reopened
    replica = compliance.get_log().replica
    (folder / "gone").write_text("not a folder")
    replica.store.close()
    replica.store = None
    replica.url = str(folder / "gone" / "replica.sqlite")
    assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "b"}]}).status_code == 200
    down = {"replica": replica.url}
    assert server.metric("sectorflow_audit_replica_up", **down) == 0.0
    behind = server.metric("sectorflow_audit_replica_lag_records", **down)
    assert behind >= 2  # at least the call's started and finished records (and the alarm record itself)
    events = [rec["event"] for rec in compliance.AuditAdmin(compliance.get_log(), "auditor").export()]
    assert "audit.replica_failed" in events  # never a silent gap
