"""``sectorflow run aml FILE --state STATE`` refuses a file a finished run already fed into that state (its
transactions would enter the window a second time, most as new ones once older than the window's duplicate check:
a fresh-user check counted 3,339 of 3,814 twice, with exit 0). Another file continues the state; after
``sectorflow aml state reset`` the same file is accepted again; another tenant is not affected."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))
ENV = {**os.environ, "SECTORFLOW_AUDIT": "off"}


def _write(path: Path, first: int, n: int) -> None:
    t0 = datetime(2024, 1, 2, 9, tzinfo=timezone.utc)
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["transaction_id", "timestamp", "sender_account", "receiver_account", "amount"])
        for i in range(first, first + n):
            out.writerow([f"t{i}", (t0 + timedelta(hours=i)).isoformat(), f"A{i % 7}", f"B{i % 5}", 100 + i])


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SECTORFLOW, "run", "aml", *args, "-O", "model=false", "--no-progress"], env=ENV,
                          capture_output=True, text=True, timeout=300)


def test_a_file_already_fed_into_the_state_is_refused(tmp_path):
    day1, day2, state = tmp_path / "day1.csv", tmp_path / "day2.csv", str(tmp_path / "state.sqlite")
    _write(day1, 0, 40)
    _write(day2, 40, 40)
    first = _run(str(day1), "--state", state, "-o", str(tmp_path / "r1.jsonl"))
    assert first.returncode == 0, first.stderr
    again = _run(str(day1), "--state", state, "-o", str(tmp_path / "r1b.jsonl"))
    assert again.returncode == 2
    assert "was already fed into the state" in again.stderr and "40 item(s)" in again.stderr
    assert not (tmp_path / "r1b.jsonl").exists()
    assert _run(str(day2), "--state", state, "-o", str(tmp_path / "r2.jsonl")).returncode == 0
    # another tenant has its own state: the same file is new there
    assert _run(str(day1), "--state", state, "--tenant", "bank-2", "-o", str(tmp_path / "t2.jsonl")).returncode == 0
    reset = subprocess.run([SECTORFLOW, "aml", "state", "reset", "--state", state, "--tenant", "default", "--yes"], env=ENV, capture_output=True,
                           text=True, timeout=300)
    assert reset.returncode == 0, reset.stderr
    after = _run(str(day1), "--state", state, "-o", str(tmp_path / "r1c.jsonl"))
    assert after.returncode == 0, after.stderr
    assert (tmp_path / "r1c.jsonl").read_bytes() == (tmp_path / "r1.jsonl").read_bytes()
