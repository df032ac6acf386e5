"""``sectorflow audit ...`` end to end through the real CLI entry point (``sectorflow.cli.main``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from audit_support import drop_guards, raw_sql
from sectorflow import Taskflow, cli
from sectorflow.compliance import plugin as audit_plugin

TXNS = [{"customer_id": "c-100", "amount": 5.0}, {"customer_id": "c-200", "amount": 7.5}]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)  # another test may have loaded commands first
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def verify_after_altering_record_6(audited: Any, capsys: pytest.CaptureFixture[str], *,
                                   checkpoint_each_call: bool) -> tuple[int, str]:
    """Three audited calls (checkpoints after each or only at the end), record 6 edited behind the guards, then
    ``sectorflow audit verify``: returns its exit code and output."""
    lg = audited()
    tf = Taskflow("score")
    for _ in range(3):
        tf(TXNS)
        if checkpoint_each_call:
            lg.checkpoint()
    if not checkpoint_each_call:
        lg.checkpoint()
    drop_guards(lg.store)
    raw_sql(lg.store, "UPDATE records SET body = replace(body, 'success', 'failure') WHERE seq = 6")
    return run(["audit", "verify"], capsys)


def test_keygen_verify_prove_check_proof(audited: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["audit", "keygen", str(tmp_path / "k2.json"), "--trust-out", str(tmp_path / "k2.trust")], capsys)
    assert code == 0 and "ed25519:" in out and (tmp_path / "k2.json").stat().st_mode & 0o777 == 0o600
    lg = audited()
    Taskflow("score")(TXNS)
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "OK: no tampering found" in out
    code, out = run(["audit", "trust", str(tmp_path / "trust.json")], capsys)
    assert code == 0
    proof = tmp_path / "proof.json"
    code, _ = run(["audit", "prove", "3", "--out", str(proof)], capsys)
    assert code == 0 and json.loads(proof.read_text())["leaf_index"] == 3
    code, out = run(["audit", "check-proof", str(proof), "--trust", str(tmp_path / "trust.json")], capsys)
    assert code == 0 and "OK: 1 record(s) proven" in out
    code, out = run(["audit", "check-proof", str(proof), "--trust", str(tmp_path / "k2.trust")], capsys)
    assert code == 1 and "not in the trust file" in out
    assert lg.store.size() > 5


def test_verify_names_the_first_bad_record_and_exits_nonzero(audited: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out = verify_after_altering_record_6(audited, capsys, checkpoint_each_call=False)
    assert code == 1 and "TAMPERED: first bad record 6" in out and "record 6: content does not match" in out


def test_export_since_writes_json_lines_and_is_logged(audited: Any, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    lg = audited()
    Taskflow("score")(TXNS)
    out_file = tmp_path / "siem.jsonl"
    code, _ = run(["audit", "export", "--since", "2000-01-01", "--out", str(out_file)], capsys)
    assert code == 0
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    assert [r["event"] for r in rows[-2:]] == ["task.call_finished", "audit.read"]  # the read is logged first
    assert all("leaf_hash" in r and "input_digest" in r for r in rows)
    code, _ = run(["audit", "export", "--since", "2999-01-01"], capsys)
    assert code == 0
    last = json.loads(next(lg.store.iter_records(lg.store.size() - 1)).body)
    assert last["event"] == "audit.read" and last["details"]["action"] == "export"
    code, out = run(["audit", "export", "--since", "yesterday"], capsys)
    assert code != 0


def test_non_admin_is_refused_and_the_refusal_is_recorded(audited: Any, capsys: pytest.CaptureFixture[str]) -> None:
    lg = audited(SECTORFLOW_AUDIT_ADMINS="somebody-else")
    code, out = run(["audit", "export"], capsys)
    assert code == 2 and "audit-admin role" in out
    last = json.loads(next(lg.store.iter_records(lg.store.size() - 1)).body)
    assert (last["event"], last["outcome"]) == ("access.decision", "denied")


def clock_at(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Move the clock ``audit archive`` reads to ``text`` (records written now are then that much older)."""
    from datetime import datetime

    from sectorflow.compliance import admin

    monkeypatch.setattr(admin, "utc_now", lambda: datetime.fromisoformat(text))


