"""``sectorflow run aml FILE --state STATE``: days run one after another equal one run, byte for byte; a run killed
with SIGKILL at several points and started again with the same command ends with the same results file (alerts and
report drafts are in it) and the same stored state as an uninterrupted run. Real subprocesses, a real SQLite store."""

from __future__ import annotations

import csv
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
from sectorflow_aml.loaders import READERS

RUN = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"
SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))
ENV = {**os.environ, "SECTORFLOW_AUDIT": "off"}


def _sectorflow(*args: str, check: bool = True, hash_seed: int | None = None) -> subprocess.CompletedProcess:
    # hash_seed: each process its own string hash order, so output that follows a set's order cannot match by chance
    env = ENV if hash_seed is None else {**ENV, "PYTHONHASHSEED": str(hash_seed)}
    done = subprocess.run([SECTORFLOW, *args], env=env, capture_output=True, text=True, timeout=300)
    if check and done.returncode:
        raise AssertionError(f"sectorflow {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


@pytest.fixture(scope="module")
def amlsim_slice(tmp_path_factory) -> Path:
    """The first 20,000 transactions of the AMLSim run, as an AMLSim file (--format amlsim)."""
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    path = tmp_path_factory.mktemp("amlsim") / "slice.csv"
    with gzip.open(RUN / "transactions.csv.gz", "rt") as src, open(path, "w") as dst:
        dst.writelines(itertools.islice(src, 20_001))
    return path


def _write_csv(path: Path, txns) -> None:
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["transaction_id", "timestamp", "sender_account", "receiver_account", "amount"])
        for t in txns:
            out.writerow([t.transaction_id, t.timestamp.isoformat(), t.sender_account, t.receiver_account, t.amount])


def test_three_days_with_state_equal_one_run_byte_for_byte(amlsim_slice, tmp_path):
    # AMLSim numbers its ids by row, so a file cut in three would reuse amlsim-1 ...: the days are written as CSV
    # with the reader's ids (what a bank's daily export holds: ids unique across days)
    txns = [t for _, t in READERS["amlsim"](amlsim_slice)]
    days = [txns[:6_000], txns[6_000:13_001], txns[13_001:]]
    for i, day in enumerate(days):
        _write_csv(tmp_path / f"day{i}.csv", day)
    _write_csv(tmp_path / "all.csv", txns)
    _sectorflow("run", "aml", str(tmp_path / "all.csv"), "-o", str(tmp_path / "all.jsonl"), hash_seed=0)
    state = str(tmp_path / "state.sqlite")
    for i in range(3):
        _sectorflow("run", "aml", str(tmp_path / f"day{i}.csv"), "--state", state, "-o", str(tmp_path / f"day{i}.jsonl"),
                    hash_seed=101 + i)
    whole = (tmp_path / "all.jsonl").read_bytes()
    assert b'"alert":true' in whole and b'"model_risk"' in whole
    assert b"".join((tmp_path / f"day{i}.jsonl").read_bytes() for i in range(3)) == whole
    # without --state, day 3 alone misses what the earlier days started
    _sectorflow("run", "aml", str(tmp_path / "day2.csv"), "-o", str(tmp_path / "alone.jsonl"))
    assert (tmp_path / "alone.jsonl").read_bytes() != (tmp_path / "day2.jsonl").read_bytes()


