"""The replica: a second store (another SQLite file, or PostgreSQL, possibly remote) that receives every record and
checkpoint of the log, so that altered, deleted or truncated records can be detected and repaired from it
(``sectorflow audit verify`` checks it; ``sectorflow audit restore --from`` repairs from it, see ``restore.py``).

Modes: ``sync`` copies after every commit (an append returns once both stores hold the record, or once the replica
failed); ``async`` copies from a background thread, and an append waits for the copy only when the replica is more
than ``max_lag`` records behind. A replica that cannot be written is never a silent gap: the log appends an
``audit.replica_failed`` record (an alarm, logged at ERROR) when it is lost and ``audit.replica_restored`` when the
copy caught up again, and ``lag()`` says how far behind it is (``sectorflow audit status``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .errors import AuditConfigError, AuditWriteError
from .records import utc_iso
from .store import Store, open_store


class ReplicaError(AuditWriteError):
    """The replica cannot be written, or holds what the log does not (another log, or more records)."""


class Replica:
    """A replica store for one log.

    Args:
        url: SQLite path or ``postgresql://`` DSN.
        pg_schema: PostgreSQL schema of the replica's tables.
        sqlite_synchronous: ``FULL`` or ``NORMAL`` for a SQLite replica.
        retry_seconds: after a failure, how long to wait before trying to reach the replica again.
    """

    def __init__(self, url: str, *, pg_schema: str = "sectorflow_audit", sqlite_synchronous: str = "FULL",
                 retry_seconds: float = 5.0) -> None:
        self.url, self.pg_schema, self.sqlite_synchronous = url, pg_schema, sqlite_synchronous
        self.retry_seconds = retry_seconds
        self.store: Store | None = None
        self.size = 0
        """Records the replica holds (as of the last sync)."""
        self.primary_size = 0
        self.down_since: str | None = None
        self.error: str | None = None
        self.last_sync: str | None = None
        self._next_try = 0.0
        self._lock = threading.Lock()

    def describe(self) -> str:
        from .admin import _safe_url

        state = f"DOWN since {self.down_since}: {self.error}" if self.down_since else "ok"
        return f"{_safe_url(self.url)} ({state})"

    def lag(self) -> dict[str, Any]:
        """How far behind the replica is: ``records`` (the log's size minus the replica's at the last sync attempt),
        ``since`` (when it went down, or ``None``), ``last_sync`` (UTC)."""
        return {"records": max(0, self.primary_size - self.size), "down_since": self.down_since,
                "last_sync": self.last_sync}

    def _open(self) -> Store:
        if self.store is None:
            if time.monotonic() < self._next_try:
                raise ReplicaError(f"replica {self.url} is down ({self.error}); next try in "
                                   f"{self._next_try - time.monotonic():.1f} s")
            try:
                self.store = open_store(self.url, pg_schema=self.pg_schema,
                                        sqlite_synchronous=self.sqlite_synchronous)
            except AuditConfigError as exc:
                self._next_try = time.monotonic() + self.retry_seconds
                raise ReplicaError(str(exc)) from exc
        return self.store

    def sync(self, primary: Store, log_id: str) -> int:
        """Copy to the replica every record and checkpoint of ``primary`` it lacks; returns how many records were
        copied.

        Raises:
            ReplicaError: the replica cannot be reached or written, belongs to another log, or holds more records
                than ``primary`` (the log was truncated: restore it from the replica).
        """
        with self._lock:
            self.primary_size = primary.size()
            try:
                replica = self._open()
                have = replica.size()
                theirs = replica.get_meta("log_id")
                if theirs is not None and theirs != log_id:
                    raise ReplicaError(f"replica {self.url} holds log {theirs}, not {log_id}: give each log its own "
                                       f"replica")
                if have > self.primary_size:
                    raise ReplicaError(f"replica {self.url} holds {have} records but the log only "
                                       f"{self.primary_size}: the log was truncated; run `sectorflow audit restore "
                                       f"--from {self.url}`")
                last = replica.last_checkpoint()
                rows = list(primary.iter_records(have, self.primary_size)) if have < self.primary_size else []
                cps = [cp for cp in primary.checkpoints_after(last.size if last else -1) if cp.size <= self.primary_size]
                if rows or cps or theirs is None:
                    with replica.transaction():
                        replica.set_meta("log_id", log_id)
                        for rec in rows:
                            replica.insert_record(rec.seq, rec.time, rec.event, rec.body, rec.leaf)
                            if rec.archive is not None:
                                replica.mark_archived(rec.seq, rec.seq + 1, rec.archive)
                        for cp in cps:
                            replica.insert_checkpoint(cp)
                self.size = have + len(rows)
            except ReplicaError:
                self._drop()
                self._next_try = max(self._next_try, time.monotonic() + self.retry_seconds)
                raise
            except Exception as exc:  # sqlite3 / psycopg errors: the connection may be gone
                self._drop()
                self._next_try = time.monotonic() + self.retry_seconds
                raise ReplicaError(f"replica {self.url} cannot be written: {type(exc).__name__}: {exc}") from exc
            self.last_sync = utc_iso()
            return len(rows)

    def mark_archived_seqs(self, seqs: list[int], archive: str) -> None:
        """Mirror an archive run (bodies cleared, leaf hashes kept)."""
        with self._lock:
            replica = self._open()
            with replica.transaction():
                replica.mark_archived_seqs(seqs, archive)

    def _drop(self) -> None:
        if self.store is not None:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
            self.store = None

    def close(self) -> None:
        with self._lock:
            self._drop()
