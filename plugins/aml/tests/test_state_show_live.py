"""``sectorflow aml state show`` tells a run in progress from a killed one (fresh-user report, 2 Dec 2026: a live
``run --state`` was shown as UNFINISHED). Both leave an unfinished run in the store; the live one holds the store's
lock (``sectorflow.state_lock``), here in a real second process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sectorflow.state_keeper import StateKeeper

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "aml" / "transactions.csv.gz"


class _Killed(BaseException):
    pass


def test_show_says_in_progress_with_the_holders_pid_else_unfinished(cli_main, capsys, tmp_path, monkeypatch):
    db = tmp_path / "state.db"
    record, calls = StateKeeper.record, []

    def record_then_die(self, *a, **k):
        record(self, *a, **k)
        calls.append(1)
        raise _Killed

    monkeypatch.setattr(StateKeeper, "record", record_then_die)
    with pytest.raises(_Killed):  # a run stopped after its first checkpoint: an unfinished run in the store
        cli_main(["run", "aml", str(SAMPLE), "--format", "amlsim", "-O", "model=false", "--checkpoint-rows", "1000",
                  "--state", str(db), "-o", str(tmp_path / "r.jsonl"), "--no-progress"])
    monkeypatch.setattr(StateKeeper, "record", record)
    capsys.readouterr()
    assert cli_main(["aml", "state", "show", "--state", str(db)]) == 0
    out = capsys.readouterr().out
    assert "UNFINISHED run of" in out and "1000 row(s) done (no process holds the store" in out, out

    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from sectorflow import state_lock
        with state_lock({str(db)!r}):
            print("locked", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "SECTORFLOW_AUDIT": "off"})
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert cli_main(["aml", "state", "show", "--state", str(db)]) == 0
        out = capsys.readouterr().out
        assert "UNFINISHED" not in out, out
        assert (f"IN PROGRESS: 1000 row(s) done at its last checkpoint (the store's lock is held by run pid "
                f"{holder.pid})") in out, out
        assert cli_main(["aml", "state", "show", "--state", str(db), "--json"]) == 0
        assert f'"in_progress": {{"pid": {holder.pid}, "doing": "run"}}' in capsys.readouterr().out
    finally:
        holder.communicate("", timeout=30)
    assert cli_main(["aml", "state", "show", "--state", str(db)]) == 0
    assert "UNFINISHED run of" in capsys.readouterr().out  # the holder gone: no process holds the store
