"""What the eleventh fresh user found in ``sectorflow run aml --state`` and the ``aml`` commands, one test each: a
constant ``--default transaction_id`` is refused (it made every row after the first a repeat, rc 0); a second run on
a state file another process is using is refused with that process's id and the state is untouched (it took the
first run's progress for a stale run, and ``--discard-unfinished`` threw it away); ``aml evaluate`` reads ``.gz``
results; the state errors print the reset command as it must be typed; ``aml state show`` prints no Python
``None``; an input without rows exits 1 whether or not ``--output`` exists, and leaves it as it was."""

from __future__ import annotations

import gzip
import json
import shlex
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sectorflow import ConfigError, open_state_store
from sectorflow_aml.evaluation import read_results
from sectorflow_aml.loaders import csv_reader

HEADER = "transaction_id,timestamp,sender_account,receiver_account,amount,currency\n"
ROWS = "".join(f"t{i},2024-03-04T09:{i:02d}:00Z,A{i},B{i},{100 + i},CNY\n" for i in range(1, 6))
FAST = ["-O", "model=false", "--no-progress"]


def _err(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


# 1. --default transaction_id=x --------------------------------------------------------------------------------------

def test_a_constant_default_transaction_id_is_refused_and_the_missing_column_says_to_map_it(cli_main, capsys,
                                                                                            tmp_path: Path) -> None:
    source = tmp_path / "no_ids.csv"
    source.write_text("timestamp,sender_account,receiver_account,amount\n"
                      "2024-03-04T09:00:00Z,A,B,100\n2024-03-04T09:01:00Z,A,C,200\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code = cli_main(["run", "aml", str(source), "--format", "csv", "--default", "transaction_id=x", "-o", str(out),
                     *FAST])
    err = _err(capsys)
    assert code == 2 and not out.exists()
    assert "--default transaction_id=..." in err and "--column transaction_id=COLUMN" in err
    # without the default: the missing-column message asks for --column, not --default, for the id
    code = cli_main(["run", "aml", str(source), "--format", "csv", "-o", str(out), *FAST])
    err = _err(capsys)
    assert code == 2 and "lacks the column(s) transaction_id" in err
    assert "For transaction_id, map the file's transaction id column with --column transaction_id=COLUMN" in err
    assert "it cannot be given with --default" in err
    with pytest.raises(ConfigError, match="would give every row the same id"):  # the Python API likewise
        csv_reader(defaults={"transaction_id": "x"})
    # a default for another field is still taken (the channel the file lacks)
    fine = tmp_path / "ids.csv"
    fine.write_text("transaction_id,timestamp,sender_account,receiver_account,amount\n"
                    "t1,2024-03-04T09:00:00Z,A,B,100\nt2,2024-03-04T09:01:00Z,A,C,200\n", encoding="utf-8")
    assert cli_main(["run", "aml", str(fine), "--format", "csv", "--default", "channel=cash_deposit", "-o",
                     str(out), *FAST]) == 0
    assert [json.loads(line)["transaction_id"] for line in out.read_text().splitlines()] == ["t1", "t2"]


