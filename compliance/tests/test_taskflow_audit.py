"""The audit log through the core's hooks: every Taskflow call of any plugin is recorded without plugin code,
call_started is committed before the work runs, regulated tasks fail closed, others retry and count."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest

from audit_support import ScorePipeline, raw_sql
from sectorflow import CallContext, Taskflow, hookimpl
from sectorflow.compliance import AuditConfigError, AuditWriteError, record_access, runtime
from sectorflow.errors import InvalidInputError

TXNS = [{"customer_id": "c-100", "amount": 5.0}, {"customer_id": "c-200", "amount": 7.5}]


def events(lg: Any) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in lg.store.iter_records()]


def break_store(lg: Any) -> None:
    """Make every insert fail in the real SQLite store (as a full disk or a revoked grant would)."""
    raw_sql(lg.store, "CREATE TRIGGER fail_inserts BEFORE INSERT ON records BEGIN "
                      "SELECT RAISE(ABORT, 'simulated: database or disk is full'); END")


def test_every_call_is_recorded_with_context_and_digests(audited: Any) -> None:
    lg = audited()
    tf = Taskflow("score")
    ctx = CallContext(actor="analyst-7", tenant="bank-a", source="10.1.2.3", request_id="req-42", channel="http")
    out = tf(TXNS, context=ctx)
    assert [o.score for o in out] == [10.0, 15.0]
    recs = events(lg)
    kinds = [r["event"] for r in recs]
    assert kinds.count("plugin.loaded") == 2  # audit, tiny
    # each names its distribution (was null for every plugin: the core loads entry points without pluggy's distinfo)
    import importlib.metadata

    loaded = {r["details"]["plugin"]: r["details"]["distribution"] for r in recs if r["event"] == "plugin.loaded"}
    assert loaded == {"audit": f"sectorflow-compliance=={importlib.metadata.version('sectorflow-compliance')}",
                      "tiny": None}
    assert kinds[-3:] == ["task.model_loaded", "task.call_started", "task.call_finished"]
    started, finished = recs[-2], recs[-1]
    for r in (started, finished):
        assert (r["actor"], r["tenant"], r["source"], r["channel"], r["request_id"]) == \
               ("analyst-7", "bank-a", "10.1.2.3", "http", "req-42")
        assert r["object"]["task"] == "score" and r["object"]["plugin"] == "tiny" and r["n_items"] == 2
    assert started["outcome"] == "started" and finished["outcome"] == "success"
    assert started["input_digest"] == finished["input_digest"]
    expected = hmac.new(lg.keys.hmac_key, b'[{"customer_id":"c-100","amount":5.0},{"customer_id":"c-200","amount":7.5}]',
                        hashlib.sha256).hexdigest()
    assert started["input_digest"] == f"hmac-sha256:{expected}"
    assert finished["output_digest"].startswith("hmac-sha256:") and started["output_digest"] is None
    assert "c-100" not in json.dumps(recs)


def test_call_started_is_committed_before_the_pipeline_runs(audited: Any) -> None:
    lg = audited()
    tf = Taskflow("score")
    # While forward() runs, read the store through a second, independent connection.
    from sectorflow.compliance.store import SQLiteStore

    reader = SQLiteStore(lg.store.path)
    ScorePipeline.probe = lambda: json.loads(list(reader.iter_records())[-1].body)["event"]
    tf(TXNS[0])
    reader.close()
    assert ScorePipeline.observed == ["task.call_started"]


def test_failed_calls_and_reloads_are_recorded(audited: Any) -> None:
    lg = audited()
    tf = Taskflow("score")
    with pytest.raises(InvalidInputError):
        tf({"customer_id": "x"})
    tf.reload()
    recs = events(lg)
    failed = [r for r in recs if r["event"] == "task.call_failed"][0]
    assert failed["outcome"] == "failure" and "amount" in failed["reason"]
    assert [r["event"] for r in recs][-2:] == ["task.model_loaded", "task.model_unloaded"]


def test_regulated_task_fails_closed_and_does_no_work(audited: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_REGULATED="score")
    tf = Taskflow("score")
    break_store(lg)
    ScorePipeline.probe = lambda: "ran"
    with pytest.raises(AuditWriteError, match="disk is full"):
        tf(TXNS)
    assert ScorePipeline.observed == []  # the pipeline never ran
    assert lg.stats["retried"] == lg.config.retries


def test_unregulated_task_retries_counts_and_continues(audited: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_REGULATED="score")
    tf = Taskflow("plain")
    break_store(lg)
    out = tf(TXNS)
    assert [o.score for o in out] == [10.0, 15.0]
    assert runtime.failures["lost"] == 2  # call_started and call_finished
    assert runtime.failures["retried"] == 2 * lg.config.retries


def test_regulated_task_without_a_store_fails(audited: Any) -> None:
    assert audited(SECTORFLOW_AUDIT="off", SECTORFLOW_AUDIT_REGULATED="*") is None
    with pytest.raises(AuditConfigError, match="regulated"):
        Taskflow("score")


class HostileObserver:
    """A plugin that tries to hide a call from the audit log by rewriting the event before others see it."""

    @hookimpl(tryfirst=True)
    def sectorflow_task_event(self, event: Any) -> None:
        event.inputs = None
        event.context = CallContext(actor="nobody")


class RaisingObserver:
    @hookimpl
    def sectorflow_task_event(self, event: Any) -> None:
        if event.kind == "call_started":
            raise RuntimeError("observer refuses")


def test_a_plugin_cannot_hide_a_call(audited: Any) -> None:
    lg = audited({"hostile": HostileObserver()}, SECTORFLOW_AUDIT_REGULATED="score")
    Taskflow("score")(TXNS, context=CallContext(actor="real-user"))
    started = [r for r in events(lg) if r["event"] == "task.call_started"][0]
    assert started["actor"] == "real-user" and started["input_digest"] is not None


def test_an_observer_exception_fails_the_call_after_it_was_recorded(audited: Any) -> None:
    lg = audited({"raising": RaisingObserver()})
    with pytest.raises(RuntimeError, match="observer refuses"):
        Taskflow("score")(TXNS)
    assert events(lg)[-1]["event"] == "task.call_started"


def test_access_records(audited: Any) -> None:
    lg = audited()
    record_access(actor="key-17", resource="score", action="run", allowed=False, reason="tenant mismatch",
                  source="203.0.113.9", roles=["operator"])
    acc = events(lg)[-1]
    assert (acc["event"], acc["outcome"], acc["reason"]) == ("access.decision", "denied", "tenant mismatch")


def test_log_off_only_when_turned_off(audited: Any, tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 23: the log is on by default (embedded store under SECTORFLOW_HOME, compliance/tests/test_embedded.py);
    SECTORFLOW_AUDIT=off turns it off, silently, and writes nothing."""
    with caplog.at_level("WARNING", logger="sectorflow.audit"):
        assert audited(SECTORFLOW_AUDIT_DB=None, SECTORFLOW_AUDIT_KEY=None, SECTORFLOW_AUDIT="off") is None
        tf = Taskflow("score")
        tf(TXNS)
    assert [r for r in caplog.records if r.name == "sectorflow.audit"] == []
    assert not (tmp_path / "db").exists()
