"""``pip install`` of a plugin is all it takes for ``Taskflow("<task>")`` to find it; uninstalling removes it.

Installs the echo test plugin (tests/plugins/sectorflow-echo) into the project's virtualenv, checks in fresh
processes that it is listed and runs (Python API and the command line), then uninstalls it (always, even
when a check fails) and checks that it is gone.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import subprocess
import textwrap

import pytest

from core_support import ECHO_DIR, PYTHON, child_env
from sectorflow import Taskflow

DIST = "sectorflow-echo"

PROBE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from sectorflow import Taskflow, UnknownTaskError
    from sectorflow.cli import main
    tasks = {row["task"]: row for row in Taskflow.tasks()}
    try:
        result = Taskflow("echo")({"text": sys.argv[1]}).model_dump(mode="json")
    except UnknownTaskError as exc:
        result = {"error": str(exc)}
    Path("in.jsonl").write_text(json.dumps({"text": sys.argv[1]}) + "\\n")
    code = main(["run", "parrot", "in.jsonl", "--output", "out.jsonl"])
    cli = [json.loads(line) for line in Path("out.jsonl").read_text().splitlines()] if code == 0 else code
    print(json.dumps({"tasks": tasks, "result": result, "cli": cli}))
""")


def pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=300, env=child_env(PIP_NO_INPUT="1"))


def probe(cwd) -> dict:
    done = subprocess.run([PYTHON, "-c", PROBE, "installed?"], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=child_env(SECTORFLOW_LOAD_PLUGINS=None, PYTHONPATH=None))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def installed() -> bool:
    importlib.invalidate_caches()
    try:
        importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.exclusive  # while it is installed every process of the run sees the plugin (conftest.py)
def test_installed_plugin_appears_runs_and_disappears_when_uninstalled(tmp_path, echo_registry):
    expected = Taskflow("echo")({"text": "installed?"}).model_dump(mode="json")  # in-process, from the source tree
    source = tmp_path / "src-copy"
    shutil.copytree(ECHO_DIR, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    if installed():  # left over from an interrupted run
        pip("uninstall", "-y", DIST)
    try:
        done = pip("install", "--no-deps", "--no-build-isolation", str(source))
        assert done.returncode == 0, done.stdout + done.stderr
        assert installed()
        seen = probe(tmp_path)
        assert set(seen["tasks"]) >= {"echo", "echo_counter"}
        assert seen["tasks"]["echo"]["plugin"] == "echo" and seen["tasks"]["echo"]["version"] == "0.1.0"
        assert "site-packages/sectorflow_echo/bundle" in seen["tasks"]["echo"]["default_bundle"]
        assert seen["result"] == expected
        assert seen["cli"] == [expected]
    finally:
        removed = pip("uninstall", "-y", DIST)
    assert removed.returncode == 0, removed.stderr
    assert not installed()
    gone = probe(tmp_path)
    assert "echo" not in gone["tasks"] and "echo_counter" not in gone["tasks"]
    assert gone["result"]["error"].startswith("Unknown task 'echo'.")
    assert gone["cli"] == 2