# 2. two runs on one state file -------------------------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from sectorflow import state_lock
    with state_lock(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.readline()  # until the test closes stdin
""")


def _state_rows(db: Path) -> tuple:
    with sqlite3.connect(db) as conn:
        return tuple(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                     for table in ("state_runs", "state_journal", "state_snapshots", "state_inputs"))


def test_a_second_run_on_a_state_file_in_use_is_refused_and_the_state_is_untouched(cli_main, capsys,
                                                                                   tmp_path: Path) -> None:
    db = tmp_path / "bank.sqlite"
    day1, day2 = tmp_path / "day1.csv", tmp_path / "day2.csv"
    day1.write_text(HEADER + ROWS, encoding="utf-8")
    day2.write_text(HEADER + ROWS.replace("t", "u").replace("09:", "10:"), encoding="utf-8")
    assert cli_main(["run", "aml", str(day1), "--state", str(db), "-o", str(tmp_path / "d1.jsonl"), *FAST]) == 0
    store = open_state_store(str(db))  # an unfinished run of day 2, as a run still going has
    with store.transaction():
        store.begin_run("aml", "default", "0" * 64, str(day2), str((tmp_path / "d2.jsonl").resolve()))
    store.close()
    before = _state_rows(db)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for extra in ([], ["--discard-unfinished"]):
            code = cli_main(["run", "aml", str(day2), "--state", str(db), "-o", str(tmp_path / "d2.jsonl"), *FAST,
                             *extra])
            err = _err(capsys)
            assert code == 2, err
            assert (f"another run (pid {holder.pid}) is using {db}; wait for it to finish or use another --state"
                    in err)
        assert cli_main(["aml", "state", "reset", "--state", str(db), "--tenant", "default", "--yes"]) == 2
        assert f"another run (pid {holder.pid}) is using {db}" in _err(capsys)
        assert _state_rows(db) == before and not (tmp_path / "d2.jsonl").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # once the other process has ended, the lock is free: the unfinished run can be discarded
    assert cli_main(["run", "aml", str(day2), "--state", str(db), "-o", str(tmp_path / "d2.jsonl"), *FAST,
                     "--discard-unfinished"]) == 0
    assert len((tmp_path / "d2.jsonl").read_text().splitlines()) == 5


# 7. aml evaluate --results results.jsonl.gz ------------------------------------------------------------------------

def test_gzipped_results_are_read_as_the_plain_file(tmp_path: Path) -> None:
    rows = [{"transaction_id": "t1", "account_scores": {"A": 0.9}}, {"transaction_id": "t2", "account_scores": {}}]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(text)
    assert list(read_results(packed)) == list(read_results(plain)) == rows


# 12. the reset command, as it must be typed --------------------------------------------------------------------------

def test_the_already_fed_error_prints_a_reset_command_that_works_as_printed(cli_main, capsys, tmp_path: Path) -> None:
    db = tmp_path / "my state.sqlite"  # a space: the printed command quotes the path
    day = tmp_path / "day.csv"
    day.write_text(HEADER + ROWS, encoding="utf-8")
    run = ["run", "aml", str(day), "--state", str(db), "--tenant", "bank-a", "-o", str(tmp_path / "r.jsonl"), *FAST]
    assert cli_main(run) == 0
    capsys.readouterr()
    assert cli_main(run) == 2
    err = capsys.readouterr().err.replace("\n", " ")  # rich wraps long lines at word boundaries
    expected = f"sectorflow aml state reset --state {shlex.quote(str(db))} --tenant bank-a --yes"
    assert f"`{expected}`" in " ".join(err.split())
    assert cli_main(shlex.split(expected)[1:]) == 0  # as printed (without the program name)
    assert "tenant bank-a: state forgotten" in capsys.readouterr().out
    assert cli_main(run) == 0  # and the file can be fed again


# 13. aml state show without None ------------------------------------------------------------------------------------

def test_state_show_says_the_window_is_empty_instead_of_none(cli_main, capsys, tmp_path: Path) -> None:
    db = tmp_path / "bank.sqlite"
    day = tmp_path / "day.csv"
    day.write_text(HEADER + ROWS, encoding="utf-8")
    assert cli_main(["run", "aml", str(day), "--state", str(db), "-o", str(tmp_path / "r.jsonl"), *FAST]) == 0
    capsys.readouterr()
    assert cli_main(["aml", "state", "show", "--state", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "None" not in out
    # the run's 5 items are in the journal after the (empty) first snapshot
    assert "default: at the last snapshot no transactions in the window;" in out
    assert "journal after it 1 call(s), 5 item(s), replayed on load" in out


# 14. an input without rows ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content", ["", HEADER])
@pytest.mark.parametrize("state", [False, True])
def test_an_input_without_rows_exits_1_whether_or_not_the_output_exists(cli_main, capsys, tmp_path: Path,
                                                                        content: str, state: bool) -> None:
    source = tmp_path / "empty.csv"
    source.write_text(content, encoding="utf-8")
    extra = ["--state", str(tmp_path / "bank.sqlite")] if state else []
    fresh = tmp_path / "new.jsonl"
    assert cli_main(["run", "aml", str(source), "--format", "csv", "-o", str(fresh), *FAST, *extra]) == 1
    err = _err(capsys)
    assert not fresh.exists() and not list(tmp_path.glob(".new.jsonl.partial*"))
    assert f"no rows in {source}" in err and f"--output {fresh} was not written" in err
    earlier = tmp_path / "old.jsonl"
    earlier.write_text('{"transaction_id": "earlier"}\n', encoding="utf-8")
    assert cli_main(["run", "aml", str(source), "--format", "csv", "-o", str(earlier), *FAST, *extra]) == 1
    assert earlier.read_text() == '{"transaction_id": "earlier"}\n'
    assert "left as it was (30 bytes of earlier results)" in _err(capsys)
    if state:  # nothing was fed: a real day's file runs next, and the empty file is not recorded as fed
        store = open_state_store(str(tmp_path / "bank.sqlite"))
        assert store.run("aml", "default") is None and store.fed("aml", "default", _sha(source)) is None
        store.close()


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_state_in_a_folder_that_does_not_exist_is_refused_not_created(cli_main, capsys, tmp_path: Path) -> None:
    # the lock file is opened first, next to the state: a typo in the folder no longer makes new folders silently
    day = tmp_path / "day.csv"
    day.write_text(HEADER + ROWS, encoding="utf-8")
    state = tmp_path / "no" / "such" / "bank.sqlite"
    assert cli_main(["run", "aml", str(day), "--state", str(state), "-o", str(tmp_path / "r.jsonl"), *FAST]) == 2
    assert "Give a --state in an existing, writable folder" in _err(capsys) and not (tmp_path / "no").exists()
