"""The task registry and plugin loading: tasks(), aliases, unknown names, conflicts, malformed specs,
SECTORFLOW_LOAD_PLUGINS and SECTORFLOW_TRACE_HOOKS."""

from __future__ import annotations

import importlib.metadata
import logging
import os
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import BaseModel

from core_support import echo_plugin, registry_scope
from sectorflow import (
    PluginConflictError,
    PluginError,
    SectorflowError,
    Taskflow,
    TaskResult,
    TaskSpec,
    Trainable,
    TrainableSpec,
    UnknownTaskError,
    hookimpl,
    plugins,
)


def plugin_registering(*specs: TaskSpec) -> SimpleNamespace:
    """A plugin object whose register hook registers the given specs."""

    @hookimpl
    def sectorflow_register_tasks(register):
        for spec in specs:
            register(spec)

    return SimpleNamespace(sectorflow_register_tasks=sectorflow_register_tasks)


def echo_spec(**changes) -> TaskSpec:
    """A copy of the echo plugin's ``echo`` spec with some fields changed."""
    captured: list[TaskSpec] = []
    echo_plugin().sectorflow_register_tasks(register=captured.append)
    return replace(next(s for s in captured if s.name == "echo"), **changes)


def test_tasks_lists_every_task_with_plugin_version_and_languages(echo_registry):
    rows = Taskflow.tasks()
    assert [row["task"] for row in rows] == ["echo", "echo_counter"]
    echo = rows[0]
    assert echo["plugin"] == "echo"
    assert echo["version"] == "0.1.0"
    assert echo["languages"] == ["en"]
    assert echo["aliases"] == ["parrot"]
    assert echo["devices"] == ["cpu", "gpu", "npu", "mlu", "xpu"]
    assert echo["precisions"] == ["fp32", "fp16", "bf16"]
    assert echo["default_bundle"].endswith("sectorflow_echo/bundle")


def test_alias_and_case_resolve_to_the_same_task(echo_registry):
    assert plugins.get_task("parrot") is plugins.get_task("echo")
    assert plugins.get_task("  ECHO ") is plugins.get_task("echo")
    assert Taskflow("parrot").spec.name == "echo"


def test_unknown_task_lists_known_tasks_and_closest_match(echo_registry):
    with pytest.raises(UnknownTaskError) as info:
        Taskflow("ecko")
    err = info.value
    assert isinstance(err, SectorflowError) and isinstance(err, KeyError)
    assert err.closest == "echo"
    assert err.known == ["echo", "echo_counter"]
    assert str(err) == "Unknown task 'ecko'. Did you mean 'echo'? Known tasks: echo, echo_counter."
    assert err.http_status == 404


def test_unknown_task_alias_typo_suggests_the_task_not_the_alias(echo_registry):
    with pytest.raises(UnknownTaskError) as info:
        plugins.get_task("parot")
    assert info.value.closest == "echo"


def test_unknown_task_with_nothing_close_has_no_suggestion(echo_registry):
    with pytest.raises(UnknownTaskError) as info:
        plugins.get_task("zzzzzz")
    assert info.value.closest is None
    assert "Did you mean" not in str(info.value)


def test_unknown_task_with_no_plugins_says_how_to_get_one(registry):
    registry({})
    with pytest.raises(UnknownTaskError, match=r"Known tasks: \(none: install a plugin"):
        Taskflow("echo")
    assert Taskflow.tasks() == []


def test_two_plugins_registering_one_name_is_an_error_naming_both(registry):
    registry({"echo": echo_plugin(), "impostor": plugin_registering(echo_spec())})
    with pytest.raises(PluginConflictError) as info:
        Taskflow.tasks()
    message = str(info.value)
    assert "'echo'" in message and "plugin 'echo'" in message and "plugin 'impostor'" in message
    assert sorted(info.value.details["plugins"]) == ["echo", "impostor"]
    assert info.value.details["task"] == "echo"


