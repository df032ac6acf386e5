"""Shell completion completes task names: ``sectorflow run <TAB>`` and ``sectorflow models quantize <TAB>`` list the
registered tasks and aliases starting with what was typed (typer's bash completion protocol, run as a real
subprocess of the installed ``sectorflow`` command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sectorflow.host import registered_tasks

SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))


def _complete(words: str) -> list[str]:
    env = {**os.environ, "_SECTORFLOW_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    done = subprocess.run([SECTORFLOW], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_run_completes_every_task_name_and_alias():
    expected = sorted({n for name, spec in registered_tasks().items() for n in (name, *spec.aliases)})
    assert "aml" in expected and len(expected) >= 4
    assert _complete("sectorflow run ") == expected


def test_completion_filters_by_prefix():
    assert _complete("sectorflow run med") == sorted(
        n for n in {n for name, spec in registered_tasks().items() for n in (name, *spec.aliases)}
        if n.startswith("med"))
    assert "customer_service" in _complete("sectorflow models quantize cu")
    assert _complete("sectorflow run zzz") == []
