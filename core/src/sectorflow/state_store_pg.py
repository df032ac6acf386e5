"""PostgreSQL state store (psycopg 3, the ``compliance`` extra): the tables of :mod:`sectorflow.state_store` in
their own schema; writers serialise on a transaction-scoped advisory lock; commits use the server's
``synchronous_commit`` (on by default: a commit that returned is on disk)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConfigError
from .state_store import _SCHEMA, StateStore, shown_store


class PostgresStateStore(StateStore):
    """PostgreSQL (psycopg 3): the same tables in ``schema``; writers serialise on a transaction advisory lock."""

    placeholder = "%s"

    def __init__(self, dsn: str, *, schema: str = "sectorflow_state") -> None:
        super().__init__()
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the installed extra
            raise ConfigError("A PostgreSQL state store needs psycopg: pip install 'sectorflow[compliance]'.") from exc
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise ConfigError(f"PostgreSQL schema {schema!r}: use lower-case letters, digits and _.")
        self.schema = schema
        self.url = shown_store(dsn)  # no password in messages
        try:
            self._conn = psycopg.connect(dsn, autocommit=True)
            with self.transaction():
                self._conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                self._conn.execute(f"SET search_path TO {schema}")
                for stmt in _SCHEMA:
                    self._conn.execute(stmt)
            self._conn.execute(f"SET search_path TO {schema}")
        except psycopg.Error as exc:
            raise ConfigError(f"Cannot open the PostgreSQL state store {self.url} (schema {schema}): {exc}.") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, params or None)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sectorflow-state:{self.schema}",))
            yield

    def close(self) -> None:
        with self._lock:
            self._conn.close()
