"""Paddle 3.3's notes stay off an ordinary command's stderr (fresh-user check, 2 Dec 2026: ``sectorflow run
customer_service`` printed "Paddle static graph(PIR) not support input out tensor for now!!!!!" and "Tensor do not
have 'place' interface for pir graph mode" while building its inference model on first use), filtered by message and
module only: every other warning still shows (``sectorflow._paddle``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))
NOTES = ("ccache", "not support input out tensor", "interface for pir graph mode", "UserWarning")


def _env(home: Path) -> dict[str, str]:
    # a fresh home: the first-use model builds (customer_service's inference bundle) run in the command
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "SECTORFLOW_LOAD_PLUGINS")}
    return {**env, "SECTORFLOW_HOME": str(home), "SECTORFLOW_AUDIT": "off", "PATH": os.path.dirname(sys.executable)
            + os.pathsep + "/usr/bin" + os.pathsep + "/bin"}  # no ccache on PATH: Paddle's import warns without it


@pytest.mark.parametrize(("task", "lines", "options"), [
    ("customer_service", [{"text": "I am still waiting on my card?"}, {"text": "我的银行卡被冻结了怎么办"}],
     ["-O", f"faq={REPO / 'samples' / 'customer_service' / 'faq_bank.csv'}"]),
    ("medical_report", None, []),
])
def test_run_prints_no_paddle_notes(tmp_path: Path, task: str, lines: list | None, options: list[str]) -> None:
    if lines is None:
        source = REPO / "samples" / "medical_report" / "reports.jsonl"
    else:
        source = tmp_path / "in.jsonl"
        source.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = subprocess.run([SECTORFLOW, "run", task, str(source), *options, "--output", str(out)], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("item(s) processed, 0 row(s) skipped.")
    assert [note for note in NOTES if note in done.stderr] == [], done.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == (len(lines) if lines else 6)


CHILD = r"""
import os, sys, warnings
from sectorflow import import_paddle, paddle_notes_filtered
import_paddle()
with paddle_notes_filtered():
    os.write(2, b"W1202 14:53:26.294584  1481 eager_utils.cc:3584] Paddle static graph(PIR) not support input out tensor for now!!!!!\n")
    os.write(2, b"W1202 14:53:26.294590  1481 other.cc:12] a note of another file\n")
    print("python stderr line", file=sys.stderr)
# the same messages from another module, and another warning of Paddle's module, still show
warnings.warn_explicit("No ccache found. (not Paddle's)", UserWarning, "mine.py", 1, module="mine")
warnings.warn_explicit("another Paddle warning", UserWarning, "math_op_patch.py", 1, module="paddle.pir.math_op_patch")
warnings.warn_explicit("Tensor do not have 'place' interface for pir graph mode", UserWarning, "math_op_patch.py", 1,
                       module="paddle.pir.math_op_patch")
"""


def test_only_the_listed_notes_are_filtered(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("  ")]
    assert lines == ["W1202 14:53:26.294590  1481 other.cc:12] a note of another file", "python stderr line",
                     "mine.py:1: UserWarning: No ccache found. (not Paddle's)",
                     "math_op_patch.py:1: UserWarning: another Paddle warning"]
