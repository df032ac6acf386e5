"""Typed hook data (issue 26): a call's events share ``TaskEvent.call_id``; access decisions are one
``AccessDecision``; the blocking hint is declared with ``sectorflow.may_block`` (core/hookspecs.py)."""

from __future__ import annotations

import dataclasses
import typing

import pluggy
import pytest
from sectorflow import AccessDecision, Taskflow, hookimpl, hookspecs, may_block
from sectorflow.errors import InvalidInputError
from sectorflow.spec import EventKind


def test_a_calls_events_share_one_call_id_and_calls_differ(echo_registry):
    tf = Taskflow("echo")
    tf([{"text": "a"}, {"text": "b"}])
    tf({"text": "c"})
    with pytest.raises(InvalidInputError):
        tf([{"text": ""}])
    calls = [event for event in echo_registry.events if event.kind.startswith("call_")]
    assert [event.kind for event in calls] == ["call_started", "call_finished", "call_started", "call_finished",
                                               "call_failed"]
    ids = [event.call_id for event in calls]
    assert ids[0] == ids[1] and ids[2] == ids[3] and len({ids[0], ids[2], ids[4]}) == 3
    assert all(isinstance(i, int) for i in ids)
    loaded = [event for event in echo_registry.events if event.kind == "model_loaded"]
    assert loaded and all(event.call_id is None for event in loaded)


def test_event_kinds_are_the_emitted_ones():
    kinds = set(typing.get_args(EventKind))
    assert "config_changed" not in kinds and "plugin_loaded" not in kinds
    assert {"call_started", "call_finished", "call_failed", "state_reset", "training_round"} <= kinds


def test_an_access_decision_is_one_frozen_value_given_to_the_hook():
    seen: list[AccessDecision] = []

    class Observer:
        @hookimpl
        def sectorflow_access_decision(self, decision: AccessDecision) -> None:
            seen.append(decision)

    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(Observer())
    decision = AccessDecision(actor="anonymous", tenant=None, resource="echo", action="POST /v1/tasks/echo",
                              allowed=False, reason="no API key", source="127.0.0.1", request_id="r1")
    manager.hook.sectorflow_access_decision(decision=decision)
    assert seen == [decision] and seen[0].roles == () and seen[0].channel == "http"
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.allowed = True  # type: ignore[misc]


def test_may_block_is_declared_per_implementation_and_asked_at_each_call():
    switch = {"on": False}

    class Writer:
        @hookimpl
        @may_block(lambda: switch["on"])
        def sectorflow_task_event(self, event: object) -> None:
            pass

    class Quiet:
        @hookimpl
        def sectorflow_access_decision(self, decision: AccessDecision) -> None:
            pass

    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(Writer())
    manager.register(Quiet())
    assert not hookspecs.hook_may_block(manager, "sectorflow_task_event")
    switch["on"] = True
    assert hookspecs.hook_may_block(manager, "sectorflow_task_event")
    assert not hookspecs.hook_may_block(manager, "sectorflow_access_decision")
    def sectorflow_register_tasks(register: object) -> None:  # pragma: no cover
        pass

    with pytest.raises(ValueError, match="sectorflow_register_tasks is not one of"):
        may_block()(sectorflow_register_tasks)
