"""One fsync per unregulated call: its ``task.call_started`` is committed before the work without a flush of its
own, and its ``call_finished`` (or ``call_failed``) commit, fsynced before the call returns, flushes both (SQLite's
fsync of the whole write-ahead log, PostgreSQL's WAL flush up to the later commit). Regulated calls flush each
record. The running Merkle root that follows each record goes back when a transaction rolls back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit_support import ScorePipeline
from sectorflow import Taskflow
from sectorflow.compliance import AuditWriteError, merkle, verify_log
from sectorflow.compliance.records import make_object

TXN = {"customer_id": "c-100", "amount": 5.0}


def trace_call(lg: Any, tf: Taskflow, item: Any, *, fail: bool = False) -> tuple[list[str], list[str], int]:
    """``(statements before the work, statements after it, synchronous after the call)`` of one call, as the
    store's own SQLite connection ran them."""
    seen: list[str] = []
    at_work: list[int] = []
    lg.store._conn.set_trace_callback(seen.append)

    def probe() -> None:
        at_work.append(len(seen))
        if fail:
            raise RuntimeError("simulated model failure")

    ScorePipeline.probe = probe
    try:
        try:
            tf(item)
        except RuntimeError:
            assert fail
    finally:
        lg.store._conn.set_trace_callback(None)
        ScorePipeline.probe = None
    flags = [s.strip() for s in seen if s.startswith(("PRAGMA", "BEGIN", "COMMIT", "ROLLBACK"))]
    before = [s.strip() for s in seen[:at_work[0]] if s.startswith(("PRAGMA", "BEGIN", "COMMIT", "ROLLBACK"))]
    synchronous = lg.store._conn.execute("PRAGMA synchronous").fetchone()[0]
    return before, flags[len(before):], synchronous


FULL = {"SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS": "FULL"}  # the default (test sessions run at NORMAL, conftest.py)


def test_an_unregulated_call_flushes_once_and_its_start_before_the_work(audited: Any) -> None:
    lg = audited(**FULL)
    tf = Taskflow("score")
    tf(TXN)  # plugin and model records first
    before, after, synchronous = trace_call(lg, tf, TXN)
    # the start: committed before the work, under synchronous=NORMAL (no fsync of its own), FULL again at once
    assert before == ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE", "COMMIT", "PRAGMA synchronous=FULL"]
    # the end: one commit at FULL (fsynced: the WAL as a whole, so the start's frames too) before the call returns
    assert after == ["BEGIN IMMEDIATE", "COMMIT"]
    assert synchronous == 2  # FULL
    recs = [json.loads(r.body) for r in lg.store.iter_records()]
    assert [r["event"] for r in recs[-2:]] == ["task.call_started", "task.call_finished"]


def test_a_failed_call_flushes_its_failure_record(audited: Any) -> None:
    lg = audited(**FULL)
    tf = Taskflow("score")
    tf(TXN)
    before, after, synchronous = trace_call(lg, tf, TXN, fail=True)
    assert before == ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE", "COMMIT", "PRAGMA synchronous=FULL"]
    assert after == ["BEGIN IMMEDIATE", "COMMIT"] and synchronous == 2
    assert json.loads(list(lg.store.iter_records())[-1].body)["event"] == "task.call_failed"


def test_a_regulated_call_flushes_its_start_before_the_work(audited: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_REGULATED="score", **FULL)
    tf = Taskflow("score")
    tf(TXN)
    before, after, synchronous = trace_call(lg, tf, TXN)
    assert before == ["BEGIN IMMEDIATE", "COMMIT"] and after == ["BEGIN IMMEDIATE", "COMMIT"]
    assert synchronous == 2


def test_normal_durability_is_left_alone(audited: Any) -> None:
    lg = audited(SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS="NORMAL")
    tf = Taskflow("score")
    tf(TXN)
    before, after, synchronous = trace_call(lg, tf, TXN)
    assert before == ["BEGIN IMMEDIATE", "COMMIT"] and after == ["BEGIN IMMEDIATE", "COMMIT"]
    assert synchronous == 1  # NORMAL


def test_a_deferred_commit_is_visible_to_other_readers_at_once(make_log: Any, store_url: tuple[str, str]) -> None:
    from sectorflow.compliance import open_store

    lg = make_log()
    seq = lg.append("task.call_started", actor="a", obj=make_object(task="t"), outcome="started", durable=False)
    url, schema = store_url
    reader = open_store(url, pg_schema=schema)
    try:
        assert reader.size() == seq + 1
        if type(lg.store).__name__ == "PostgresStore":  # asynchronous commit for that transaction only
            assert lg.store._conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    finally:
        reader.close()


def test_a_rolled_back_checkpoint_leaves_the_running_root_right(make_log: Any, monkeypatch: Any) -> None:
    lg = make_log(checkpoint_every=4)
    for i in range(3):
        lg.append("test.event", actor="a", obj=make_object(task="t"), details={"i": i})
    real = type(lg.store).insert_checkpoint
    calls = []

    def failing_once(store: Any, cp: Any) -> None:
        calls.append(cp.size)
        if len(calls) == 1:
            raise OSError("simulated: disk full at the checkpoint")
        real(store, cp)

    monkeypatch.setattr(type(lg.store), "insert_checkpoint", failing_once)
    with pytest.raises(AuditWriteError):  # the 4th record and its checkpoint roll back together
        lg.append("test.event", actor="a", obj=make_object(task="t"), details={"i": "lost"})
    assert lg.store.size() == 3 and lg._cr.size == 3
    for i in range(3, 9):
        lg.append("test.event", actor="a", obj=make_object(task="t"), details={"i": i})
    lg.checkpoint()
    leaves = lg.store.leaf_hashes(0, lg.store.size())
    last = lg.store.last_checkpoint()
    assert last.size == 9 and last.root == merkle.root_of(leaves)
    assert [json.loads(r.body)["details"]["i"] for r in lg.store.iter_records()] == list(range(9))
    report = verify_log(lg.store, lg.keys.trusted_keys())
    assert report.ok, report.problems
