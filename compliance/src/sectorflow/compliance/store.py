"""Log stores: one interface, two SQL backends (SQLite embedded default, PostgreSQL).

Tables: ``records`` (seq, time, event, body = canonical record bytes or NULL once archived, leaf = RFC 9162 leaf
hash, archive = archive file name), ``checkpoints`` (size, root, time, key_id, signature, peaks), ``payloads``
(encrypted items, opt-in), ``subject_keys`` (wrapped per-subject keys), ``meta`` (log id). Triggers refuse DELETE
and UPDATE of records and checkpoints except archiving (body -> NULL with an archive name): a guard against
mistakes; deliberate tampering is caught by ``verify``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectorflow import PathNotWritableError, writable_file

from .deferred_signals import signals_deferred
from .errors import AuditConfigError, AuditWriteError
from .records import b64, unb64

_logger = logging.getLogger("sectorflow.audit")


@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head: ``size`` leaves, ``root`` hash, UTC ``time``, signed by ``key_id`` (Ed25519)."""

    size: int
    root: bytes
    time: str
    key_id: str
    signature: bytes
    peaks: tuple[bytes, ...] = ()
    note_sig: bytes | None = None
    """Ed25519 signature of the C2SP tlog-checkpoint note text (``records.checkpoint_note_text``); ``None`` for
    checkpoints signed before notes were written."""

    def to_json(self, log_id: str) -> dict[str, Any]:
        return {"log_id": log_id, "size": self.size, "root": b64(self.root), "time": self.time,
                "key_id": self.key_id, "signature": b64(self.signature)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(int(data["size"]), unb64(data["root"]), data["time"], data["key_id"], unb64(data["signature"]))


@dataclass(frozen=True)
class StoredRecord:
    seq: int
    time: str
    event: str
    body: bytes | None
    leaf: bytes
    archive: str | None


_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS records (seq BIGINT PRIMARY KEY, time TEXT NOT NULL, event TEXT NOT NULL, "
    "body {blob}, leaf {blob} NOT NULL, archive TEXT)",
    "CREATE INDEX IF NOT EXISTS records_time ON records (time)",
    "CREATE TABLE IF NOT EXISTS checkpoints (size BIGINT PRIMARY KEY, root {blob} NOT NULL, time TEXT NOT NULL, "
    "key_id TEXT NOT NULL, signature {blob} NOT NULL, peaks TEXT NOT NULL, note_sig {blob})",
    "CREATE TABLE IF NOT EXISTS payloads (seq BIGINT NOT NULL, part TEXT NOT NULL, subject TEXT NOT NULL, "
    "nonce {blob} NOT NULL, ciphertext {blob} NOT NULL, PRIMARY KEY (seq, part, subject))",
    "CREATE TABLE IF NOT EXISTS subject_keys (subject TEXT PRIMARY KEY, nonce {blob} NOT NULL, "
    "wrapped {blob} NOT NULL)",
]
_GUARD = ("NEW.seq IS DISTINCT FROM OLD.seq OR NEW.leaf IS DISTINCT FROM OLD.leaf OR NEW.time IS DISTINCT FROM "
          "OLD.time OR NEW.event IS DISTINCT FROM OLD.event OR OLD.archive IS NOT NULL OR NEW.archive IS NULL OR "
          "NEW.body IS NOT NULL")
_SQLITE_TRIGGERS = [
    "CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records BEGIN "
    "SELECT RAISE(ABORT, 'audit records are append-only'); END",
    f"CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records WHEN "
    f"{_GUARD.replace('IS DISTINCT FROM', 'IS NOT')} BEGIN "
    "SELECT RAISE(ABORT, 'audit records are append-only (only archiving may clear a body)'); END",
    "CREATE TRIGGER IF NOT EXISTS checkpoints_no_change BEFORE UPDATE ON checkpoints BEGIN "
    "SELECT RAISE(ABORT, 'checkpoints are append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS checkpoints_no_delete BEFORE DELETE ON checkpoints BEGIN "
    "SELECT RAISE(ABORT, 'checkpoints are append-only'); END",
]


def _as_bytes(value: Any) -> bytes | None:
    """Column value as bytes (a tampered row may hold text where bytes were written)."""
    if value is None:
        return None
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


class Store:
    """The interface of a log store over a DB-API connection; subclasses give the connection and the write lock.

    Every method that writes must run inside :meth:`transaction` (the one writer lock across processes).
    """

    placeholder = "?"

    def __init__(self) -> None:
        self._lock = threading.RLock()

    # --- backend-specific -----------------------------------------------------------------------------------
    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        raise NotImplementedError

    @contextmanager
    def transaction(self, durable: bool = True) -> Iterator[None]:
        """Hold the exclusive write lock (across processes) and commit on exit; roll back on error.

        ``durable`` (default): the commit is as durable as the store is configured (SQLite ``synchronous=FULL``:
        fsynced before this returns). ``durable=False``: committed (visible to every reader, and it survives a
        killed process) but its flush to disk is left to the next durable commit of this store, by any writer (the
        log's write-ahead file is flushed as a whole: SQLite's WAL fsync, PostgreSQL's WAL flush up to the later
        commit); only a power loss or OS crash before that commit can lose it. The audit log uses it only for a
        record that a durable record of the same call is sure to follow (``AuditLog.append(durable=False)``).
        """
        raise NotImplementedError
        yield  # pragma: no cover

    def close(self) -> None:
        raise NotImplementedError

    def reader_factory(self) -> Callable[[], Store]:
        """A picklable callable that opens a second, independent connection to the same store for reading: the
        verifier's worker processes call it (they are started fresh, not forked, so they get the callable, not
        this object's connection)."""
        raise NotImplementedError

    def open_reader(self) -> Store:
        """A second, independent connection to the same store for reading (``reader_factory()()``)."""
        return self.reader_factory()()

    # --- common SQL ---------------------------------------------------------------------------------------------
    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.placeholder != "?":
            sql = sql.replace("?", self.placeholder)
        return self._execute(sql, params)

    def get_meta(self, key: str) -> str | None:
        row = self._q("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Insert ``key`` once (an existing value is kept). Inside a transaction."""
        self._q("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING", (key, value))

    def put_meta(self, key: str, value: str) -> None:
        """Insert or replace ``key`` (the audit policy). Inside a transaction."""
        self._q("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", (key, value))

    def size(self) -> int:
        """Number of records (the next sequence number)."""
        row = self._q("SELECT MAX(seq) FROM records").fetchone()
        if row[0] is not None and type(row[0]) is not int:
            raise AuditWriteError(f"The records table holds seq {row[0]!r}, not an integer: the store was altered "
                                  f"behind its guards. Run `sectorflow audit verify` to see what changed.")
        return 0 if row[0] is None else int(row[0]) + 1

    def insert_record(self, seq: int, time: str, event: str, body: bytes, leaf: bytes) -> None:
        self._q("INSERT INTO records (seq, time, event, body, leaf) VALUES (?, ?, ?, ?, ?)",
                (seq, time, event, body, leaf))

    def iter_records(self, start: int = 0, stop: int | None = None, *, since: str | None = None,
                     until: str | None = None, batch: int = 20000) -> Iterator[StoredRecord]:
        """Records in sequence order, optionally only ``start <= seq < stop`` and ``since <= time < until``."""
        last = start - 1
        while True:
            sql = "SELECT seq, time, event, body, leaf, archive FROM records WHERE seq > ?"
            params: list[Any] = [last]
            if stop is not None:
                sql += " AND seq < ?"
                params.append(stop)
            if since is not None:
                sql += " AND time >= ?"
                params.append(since)
            if until is not None:
                sql += " AND time < ?"
                params.append(until)
            rows = self._q(sql + f" ORDER BY seq LIMIT {int(batch)}", tuple(params)).fetchall()
            for seq, time, event, body, leaf, archive in rows:
                if body is not None and type(body) is not bytes:
                    body = _as_bytes(body)
                if type(leaf) is not bytes:
                    leaf = _as_bytes(leaf) or b""
                yield StoredRecord(seq, time, event, body, leaf, archive)
            if len(rows) < batch:
                return
            last = int(rows[-1][0])

    def iter_leaf_rows(self, batch: int = 50000, *, start: int = 0,
                       stop: int | None = None) -> Iterator[tuple[int, bytes | None, bytes, str | None, Any, Any]]:
        """``(seq, body, leaf, archive, time, event)`` of every record (``start <= seq < stop``) in sequence order:
        every column of the records table, so the verifier checks each indexed column against the record body (its
        fast path). Without ``stop``, rows whose seq is not an integer come last."""
        last = start - 1
        bound = "" if stop is None else f" AND seq < {int(stop)}"
        while True:
            rows = self._q(f"SELECT seq, body, leaf, archive, time, event FROM records WHERE seq > ?{bound} "
                           f"ORDER BY seq LIMIT {int(batch)}", (last,)).fetchall()
            for seq, body, leaf, archive, time, event in rows:
                if body is not None and type(body) is not bytes:
                    body = _as_bytes(body)
                if type(leaf) is not bytes:
                    leaf = _as_bytes(leaf) or b""
                yield seq, body, leaf, archive, time, event
            if len(rows) < batch:
                return
            last = int(rows[-1][0])

    def leaf_hashes(self, start: int, stop: int) -> list[bytes]:
        """Stored leaf hashes of records ``start <= seq < stop`` in order."""
        rows = self._q("SELECT leaf FROM records WHERE seq >= ? AND seq < ? ORDER BY seq", (start, stop)).fetchall()
        return [bytes(r[0]) for r in rows]

    def mark_archived(self, start: int, stop: int, archive: str) -> None:
        """Clear the bodies of ``start <= seq < stop`` (kept in ``archive``); leaf hashes stay. In a transaction."""
        self._q("UPDATE records SET body = NULL, archive = ? WHERE seq >= ? AND seq < ? AND archive IS NULL",
                (archive, start, stop))

    def mark_archived_seqs(self, seqs: list[int], archive: str) -> None:
        """Clear the bodies of records ``seqs`` (kept in ``archive``); leaf hashes stay. In a transaction."""
        for seq in seqs:
            self._q("UPDATE records SET body = NULL, archive = ? WHERE seq = ? AND archive IS NULL", (archive, seq))

    def insert_checkpoint(self, cp: Checkpoint) -> None:
        self._q("INSERT INTO checkpoints (size, root, time, key_id, signature, peaks, note_sig) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (cp.size, cp.root, cp.time, cp.key_id, cp.signature, json.dumps([b64(p) for p in cp.peaks]),
                 cp.note_sig))

    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint, by size."""
        rows = self._q("SELECT size, root, time, key_id, signature, peaks, note_sig FROM checkpoints ORDER BY size").fetchall()
        return [self._cp(r) for r in rows]

    def checkpoints_after(self, size: int) -> list[Checkpoint]:
        """Checkpoints larger than ``size``, by size (what a replica still lacks)."""
        rows = self._q("SELECT size, root, time, key_id, signature, peaks, note_sig FROM checkpoints WHERE size > ? "
                       "ORDER BY size", (size,)).fetchall()
        return [self._cp(r) for r in rows]

    def last_checkpoint(self) -> Checkpoint | None:
        row = self._q("SELECT size, root, time, key_id, signature, peaks, note_sig FROM checkpoints "
                      "ORDER BY size DESC LIMIT 1").fetchone()
        return self._cp(row) if row else None

    @staticmethod
    def _cp(r: Any) -> Checkpoint:
        return Checkpoint(int(r[0]), bytes(r[1]), r[2], r[3], bytes(r[4]), tuple(unb64(p) for p in json.loads(r[5])),
                          bytes(r[6]) if r[6] is not None else None)

    # --- repair from a replica (``sectorflow audit restore``) ----------------------------------------------------
    @contextmanager
    def guards_lifted(self) -> Iterator[None]:
        """Inside a transaction: lift the append-only guards for the duration (restore only), put them back before
        the commit. DDL is transactional in both backends, so a failed restore leaves the guards in place."""
        raise NotImplementedError
        yield  # pragma: no cover

    def put_record(self, rec: StoredRecord) -> None:
        """Replace (or insert) row ``rec.seq`` with exactly ``rec``. Inside :meth:`guards_lifted`."""
        self._q("DELETE FROM records WHERE seq = ?", (rec.seq,))
        self._q("INSERT INTO records (seq, time, event, body, leaf, archive) VALUES (?, ?, ?, ?, ?, ?)",
                (rec.seq, rec.time, rec.event, rec.body, rec.leaf, rec.archive))

    def delete_records(self, seqs: list[Any]) -> None:
        """Delete rows by their (possibly non-integer, tampered) seq values. Inside :meth:`guards_lifted`."""
        for seq in seqs:
            self._q("DELETE FROM records WHERE seq = ?", (seq,))

    def delete_checkpoint(self, size: int) -> None:
        """Inside :meth:`guards_lifted`."""
        self._q("DELETE FROM checkpoints WHERE size = ?", (size,))

    def raw_seqs(self) -> list[Any]:
        """Every seq value in the records table as stored (a tampered one may not be an integer)."""
        return [r[0] for r in self._q("SELECT seq FROM records").fetchall()]

    # payloads and subject keys (crypto-shredding)
    def insert_payload(self, seq: int, part: str, subject: str, nonce: bytes, ciphertext: bytes) -> None:
        self._q("INSERT INTO payloads (seq, part, subject, nonce, ciphertext) VALUES (?, ?, ?, ?, ?)",
                (seq, part, subject, nonce, ciphertext))

    def payloads(self, seq: int) -> list[tuple[str, str, bytes, bytes]]:
        """``(part, subject, nonce, ciphertext)`` rows of one record."""
        rows = self._q("SELECT part, subject, nonce, ciphertext FROM payloads WHERE seq = ? ORDER BY part, subject",
                       (seq,)).fetchall()
        return [(r[0], r[1], bytes(r[2]), bytes(r[3])) for r in rows]

    def get_subject_key(self, subject: str) -> tuple[bytes, bytes] | None:
        row = self._q("SELECT nonce, wrapped FROM subject_keys WHERE subject = ?", (subject,)).fetchone()
        return (bytes(row[0]), bytes(row[1])) if row else None

    def put_subject_key(self, subject: str, nonce: bytes, wrapped: bytes) -> None:
        self._q("INSERT INTO subject_keys (subject, nonce, wrapped) VALUES (?, ?, ?)", (subject, nonce, wrapped))

    def shred_subject(self, subject: str) -> int:
        """Delete a subject's key and ciphertexts (not its records). Returns the number of payloads deleted."""
        self._q("DELETE FROM subject_keys WHERE subject = ?", (subject,))
        cur = self._q("DELETE FROM payloads WHERE subject = ?", (subject,))
        return max(cur.rowcount, 0)


class SQLiteStore(Store):
    """SQLite in WAL mode with ``synchronous=FULL`` (default): a commit that returned survives power loss and kill -9.
    ``NORMAL`` keeps kill -9 safety but may lose the last commits on power loss.

    One connection per store, shared by threads under a lock; ``BEGIN IMMEDIATE`` serialises writers across
    processes (``busy_timeout`` 30 s).
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        super().__init__()
        self.path = Path(path)
        self.synchronous = synchronous
        if synchronous not in ("FULL", "NORMAL"):
            raise AuditConfigError(f"sqlite_synchronous={synchronous!r}: write FULL or NORMAL.")
        try:
            writable_file(self.path, what="audit store", setting="SECTORFLOW_AUDIT_DB (or [audit] db)")
        except PathNotWritableError as exc:
            raise AuditConfigError(exc.message, details=exc.details) from exc
        try:
            if not self.path.exists():  # readable by its owner only (the audit admin's account)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False,
                                         timeout=30.0)
            for pragma in ("journal_mode=WAL", f"synchronous={synchronous}", "busy_timeout=30000", "secure_delete=ON",
                           "foreign_keys=ON"):
                self._conn.execute(f"PRAGMA {pragma}")
            with self.transaction():
                for stmt in _SCHEMA + _SQLITE_TRIGGERS:
                    self._conn.execute(stmt.format(blob="BLOB"))
                if "note_sig" not in {r[1] for r in self._conn.execute("PRAGMA table_info(checkpoints)")}:
                    self._conn.execute("ALTER TABLE checkpoints ADD COLUMN note_sig BLOB")  # a store from before
        except (sqlite3.Error, OSError) as exc:
            raise AuditConfigError(f"Cannot open the SQLite audit store {self.path}: {exc}. Fix: give "
                                   f"SECTORFLOW_AUDIT_DB a path in a folder this user can write.") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, params)

    @contextmanager
    def transaction(self, durable: bool = True) -> Iterator[None]:
        # SIGINT/SIGTERM are held back from before BEGIN to after COMMIT or ROLLBACK (deferred_signals.py): a Ctrl-C
        # between two of these statements left a transaction open, and the log's close at exit could not sign
        with self._lock, signals_deferred():
            if self._conn.in_transaction:  # left open by an earlier interrupted caller: nothing of it was committed
                _logger.warning("audit store %s: rolling back a transaction an interrupted writer left open",
                                self.path)
                self._conn.execute("ROLLBACK")
            # synchronous is per connection and read at each commit: NORMAL for this one commit (WAL frames written,
            # not fsynced), FULL again after it, so the next durable commit's fsync of the WAL covers this one too
            relaxed = not durable and self.synchronous == "FULL"
            try:
                if relaxed:
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute("BEGIN IMMEDIATE")
                yield
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # not after a COMMIT that returned: that one stays committed
                    self._conn.execute("ROLLBACK")
                raise
            finally:
                if relaxed:
                    self._conn.execute("PRAGMA synchronous=FULL")

    def reader_factory(self) -> Callable[[], Store]:
        return functools.partial(_SQLiteReader, self.path)

    @contextmanager
    def guards_lifted(self) -> Iterator[None]:
        names = ("records_no_delete", "records_no_update", "checkpoints_no_change", "checkpoints_no_delete")
        for name in names:
            self._conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        yield
        for stmt in _SQLITE_TRIGGERS:
            self._conn.execute(stmt)

    def close(self) -> None:
        with self._lock, signals_deferred():
            if self._conn.in_transaction:  # never committed (an interrupted writer's): discarded, as a close would
                self._conn.execute("ROLLBACK")
            self._conn.close()


class _SQLiteReader(Store):
    """A read-only connection to a SQLite store (``mode=ro``): the verifier's worker processes."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=30.0)

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self._conn.execute(sql, params)

    def reader_factory(self) -> Callable[[], Store]:
        return functools.partial(_SQLiteReader, self.path)

    def close(self) -> None:
        self._conn.close()


def open_store(url: str | Path, *, pg_schema: str = "sectorflow_audit", sqlite_synchronous: str = "FULL") -> Store:
    """A store for ``url``: ``postgresql://...`` (or ``postgres://``) opens PostgreSQL, anything else is a SQLite
    file path (``sqlite:///path`` also accepted).

    Raises:
        AuditConfigError: the store cannot be opened (message says why).
    """
    url = str(url)
    if url.startswith(("postgresql://", "postgres://")):
        from .store_pg import PostgresStore

        return PostgresStore(url, schema=pg_schema)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite://"):]
    return SQLiteStore(url, synchronous=sqlite_synchronous)
