"""The pipeline's garbage-collector hand-over (``pipeline._gc_paused``): after a stage, the objects it made move to
the oldest generation (``gc.freeze(); gc.unfreeze()``), unless the host declared that it froze objects itself
(``sectorflow.gc_frozen_by_host``; ``sectorflow serve`` does through sectorflow.serving.gcfreeze): then the hand-over
is skipped, so it never unfreezes what the host froze. The declaration is explicit: the collector is not probed."""

from __future__ import annotations

import gc

import sectorflow
from sectorflow import Taskflow

from sectorflow_aml import pipeline

TXN = {"transaction_id": "t1", "timestamp": "2026-11-02T09:30:00Z", "sender_account": "A", "receiver_account": "B",
       "amount": "100.00", "currency": "CNY", "channel": "transfer"}


def test_a_host_that_declares_its_freeze_keeps_its_objects_frozen_and_the_hand_over_is_skipped():
    tf = Taskflow("aml", model=False)
    held = [[i] for i in range(1000)]  # containers that exist when the "server" freezes
    with sectorflow.gc_frozen_by_host():
        assert sectorflow.gc_frozen()
        gc.freeze()
        try:
            frozen = gc.get_freeze_count()
            assert frozen >= len(held)
            promoted = pipeline._gc_promoted
            for i in range(5):
                assert tf({**TXN, "transaction_id": f"t{i}"}).transaction_id == f"t{i}"
            assert pipeline._gc_promoted == promoted  # no hand-over ran
            collected = {id(o) for generation in range(3) for o in gc.get_objects(generation=generation)}
            assert not any(id(h) in collected for h in held)  # what the host froze is still frozen ...
            assert gc.get_freeze_count() > frozen // 2  # ... and so is the rest (some are freed by reference counting)
        finally:
            gc.unfreeze()
    assert not sectorflow.gc_frozen()


def test_without_a_declared_freeze_the_hand_over_moves_the_stages_objects_to_the_oldest_generation():
    gc.unfreeze()
    assert not sectorflow.gc_frozen()
    tf = Taskflow("aml", model=False)
    promoted = pipeline._gc_promoted
    young = [[i] for i in range(500)]  # young-generation containers made before the call ...
    tf(TXN)
    assert pipeline._gc_promoted > promoted  # the hand-over counted the stages' young objects ...
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in young)  # ... and moved every young object to the oldest generation
    assert gc.get_freeze_count() == 0  # (freeze, then unfreeze: the permanent generation is left empty)


def test_declarations_are_counted_and_the_last_withdrawal_ends_them():
    sectorflow.declare_gc_frozen()
    try:
        with sectorflow.gc_frozen_by_host():
            assert sectorflow.gc_frozen()
        assert sectorflow.gc_frozen()  # the first declaration still stands
    finally:
        sectorflow.withdraw_gc_frozen()
    assert not sectorflow.gc_frozen()
