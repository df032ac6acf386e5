"""Group commit: the audit records of unregulated calls are written off the scoring path, many per durable commit.

With ``commit = "group"`` (``SECTORFLOW_AUDIT_COMMIT=group``; the default is ``sync``), a task call that is not regulated hands its
records (``task.call_started``, ``task.call_finished`` ...) to one writer thread per :class:`~.log.AuditLog` and
goes on; the thread writes everything queued since its last commit in ONE transaction, at the store's durability
(SQLite ``synchronous=FULL`` by default: the commit is fsynced), then takes what queued meanwhile. So a stream of
one-transaction calls pays no fsync on its own path, and a busy log pays one fsync per group instead of one per
record (``benchmarks/aml_audit_stream.py``).

What stays the same: every committed record is durable (the store's synchronous setting is untouched); records keep
their order (one writer, sequence numbers assigned at commit, the hash chain and signed checkpoints as before);
regulated tasks (``SECTORFLOW_AUDIT_REGULATED``) never use the queue: their records are committed before the call
goes on (fail closed), after whatever was queued before them. What changes: an unregulated call returns before its
records are committed, within ``GATHER_SECONDS`` (5 ms) plus one commit time; a process killed in that window loses
those records (never a committed one). :meth:`GroupCommitter.flush` waits for everything queued; the log's
``close`` (and so ``sectorflow.compliance.reset`` and interpreter exit) flushes first. ``commit = "sync"`` (the
default) keeps one commit per record before the call goes on (one fsync per call: the start's commit is flushed
by the end's): a reader in another process (``sectorflow audit``,
a test) then sees a call's records as soon as the call returned, which with ``group`` it sees one commit later.

A failed group commit is retried (``retries``, with backoff); a group that still fails is counted as lost
(``AuditLog.stats["lost"]`` and the ``on_lost`` callback) and logged at ERROR, as a failed unregulated append is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import AuditWriteError

if TYPE_CHECKING:  # pragma: no cover
    from .log import AuditLog

_logger = logging.getLogger("sectorflow.audit")

GATHER_SECONDS = 0.005
"""How long the writer waits after the first queued record before it commits (records that queue meanwhile join the
group). Not a durability window of its own: the records are not committed yet either way."""

MAX_PENDING = 8192
"""Records that may wait for the writer; a caller that finds this many queued waits for room (back-pressure)."""


class GroupCommitter:
    """The writer thread of one :class:`~.log.AuditLog` (see the module docstring).

    Args:
        log: the log whose ``_write_many_locked`` commits a group.
        retries: extra attempts for a failed group commit before its records are counted as lost.
        on_lost: called with the number of records of a group that could not be written.
    """

    def __init__(self, log: AuditLog, *, retries: int = 3, on_lost: Callable[[int], None] | None = None) -> None:
        self.log = log
        self.retries = retries
        self.on_lost = on_lost
        self._pending: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._submitted = 0
        self._done = 0
        self._closing = False
        self.commits = 0
        """Group commits so far (records per commit = ``log.stats['appended']`` / commits, roughly)."""
        self._thread = threading.Thread(target=self._run, name="sectorflow-audit-group-commit", daemon=True)
        self._thread.start()

    def submit(self, entry: dict[str, Any]) -> None:
        """Queue one record (keyword arguments of ``AuditLog._write_locked``, ``event`` included).

        Raises:
            AuditWriteError: the writer was closed.
        """
        with self._cond:
            while len(self._pending) >= MAX_PENDING and not self._closing:
                self._cond.wait()
            if self._closing:
                raise AuditWriteError("The audit log is closed: no record can be queued.")
            self._pending.append(entry)
            self._submitted += 1
            self._cond.notify_all()

    @property
    def pending(self) -> int:
        """Records queued and not yet committed (or counted as lost)."""
        with self._cond:
            return self._submitted - self._done

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record queued so far is committed (or counted as lost); ``False`` on timeout."""
        with self._cond:
            target = self._submitted
            return self._cond.wait_for(lambda: self._done >= target, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Flush, then stop the thread."""
        self.flush(timeout)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
            if not self._closing:  # let a group form: fewer wake-ups and commits, each holding the GIL less often
                time.sleep(GATHER_SECONDS)
            with self._cond:
                group, self._pending = self._pending, []
                self._cond.notify_all()  # room for callers waiting on MAX_PENDING
            try:
                self._commit(group)
            finally:
                with self._cond:
                    self._done += len(group)
                    self._cond.notify_all()

    def _commit(self, group: list[dict[str, Any]]) -> None:
        for attempt in range(self.retries + 1):
            try:
                with self.log._lock:
                    self.log._write_many_locked(group)
                    self.log._after_commit(len(group))
                self.commits += 1
                return
            except AuditWriteError:
                if attempt < self.retries:
                    self.log.stats["retried"] += 1
                    time.sleep(0.01 * (2 ** attempt))
                    continue
                _logger.error("audit group commit of %d record(s) lost after %d attempts", len(group), attempt + 1,
                              exc_info=True)
            except Exception:  # noqa: BLE001 - a malformed record: write the others one by one
                lost = 0
                for entry in group:
                    try:
                        with self.log._lock:
                            self.log._write_many_locked([entry])
                            self.log._after_commit(1)
                    except Exception:  # noqa: BLE001
                        lost += 1
                        _logger.error("audit record %r lost", entry.get("event"), exc_info=True)
                self._lost(lost)
                return
            self._lost(len(group))
            return

    def _lost(self, n: int) -> None:
        if n:
            self.log.stats["lost"] += n
            if self.on_lost is not None:
                self.on_lost(n)
