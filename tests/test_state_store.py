"""The state store (``sectorflow.state_store``): snapshot + journal per task and tenant, an unfinished run's
progress, discard and reset, on SQLite and (with ``SECTORFLOW_TEST_POSTGRES_DSN``) PostgreSQL."""

from __future__ import annotations

import os
import uuid

import pytest
from sectorflow import ConfigError, open_state_store
from sectorflow.state_store import SQLiteStateStore, default_state_path
from sectorflow.state_store_pg import PostgresStateStore

DSN = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = open_state_store(tmp_path / "state.sqlite")
        assert isinstance(s, SQLiteStateStore)
        yield s
        s.close()
        return
    if not DSN:
        pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
    schema = f"sf_state_test_{uuid.uuid4().hex[:12]}"
    s = PostgresStateStore(DSN, schema=schema)
    yield s
    s._execute(f"DROP SCHEMA {schema} CASCADE")
    s.close()


def test_journal_snapshot_and_tenants_are_kept_apart(store):
    with store.transaction():
        assert store.append("aml", "bank-a", [["t1"], ["t2"]]) > 0
        store.append("aml", "bank-a", [["t3"]])
        store.append("aml", "bank-b", [["x1"]])
    snapshot, seq, journal = store.load("aml", "bank-a")
    assert snapshot is None and seq == 0 and journal == [(1, [["t1"], ["t2"]]), (2, [["t3"]])]
    with store.transaction():
        store.put_snapshot("aml", "bank-a", {"window": [1, 2, 3], "now": 1.5})
        store.append("aml", "bank-a", [["t4"]])
    snapshot, seq, journal = store.load("aml", "bank-a")
    assert snapshot == {"window": [1, 2, 3], "now": 1.5} and seq == 2 and journal == [(3, [["t4"]])]
    assert store.load("aml", "bank-b")[2] == [(1, [["x1"]])]  # the other tenant's journal is untouched
    assert store.tenants("aml") == ["bank-a", "bank-b"] and store.tenants("other") == []
    info = store.info("aml", "bank-a")
    assert (info.journal_calls, info.journal_items) == (1, 1) and info.snapshot_bytes > 0 and info.run is None
    with store.transaction():
        assert store.reset("aml", "bank-a") is True
    assert store.load("aml", "bank-a") == (None, 0, []) and store.tenants("aml") == ["bank-b"]


def test_an_unfinished_run_advances_with_its_journal_and_can_be_discarded(store):
    with store.transaction():
        store.append("aml", "t", [["before"]])
        store.begin_run("aml", "t", "ab" * 32, "day2.csv", "/out/day2.jsonl")
    with store.transaction():
        store.append("aml", "t", [["r1"], ["r2"]], rows_done=2, output_offset=120)
    run = store.run("aml", "t")
    assert (run.input_sha256, run.rows_done, run.output_offset, run.items, run.start_seq) == ("ab" * 32, 2, 120, 2, 1)
    with store.transaction():
        assert store.discard_run("aml", "t").input == "day2.csv"
    assert store.run("aml", "t") is None and store.load("aml", "t")[2] == [(1, [["before"]])]


def test_bad_store_paths_and_modes_are_config_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="Cannot open the state store"):
        open_state_store(tmp_path / "file" / "state.sqlite")
    with pytest.raises(ConfigError, match="FULL or NORMAL"):
        open_state_store(tmp_path / "s.sqlite", synchronous="OFF")
    assert default_state_path().name == "state.sqlite"


def test_a_stateful_pipeline_without_state_dict_says_its_state_cannot_be_saved():
    from types import SimpleNamespace

    from sectorflow import Pipeline

    stateful = Pipeline(SimpleNamespace(name="ledger", stateful=True), None, None, "fp32", 1, 1, {})
    with pytest.raises(ConfigError, match="does not implement state_dict"):
        stateful.state_dict()
    with pytest.raises(ConfigError, match="does not implement load_state_dict"):
        stateful.load_state_dict({"balance": 1})
    stateless = Pipeline(SimpleNamespace(name="echo", stateful=False), None, None, "fp32", 1, 1, {})
    assert stateless.state_dict() == {}
    stateless.load_state_dict({})


def test_a_store_that_cannot_be_written_is_a_config_error_naming_it(tmp_path):
    """A read-only store (here: a read-only SQLite connection to the file, as a read-only mount or file gives) is a
    ConfigError naming the store and the fix, not a bare sqlite3.OperationalError traceback."""
    import sqlite3

    from sectorflow import ConfigError
    from sectorflow.state_store import SQLiteStateStore

    store = SQLiteStateStore(tmp_path / "state.sqlite")
    store._conn.close()
    store._conn = sqlite3.connect(f"file:{tmp_path / 'state.sqlite'}?mode=ro", uri=True, isolation_level=None,
                                  check_same_thread=False)
    with pytest.raises(ConfigError, match=r"Cannot write the state store .*state\.sqlite.*writable"):
        with store.transaction():
            store._conn.execute("CREATE TABLE probe (x)")