def test_archive_keeps_proofs_and_the_chain(audited: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    lg = audited()
    Taskflow("score")(TXNS)
    n = lg.store.size()
    clock_at(monkeypatch, "2099-01-01T00:00:00+00:00")
    code, out = run(["audit", "archive", str(tmp_path / "arch")], capsys)
    assert code == 0 and "archived to" in out
    files = list((tmp_path / "arch").glob("*.jsonl.gz"))
    assert len(files) == 1
    with gzip.open(files[0], "rt") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 1 + n  # checkpoint + every expired record
    archived = [r for r in lg.store.iter_records() if r.archive]
    assert len(archived) == n and all(r.body is None for r in archived)
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and f"archived: {n}" in out
    code, _ = run(["audit", "trust", str(tmp_path / "t.json")], capsys)
    code, out = run(["audit", "check-proof", str(files[0]), "--trust", str(tmp_path / "t.json")], capsys)
    assert code == 0 and f"OK: {n} record(s) proven" in out
    last = [json.loads(r.body) for r in lg.store.iter_records() if r.body][-2]
    assert last["event"] == "audit.archived" and last["details"]["retention_days"] == 180
    code, out = run(["audit", "archive", str(tmp_path / "arch"), "--now", "2000-01-01T00:00:00Z"], capsys)
    assert "nothing has expired" in out


def test_archive_as_of_a_future_time_is_refused_and_moves_nothing(audited: Any, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: `audit archive --now 2099-01-01` took every record (written seconds before) out of the live
    store, although none had reached its 180-day retention. A --now later than the clock is refused with a typed
    error naming the clock; one not later than the clock is honoured."""
    import getpass
    from datetime import datetime, timezone

    from sectorflow.compliance import AuditArchiveError
    from sectorflow.compliance.admin import AuditAdmin

    lg = audited()
    Taskflow("score")(TXNS)
    n = lg.store.size()
    code, out = run(["audit", "archive", str(tmp_path / "arch"), "--now", "2099-01-01T00:00:00Z"], capsys)
    out = " ".join(out.split())
    assert code == 2, out
    assert "Cannot archive as of 2099-01-01T00:00:00.000000Z: that is later than now (" in out
    assert "180-day retention" in out and "Give a time not later than now, or leave --now out" in out
    assert not (tmp_path / "arch").exists()
    assert [r for r in lg.store.iter_records() if r.archive or r.body is None] == []
    assert not any(json.loads(r.body)["event"] == "audit.archived" for r in lg.store.iter_records())
    with pytest.raises(AuditArchiveError) as caught:  # the same refusal through the Python API (naive = UTC)
        AuditAdmin(lg, getpass.getuser()).archive_expired(tmp_path / "arch", now=datetime(2099, 1, 1))
    assert caught.value.details["now"] == "2099-01-01T00:00:00.000000Z"
    assert caught.value.http_status == 400
    # with the clock in 2099, the same --now is not in the future: the records, 73 years old then, are archived
    clock_at(monkeypatch, "2099-01-01T00:00:00+00:00")
    code, out = run(["audit", "archive", str(tmp_path / "arch"), "--now", "2099-01-01T00:00:00Z"], capsys)
    assert code == 0 and "archived to" in out
    assert len([r for r in lg.store.iter_records() if r.archive]) == n
    assert datetime(2099, 1, 1, tzinfo=timezone.utc) > datetime.now(timezone.utc)  # the premise of the first call


def test_sectorflow_run_calls_are_recorded_with_the_cli_channel(audited: Any, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    lg = audited()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in TXNS))
    code, _ = run(["run", "score", str(src), "-o", str(tmp_path / "out.jsonl")], capsys)
    assert code == 0 and len((tmp_path / "out.jsonl").read_text().splitlines()) == 2
    calls = [json.loads(r.body) for r in lg.store.iter_records() if r.event.startswith("task.call_")]
    assert [c["event"] for c in calls] == ["task.call_started", "task.call_finished"]
    assert all(c["channel"] == "cli" and c["n_items"] == 2 for c in calls)


def test_verify_of_a_missing_store_is_an_error_not_an_empty_clean_log(audited: Any, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A mistyped or deleted SQLite path must not verify as "OK" (found by a fresh-user test)."""
    from sectorflow.compliance import runtime

    audited()
    missing = tmp_path / "nowhere" / "audit.db"
    monkeypatch.setenv("SECTORFLOW_AUDIT_DB", str(missing))
    runtime.reset()
    code, out = run(["audit", "verify"], capsys)
    assert code == 2 and f"No audit log at {missing}" in out
    assert not missing.exists()  # a read never creates the store


def test_checkpoint_ranges_in_verify_messages_include_the_altered_record(audited: Any,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A root covers every record below its size: after one altered record, no message may blame only later ones
    (a fresh-user test saw "records 13..25 do not match" for an edit of record 10)."""
    import re

    code, out = verify_after_altering_record_6(audited, capsys, checkpoint_each_call=True)
    assert code == 1 and "TAMPERED: first bad record 6" in out
    ranges = [(int(a), int(b)) for a, b in re.findall(r"records (\d+)\.\.(\d+) do not match", out)]
    assert ranges and all(a <= 6 <= b for a, b in ranges), out


def _tamper_closed_store(audited: Any, sql: list[str]) -> None:
    """Three audited calls, the log closed (its last checkpoint signed), then ``sql`` run on the SQLite file with
    the guards dropped, as an attacker with file access would; the next command opens the log afresh."""
    import os
    import sqlite3

    from sectorflow.compliance import runtime

    audited()
    tf = Taskflow("score")
    for _ in range(3):
        tf(TXNS)
    runtime.reset()  # closes the log: every record is under a signed checkpoint now
    conn = sqlite3.connect(os.environ["SECTORFLOW_AUDIT_DB"])
    for name in ("records_no_delete", "records_no_update", "checkpoints_no_change", "checkpoints_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("sql, says", [
    (["UPDATE records SET seq = '4x' WHERE seq = 4"], "holds seq '4x', not an integer"),
    (["INSERT INTO checkpoints SELECT size + 1000, root, time, key_id, signature, peaks, note_sig FROM checkpoints "
      "ORDER BY size DESC LIMIT 1"], "cannot be restored"),
])
def test_verify_reports_a_store_too_damaged_to_open_as_tampered(audited: Any, capsys: pytest.CaptureFixture[str],
                                                                sql: list[str], says: str) -> None:
    """Fresh-user finding: a seq rewritten as text crashed ``audit verify`` with a traceback, and a forged checkpoint
    made it exit 2 with "error: 7 peak hashes cannot describe a tree of size 1731": the log could not be opened, so
    nothing was verified. Now the store is verified as found and reported TAMPERED (exit 1)."""
    _tamper_closed_store(audited, sql)
    code, out = run(["audit", "verify"], capsys)
    assert code == 1, out
    assert "TAMPERED: first bad record" in out and says in out and "Traceback" not in out
    assert "this verify could not be recorded" in out


def test_verify_warns_about_records_it_signed_for_the_first_time(audited: Any, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """With every checkpoint deleted and a record rewritten with a matching leaf hash, the verifying process signs
    the whole store when it opens it: verify says how many records nothing vouched for, and the checkpoints a third
    party kept catch the rewrite."""
    import hashlib
    import os
    import sqlite3

    audited()
    Taskflow("score")(TXNS)
    kept = tmp_path / "kept.jsonl"
    code, _ = run(["audit", "checkpoints", str(kept)], capsys)
    assert code == 0 and kept.read_text().strip()
    _tamper_closed_store(audited, ["DELETE FROM checkpoints"])
    conn = sqlite3.connect(os.environ["SECTORFLOW_AUDIT_DB"])
    # a rewrite that keeps the columns consistent (a body without the time and event its row says is caught alone)
    body = conn.execute("SELECT body FROM records WHERE seq = 1").fetchone()[0].replace(b'"sectorflow"', b'"forger"')
    size = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    conn.execute("UPDATE records SET body = ?, leaf = ? WHERE seq = 1", (body, hashlib.sha256(b"\x00" + body).digest()))
    conn.commit()
    conn.close()
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and f"WARNING: {size} record(s) had no checkpoint when this command opened the log" in out
    code, out = run(["audit", "verify", "--checkpoints", str(kept)], capsys)
    assert code == 1 and "history rewritten" in out and "WARNING" not in out


def test_a_body_cleared_as_if_archived_without_an_archive_record_is_tampering(audited: Any,
                                                                               capsys: pytest.CaptureFixture[str]
                                                                               ) -> None:
    """Fresh-user finding: setting a record's body to NULL and its archive column to any file name passed verify
    ("archived: 1", OK): the leaf hash alone still verifies. Only ``audit archive`` clears bodies, and it appends an
    ``audit.archived`` record naming the file and the range (a real archive still verifies:
    ``test_archive_keeps_proofs_and_the_chain``)."""
    _tamper_closed_store(audited, ["UPDATE records SET body = NULL, archive = 'x.jsonl.gz' WHERE seq = 3"])
    code, out = run(["audit", "verify"], capsys)
    assert code == 1 and "TAMPERED: first bad record 3" in out
    assert "record 3: body cleared as archived to 'x.jsonl.gz', but no audit.archived record names that file" in out


@pytest.mark.parametrize("name, content", [("proof.json", b"garbage"), ("proof.json", b"[1, 2]"),
                                           ("arch.jsonl.gz", b"not gzip"), ("empty.jsonl.gz", b"")])
def test_check_proof_of_a_file_that_is_no_proof_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        name: str, content: bytes) -> None:
    """Fresh-user finding: `audit check-proof` on a file that is not JSON ended in a JSONDecodeError traceback."""
    trust = tmp_path / "t.trust"
    code, _ = run(["audit", "keygen", str(tmp_path / "k.json"), "--trust-out", str(trust)], capsys)
    assert code == 0
    (tmp_path / name).write_bytes(gzip.compress(content) if name == "empty.jsonl.gz" else content)
    code, out = run(["audit", "check-proof", str(tmp_path / name), "--trust", str(trust)], capsys)
    assert code == 2 and "Traceback" not in out, out
    assert f"{tmp_path / name} is not a proof file" in " ".join(out.split()), out


def test_an_archive_run_that_stops_before_clearing_bodies_leaves_a_clean_log(audited: Any, tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit.archived record is appended before the bodies are cleared: a crash between the two leaves bodies
    in place (verify OK, a rerun archives them again), never cleared bodies that no record names (tampering)."""
    import getpass
    from datetime import datetime, timezone

    from sectorflow.compliance.admin import AuditAdmin

    lg = audited()
    Taskflow("score")(TXNS)

    def crash(*args: Any) -> None:
        raise OSError("power cut")

    clock_at(monkeypatch, "2099-01-01T00:00:00+00:00")
    with monkeypatch.context() as patched:
        patched.setattr(type(lg.store), "mark_archived_seqs", crash)
        with pytest.raises(OSError, match="power cut"):
            AuditAdmin(lg, getpass.getuser()).archive_expired(tmp_path / "a1",
                                                              now=datetime(2099, 1, 1, tzinfo=timezone.utc))
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "archived: 0" in out, out
    code, out = run(["audit", "archive", str(tmp_path / "a2")], capsys)
    assert code == 0 and "archived to" in out
    code, out = run(["audit", "verify"], capsys)
    assert code == 0 and "OK: no tampering found" in out, out
