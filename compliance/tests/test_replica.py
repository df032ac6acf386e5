"""Detect and recover (issue 23, item 4): a replica written with every commit (or asynchronously, with a bounded,
reported lag), checked by ``audit verify``; ``audit restore --from REPLICA`` repairs altered, deleted and truncated
records from a replica that verifies and refuses one that does not; losing the replica appends an alarm record.
Each store kind: SQLite (replica another SQLite file) and PostgreSQL (replica another schema), plus a SQLite log
with a PostgreSQL replica (the remote case)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from audit_support import drop_guards, pg_dsn, raw_sql
from sectorflow import Taskflow, cli
from sectorflow.compliance import plugin as audit_plugin
from sectorflow.compliance import runtime
from sectorflow.compliance.store import open_store

TXNS = [{"customer_id": "c-100", "amount": 5.0}, {"customer_id": "c-200", "amount": 7.5}]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture(params=["sqlite", "pg", "sqlite+pg-replica"])
def kinds(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """``(env, open_primary, open_replica, replica_url, replica_schema)`` for the store kinds under test."""
    schemas: list[str] = []
    primary_url, primary_schema = str(tmp_path / "db" / "audit.db"), "sectorflow_audit"
    replica_url, replica_schema = str(tmp_path / "replica" / "audit-replica.db"), "sectorflow_audit"
    if request.param != "sqlite":
        dsn = pg_dsn()
        replica_url, replica_schema = dsn, f"r_{uuid.uuid4().hex[:10]}"
        schemas.append(replica_schema)
        if request.param == "pg":
            primary_url, primary_schema = dsn, f"p_{uuid.uuid4().hex[:10]}"
            schemas.append(primary_schema)
    toml = tmp_path / "audit.toml"
    toml.write_text(f'[audit]\npg_schema = "{primary_schema}"\nreplica_pg_schema = "{replica_schema}"\n'
                    f'checkpoint_every = 4\n')
    env = {"SECTORFLOW_AUDIT_DB": primary_url, "SECTORFLOW_AUDIT_REPLICA": replica_url,
           "SECTORFLOW_AUDIT_CONFIG": str(toml)}
    yield (env, lambda: open_store(primary_url, pg_schema=primary_schema),
           lambda: open_store(replica_url, pg_schema=replica_schema), replica_url, replica_schema)
    runtime.reset()
    if schemas:
        import psycopg

        with psycopg.connect(pg_dsn(), autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def rows(store: Any) -> list[tuple[Any, ...]]:
    return [(r.seq, r.time, r.event, r.body, r.leaf, r.archive) for r in store.iter_records()]


def test_replica_follows_every_commit_and_restore_repairs_alter_delete_truncate(
        audited: Any, kinds: Any, capsys: pytest.CaptureFixture[str]) -> None:
    env, open_primary, open_replica, replica_url, replica_schema = kinds
    lg = audited(**env)
    tf = Taskflow("score")
    for _ in range(6):
        tf(TXNS)
    lg.checkpoint()
    replica = open_replica()
    assert rows(replica) == rows(lg.store) and len(replica.checkpoints()) == len(lg.store.checkpoints())
    assert lg.replica.lag()["records"] == 0
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "replica: OK" in out, out
    good = rows(open_replica())
    size = lg.store.size()
    # The attacker: alter record 4 (body and leaf), delete record 6, cut off the tail with its checkpoints.
    from sectorflow.compliance.merkle import leaf_hash
    from sectorflow.compliance.records import canonical

    drop_guards(lg.store)
    body = json.loads(next(lg.store.iter_records(4, 5)).body)
    body["outcome"] = "failure"
    raw_sql(lg.store, "UPDATE records SET body = ?, leaf = ? WHERE seq = 4", (canonical(body), leaf_hash(canonical(body))))
    raw_sql(lg.store, "DELETE FROM records WHERE seq = 6")
    cut = size - 5
    raw_sql(lg.store, "DELETE FROM records WHERE seq >= ?", (cut,))
    raw_sql(lg.store, "DELETE FROM checkpoints WHERE size > ?", (cut,))
    runtime.reset()
    code, out = run(["audit", "verify"], capsys)
    assert code == 1 and "TAMPERED" in out, out
    displaced = Path(str(kinds[0]["SECTORFLOW_AUDIT_CONFIG"])).parent / "displaced.jsonl"
    code, out = run(["audit", "restore", "--from", replica_url, "--schema", replica_schema, "--json",
                     "--displaced", str(displaced)], capsys)
    assert code == 0, out
    result = json.loads(out)
    assert result["verify"]["ok"] and result["restored"]["displaced_file"] == str(displaced)
    # 4 altered; 6 deleted; the cut tail missing, except where this process's own audit.read records of the
    # verify above landed after the cut: those rows were replaced, and kept in the displaced file
    assert 4 in result["restored"]["altered"] and 6 in result["restored"]["missing"]
    assert sorted(result["restored"]["altered"] + result["restored"]["missing"]) == [4, 6, *range(cut, size)]
    kept = [json.loads(line) for line in displaced.read_text().splitlines()]
    assert json.loads(kept[0]["body"])["outcome"] == "failure" and kept[0]["seq"] == 4
    primary = open_primary()
    restored = rows(primary)
    assert restored[:len(good)] == good  # every record the replica held, byte for byte
    events = [json.loads(r[3])["event"] for r in restored[len(good):]]
    assert "audit.restored" in events
    with pytest.raises(Exception, match="append-only"):  # the guards are back
        raw_sql(primary, "DELETE FROM records WHERE seq = 1")
    primary.close()
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "replica: OK" in out, out


def test_a_replica_that_does_not_verify_is_refused_and_nothing_changes(
        audited: Any, kinds: Any, capsys: pytest.CaptureFixture[str]) -> None:
    env, open_primary, open_replica, replica_url, replica_schema = kinds
    lg = audited(**env)
    Taskflow("score")(TXNS)
    lg.checkpoint()
    drop_guards(lg.store)
    raw_sql(lg.store, "DELETE FROM records WHERE seq = 2")
    replica = open_replica()
    drop_guards(replica)
    body = next(replica.iter_records(4, 5)).body.replace(b'"success"', b'"failure"')
    raw_sql(replica, "UPDATE records SET body = ? WHERE seq = 4", (body,))
    before = rows(lg.store)
    runtime.reset()
    code, out = run(["audit", "restore", "--from", replica_url, "--schema", replica_schema], capsys)
    assert code == 2 and "The replica does not verify" in out and "record 4" in out, out
    primary = open_primary()
    assert rows(primary) == before
    primary.close()
    code, out = run(["audit", "verify"], capsys)
    assert code == 1 and "replica: BAD" in out


def test_losing_the_replica_appends_one_alarm_and_catching_up_another(audited: Any, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    replica_path = tmp_path / "replica.db"
    lg = audited(SECTORFLOW_AUDIT_REPLICA=str(replica_path))
    tf = Taskflow("score")
    tf(TXNS)
    lg.replica.retry_seconds = 0.0
    lg.replica.store.close()  # the replica goes away (a closed connection fails every statement)
    with caplog.at_level("ERROR", logger="sectorflow.audit"):
        tf(TXNS)
        tf(TXNS)
    assert len([r for r in caplog.records if "audit replica lost" in r.getMessage()]) == 1
    events = [json.loads(r.body)["event"] for r in lg.store.iter_records()]
    assert events.count("audit.replica_failed") == 1 and events.count("audit.replica_restored") == 1
    # it came back at the next append (reopened): the alarm, the gap and the recovery are all in the replica too
    replica = open_store(replica_path)
    assert rows(replica) == rows(lg.store)
    failed = json.loads(next(r.body for r in lg.store.iter_records() if b"audit.replica_failed" in r.body))
    assert failed["outcome"] == "failure" and "replica" in failed["details"]
    code, out = run(["audit", "status", "--json"], capsys)
    info = json.loads(out)
    assert code == 0 and info["replica"].endswith("(ok)") and info["replica_lag"]["records"] <= 1


def test_an_unreachable_replica_is_reported_as_lag_and_fails_verify(audited: Any, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    lg = audited(SECTORFLOW_AUDIT_REPLICA=str(blocker / "replica.db"))
    Taskflow("score")(TXNS)
    assert lg.replica.down_since is not None and lg.replica.lag()["records"] >= 4
    events = [json.loads(r.body)["event"] for r in lg.store.iter_records()]
    assert events.count("audit.replica_failed") == 1
    code, out = run(["audit", "verify"], capsys)
    assert code == 1 and "replica: BAD" in out and "no replica at" in out


def test_async_replica_catches_up_within_its_bound(audited: Any, tmp_path: Path) -> None:
    replica_path = tmp_path / "replica.db"
    lg = audited(SECTORFLOW_AUDIT_REPLICA=str(replica_path), SECTORFLOW_AUDIT_REPLICA_MODE="async")
    tf = Taskflow("score")
    for _ in range(5):
        tf(TXNS)
        assert lg.replica.lag()["records"] <= lg.config.replica_max_lag
    runtime.reset()  # close: a final checkpoint and copy
    primary, replica = open_store(tmp_path / "db" / "audit.db"), open_store(replica_path)
    assert rows(replica) == rows(primary) and primary.size() >= 12
    assert len(replica.checkpoints()) == len(primary.checkpoints())