def _progress(db: Path) -> int | None:
    """Rows the unfinished run has committed (None: no unfinished run, or the store is not there yet)."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute("SELECT rows_done FROM state_runs").fetchone()
    except sqlite3.OperationalError:  # tables not created yet
        return None
    return None if row is None else row[0]


def _stored_state(db: Path) -> str:
    """The state a new process restores from ``db`` (snapshot + journal), as JSON text."""
    from sectorflow import Taskflow

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM state_runs").fetchone()[0] == 0  # the run finished
    return json.dumps(Taskflow("aml", model=False, state_store=db).pipeline.state_dict())


def test_a_run_killed_at_several_points_resumes_to_the_uninterrupted_results(amlsim_slice, tmp_path):
    args = ["run", "aml", str(amlsim_slice), "--format", "amlsim", "-O", "model=false", "--checkpoint-rows", "1024"]
    _sectorflow(*args, "--state", str(tmp_path / "clean.sqlite"), "-o", str(tmp_path / "clean.jsonl"))
    clean = (tmp_path / "clean.jsonl").read_bytes()
    assert clean.count(b"\n") == 20_000 and b'"alert":true' in clean

    db, out = tmp_path / "killed.sqlite", tmp_path / "killed.jsonl"
    command = [SECTORFLOW, *args, "--state", str(db), "-o", str(out)]
    killed_at = []
    for checkpoints in (0, 1, 2, 3):  # kill once the run has committed 0 (just begun), 1, 2, 3 more chunks
        before = _progress(db) or 0
        proc = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            done = _progress(db)
            if done is not None and done >= before + 1024 * checkpoints:
                break
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before the kill ({proc.returncode}): {proc.stderr.read()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at.append(_progress(db))
        assert not out.exists()  # only the partial output, under its fixed name
    assert killed_at[-1] >= 3 * 1024 and killed_at == sorted(killed_at), killed_at
    assert (tmp_path / f".{out.name}.partial-state").exists()
    done = _sectorflow(*args, "--state", str(db), "-o", str(out))
    assert "resuming the unfinished run" in done.stderr
    assert out.read_bytes() == clean
    assert not (tmp_path / f".{out.name}.partial-state").exists()
    assert _stored_state(db) == _stored_state(tmp_path / "clean.sqlite")


def test_another_input_while_a_run_is_unfinished_is_refused_until_finished_or_discarded(amlsim_slice, tmp_path):
    db, out = tmp_path / "s.sqlite", tmp_path / "out.jsonl"
    args = ["run", "aml", str(amlsim_slice), "--format", "amlsim", "-O", "model=false", "--checkpoint-rows", "1024",
            "--state", str(db), "-o", str(out)]
    proc = subprocess.Popen([SECTORFLOW, *args], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (_progress(db) or 0) < 1024 and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    other = tmp_path / "other.csv"
    other.write_text(amlsim_slice.read_text().split("\n", 1)[0] + "\n1,2,10.0,1\n")
    refused = _sectorflow("run", "aml", str(other), "--format", "amlsim", "-O", "model=false", "--state", str(db),
                          "-o", str(tmp_path / "o2.jsonl"), check=False)
    assert refused.returncode != 0
    assert "unfinished run" in refused.stderr and "--discard-unfinished" in refused.stderr
    _sectorflow("run", "aml", str(other), "--format", "amlsim", "-O", "model=false", "--state", str(db), "-o",
                str(tmp_path / "o2.jsonl"), "--discard-unfinished")
    # the discarded run's transactions are gone from the state: the one-row file ran on an empty window
    fresh = _sectorflow("run", "aml", str(other), "--format", "amlsim", "-O", "model=false", "-o",
                        str(tmp_path / "o3.jsonl"))
    assert fresh.returncode == 0
    assert (tmp_path / "o2.jsonl").read_bytes() == (tmp_path / "o3.jsonl").read_bytes()


def test_history_with_state_and_state_options_without_state_are_refused(tmp_path, cli_main, capsys):
    day = tmp_path / "day.csv"
    day.write_text("transaction_id,timestamp,sender_account,receiver_account,amount\nt1,2024-01-02T10:00:00Z,A,B,10\n")
    state = str(tmp_path / "state.sqlite")
    earlier = tmp_path / "earlier.csv"
    earlier.write_text(day.read_text())
    assert cli_main(["run", "aml", str(day), "--state", state, "--history", str(earlier), "-o",
                     str(tmp_path / "o.jsonl")]) != 0
    assert "--history and --state together" in capsys.readouterr().err
    assert cli_main(["run", "aml", str(day), "--tenant", "bank-a", "-o", str(tmp_path / "o.jsonl")]) != 0
    assert "apply to a run with --state" in capsys.readouterr().err
    assert cli_main(["run", "aml", str(day), "--state", state, "--tenant", "bank-a", "-O", "model=false", "-o",
                     str(tmp_path / "o.jsonl")]) == 0
    assert "state saved to" in capsys.readouterr().err and (tmp_path / "o.jsonl").read_text().count("\n") == 1


def test_everyday_bank_days_with_state_equal_one_run_with_a_same_day_total_across_the_cut(tmp_path):
    from test_state import _bank_with_cash

    txns = _bank_with_cash()
    second_deposit = next(i for i, t in enumerate(txns) if t.transaction_id == "CASH-3-1")  # its day's total crosses
    cuts = [0, second_deposit, (second_deposit + len(txns)) // 2, len(txns)]  # the first cut: between a day's deposits

    def write(path: Path, part) -> None:
        with open(path, "w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(["transaction_id", "timestamp", "sender_account", "receiver_account", "amount", "channel"])
            for t in part:
                out.writerow([t.transaction_id, t.timestamp.isoformat(), t.sender_account, t.receiver_account,
                              t.amount, t.channel.value])

    write(tmp_path / "all.csv", txns)
    _sectorflow("run", "aml", str(tmp_path / "all.csv"), "-o", str(tmp_path / "all.jsonl"))
    for i in range(3):
        write(tmp_path / f"day{i}.csv", txns[cuts[i]:cuts[i + 1]])
        _sectorflow("run", "aml", str(tmp_path / f"day{i}.csv"), "--state", str(tmp_path / "s.sqlite"), "-o",
                    str(tmp_path / f"day{i}.jsonl"))
    whole = (tmp_path / "all.jsonl").read_bytes()
    assert whole.count(b'"large_value"') >= 2
    assert b"".join((tmp_path / f"day{i}.jsonl").read_bytes() for i in range(3)) == whole
    # the second run's first result is the deposit that completes a same-day total begun in the first run
    assert b'"transaction_ids":["CASH-3-0","CASH-3-1"]' in (tmp_path / "day1.jsonl").read_bytes().split(b"\n")[0]


def test_a_rejected_day_leaves_the_state_and_the_output_as_they_were(tmp_path, cli_main, capsys):
    """--state with --output reads its input once (issue 26): a bad row after a checkpoint stops the run, every bad
    row is listed, and the run is discarded in the store, so the next day continues the state of the day before."""
    header = "transaction_id,timestamp,sender_account,receiver_account,amount\n"
    rows = [f"t{i},2024-01-02T10:{i // 60:02d}:{i % 60:02d}Z,A{i % 7},B{i % 5},{10 + i}\n" for i in range(30)]
    (tmp_path / "day1.csv").write_text(header + "".join(rows[:10]))
    (tmp_path / "day2.csv").write_text(header + "".join(rows[10:20]) + "bad,not a time,A,B,1\n"
                                       + "bad2,2024-01-02T11:00:00Z,A,B,minus\n")
    (tmp_path / "day3.csv").write_text(header + "".join(rows[20:]))
    run = ["-O", "model=false", "--checkpoint-rows", "4"]
    for store in ("rejected.sqlite", "clean.sqlite"):
        assert cli_main(["run", "aml", str(tmp_path / "day1.csv"), "--state", str(tmp_path / store), *run, "-o",
                         str(tmp_path / f"{store}.day1.jsonl")]) == 0
    capsys.readouterr()
    out2 = tmp_path / "day2.jsonl"
    assert cli_main(["run", "aml", str(tmp_path / "day2.csv"), "--state", str(tmp_path / "rejected.sqlite"), *run,
                     "-o", str(out2)]) == 2
    err = capsys.readouterr().err
    assert f"2 bad row(s) in {tmp_path / 'day2.csv'} (first: row 12); nothing was written." in err
    assert not out2.exists() and not (tmp_path / ".day2.jsonl.partial-state").exists()
    with sqlite3.connect(tmp_path / "rejected.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM state_runs").fetchone() == (0,)  # no unfinished run left
    for store in ("rejected.sqlite", "clean.sqlite"):
        assert cli_main(["run", "aml", str(tmp_path / "day3.csv"), "--state", str(tmp_path / store), *run, "-o",
                         str(tmp_path / f"{store}.day3.jsonl")]) == 0
    assert (tmp_path / "rejected.sqlite.day3.jsonl").read_bytes() == (tmp_path / "clean.sqlite.day3.jsonl").read_bytes()


def test_an_overlapping_day_killed_and_resumed_skips_the_same_transactions_as_an_uninterrupted_run(amlsim_slice,
                                                                                                 tmp_path):
    """Day 2 repeats the second half of day 1 (a re-export): its repeated transactions are skipped as already in the
    state (not counted twice); killed after two checkpoints and started again, day 2 ends with the results file and
    the stored state of an uninterrupted day 2, and days 1 + 2 equal one run over their union, byte for byte."""
    txns = [t for _, t in itertools.islice(READERS["amlsim"](amlsim_slice), 9_000)]  # as csv: the ids are ids
    _write_csv(tmp_path / "day1.csv", txns[:6_000])
    _write_csv(tmp_path / "day2.csv", txns[3_000:])
    _write_csv(tmp_path / "union.csv", txns)
    fast = ["-O", "model=false", "--checkpoint-rows", "512"]
    _sectorflow("run", "aml", str(tmp_path / "union.csv"), *fast[:2], "-o", str(tmp_path / "union.jsonl"))
    outs = {}
    for name in ("clean", "killed"):
        db = tmp_path / f"{name}.sqlite"
        _sectorflow("run", "aml", str(tmp_path / "day1.csv"), *fast, "--state", str(db), "-o",
                    str(tmp_path / f"{name}-1.jsonl"))
        day2 = ["run", "aml", str(tmp_path / "day2.csv"), *fast, "--state", str(db), "-o", str(tmp_path / f"{name}-2.jsonl")]
        if name == "killed":  # two checkpoints into the repeated half
            proc = subprocess.Popen([SECTORFLOW, *day2], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None and (_progress(db) or 0) < 2 * 512:
                time.sleep(0.002)
            assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()[-2000:]}"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            assert 2 * 512 <= (_progress(db) or 0) < 9_000
        done = _sectorflow(*day2)
        if name == "clean":
            assert "3,000 item(s) already in the state skipped (first: row 2)" in done.stderr, done.stderr
        else:  # the resumed run counts the rows it read: those after the last checkpoint
            assert "resuming the unfinished run" in done.stderr and "already in the state skipped" in done.stderr
        outs[name] = (tmp_path / f"{name}-2.jsonl").read_bytes()
    assert outs["killed"] == outs["clean"] and outs["clean"].count(b"\n") == 3_000
    assert _stored_state(tmp_path / "killed.sqlite") == _stored_state(tmp_path / "clean.sqlite")
    assert (tmp_path / "clean-1.jsonl").read_bytes() + outs["clean"] == (tmp_path / "union.jsonl").read_bytes()
