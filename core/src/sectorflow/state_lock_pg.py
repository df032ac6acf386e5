"""The state store's lock on PostgreSQL (:func:`sectorflow.state_lock` for a ``postgresql://`` URL; psycopg 3, the
``compliance`` extra): a session-level advisory lock (``pg_try_advisory_lock``; PostgreSQL manual, "Explicit
Locking: Advisory Locks") on the store's schema, held on a connection of its own whose ``application_name`` is
``sectorflow WHAT pid N``, so that a refused process names the holder (``pg_locks`` joined with
``pg_stat_activity``). PostgreSQL releases it when that connection ends, also when the holder is killed (its socket
closes), so no stale lock is left.

A run or a reset takes it exclusively; ``sectorflow serve`` (``what="serve"``) takes it shared, because replicas
behind one load balancer share one PostgreSQL store with each tenant pinned to one replica (docs/deployment.md,
"Stateful tasks and replicas"): servers run side by side, a run is refused while any server holds the store, and a
server is refused while a run or reset does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConfigError
from .state_store import shown_store

_CLASS = 0x5346  # first key of the two-key advisory lock ("SF"); the second is hashtext of the schema's name
_SCHEMA = "sectorflow_state"  # the schema open_state_store uses for a postgresql:// URL
_SHARED = {"serve"}


def _connect(dsn: str, what: str) -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installed extra
        raise ConfigError("A PostgreSQL state store needs psycopg: pip install 'sectorflow[compliance]'.") from exc
    try:
        return psycopg.connect(dsn, autocommit=True, application_name=f"sectorflow {what} pid {os.getpid()}")
    except psycopg.Error as exc:
        raise ConfigError(f"Cannot open the PostgreSQL state store {shown_store(dsn)} to take its lock: {exc}.") from exc


def _holder(conn: Any) -> dict[str, object] | None:
    """A process holding the store's advisory lock in this database (shared or not), from its application_name."""
    row = conn.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
        "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND l.classid = %s::bigint::oid AND l.objid = (hashtext(%s)::bigint & 4294967295)::oid "
        "ORDER BY a.backend_start LIMIT 1", (_CLASS, _SCHEMA)).fetchone()
    if row is None:
        return None
    found = re.fullmatch(r"sectorflow (\S+) pid (\d+)", row[0] or "")
    return {"pid": int(found.group(2)), "doing": found.group(1)} if found else {"pid": None, "doing": "run"}


def pg_state_lock_holder(dsn: str) -> dict[str, object] | None:
    """``{"pid": N or None, "doing": ...}`` of a process holding the lock of the store at ``dsn``, or ``None``.

    Raises:
        ConfigError: the server cannot be reached (the message names the store, without its password).
    """
    conn = _connect(dsn, "probe")
    try:
        return _holder(conn)
    finally:
        conn.close()


@contextmanager
def pg_state_lock(dsn: str, what: str) -> Iterator[None]:
    """Hold the lock of the store at ``dsn`` for the block: shared for ``what="serve"``, else exclusive.

    Raises:
        ConfigError: another process holds it in a conflicting mode: "another WHAT (pid N) is using URL; wait for it
            to finish or use another --state" (``details``: ``state``, ``pid``, ``lock``); the server cannot be
            reached.
    """
    conn = _connect(dsn, what)
    try:
        take = "pg_try_advisory_lock_shared" if what in _SHARED else "pg_try_advisory_lock"
        if not conn.execute(f"SELECT {take}(%s, hashtext(%s))", (_CLASS, _SCHEMA)).fetchone()[0]:
            holder = _holder(conn) or {"pid": None, "doing": "run"}
            pid, shown = holder["pid"], shown_store(dsn)
            raise ConfigError(f"another {holder['doing']} (pid {pid if pid is not None else 'unknown'}) is using "
                              f"{shown}; wait for it to finish or use another --state.",
                              details={"state": shown, "pid": pid, "lock": f"advisory lock on schema {_SCHEMA}"})
        yield  # closing the connection below ends the session and with it the advisory lock
    finally:
        conn.close()
