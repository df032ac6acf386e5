"""Verify checks every column of the records table against the record body, and the checkpoints' stored peak
hashes against the records (issue 23, item 2): changing only an indexed column (``event``, ``time``, ``archive``),
body and leaf left alone, used to pass ``audit verify``. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit_support import drop_guards, raw_sql
from sectorflow import Taskflow
from sectorflow.compliance import verify_log
from sectorflow.compliance.records import b64, make_object


def fill(lg: Any, n: int) -> None:
    for i in range(n):
        lg.append("task.call_finished", actor="analyst", obj=make_object(task="aml"), request_id=f"r{i}",
                  details={"event": "decoy", "time": "decoy"})  # nested keys named like the columns
    lg.checkpoint()


@pytest.mark.parametrize("sql, params, column", [
    ("UPDATE records SET event = ? WHERE seq = 5", ("task.call_failed",), "event"),
    ("UPDATE records SET time = ? WHERE seq = 5", ("2019-01-01T00:00:00.000000Z",), "time"),
])
def test_an_altered_indexed_column_is_named(make_log: Any, keyfile: Any, sql: str, params: tuple[Any, ...],
                                            column: str) -> None:
    lg = make_log(checkpoint_every=4)
    fill(lg, 10)
    assert verify_log(lg.store, keyfile.trusted_keys()).ok
    drop_guards(lg.store)
    raw_sql(lg.store, sql, params)
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 5
    assert report.problems == [f"record 5: its {column} column says {params[0]!r} but the record says "
                               f"{json.loads(next(lg.store.iter_records(5, 6)).body)[column]!r} (column altered)"]


def test_an_archive_name_on_a_record_that_still_has_its_body_is_tampering(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=4)
    fill(lg, 6)
    drop_guards(lg.store)
    raw_sql(lg.store, "UPDATE records SET archive = ? WHERE seq = 2", ("audit-x.jsonl.gz",))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 2 and "names archive 'audit-x.jsonl.gz'" in report.problems[0]


def test_altered_checkpoint_peaks_are_caught(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=4)
    fill(lg, 6)  # checkpoints at 4 and 6 (size 6: two peaks)
    drop_guards(lg.store)
    raw_sql(lg.store, "UPDATE checkpoints SET peaks = ? WHERE size = 6", (json.dumps([b64(b"\0" * 32)] * 2),))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and any("peak hashes do not match" in p for p in report.problems)


def test_cli_verify_fails_on_an_event_column_tamper(audited: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from sectorflow import cli
    from sectorflow.compliance import plugin as audit_plugin

    lg = audited()
    Taskflow("score")([{"customer_id": "c-1", "amount": 1.0}])
    lg.checkpoint()
    drop_guards(lg.store)
    raw_sql(lg.store, "UPDATE records SET event = 'task.call_failed' WHERE event = 'task.call_finished'")
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(["audit", "verify"])
    out = capsys.readouterr().out
    assert code == 1 and "TAMPERED" in out and "its event column says 'task.call_failed'" in out