def test_a_name_clashing_with_another_plugins_alias_is_a_conflict(registry):
    registry({"echo": echo_plugin(), "birds": plugin_registering(echo_spec(name="parrot", aliases=()))})
    with pytest.raises(PluginConflictError) as info:
        plugins.registered_tasks()
    assert sorted(info.value.details["plugins"]) == ["birds", "echo"]
    assert info.value.details["task"] == "parrot"


def test_registering_does_not_rename_a_plugins_own_spec_object(registry):
    spec = echo_spec(name="solo", aliases=())
    registry({"first": plugin_registering(spec)})
    assert plugins.get_task("solo").plugin == "first"
    registry({"second": plugin_registering(spec)})
    assert plugins.get_task("solo").plugin == "second"
    assert spec.plugin == ""


class NotAResult(BaseModel):
    text: str


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"name": "Bad-Name"}, "the name must match"),
        ({"name": "9lives"}, "the name must match"),
        ({"output_model": NotAResult}, "output_model must subclass sectorflow.TaskResult"),
        ({"devices": ("cpu", "tpu")}, "unknown devices/precisions ['tpu']"),
        ({"precisions": ("fp32", "fp64")}, "unknown devices/precisions ['fp64']"),
        ({"pipeline": "sectorflow_echo.plugin.EchoPipeline"}, "must be a Pipeline subclass or its import path"),
    ],
)
def test_malformed_spec_is_a_plugin_error_naming_task_and_plugin(registry, changes, fragment):
    registry({"sloppy": plugin_registering(echo_spec(aliases=(), **changes))})
    with pytest.raises(PluginError) as info:
        Taskflow.tasks()
    assert fragment in str(info.value)
    assert "of plugin 'sloppy'" in str(info.value)


def test_a_pipeline_named_by_its_import_path_is_imported_when_the_task_first_runs(registry, tmp_path, monkeypatch,
                                                                                  echo_bundle):
    """``TaskSpec(pipeline="module:Class")``: registering and listing the task import nothing; the first Taskflow
    imports the module and runs its class (how customer_service keeps Paddle out of ``sectorflow run aml``)."""
    import sys

    (tmp_path / "lazy_echo_pipeline.py").write_text(
        "from sectorflow_echo.plugin import EchoPipeline\n\nclass ShoutingEcho(EchoPipeline):\n"
        "    def postprocess(self, items, raw):\n"
        "        return [r.model_copy(update={'text': r.text.upper()}) for r in super().postprocess(items, raw)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_echo_pipeline", raising=False)
    registry({"lazy": plugin_registering(echo_spec(pipeline="lazy_echo_pipeline:ShoutingEcho"))})
    assert {row["task"]: row["plugin"] for row in Taskflow.tasks()} == {"echo": "lazy"}
    assert "lazy_echo_pipeline" not in sys.modules
    result = Taskflow("echo")({"text": "quiet please"})
    assert "lazy_echo_pipeline" in sys.modules and result.text == "QUIET PLEASE"


@pytest.mark.parametrize(("path", "fragment"), [
    ("no_such_module_anywhere:Pipe", "cannot be imported: ModuleNotFoundError"),
    ("sectorflow_echo.plugin:NoSuchPipeline", "has no 'NoSuchPipeline'"),
    ("sectorflow_echo.plugin:EchoResult", "not a sectorflow.Pipeline subclass"),
])
def test_a_pipeline_import_path_that_does_not_lead_to_a_pipeline_is_a_plugin_error(registry, path, fragment,
                                                                                   echo_bundle):
    registry({"sloppy": plugin_registering(echo_spec(pipeline=path))})
    with pytest.raises(PluginError) as info:
        Taskflow("echo")
    assert fragment in str(info.value) and "of plugin 'sloppy'" in str(info.value) and path in str(info.value)


