"""Durable state of stateful tasks (the AML window): a snapshot plus a journal per task and tenant, in SQL.

A stateful pipeline's state is a deterministic function of the validated inputs it was given, in order (no
wall-clock reads: the AML window's clock is the transactions' own time). So the store keeps, per (task, tenant):

- ``state_snapshots``: the latest full :meth:`~sectorflow.Pipeline.state_dict` as JSON text, with the journal
  position it covers (``seq``);
- ``state_journal``: each call's validated inputs after that snapshot (``model_dump(mode="json")`` of the items,
  one row per call or ``sectorflow run`` chunk, one store transaction each);
- ``state_runs``: the progress of an unfinished ``sectorflow run --state`` (input SHA-256, rows consumed, output
  byte offset, journal position at its start), written in the same transaction as the chunk's journal row;
- ``state_inputs``: the SHA-256 of every input a finished ``sectorflow run --state`` fed (the same file again is
  refused);
- ``state_items``: the key of every item such a run fed (:meth:`~sectorflow.Pipeline.item_keys`: aml's transaction
  id), with the journal position that brought it, written with the chunk's journal row: an item of another file
  already in the state is not run again (:mod:`sectorflow.cli_state`). Snapshots keep them; ``reset`` forgets them.

Restore (``StateKeeper.restore``) = load the snapshot, then replay the journal rows through the pipeline, one
call per row as they first ran (results discarded), so a restart resumes exactly where the last commit left it.
A full snapshot is written when replaying the journal since the last one would take :data:`SNAPSHOT_RATIO` times
as long as writing a snapshot took: snapshots cost at most ``1 / SNAPSHOT_RATIO`` of the calls' own time, and a
restart replays at most that many snapshot-times of calls (figures: ``benchmarks/aml_state.py``, docs/aml.md).

Backends: SQLite (default; a file, WAL, ``synchronous=FULL``: a commit that returned survives kill -9 and power
loss), PostgreSQL for ``postgresql://`` URLs (psycopg 3, the ``compliance`` extra), as the audit log does
(``compliance/store.py``). The default file is ``$SECTORFLOW_HOME/state.sqlite`` (``SECTORFLOW_HOME`` defaults to
``~/.cache/sectorflow``).
"""

from __future__ import annotations

import gc
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .env import home, raw

SNAPSHOT_RATIO = 15.0
"""A snapshot is taken once replaying the journal since the last one would take this many times as long as writing
that snapshot took (:meth:`~sectorflow.state_keeper.StateKeeper.maybe_snapshot`): snapshots then cost at most
1/15 of the calls' own time, and a restart replays at most 15 snapshot-times of calls."""
SNAPSHOT_FACTOR = 4.0
"""Before a keeper has timed a snapshot: one is taken once the journal exceeds this many times the stored
snapshot's bytes ..."""
SNAPSHOT_MIN_BYTES = 4 << 20
"""... and at least this many bytes (small states are not rewritten on every few calls)."""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS state_snapshots (task TEXT NOT NULL, tenant TEXT NOT NULL, seq BIGINT NOT NULL, "
    "state TEXT NOT NULL, bytes BIGINT NOT NULL, time TEXT NOT NULL, PRIMARY KEY (task, tenant))",
    "CREATE TABLE IF NOT EXISTS state_journal (task TEXT NOT NULL, tenant TEXT NOT NULL, seq BIGINT NOT NULL, "
    "items TEXT NOT NULL, n BIGINT NOT NULL, bytes BIGINT NOT NULL, time TEXT NOT NULL, "
    "PRIMARY KEY (task, tenant, seq))",
    "CREATE TABLE IF NOT EXISTS state_runs (task TEXT NOT NULL, tenant TEXT NOT NULL, input_sha256 TEXT NOT NULL, "
    "input TEXT NOT NULL, output TEXT, start_seq BIGINT NOT NULL, rows_done BIGINT NOT NULL, "
    "output_offset BIGINT NOT NULL, items BIGINT NOT NULL, time TEXT NOT NULL, PRIMARY KEY (task, tenant))",
    # every input a finished ``sectorflow run --state`` fed into (task, tenant): feeding one again is refused
    "CREATE TABLE IF NOT EXISTS state_inputs (task TEXT NOT NULL, tenant TEXT NOT NULL, input_sha256 TEXT NOT NULL, "
    "input TEXT NOT NULL, items BIGINT NOT NULL, time TEXT NOT NULL, PRIMARY KEY (task, tenant, input_sha256))",
    # the key of every item a ``sectorflow run --state`` fed into (task, tenant) (Pipeline.item_keys: aml's
    # transaction id), with the journal position that brought it: an item fed again is not run twice
    "CREATE TABLE IF NOT EXISTS state_items (task TEXT NOT NULL, tenant TEXT NOT NULL, item_key TEXT NOT NULL, "
    "seq BIGINT NOT NULL, PRIMARY KEY (task, tenant, item_key))",
]

