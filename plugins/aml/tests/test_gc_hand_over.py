"""The pipeline's garbage-collector hand-over (``pipeline._gc_paused``) when the process froze objects itself:
``sectorflow serve`` freezes its loaded models (sectorflow.serving.gcfreeze). ``gc.get_freeze_count()`` walks the frozen
objects, so it must not run on every stage of every call (a served one-transaction call went from 2.3 ms to 66 ms),
and the hand-over must never unfreeze what another party froze."""

from __future__ import annotations

import gc

import pytest
from sectorflow import Taskflow

from sectorflow_aml import pipeline

TXN = {"transaction_id": "t1", "timestamp": "2026-11-02T09:30:00Z", "sender_account": "A", "receiver_account": "B",
       "amount": "100.00", "currency": "CNY", "channel": "transfer"}


@pytest.fixture()
def counted(monkeypatch):
    calls = []
    real = gc.get_freeze_count

    def count() -> int:
        calls.append(1)
        return real()

    monkeypatch.setattr(pipeline.gc, "get_freeze_count", count)
    monkeypatch.setattr(pipeline, "_frozen_seen_at", None)
    return calls


def test_frozen_objects_are_counted_once_per_recheck_period_and_stay_frozen(counted, monkeypatch):
    tf = Taskflow("aml", model=False)
    held = [[i] for i in range(1000)]  # containers that exist when the "server" freezes
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= len(held)
        counted.clear()
        for i in range(5):
            tf({**TXN, "transaction_id": f"t{i}"})
        assert len(counted) == 1  # seen once, then trusted for _FROZEN_RECHECK_S seconds (10 stages ran)
        assert gc.get_freeze_count() >= frozen  # nothing the process froze was unfrozen by the calls
        monkeypatch.setattr(pipeline, "_FROZEN_RECHECK_S", 0.0)
        counted.clear()
        tf({**TXN, "transaction_id": "t9"})
        assert len(counted) == 2  # recounted on each of the call's two stages once the period is over
    finally:
        gc.unfreeze()


def test_without_frozen_objects_the_hand_over_runs_and_counts_in_o1(counted):
    gc.unfreeze()
    tf = Taskflow("aml", model=False)
    counted.clear()
    tf(TXN)
    assert len(counted) == 2  # an empty permanent generation is checked on every stage (O(1)) ...
    assert gc.get_freeze_count() == 0  # ... and the hand-over (freeze, then unfreeze) leaves it empty
    assert pipeline._frozen_seen_at is None
