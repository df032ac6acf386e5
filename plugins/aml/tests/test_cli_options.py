"""Options that two AML commands share read the same way: ``aml evaluate --budget`` takes a share as ``1%`` or
``0.01`` (as ``aml cases --budget`` writes one) and refuses a count or threshold with a typed error saying what to
write; ``aml explain --help`` names every input format ``sectorflow run aml --format`` reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sectorflow_aml.learn_cli import _budget_share
from sectorflow_aml.loaders import READERS

from sectorflow import ConfigError


@pytest.mark.parametrize("text, share", [("1%", 0.01), ("0.01", 0.01), (" 2.5% ", 0.025), ("1", 1.0)])
def test_evaluate_budget_reads_a_share(text, share):
    assert _budget_share(text) == pytest.approx(share)


@pytest.mark.parametrize("text", ["25", "score>=0.7", "0", "0%", "150%", "abc", ""])
def test_evaluate_budget_refuses_what_is_no_share(text):
    with pytest.raises(ConfigError, match="as 1% or 0.01"):
        _budget_share(text)


def test_explain_help_names_every_input_format():
    sectorflow = str(Path(sys.executable).with_name("sectorflow"))
    done = subprocess.run([sectorflow, "aml", "explain", "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert all(name in text for name in READERS), (sorted(READERS), text)