def test_registering_the_installed_plugins_imports_no_deep_learning_runtime():
    """``sectorflow run aml`` (and any command) registers every installed plugin: none may import Paddle just to
    register (customer_service's pipeline is named by its import path; Paddle alone takes about 2 s to import)."""
    import subprocess
    import sys

    code = ("import sys\nfrom sectorflow import plugins\nplugins.registered_tasks()\nplugins.registered_trainables()\n"
            "print(sorted(m for m in ('paddle', 'paddlenlp', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_result_models_subclass_taskresult():
    assert issubclass(echo_spec().output_model, TaskResult)


# --- SECTORFLOW_LOAD_PLUGINS ---------------------------------------------------------------------------------------

def installed_plugins() -> set[str]:
    """The core's own plugins (registered in code) and every installed entry point's."""
    return {*plugins.BUILTIN_PLUGINS,
            *(ep.name for ep in importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP))}


def test_load_plugins_unset_loads_every_installed_plugin(registry):
    pm = registry(installed=True)
    assert "SECTORFLOW_LOAD_PLUGINS" not in os.environ
    assert "builtin_observers" in installed_plugins()
    assert {name for name, _ in pm.list_name_plugin()} == installed_plugins()


def test_load_plugins_empty_loads_none_not_even_builtin(registry):
    pm = registry()
    assert os.environ["SECTORFLOW_LOAD_PLUGINS"] == ""
    assert pm.list_name_plugin() == []
    assert Taskflow.tasks() == []


def test_load_plugins_list_loads_exactly_those_named(registry):
    registry()
    os.environ["SECTORFLOW_LOAD_PLUGINS"] = " builtin_observers , no_such_plugin,"  # put back by the fixture
    plugins.reset()
    pm = plugins.get_plugin_manager()
    assert [name for name, _ in pm.list_name_plugin()] == ["builtin_observers"]
    assert pm.get_plugin("builtin_observers") is importlib.import_module("sectorflow.builtin")


# --- SECTORFLOW_TRACE_HOOKS ----------------------------------------------------------------------------------------

def hook_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sectorflow.hooks"]


def test_trace_hooks_logs_each_hook_call_with_its_plugins(registry, monkeypatch, caplog):
    monkeypatch.setenv("SECTORFLOW_TRACE_HOOKS", "1")
    caplog.set_level(logging.DEBUG, logger="sectorflow.hooks")
    from core_support import EventRecorder

    registry({"echo": echo_plugin(), "recorder": EventRecorder()})
    Taskflow("echo")({"text": "traced"})
    lines = hook_lines(caplog)
    assert lines[:2] == ["call sectorflow_register_tasks(register) -> ['echo']",
                         "done sectorflow_register_tasks: 'ok'"]
    assert "call sectorflow_task_event(event) -> ['recorder']" in lines
    assert lines.count("done sectorflow_task_event: 'ok'") == 3  # model_loaded, call_started, call_finished


def test_trace_hooks_off_logs_nothing(echo_registry, monkeypatch, caplog):
    monkeypatch.setenv("SECTORFLOW_TRACE_HOOKS", "0")
    plugins.reset()
    caplog.set_level(logging.DEBUG, logger="sectorflow.hooks")
    plugins.get_plugin_manager().register(echo_plugin(), name="echo")
    Taskflow("echo")({"text": "quiet"})
    assert hook_lines(caplog) == []


# --- the other registration hooks ----------------------------------------------------------------------------------

class Trainer:
    """A trivially small Trainable: one weight vector, 'training' adds 1."""

    def __init__(self, partition):
        self.w = {"w": np.zeros(2, np.float32) + partition.get("start", 0)}

    def get_weights(self):
        return {k: v.copy() for k, v in self.w.items()}

    def set_weights(self, weights):
        self.w = {k: np.asarray(v, np.float32) for k, v in weights.items()}

    def fit(self, epochs=1, **config):
        self.w["w"] += epochs
        return 10, {"loss": 0.0}

    def evaluate(self, **config):
        return 5, 0.0, {}


