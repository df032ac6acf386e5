"""docs/writing-a-plugin.md runs as written: its files are written out, its commands run, its shown output checked."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib

from core_support import PYTHON, REPO_ROOT, child_env

DOC = REPO_ROOT / "docs" / "writing-a-plugin.md"


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order."""
    return re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)


def test_writing_a_plugin_example_runs_and_prints_what_the_page_shows(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    files = {}
    for language, body in blocks(text):
        first = body.splitlines()[0]
        if language == "python" and first.startswith("# file: "):
            name = first.removeprefix("# file: ").strip()
            (tmp_path / name).write_text(body, encoding="utf-8")
            files[name] = body
    assert set(files) == {"make_bundle.py", "my_plugin.py", "try_it.py"}

    commands = [line.split() for lang, body in blocks(text) if lang == "bash" for line in body.splitlines()
                if line.startswith("python ")]
    assert [c[1] for c in commands] == ["make_bundle.py", "try_it.py"]
    shown = dict(re.findall(r"`(\S+\.py)` prints:\n\n```text\n(.*?)```", text, flags=re.S))
    assert set(shown) == {"try_it.py"}
    for command in commands:
        done = subprocess.run([PYTHON, *command[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                              env=child_env(PYTHONPATH=None))
        assert done.returncode == 0, f"{shlex.join(command)} failed:\n{done.stderr}"
        if command[1] in shown:
            assert done.stdout == shown[command[1]]
    assert (tmp_path / "letters_bundle" / "manifest.json").is_file()


def test_packaging_snippet_publishes_the_plugin_module_under_the_sectorflow_group():
    (toml,) = [body for lang, body in blocks(DOC.read_text(encoding="utf-8")) if lang == "toml"]
    project = tomllib.loads(toml)
    assert project["project"]["entry-points"]["sectorflow"] == {"my_plugin": "my_plugin"}
    assert project["tool"]["setuptools"]["package-data"]["my_plugin"] == ["letters_bundle/*"]


def test_every_reader_helper_sectorflow_exports_is_listed_on_the_page():
    """The page's list of reader helpers names each public name of ``sectorflow.input_files``, ``sectorflow.cli_args``
    and ``sectorflow.jsonlines`` (``sectorflow.__all__``), with the signature a plugin calls."""
    import inspect

    import sectorflow

    text = DOC.read_text(encoding="utf-8")
    helpers = [name for name in sectorflow.__all__ if getattr(getattr(sectorflow, name), "__module__", None)
               in ("sectorflow.input_files", "sectorflow.cli_args", "sectorflow.jsonlines")]  # parse_json_line: jsonlines
    assert {"open_text", "csv_records", "parse_json_line", "whole_file_reader", "field_pairs"} <= set(helpers)
    listed = dict(re.findall(r"^- `(\w+)\((.*?)\)`:", text, flags=re.M))
    for name in helpers:
        shown = [p.split("=")[0].strip() for p in listed.get(name, "").split(",") if p.strip() not in ("", "*")]
        real = [p.name for p in inspect.signature(getattr(sectorflow, name)).parameters.values()]
        assert shown == real, f"{name}: the page shows ({listed.get(name)}), the code takes {real}"
