"""Group commit (``SECTORFLOW_AUDIT_COMMIT=group``): unregulated calls' records are committed off the call's path,
many per durable commit, in order, and verify; regulated calls still commit before they return."""

from __future__ import annotations

import json
from typing import Any

from sectorflow import Taskflow
from sectorflow.compliance import open_store, runtime, verify_log
from sectorflow.compliance.records import make_object

TXNS = [{"customer_id": "c-100", "amount": 5.0}, {"customer_id": "c-200", "amount": 7.5}]


def committed(db: str) -> list[dict[str, Any]]:
    """The records another connection sees (what a reader in another process sees): committed ones only."""
    store = open_store(db)
    try:
        return [json.loads(r.body) for r in store.iter_records()]
    finally:
        store.close()


def test_unregulated_calls_are_group_committed_in_order_and_verify(audited: Any, tmp_path: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_COMMIT="group")
    db = str(tmp_path / "db" / "audit.db")
    tf = Taskflow("score")
    tf(TXNS)  # plugin.loaded and model_loaded records are committed directly; the call's records go to the writer
    assert runtime.flush(timeout=30)
    before = len(committed(db))
    with lg._lock:  # the writer cannot commit while the test holds the log: every call below queues
        for i in range(20):
            tf([{"customer_id": f"c-{i}", "amount": float(i)}])
        assert len(committed(db)) < before + 40  # the calls returned before their records were committed
    assert lg.flush(timeout=30)
    recs = committed(db)
    assert len(recs) == before + 40
    calls = recs[before:]
    assert [r["event"] for r in calls] == ["task.call_started", "task.call_finished"] * 20  # order kept
    assert [r["seq"] for r in recs] == list(range(len(recs)))
    # 40 records queued while the writer was held: at most two commits (the group it had taken, then the rest)
    assert lg._group is not None and lg._group.commits <= 3
    report = verify_log(lg.store, lg.keys.trusted_keys())
    assert report.ok, report.problems
    assert lg.stats["lost"] == 0


def test_a_synchronous_append_commits_what_was_queued_first(audited: Any, tmp_path: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_COMMIT="group")
    db = str(tmp_path / "db" / "audit.db")
    with lg._lock:
        for i in range(5):
            lg.submit("bench.queued", actor="tester", obj=make_object(task="score"), details={"i": i})
    seq = lg.append("bench.direct", actor="tester", obj=make_object(task="score"))
    events = [r["event"] for r in committed(db)]
    assert events[-6:] == ["bench.queued"] * 5 + ["bench.direct"]
    assert seq == len(events) - 1


def test_regulated_calls_commit_before_they_return_even_in_group_mode(audited: Any, tmp_path: Any) -> None:
    audited(SECTORFLOW_AUDIT_COMMIT="group", SECTORFLOW_AUDIT_REGULATED="score")
    db = str(tmp_path / "db" / "audit.db")
    tf = Taskflow("score")
    tf(TXNS)
    kinds = [r["event"] for r in committed(db)]  # no flush: committed when the call returned
    assert kinds[-2:] == ["task.call_started", "task.call_finished"]


def test_closing_the_log_commits_the_queue(audited: Any, tmp_path: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_COMMIT="group")
    db = str(tmp_path / "db" / "audit.db")
    tf = Taskflow("score")
    with lg._lock:
        for _ in range(3):
            tf(TXNS)
    runtime.reset()  # what interpreter exit runs (atexit): close() flushes, then signs the last checkpoint
    kinds = [r["event"] for r in committed(db)]
    assert kinds.count("task.call_finished") == 3
    store = open_store(db)
    try:
        last = store.last_checkpoint()
        assert last is not None and last.size == store.size()
    finally:
        store.close()
