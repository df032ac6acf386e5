"""Ctrl-C (SIGINT) in the middle of audit appends: no transaction is left open, the log's close at exit signs every
record (no unsigned tail for the next ``verify``), no acknowledged record is lost and nothing is printed but the stop
line (fresh-user report #8: ``Exception ignored in atexit callback ... cannot start a transaction within a
transaction`` and 23 unsigned records after one Ctrl-C in 6 during ``sectorflow run aml``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sectorflow.compliance import AuditConfig, AuditLog, open_store, verify_log

WRITER = Path(__file__).with_name("interrupt_writer.py")


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own SIGINT handler for the in-process tests, whatever this process inherited: a job that a
    non-interactive shell starts in the background (``cmd &``, as a CI runner may) starts with SIGINT ignored, and
    Python then installs no handler, so ``raise_signal(SIGINT)`` raised nothing (the writer child sets its own)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _env(tmp_path: Path, keyfile: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECTORFLOW_")}
    env.update(SECTORFLOW_AUDIT_DB=str(tmp_path / "db" / "audit.db"), SECTORFLOW_AUDIT_KEY=str(keyfile.path),
               SECTORFLOW_HOME=str(tmp_path / "home"), SECTORFLOW_LOAD_PLUGINS="")
    return env


def _check_after_stop(tmp_path: Path, keyfile: Any, child: subprocess.Popen[str], acknowledged: list[int],
                      rounds: int = 1) -> None:
    """The child stopped by SIGINT: exit 130, one stop line on stderr, every acknowledged record stored, the log
    verifies with every record covered by a signed checkpoint, and no transaction of it was committed in part."""
    child.wait(timeout=60)  # it writes a line or two after the signal at most: the pipes cannot fill
    assert child.stdout is not None and child.stderr is not None
    out, err = child.stdout.read(), child.stderr.read()  # through the readers (communicate skips their buffers)
    child.stdout.close()
    child.stderr.close()
    acknowledged += [int(line) for line in out.split()]
    assert child.returncode == 130, err
    assert err.strip().splitlines() == ["stopped by SIGINT."], err  # no atexit traceback, no warning
    store = open_store(tmp_path / "db" / "audit.db")
    try:
        stored = {r.seq: json.loads(r.body) for r in store.iter_records()}
        assert sorted(stored) == list(range(len(stored)))
        assert set(acknowledged) <= set(stored), "an acknowledged record was lost"
        # an interrupted append either committed as a whole (its record is there, not acknowledged) or not at all
        assert len(stored) - len(acknowledged) in range(rounds + 1)
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok, report.problems
        assert report.size == len(stored) and report.unsigned_tail == 0  # the close at exit signed them all
        last = store.last_checkpoint()
        assert last is not None and last.size == len(stored)
    finally:
        store.close()
    lg = AuditLog(open_store(tmp_path / "db" / "audit.db"), keyfile, AuditConfig())
    try:
        assert lg.unsigned_at_open == 0  # what `audit verify` warns about ("had no checkpoint ... signed now")
    finally:
        lg.store.close()


@pytest.mark.parametrize("handler,statement,n", [
    ("keyboard", "BEGIN IMMEDIATE", 5),  # the report's case: right after BEGIN, before the rollback's try
    ("stopping", "BEGIN IMMEDIATE", 6),
    ("keyboard", "PRAGMA synchronous=NORMAL", 3),  # before BEGIN of a call's start: FULL must come back
    ("keyboard", "INSERT INTO records", 4),
    ("stopping", "COMMIT", 7),  # committed: must stay, and be signed at exit
])
def test_sigint_at_a_statement_of_a_transaction(tmp_path: Path, keyfile: Any, handler: str, statement: str,
                                                n: int) -> None:
    child = subprocess.Popen([sys.executable, str(WRITER), handler, statement, str(n)],
                             env=_env(tmp_path, keyfile), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acknowledged: list[int] = []
    _check_after_stop(tmp_path, keyfile, child, acknowledged)
    assert len(acknowledged) >= 2  # it got that far: the interrupt came from the statement asked for


@pytest.mark.parametrize("handler", ["keyboard", "stopping"])
def test_sigint_from_outside_at_several_points(tmp_path: Path, keyfile: Any, handler: str) -> None:
    """A real SIGINT from another process, after a varying number of acknowledged records (so at varying points of
    the loop), three times on one store: each stop leaves it fully signed."""
    acknowledged: list[int] = []  # by every round, on one store
    for round_, after in enumerate((3, 10, 25)):
        child = subprocess.Popen([sys.executable, str(WRITER), handler], env=_env(tmp_path, keyfile),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        target = len(acknowledged) + after
        while len(acknowledged) < target:
            line = child.stdout.readline()
            assert line, f"writer exited early with {child.wait()}: {child.stderr.read() if child.stderr else ''}"
            acknowledged.append(int(line))
        os.kill(child.pid, signal.SIGINT)
        _check_after_stop(tmp_path, keyfile, child, acknowledged, rounds=round_ + 1)


def test_a_transaction_left_open_is_rolled_back_and_the_close_signs(tmp_path: Path, keyfile: Any) -> None:
    """Whatever left a transaction open on the log's connection (an interrupt before this fix), the next
    transaction rolls it back (nothing of it was committed) instead of failing with 'cannot start a transaction
    within a transaction', and close signs the committed records."""
    lg = AuditLog(open_store(tmp_path / "audit.db"), keyfile, AuditConfig())
    for i in range(3):
        lg.append("test.open", actor="a", details={"i": i})
    conn = lg.store._conn  # type: ignore[attr-defined]
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta (k, v) VALUES ('half', 'written')")
    assert conn.in_transaction
    lg.close()
    store = open_store(tmp_path / "audit.db")
    try:
        assert store.get_meta("half") is None  # the abandoned transaction was rolled back, not committed
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok and report.size == 3 and report.unsigned_tail == 0
    finally:
        store.close()


