"""``sectorflow ... --help`` shows what each parameter is for (issue 28, a user's first hour): with click 8.5 and the
typer that flwr allows (<0.21), every argument's help text was missing; help texts print as written (``[[keys]]``
was swallowed as Rich markup); ``sectorflow --version`` names the plugins; ``sectorflow tasks`` fits 80 columns."""

from __future__ import annotations

import inspect
import re
import typing

import pytest
import typer
from typer.models import ParameterInfo

from sectorflow import Taskflow, cli, plugins
from sectorflow.cli import main


def declared(app: typer.Typer, path: tuple[str, ...] = ()):
    """``(command path, {parameter: help})`` for every command of ``app`` and its sub-apps, from the declarations
    themselves (``typer.Option(help=...)`` as a default or in ``Annotated``): with click 8.5 the built click
    parameters of arguments had lost their help, so the built command cannot be the reference."""
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        hints = typing.get_type_hints(info.callback, include_extras=True)
        helps = {}
        for parameter in inspect.signature(info.callback).parameters.values():
            marks = [parameter.default, *getattr(hints.get(parameter.name), "__metadata__", ())]
            for mark in marks:
                if isinstance(mark, ParameterInfo) and mark.help and not mark.hidden:
                    helps[parameter.name] = mark.help
        yield (*path, name), helps
    for group in app.registered_groups:
        yield from declared(group.typer_instance, (*path, group.name or group.typer_instance.info.name))


@pytest.fixture
def installed(monkeypatch):
    """The installed plugins' tasks and commands, whatever registry an earlier test left (restored afterwards)."""
    monkeypatch.delenv("SECTORFLOW_LOAD_PLUGINS", raising=False)
    monkeypatch.setattr(plugins, "_pm", None)
    monkeypatch.setattr(plugins, "_tasks", None)
    monkeypatch.setattr(plugins, "_aliases", {})
    monkeypatch.setattr(cli, "_commands_loaded", False)
    monkeypatch.setattr(cli.app, "registered_commands", list(cli.app.registered_commands))
    monkeypatch.setattr(cli.app, "registered_groups", list(cli.app.registered_groups))
    cli._load_plugin_commands()


def flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_every_commands_help_shows_each_parameters_help(installed, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")  # one line per parameter: its help is not wrapped inside the table
    found = dict(declared(cli.app))
    assert {("run",), ("serve-key",), ("aml", "alerts"), ("models", "quantize"), ("audit", "verify")} <= set(found)
    checked, missing = 0, []
    for path, helps in found.items():
        capsys.readouterr()
        assert main([*path, "--help"]) == 0, path
        shown = flat(capsys.readouterr().out)
        for name, text in helps.items():
            checked += 1
            if flat(text) not in shown:
                missing.append(f"sectorflow {' '.join(path)} {name}: {text!r}")
    assert missing == [] and checked > 50


def test_help_texts_print_as_written(installed, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["serve-key", "--help"]) == 0
    assert "and the [[keys]] entry to put in the server config" in flat(capsys.readouterr().out)
    assert main(["run", "--help"]) == 0
    assert "cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto." in flat(capsys.readouterr().out)


def test_version_names_sectorflow_its_plugins_and_paddle(installed, capsys):
    from importlib import metadata

    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"sectorflow {metadata.version('sectorflow')}"
    assert f"sectorflow-aml {metadata.version('sectorflow-aml')}" in lines
    assert f"paddlepaddle {metadata.version('paddlepaddle')}" in lines


def test_the_task_list_keeps_names_whole_at_80_columns(installed, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    for row in Taskflow.tasks():
        assert re.search(rf"^ ?{re.escape(row['task'])} +{re.escape(row['plugin'])} +{re.escape(row['version'])} ", out,
                         re.M), row["task"]
