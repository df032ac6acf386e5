"""Helpers of the audit-log tests (imported by conftest.py and the tests; compliance/tests is put on sys.path)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from sectorflow import Pipeline, TaskResult, TaskSpec, hookimpl
from sectorflow.compliance.store import Store

PG_ENV = "SECTORFLOW_TEST_POSTGRES_DSN"


def pg_dsn() -> str:
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{PG_ENV} is unset under CI: .ci/run must start PostgreSQL with scripts/start_postgres.sh "
                        f"and export its DSN.")
        pytest.skip(f"{PG_ENV} is unset: start a server with `export {PG_ENV}=$(bash scripts/start_postgres.sh)`.")
    return dsn


def raw_sql(store: Store, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """Run SQL on a store's own connection outside the log's API, as an attacker with database access would."""
    with store.transaction():
        return store._q(sql, params)


def drop_guards(store: Store) -> None:
    """Remove the append-only triggers (an attacker with DB rights can)."""
    if type(store).__name__ == "SQLiteStore":
        for name in ("records_no_delete", "records_no_update", "checkpoints_no_change", "checkpoints_no_delete"):
            raw_sql(store, f"DROP TRIGGER IF EXISTS {name}")
    else:
        raw_sql(store, "DROP TRIGGER IF EXISTS records_guard ON records")
        raw_sql(store, "DROP TRIGGER IF EXISTS checkpoints_guard ON checkpoints")


# --- a tiny in-process task -----------------------------------------------------------------------------------------

class Txn(BaseModel):
    customer_id: str
    amount: float


class Scored(TaskResult):
    customer_id: str
    score: float


class ScorePipeline(Pipeline):
    """Doubles the amount. ``observed`` collects what the test's probe saw while forward ran."""

    probe: Callable[[], Any] | None = None
    observed: list[Any] = []

    def forward(self, batch: Any) -> list[float]:
        if ScorePipeline.probe is not None:
            ScorePipeline.observed.append(ScorePipeline.probe())
        return [item.amount * 2 for item in batch]

    def postprocess(self, items: Any, raw: Any) -> list[Scored]:
        return [Scored(customer_id=i.customer_id, score=r) for i, r in zip(items, raw)]


class TinyPlugin:
    @hookimpl
    def sectorflow_register_tasks(self, register: Callable[[TaskSpec], None]) -> None:
        register(TaskSpec(name="score", input_model=Txn, output_model=Scored, pipeline=ScorePipeline,
                          version="1.0.0", description="test task"))
        register(TaskSpec(name="plain", input_model=Txn, output_model=Scored, pipeline=ScorePipeline))