def test_checkpoint_failure_is_an_audit_write_error(tmp_path: Path, keyfile: Any) -> None:
    """A store error while signing surfaces as AuditWriteError (runtime.reset at exit turns it into one warning
    line, never a traceback)."""
    from sectorflow.compliance import AuditWriteError

    lg = AuditLog(open_store(tmp_path / "audit.db"), keyfile, AuditConfig())
    lg.append("test.open", actor="a")
    lg.store._conn.close()  # type: ignore[attr-defined]
    with pytest.raises(AuditWriteError, match="checkpoint could not be signed"):
        lg.checkpoint()


@pytest.mark.parametrize("statement", ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE", "INSERT INTO records",
                                       "COMMIT", "PRAGMA synchronous=FULL"])
def test_in_process_interrupt_leaves_no_transaction_and_full_sync(tmp_path: Path, keyfile: Any,
                                                                  statement: str) -> None:
    """Pytest runs tests in the main thread, where Python runs signal handlers: a SIGINT raised right after
    ``statement`` returned surfaces as KeyboardInterrupt after the transaction, which committed whole (no open
    transaction, ``synchronous`` back to FULL, the handler of SIGINT the one it was)."""
    sys.path.insert(0, str(WRITER.parent))
    from interrupt_writer import InterruptingConnection

    before = signal.getsignal(signal.SIGINT)
    lg = AuditLog(open_store(tmp_path / "audit.db"), keyfile, AuditConfig())
    conn = lg.store._conn  # type: ignore[attr-defined]
    lg.store._conn = InterruptingConnection(conn, statement, 1)  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt):
        for i in range(2):
            lg.append("test.interrupt", actor="a", details={"i": i}, durable=False)
    assert signal.getsignal(signal.SIGINT) is before
    assert not conn.in_transaction
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert lg.store.size() == 1  # the interrupted append committed whole, then the interrupt was raised
    lg.append("test.after", actor="a")  # the log goes on: the running root followed the commit
    lg.close()
    store = open_store(tmp_path / "audit.db")
    try:
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok and report.size == 2 and report.unsigned_tail == 0, report.problems
    finally:
        store.close()


def test_interrupt_in_a_transaction_of_either_store(store_url: tuple[str, str], keyfile: Any) -> None:
    """SQLite and PostgreSQL: a SIGINT right after a record's INSERT is acted on after that transaction committed
    whole; the connection is idle (no transaction left open) and the log goes on and verifies."""
    sys.path.insert(0, str(WRITER.parent))
    from interrupt_writer import InterruptingConnection

    url, schema = store_url
    lg = AuditLog(open_store(url, pg_schema=schema), keyfile, AuditConfig(pg_schema=schema))
    conn = lg.store._conn  # type: ignore[attr-defined]
    lg.store._conn = InterruptingConnection(conn, "INSERT INTO records", 2)  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt):
        for i in range(3):
            lg.append("test.interrupt", actor="a", details={"i": i})
    if url.startswith("postgresql"):
        import psycopg

        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    else:
        assert not conn.in_transaction
    assert lg.store.size() == 2
    lg.append("test.after", actor="a")
    lg.close()
    store = open_store(url, pg_schema=schema)
    try:
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok and report.size == 3 and report.unsigned_tail == 0, report.problems
    finally:
        store.close()