KEY_BATCH = 900
"""Item keys per statement of :meth:`StateStore.seen_keys`, and a quarter of that (rows of 4 values) per statement
of :meth:`StateStore.append` (SQLite's limit was 999 parameters a statement before 3.32)."""


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block that builds a large acyclic structure (JSON), then back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def default_state_path() -> Path:
    """``$SECTORFLOW_HOME/state.sqlite``: the state store when none is named."""
    return home() / "state.sqlite"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunProgress:
    """An unfinished ``sectorflow run --state``: what it reads, where it writes, how far it got (last commit)."""

    input_sha256: str
    input: str
    output: str | None
    start_seq: int
    rows_done: int
    output_offset: int
    items: int
    time: str


@dataclass(frozen=True)
class TenantInfo:
    """What :meth:`StateStore.info` tells about one (task, tenant)."""

    task: str
    tenant: str
    snapshot_bytes: int
    snapshot_time: str | None
    journal_calls: int
    journal_items: int
    journal_bytes: int
    last_commit: str | None
    run: RunProgress | None


class StateStore:
    """The SQL interface shared by both backends; writes run inside :meth:`transaction` (one writer at a time)."""

    placeholder = "?"
    url: str

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:  # pragma: no cover - backend-specific
        raise NotImplementedError

    @contextmanager
    def transaction(self) -> Iterator[None]:  # pragma: no cover - backend-specific
        """Hold the write lock (across processes) and commit durably on exit; roll back on error."""
        raise NotImplementedError
        yield

    def close(self) -> None:  # pragma: no cover - backend-specific
        raise NotImplementedError

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.placeholder != "?":
            sql = sql.replace("?", self.placeholder)
        return self._execute(sql, params)

    # --- reading ----------------------------------------------------------------------------------------------

    def load(self, task: str, tenant: str) -> tuple[dict[str, Any] | None, int, list[tuple[int, list[Any]]]]:
        """``(snapshot state or None, the snapshot's journal position, [(seq, items), ...] after it in order)``."""
        row = self._q("SELECT state, seq FROM state_snapshots WHERE task = ? AND tenant = ?", (task, tenant)).fetchone()
        with _collector_paused():  # hundreds of thousands of small lists: no collections over them meanwhile
            snapshot, seq = (json.loads(row[0]), int(row[1])) if row else (None, 0)
        journal = [(int(s), json.loads(items)) for s, items in self._q(
            "SELECT seq, items FROM state_journal WHERE task = ? AND tenant = ? AND seq > ? ORDER BY seq",
            (task, tenant, seq)).fetchall()]
        return snapshot, seq, journal

    def last_seq(self, task: str, tenant: str) -> int:
        """The journal position of the latest commit (0 for a tenant with no state)."""
        a = self._q("SELECT MAX(seq) FROM state_journal WHERE task = ? AND tenant = ?", (task, tenant)).fetchone()[0]
        b = self._q("SELECT seq FROM state_snapshots WHERE task = ? AND tenant = ?", (task, tenant)).fetchone()
        return max(int(a or 0), int(b[0]) if b else 0)

    def run(self, task: str, tenant: str) -> RunProgress | None:
        """The unfinished ``sectorflow run --state`` of (task, tenant), if any."""
        row = self._q("SELECT input_sha256, input, output, start_seq, rows_done, output_offset, items, time "
                      "FROM state_runs WHERE task = ? AND tenant = ?", (task, tenant)).fetchone()
        return RunProgress(row[0], row[1], row[2], int(row[3]), int(row[4]), int(row[5]), int(row[6]), row[7]) \
            if row else None

    def fed(self, task: str, tenant: str, input_sha256: str) -> tuple[str, int, str] | None:
        """``(input name, items, time)`` of the finished run that fed the input with this SHA-256 into (task,
        tenant), or ``None`` (never fed, or fed before the state was reset)."""
        row = self._q("SELECT input, items, time FROM state_inputs WHERE task = ? AND tenant = ? AND input_sha256 = ?",
                      (task, tenant, input_sha256)).fetchone()
        return (row[0], int(row[1]), row[2]) if row else None

    def seen_keys(self, task: str, tenant: str, keys: Sequence[str], upto_seq: int | None = None) -> set[str]:
        """Those of ``keys`` recorded for (task, tenant) (by :meth:`append`), at journal positions up to
        ``upto_seq`` when given (the items earlier runs fed, not the running one's)."""
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        bound = "" if upto_seq is None else " AND seq <= ?"
        for begin in range(0, len(unique), KEY_BATCH):
            part = unique[begin:begin + KEY_BATCH]
            marks = ", ".join("?" * len(part))
            params = (task, tenant, *part) + (() if upto_seq is None else (upto_seq,))
            found.update(row[0] for row in self._q(
                f"SELECT item_key FROM state_items WHERE task = ? AND tenant = ? AND item_key IN ({marks}){bound}",
                params).fetchall())
        return found

    def tenants(self, task: str) -> list[str]:
        """Tenants with state of ``task``, sorted."""
        rows = self._q("SELECT tenant FROM state_snapshots WHERE task = ? UNION SELECT tenant FROM state_journal "
                       "WHERE task = ? UNION SELECT tenant FROM state_runs WHERE task = ?", (task, task, task))
        return sorted(r[0] for r in rows.fetchall())

    def info(self, task: str, tenant: str) -> TenantInfo:
        """Sizes and times of one tenant's state (see :class:`TenantInfo`)."""
        snap = self._q("SELECT seq, bytes, time FROM state_snapshots WHERE task = ? AND tenant = ?",
                       (task, tenant)).fetchone()
        seq = int(snap[0]) if snap else 0
        calls, items, size, last = self._q(
            "SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(SUM(bytes), 0), MAX(time) FROM state_journal "
            "WHERE task = ? AND tenant = ? AND seq > ?", (task, tenant, seq)).fetchone()
        times = [t for t in (last, snap[2] if snap else None) if t]
        return TenantInfo(task, tenant, int(snap[1]) if snap else 0, snap[2] if snap else None, int(calls),
                          int(items), int(size), max(times) if times else None, self.run(task, tenant))

    def journal_bytes(self, task: str, tenant: str) -> tuple[int, int]:
        """``(journal bytes since the snapshot, snapshot bytes)``."""
        snap = self._q("SELECT seq, bytes FROM state_snapshots WHERE task = ? AND tenant = ?",
                       (task, tenant)).fetchone()
        seq, snap_bytes = (int(snap[0]), int(snap[1])) if snap else (0, 0)
        size = self._q("SELECT COALESCE(SUM(bytes), 0) FROM state_journal WHERE task = ? AND tenant = ? AND seq > ?",
                       (task, tenant, seq)).fetchone()[0]
        return int(size), snap_bytes

    # --- writing (inside transaction()) -------------------------------------------------------------------------

    def append(self, task: str, tenant: str, items: Sequence[Any], *, rows_done: int | None = None,
               output_offset: int | None = None, keys: Sequence[str] | None = None) -> int:
        """Journal one call's validated inputs (JSON values); with ``rows_done``, also advance the unfinished run;
        with ``keys`` (the items' :meth:`~sectorflow.Pipeline.item_keys`), remember them (see :meth:`seen_keys`; a
        key already there keeps its first position). Returns the bytes journalled. Inside :meth:`transaction`."""
        seq = self.last_seq(task, tenant) + 1
        text = json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode())
        self._q("INSERT INTO state_journal (task, tenant, seq, items, n, bytes, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task, tenant, seq, text, len(items), size, _now()))
        unique = list(dict.fromkeys(keys or ()))
        rows = KEY_BATCH // 4
        for begin in range(0, len(unique), rows):
            part = unique[begin:begin + rows]
            self._q("INSERT INTO state_items (task, tenant, item_key, seq) VALUES "
                    + ", ".join(["(?, ?, ?, ?)"] * len(part)) + " ON CONFLICT DO NOTHING",
                    tuple(value for key in part for value in (task, tenant, key, seq)))
        if rows_done is not None:
            self._q("UPDATE state_runs SET rows_done = ?, output_offset = ?, items = items + ?, time = ? "
                    "WHERE task = ? AND tenant = ?", (rows_done, output_offset or 0, len(items), _now(), task, tenant))
        return size

    def put_snapshot(self, task: str, tenant: str, state: dict[str, Any], seq: int | None = None) -> None:
        """Replace the snapshot by ``state`` (covering the journal up to ``seq``, default the latest) and drop the
        journal rows it covers. Inside :meth:`transaction`."""
        seq = self.last_seq(task, tenant) if seq is None else seq
        with _collector_paused():
            text = json.dumps(state, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        self._q("DELETE FROM state_snapshots WHERE task = ? AND tenant = ?", (task, tenant))
        self._q("INSERT INTO state_snapshots (task, tenant, seq, state, bytes, time) VALUES (?, ?, ?, ?, ?, ?)",
                (task, tenant, seq, text, len(text.encode()), _now()))
        self._q("DELETE FROM state_journal WHERE task = ? AND tenant = ? AND seq <= ?", (task, tenant, seq))

    def begin_run(self, task: str, tenant: str, input_sha256: str, source: str, output: str | None) -> None:
        """Record the start of a ``sectorflow run --state`` (at the current journal position)."""
        self._q("INSERT INTO state_runs (task, tenant, input_sha256, input, output, start_seq, rows_done, "
                "output_offset, items, time) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, ?)",
                (task, tenant, input_sha256, source, output, self.last_seq(task, tenant), _now()))

    def record_fed(self, task: str, tenant: str, input_sha256: str, source: str, items: int) -> None:
        """Remember that a finished run fed this input into (task, tenant) (see :meth:`fed`). Inside
        :meth:`transaction`."""
        self._q("DELETE FROM state_inputs WHERE task = ? AND tenant = ? AND input_sha256 = ?",
                (task, tenant, input_sha256))
        self._q("INSERT INTO state_inputs (task, tenant, input_sha256, input, items, time) VALUES (?, ?, ?, ?, ?, ?)",
                (task, tenant, input_sha256, source, items, _now()))

    def end_run(self, task: str, tenant: str) -> None:
        """Forget the run's progress (it finished)."""
        self._q("DELETE FROM state_runs WHERE task = ? AND tenant = ?", (task, tenant))

    def discard_run(self, task: str, tenant: str) -> RunProgress | None:
        """Drop an unfinished run and the journal rows it wrote: the state goes back to where the run started (no
        snapshot is taken while a run is unfinished). Returns the run dropped."""
        run = self.run(task, tenant)
        if run is not None:
            self._q("DELETE FROM state_journal WHERE task = ? AND tenant = ? AND seq > ?", (task, tenant, run.start_seq))
            self._q("DELETE FROM state_items WHERE task = ? AND tenant = ? AND seq > ?", (task, tenant, run.start_seq))
            self.end_run(task, tenant)
        return run

    def reset(self, task: str, tenant: str) -> bool:
        """Forget everything of (task, tenant); whether there was anything."""
        had = tenant in self.tenants(task)
        for table in ("state_snapshots", "state_journal", "state_runs", "state_inputs", "state_items"):
            self._q(f"DELETE FROM {table} WHERE task = ? AND tenant = ?", (task, tenant))
        return had


class SQLiteStateStore(StateStore):
    """SQLite in WAL mode; ``BEGIN IMMEDIATE`` serialises writers across processes. ``synchronous="FULL"``
    (default): every commit is fsync'd, so one that returned survives kill -9, an OS crash and power loss;
    ``"NORMAL"``: no fsync per commit (WAL), a commit that returned survives kill -9 of the process but the last ones
    may be lost on an OS crash or power loss (the state then lags the answers given: those transactions are
    counted again when re-sent, never twice)."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        super().__init__()
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigError(f"synchronous={synchronous!r}: write FULL or NORMAL.")
        self.path = Path(path).expanduser()
        self.url = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():  # it holds customers' transactions: readable by its owner only
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0)
            for pragma in ("journal_mode=WAL", f"synchronous={synchronous}", "busy_timeout=30000"):
                self._conn.execute(f"PRAGMA {pragma}")
            with self.transaction():
                for stmt in _SCHEMA:
                    self._conn.execute(stmt)
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(f"Cannot open the state store {self.path}: {exc}. Give a writable file path "
                              "(--state FILE) or a postgresql:// URL.") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on an exception).

        Raises:
            ConfigError: the file cannot be written (read-only file, folder or filesystem, a full disk): names the
                store and the fix, instead of SQLite's bare ``OperationalError``.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if "readonly" in text or "read-only" in text or "disk" in text or "unable to open" in text:
                    raise ConfigError(f"Cannot write the state store {self.path}: {exc}. Make the file and its "
                                      "folder writable (the store keeps -wal and -shm files beside it), free disk "
                                      "space, or give another --state file (or [server] state_store).") from exc
                raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def shown_store(url: str | Path | None) -> str:
    """``url`` as messages, logs and HTTP answers may show it: a ``postgresql://user:secret@host/db`` URL without
    its user and password (``postgresql://***@host/db``); a path as it is; ``None`` as the default file's path."""
    if url is None:
        return str(default_state_path())
    return re.sub(r"//[^@/]*@", "//***@", str(url))


def open_state_store(url: str | Path | None = None, *, synchronous: str | None = None) -> StateStore:
    """A state store for ``url``: ``postgresql://`` / ``postgres://`` opens PostgreSQL, anything else is a SQLite
    file (``sqlite:///path`` accepted); ``None``: :func:`default_state_path`. ``synchronous`` (SQLite): ``FULL`` or
    ``NORMAL`` (see :class:`SQLiteStateStore`); default ``$SECTORFLOW_STATE_SYNC`` or ``FULL``.

    Raises:
        ConfigError: the store cannot be opened (the message says why).
    """
    sync = (synchronous or raw("state_sync") or "FULL").upper()
    if url is None:
        return SQLiteStateStore(default_state_path(), synchronous=sync)
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        from .state_store_pg import PostgresStateStore

        return PostgresStateStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite://"):]
    return SQLiteStateStore(text, synchronous=sync)