class OffersTrainable:
    @hookimpl
    def sectorflow_register_trainables(self, register):
        register(TrainableSpec(task="echo", name="echo-linear", build=Trainer, description="test"))


def test_trainables_are_collected_with_their_plugin(registry):
    registry({"trainer": OffersTrainable(), "echo": echo_plugin()})
    (spec,) = plugins.registered_trainables()
    assert (spec.task, spec.name, spec.plugin) == ("echo", "echo-linear", "trainer")
    trainable = spec.build({"start": 1})
    assert isinstance(trainable, Trainable)
    assert trainable.fit(epochs=2) == (10, {"loss": 0.0})
    np.testing.assert_array_equal(trainable.get_weights()["w"], [3.0, 3.0])


class AddsCommand:
    @hookimpl
    def sectorflow_register_commands(self, app):
        @app.command("hello")
        def hello(name: str = "world") -> None:
            print(f"hello {name}")


def test_plugins_add_cli_commands(registry, monkeypatch, capsys):
    from sectorflow import cli

    registry({"greeter": AddsCommand()})
    monkeypatch.setattr(cli, "_commands_loaded", False)
    monkeypatch.setattr(cli.app, "registered_commands", list(cli.app.registered_commands))
    assert cli.main(["hello", "--name", "bank"]) == 0
    assert capsys.readouterr().out == "hello bank\n"


def test_the_registry_fixture_puts_back_the_registry_it_found(registry):
    """Other suites hold a registry across tests (session fixtures); a test using `registry` must not wipe it."""
    registry({"outer": plugin_registering(echo_spec(name="outer_task", aliases=()))})
    outer = plugins.get_plugin_manager()
    with registry_scope() as make:
        make({"echo": echo_plugin()}, installed=False)
        assert [row["task"] for row in Taskflow.tasks()] == ["echo", "echo_counter"]
    assert plugins.get_plugin_manager() is outer
    assert [row["task"] for row in Taskflow.tasks()] == ["outer_task"]
    assert os.environ["SECTORFLOW_LOAD_PLUGINS"] == ""


# --- SECTORFLOW_REQUIRED_PLUGINS -----------------------------------------------------------------------------------


def test_a_required_plugin_left_out_stops_loading(registry, monkeypatch):
    registry()
    monkeypatch.setenv("SECTORFLOW_REQUIRED_PLUGINS", "audit")
    monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "builtin_observers")
    plugins.reset()
    with pytest.raises(PluginError, match=r"\['audit'\].*SECTORFLOW_REQUIRED_PLUGINS"):
        plugins.get_plugin_manager()


def test_unregistering_a_required_plugin_fails_every_later_call(registry, monkeypatch, echo_bundle):
    class Observer:
        seen: list[str] = []

        @hookimpl
        def sectorflow_task_event(self, event):
            self.seen.append(event.kind)

    pm = registry({"echo": echo_plugin(), "watcher": Observer()})
    monkeypatch.setenv("SECTORFLOW_REQUIRED_PLUGINS", "watcher")
    tf = Taskflow("echo", task_path=echo_bundle)
    assert tf({"text": "a"}).meta.task == "echo"
    pm.unregister(name="watcher")
    with pytest.raises(PluginError, match="watcher"):
        tf({"text": "b"})


def test_required_plugins_follows_the_environment_on_every_call(monkeypatch):
    from sectorflow.plugins import required_plugins

    monkeypatch.setenv("SECTORFLOW_REQUIRED_PLUGINS", " audit, aml ,")
    first = required_plugins()
    assert first == ["audit", "aml"]
    first.append("changed by the caller")  # the parsed value is cached: callers get a copy
    assert required_plugins() == ["audit", "aml"]
    monkeypatch.setenv("SECTORFLOW_REQUIRED_PLUGINS", "medical_report")
    assert required_plugins() == ["medical_report"]
    monkeypatch.delenv("SECTORFLOW_REQUIRED_PLUGINS")
    assert required_plugins() == []
