"""``Taskflow(..., as_dict=True)``: every call returns plain dicts, each result's ``model_dump(mode="json")``, as
PaddleNLP's Taskflow does (issue 28); events still carry the output models."""

from __future__ import annotations

import json

import pytest

from sectorflow import Taskflow
from sectorflow.errors import ConfigError


def test_as_dict_returns_each_result_as_its_json_dump(echo_registry):
    models = Taskflow("echo")([{"text": "hello"}, {"text": "你好"}])
    tf = Taskflow("echo", as_dict=True)
    dicts = tf([{"text": "hello"}, {"text": "你好"}])
    assert dicts == [m.model_dump(mode="json") for m in models]
    assert all(type(d) is dict for d in dicts)
    assert dicts[0]["meta"]["task"] == "echo" and isinstance(dicts[0]["meta"], dict)
    assert json.loads(json.dumps(dicts, ensure_ascii=False)) == dicts  # JSON types only
    one = tf({"text": "hello"})
    assert one == dicts[0]
    assert list(tf.stream([{"text": "hello"}, {"text": "你好"}], chunk_size=1)) == dicts
    assert tf.run([{"text": "你好"}]) == dicts[1:]


def test_events_still_carry_the_output_models(echo_registry):
    Taskflow("echo", as_dict=True)([{"text": "hello"}])
    finished = [e for e in echo_registry.events if e.kind == "call_finished"]
    assert len(finished) == 1 and type(finished[0].outputs[0]).__name__ != "dict"
    assert finished[0].outputs[0].meta.task == "echo"


@pytest.mark.parametrize("value", [1, "yes", None])
def test_as_dict_takes_a_bool_only(echo_registry, value):
    with pytest.raises(ConfigError, match=r"as_dict=.*: give True \(results as plain dicts\) or False"):
        Taskflow("echo", as_dict=value)
