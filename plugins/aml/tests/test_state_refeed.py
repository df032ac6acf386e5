"""``sectorflow run aml FILE --state STATE`` refuses a file a finished run already fed into that state (its
transactions would enter the window a second time, most as new ones once older than the window's duplicate check:
a fresh-user check counted 3,339 of 3,814 twice, with exit 0). Another file continues the state; after
``sectorflow aml state reset`` the same file is accepted again; another tenant is not affected."""

from __future__ import annotations

import csv
import json
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


def _state_rows(db: Path) -> tuple:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return tuple(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
                     for table in ("state_journal", "state_snapshots", "state_items"))


def test_transactions_already_in_the_state_are_skipped_when_fed_again_from_another_file(tmp_path):
    """Fresh-user report: the byte check above let the same transactions in again from another file (the .gz of
    day 1, or a file overlapping it) and the stateful run counted them twice. Now a transaction whose id an earlier
    run fed into the tenant's state is not scored, written or counted again; the run says how many it skipped, and
    --already-seen refuse makes it an error that changes nothing. Day 1 then an overlapping day 2 give the results
    of one run over their union, byte for byte."""
    import gzip

    day1, overlap, union = tmp_path / "day1.csv", tmp_path / "overlap.csv", tmp_path / "union.csv"
    _write(day1, 0, 40)
    _write(overlap, 20, 40)  # t20..t59: half of it day 1's
    _write(union, 0, 60)
    state = tmp_path / "state.sqlite"
    assert _run(str(day1), "--state", str(state), "-o", str(tmp_path / "r1.jsonl")).returncode == 0
    before = _state_rows(state)
    packed = tmp_path / "day1-copy.csv.gz"  # the same transactions, other bytes: the file check cannot see it
    packed.write_bytes(gzip.compress(day1.read_bytes()))
    again = _run(str(packed), "--state", str(state), "-o", str(tmp_path / "again.jsonl"))
    err = " ".join(again.stderr.split())
    assert again.returncode == 1, err
    assert "40 item(s) already in the state skipped (first: row 2)" in err and "same transaction id" in err
    assert "every item of" in err and "is already in the state; nothing was processed" in err
    assert not (tmp_path / "again.jsonl").exists() and _state_rows(state) == before
    refused = _run(str(overlap), "--state", str(state), "--already-seen", "refuse", "-o", str(tmp_path / "no.jsonl"))
    err = " ".join(refused.stderr.split())
    assert refused.returncode == 2 and "20 item(s) of" in err and "(first: row 2) are already in the state" in err, err
    assert not (tmp_path / "no.jsonl").exists() and _state_rows(state) == before
    day2 = _run(str(overlap), "--state", str(state), "-o", str(tmp_path / "r2.jsonl"))
    err = " ".join(day2.stderr.split())
    assert day2.returncode == 0, err
    assert "20 item(s) already in the state skipped (first: row 2)" in err
    assert "20 item(s) processed, 0 row(s) skipped, 20 already in the state" in err
    got = [json.loads(line)["transaction_id"] for line in (tmp_path / "r2.jsonl").read_text().splitlines()]
    assert got == [f"t{i}" for i in range(40, 60)]
    assert _run(str(union), "-o", str(tmp_path / "union.jsonl")).returncode == 0
    assert (tmp_path / "r1.jsonl").read_bytes() + (tmp_path / "r2.jsonl").read_bytes() == \
        (tmp_path / "union.jsonl").read_bytes()
    # another tenant's state does not hold them; a reset forgets them
    assert _run(str(packed), "--state", str(state), "--tenant", "bank-2", "-o", str(tmp_path / "t2.jsonl")).returncode == 0
    assert len((tmp_path / "t2.jsonl").read_text().splitlines()) == 40
    subprocess.run([SECTORFLOW, "aml", "state", "reset", "--state", str(state), "--tenant", "default", "--yes"],
                   env=ENV, capture_output=True, text=True, timeout=300, check=True)
    assert _run(str(packed), "--state", str(state), "-o", str(tmp_path / "fresh.jsonl")).returncode == 0
    assert (tmp_path / "fresh.jsonl").read_bytes() == (tmp_path / "r1.jsonl").read_bytes()


def test_ids_numbered_by_row_are_compared_by_content(tmp_path):
    """The amlsim format numbers ids by row (``amlsim-1`` is another transaction in the next file): an overlapping
    AMLSim file is matched on time, accounts, amount and currency instead, and a file of new transactions whose
    row-numbered ids repeat day 1's is not skipped."""
    header = "sourceNodeId,targetNodeId,value,time\n"
    rows = [f"{i % 9},{100 + i % 7},{100 + i}.50,{1 + i // 10}\n" for i in range(60)]
    first, second, new = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    first.write_text(header + "".join(rows[:40]))
    second.write_text(header + "".join(rows[30:60]))  # rows 30..39 again, numbered 1..10 here
    new.write_text(header + "".join(r.replace(".50,", ".75,") for r in rows[:5]))
    state = str(tmp_path / "state.sqlite")
    fmt = ["--format", "amlsim"]
    assert _run(str(first), *fmt, "--state", state, "-o", str(tmp_path / "a.jsonl")).returncode == 0
    done = _run(str(second), *fmt, "--state", state, "-o", str(tmp_path / "b.jsonl"))
    err = " ".join(done.stderr.split())
    assert done.returncode == 0 and "10 item(s) already in the state skipped (first: row 1)" in err, err
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 20
    done = _run(str(new), *fmt, "--state", state, "-o", str(tmp_path / "c.jsonl"))
    assert done.returncode == 0 and "already in the state" not in done.stderr, done.stderr
