"""Results answer ``r["intent"]`` as PaddleNLP and Hugging Face pipeline users type it (issue 28): read-only
mapping access to the fields of every task's output model (``sectorflow.spec.FieldAccess`` on ``TaskResult``)."""

from __future__ import annotations

import pytest

from sectorflow import Taskflow


def test_results_read_their_fields_by_name(echo_registry):
    (result,) = Taskflow("echo")([{"text": "hello"}])
    fields = list(type(result).model_fields)
    assert result.keys() == fields and "meta" in fields and len(fields) > 1
    for name in fields:
        assert result[name] == getattr(result, name)
    assert result["meta"].task == "echo"
    assert "meta" in result and "intent" not in result and 3 not in result
    assert result.get("intent") is None and result.get("intent", "none") == "none"
    assert dict(result) == {name: getattr(result, name) for name in fields}


def test_a_missing_name_is_a_key_error_naming_the_fields(echo_registry):
    (result,) = Taskflow("echo")([{"text": "hello"}])
    with pytest.raises(KeyError) as info:
        result["intent"]
    assert info.value.args[0] == (f"'intent' is not a field of {type(result).__name__}; its fields: "
                                  f"{', '.join(type(result).model_fields)}")


def test_results_are_read_only_by_name(echo_registry):
    (result,) = Taskflow("echo")([{"text": "hello"}])
    with pytest.raises(TypeError, match=r"read-only: r\['meta'\] cannot be assigned; make a changed copy with "
                                        r"r.model_copy\(update="):
        result["meta"] = None
    with pytest.raises(TypeError, match="read-only"):
        del result["meta"]
    assert result["meta"] is not None


def test_every_installed_tasks_output_model_has_it(monkeypatch):
    from sectorflow import plugins
    from sectorflow.spec import FieldAccess

    monkeypatch.delenv("SECTORFLOW_LOAD_PLUGINS", raising=False)  # the installed plugins, whatever a test left
    monkeypatch.setattr(plugins, "_pm", None)
    monkeypatch.setattr(plugins, "_tasks", None)
    monkeypatch.setattr(plugins, "_aliases", {})
    tasks = {row["task"] for row in Taskflow.tasks()}
    assert {"aml", "customer_service", "legal_extraction", "medical_report"} <= tasks
    for task in tasks:
        assert issubclass(plugins.get_task(task).output_model, FieldAccess), task
