"""``sectorflow run aml`` stopped by SIGTERM or SIGINT: one line on stderr, exit 143 / 130, nothing but JSON lines on
stdout (Paddle's C++ traceback banner went there before), no ``.NAME.partial-PID`` file left, and a ``--state`` run
stopped part-way continues exactly when the same command is run again. Real subprocesses on AMLSim rows."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"
SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))
ENV = {**os.environ, "SECTORFLOW_AUDIT": "off"}
CODES = {signal.SIGTERM: 143, signal.SIGINT: 130}


@pytest.fixture(scope="module")
def amlsim_rows(tmp_path_factory) -> Path:
    """The first 20,000 transactions of the AMLSim run (--format amlsim), in a folder of their own."""
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    path = tmp_path_factory.mktemp("amlsim") / "rows.csv"
    with gzip.open(RUN / "transactions.csv.gz", "rt") as src, open(path, "w") as dst:
        dst.writelines(itertools.islice(src, 20_001))
    return path


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # a banner line, a half line
        return False


def _stopped(proc: subprocess.Popen, signum: int) -> tuple[str, str]:
    assert proc.poll() is None, f"the run ended before the signal ({proc.returncode})"
    proc.send_signal(signum)
    # read through the text streams (communicate() reads the pipes' fds and would lose what readline() buffered);
    # stderr holds a few lines only, so reading stdout first cannot block the child
    out, errors = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=120)
    return out, errors


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_after_the_first_result_line_stops_with_json_lines_only(amlsim_rows, tmp_path, signum):
    command = [SECTORFLOW, "run", "aml", str(amlsim_rows), "--format", "amlsim", "--on-error", "skip",
               "--batch-size", "64"]
    proc = subprocess.Popen(command, env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = proc.stdout.readline()
    if not first:  # the run ended before its first line: show why
        proc.wait(timeout=60)
        pytest.fail(f"no result line; exit {proc.returncode}: {proc.stderr.read()[-3000:]}")
    assert first.strip() and json.loads(first)["transaction_id"], first
    out, errors = _stopped(proc, signum)
    assert proc.returncode == CODES[signum], errors[-2000:]
    lines = [first, *out.splitlines()]
    assert 1 <= len(lines) < 20_000
    assert not [line for line in lines if not _is_json_object(line)], (out[:3000], errors[-3000:])
    last = errors.strip().splitlines()[-1]
    assert last == (f"stopped by {signum.name}: the results so far are in standard output, whole lines; run the "
                    "command again to process the input."), last
    assert "Traceback" not in errors and "C++" not in errors
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_a_run_to_a_file_leaves_no_partial_file(amlsim_rows, tmp_path, signum):
    out = tmp_path / "alerts.jsonl"
    command = [SECTORFLOW, "run", "aml", str(amlsim_rows), "--format", "amlsim", "-o", str(out),
               "--batch-size", "64"]
    proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    partial = f".{out.name}.partial-{proc.pid}"
    while time.monotonic() < deadline and proc.poll() is None:
        if (tmp_path / partial).exists() and (tmp_path / partial).stat().st_size > 0:
            break
        time.sleep(0.01)
    stdout, errors = _stopped(proc, signum)
    assert proc.returncode == CODES[signum], errors[-2000:]
    assert stdout == ""
    assert errors.strip().splitlines()[-1].startswith(f"stopped by {signum.name}: ")
    assert "nothing was written" in errors
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the partial file nor a truncated output


def _rows_done(db: Path) -> int | None:
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute("SELECT rows_done FROM state_runs").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else row[0]


def test_sigterm_during_a_state_run_keeps_the_last_checkpoint_and_the_rerun_continues_exactly(amlsim_rows, tmp_path):
    args = ["run", "aml", str(amlsim_rows), "--format", "amlsim", "-O", "model=false", "--checkpoint-rows", "1024"]
    clean = subprocess.run([SECTORFLOW, *args, "--state", str(tmp_path / "clean.sqlite"), "-o",
                            str(tmp_path / "clean.jsonl")], env=ENV, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr[-2000:]
    db, out = tmp_path / "stopped.sqlite", tmp_path / "stopped.jsonl"
    command = [SECTORFLOW, *args, "--state", str(db), "-o", str(out)]
    proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and (_rows_done(db) or 0) < 2048:
        time.sleep(0.005)
    stdout, errors = _stopped(proc, signal.SIGTERM)
    assert proc.returncode == 143, errors[-2000:]
    done = _rows_done(db)
    assert done is not None and 2048 <= done < 20_000
    line = errors.strip().splitlines()[-1]
    assert line == (f"stopped by SIGTERM: the state in {db} (tenant default) is at its last checkpoint (row {done}); "
                    "run the same command again to continue from there.")
    assert stdout == "" and not out.exists()
    again = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"from row {done + 1}" in again.stderr
    assert out.read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
    assert _rows_done(db) is None  # the run finished
    assert not (tmp_path / f".{out.name}.partial-state").exists()
