"""PostgreSQL log store (psycopg 3): the same tables and guards as SQLite, in their own schema.

Writers serialise on a transaction-scoped advisory lock; commits use the server's ``synchronous_commit`` (on by
default: a commit that returned is on disk).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .deferred_signals import signals_deferred
from .errors import AuditConfigError
from .store import _GUARD, _SCHEMA, Store

_PG_TRIGGERS = """
CREATE OR REPLACE FUNCTION {schema}.records_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN RAISE EXCEPTION 'audit records are append-only'; END IF;
  IF {guard} THEN
    RAISE EXCEPTION 'audit records are append-only (only archiving may clear a body)';
  END IF;
  RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION {schema}.checkpoints_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'checkpoints are append-only'; END $$;
DROP TRIGGER IF EXISTS records_guard ON {schema}.records;
CREATE TRIGGER records_guard BEFORE UPDATE OR DELETE ON {schema}.records
  FOR EACH ROW EXECUTE FUNCTION {schema}.records_guard();
DROP TRIGGER IF EXISTS checkpoints_guard ON {schema}.checkpoints;
CREATE TRIGGER checkpoints_guard BEFORE UPDATE OR DELETE ON {schema}.checkpoints
  FOR EACH ROW EXECUTE FUNCTION {schema}.checkpoints_guard();
"""


class PostgresStore(Store):
    """PostgreSQL backend. ``schema`` holds the tables (created on first open)."""

    placeholder = "%s"

    def __init__(self, dsn: str, *, schema: str = "sectorflow_audit") -> None:
        super().__init__()
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the installed extra
            raise AuditConfigError("PostgreSQL audit store needs psycopg: pip install 'sectorflow[compliance]'.") \
                from exc
        self._psycopg = psycopg
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise AuditConfigError(f"PostgreSQL schema {schema!r}: use lower-case letters, digits and _.")
        self.schema = schema
        self._dsn = dsn
        try:
            self._conn = psycopg.connect(dsn, autocommit=True)
            with self.transaction():
                self._conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                self._conn.execute(f"SET search_path TO {schema}")
                for stmt in _SCHEMA:
                    self._conn.execute(stmt.format(blob="BYTEA"))
                self._conn.execute("ALTER TABLE checkpoints ADD COLUMN IF NOT EXISTS note_sig BYTEA")
                self._conn.execute(_PG_TRIGGERS.format(schema=schema, guard=_GUARD))
            self._conn.execute(f"SET search_path TO {schema}")
        except psycopg.Error as exc:
            raise AuditConfigError(f"Cannot open the PostgreSQL audit store (schema {schema}): {exc}.") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, params or None)

    @contextmanager
    def transaction(self, durable: bool = True) -> Iterator[None]:
        with self._lock, signals_deferred(), self._conn.transaction():  # no Ctrl-C between BEGIN and COMMIT
            if not durable:  # this commit returns before its WAL flush; a later synchronous commit flushes it too
                self._conn.execute("SET LOCAL synchronous_commit TO off")
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sectorflow-audit:{self.schema}",))
            yield

    @contextmanager
    def guards_lifted(self) -> Iterator[None]:
        self._conn.execute("DROP TRIGGER IF EXISTS records_guard ON records")
        self._conn.execute("DROP TRIGGER IF EXISTS checkpoints_guard ON checkpoints")
        yield
        # CREATE OR REPLACE / DROP IF EXISTS: also puts back a guard an attacker dropped
        self._conn.execute(_PG_TRIGGERS.format(schema=self.schema, guard=_GUARD))

    def reader_factory(self) -> Callable[[], PostgresStore]:
        return functools.partial(PostgresStore, self._dsn, schema=self.schema)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
