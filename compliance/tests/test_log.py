"""The audit log on real stores (SQLite file and PostgreSQL server): fields, digests, checkpoints, tamper detection,
key rotation, proofs and crypto-shredding."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from typing import Any

import pytest

from audit_support import drop_guards, raw_sql
from sectorflow.compliance import AuditLog, generate_key_file, verify_log, verify_proof_document
from sectorflow.compliance.admin import AuditAdmin
from sectorflow.compliance.errors import AuditAccessDenied
from sectorflow.compliance.keys import load_trust_file, write_trust_file
from sectorflow.compliance.merkle import ProofError
from sectorflow.compliance.records import OBJECT_FIELDS, make_object

MLPS_FIELDS = {"seq", "time", "event", "actor", "tenant", "source", "object", "outcome", "reason", "request_id",
               "input_digest", "output_digest"}


def fill(lg: AuditLog, n: int) -> None:
    for i in range(n):
        lg.append("test.event", actor=f"user{i % 3}", tenant="bank-a", source="10.0.0.7", channel="python",
                  obj=make_object(task="aml", model_name="gbdt", model_version="1.2", weights_sha256="ab" * 32),
                  outcome="success" if i % 5 else "failure", reason=None if i % 5 else "boom",
                  request_id=f"req-{i}", n_items=1, inputs=[{"account": f"62220{i:05d}"}], details={"i": i})


def bodies(lg: AuditLog) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in lg.store.iter_records()]


def test_records_carry_every_field_and_no_clear_input(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=4)
    fill(lg, 10)
    recs = bodies(lg)
    assert [r["seq"] for r in recs] == list(range(10))
    for r in recs:
        assert MLPS_FIELDS <= set(r)
        assert set(r["object"]) == set(OBJECT_FIELDS)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", r["time"])
    assert recs[0]["outcome"] == "failure" and recs[0]["reason"] == "boom"
    assert recs[3]["object"]["weights_sha256"] == "ab" * 32 and recs[3]["actor"] == "user0"
    # the digest is HMAC-SHA256 under the key file's digest key, recomputable by whoever holds that key
    expected = hmac.new(keyfile.hmac_key, b'[{"account":"6222000003"}]', hashlib.sha256).hexdigest()
    assert recs[3]["input_digest"] == f"hmac-sha256:{expected}"
    # nothing in the store holds the account number in clear
    dump = "".join(r.body.decode() for r in lg.store.iter_records())
    assert "6222000003" not in dump


def test_clean_log_verifies_and_checkpoints_are_signed(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=8)
    fill(lg, 30)
    lg.checkpoint()
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert report.ok, report.problems
    assert report.size == 30 and report.checkpoints == 4 and report.unsigned_tail == 0
    other = generate_key_file(keyfile.path.parent / "other.json")
    wrong = verify_log(lg.store, other.trusted_keys())
    assert not wrong.ok and "untrusted key" in wrong.problems[0]


def test_altered_record_is_named(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=8)
    fill(lg, 20)
    drop_guards(lg.store)
    body = json.loads(next(lg.store.iter_records(13, 14)).body)
    body["outcome"] = "success"
    raw_sql(lg.store, "UPDATE records SET body = ? WHERE seq = ?", (json.dumps(body).encode(), 13))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 13


def test_altered_record_with_recomputed_leaf_is_caught_by_the_checkpoint(make_log: Any, keyfile: Any) -> None:
    from sectorflow.compliance.merkle import leaf_hash
    from sectorflow.compliance.records import canonical

    lg = make_log(checkpoint_every=8)
    fill(lg, 20)
    drop_guards(lg.store)
    body = json.loads(next(lg.store.iter_records(10, 11)).body)
    body["actor"] = "someone-else"
    new = canonical(body)
    raw_sql(lg.store, "UPDATE records SET body = ?, leaf = ? WHERE seq = ?", (new, leaf_hash(new), 10))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 8  # first record of the checkpointed range 8..15
    assert "records 8..15 do not match" in report.problems[0]


def test_deleted_record_is_named(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=5)
    fill(lg, 12)
    drop_guards(lg.store)
    raw_sql(lg.store, "DELETE FROM records WHERE seq = 6")
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 6 and "missing" in report.problems[0]


def test_forged_checkpoint_signature_fails(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=5)
    fill(lg, 12)
    drop_guards(lg.store)
    raw_sql(lg.store, "UPDATE checkpoints SET time = ? WHERE size = 10", ("2020-01-01T00:00:00.000000Z",))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and any("bad signature" in p for p in report.problems)


def test_truncation_is_caught_by_checkpoints_a_third_party_kept(make_log: Any, keyfile: Any, tmp_path: Any) -> None:
    lg = make_log(checkpoint_every=5)
    fill(lg, 12)
    lg.checkpoint()
    admin = AuditAdmin(lg, "auditor", roles={"audit_admin"})
    kept = tmp_path / "third-party-checkpoints.jsonl"
    assert admin.export_checkpoints(kept) >= 3
    external = [json.loads(line) for line in kept.read_text().splitlines()]
    assert verify_log(lg.store, keyfile.trusted_keys(), external=external).ok
    drop_guards(lg.store)  # the attacker cuts the tail and its checkpoints: the store alone looks fine
    raw_sql(lg.store, "DELETE FROM records WHERE seq >= 10")
    raw_sql(lg.store, "DELETE FROM checkpoints WHERE size > 10")
    assert verify_log(lg.store, keyfile.trusted_keys()).ok
    report = verify_log(lg.store, keyfile.trusted_keys(), external=external)
    assert not report.ok and any("truncated" in p for p in report.problems)


def test_append_only_guards_refuse_update_and_delete(make_log: Any) -> None:
    lg = make_log()
    fill(lg, 3)
    with pytest.raises(Exception, match="append-only"):
        raw_sql(lg.store, "DELETE FROM records WHERE seq = 1")
    with pytest.raises(Exception, match="append-only"):
        raw_sql(lg.store, "UPDATE records SET body = ? WHERE seq = 1", (b"{}",))
    lg.checkpoint()
    with pytest.raises(Exception, match="append-only"):
        raw_sql(lg.store, "DELETE FROM checkpoints")
    assert lg.store.size() == 3


def test_key_rotation_is_recorded_and_trust_follows_the_chain(make_log: Any, keyfile: Any, tmp_path: Any) -> None:
    lg = make_log(checkpoint_every=4)
    first_trust = tmp_path / "first.trust.json"
    write_trust_file({keyfile.key_id: keyfile.public_key}, first_trust)
    fill(lg, 6)
    old_id = keyfile.key_id
    new_id = lg.rotate_key(actor="secadmin", reason="yearly")
    assert new_id != old_id and lg.keys.key_id == new_id
    fill(lg, 9)
    lg.checkpoint()
    rotated = [r for r in bodies(lg) if r["event"] == "key.rotated"]
    assert rotated[0]["details"]["old_key_id"] == old_id and rotated[0]["details"]["new_key_id"] == new_id
    signers = {cp.key_id for cp in lg.store.checkpoints()}
    assert signers == {old_id, new_id}
    # a verifier who only ever trusted the first key accepts the new one through the signed rotation record
    report = verify_log(lg.store, load_trust_file(first_trust))
    assert report.ok, report.problems
    # the rewritten key file still lists the retired public key
    assert set(load_trust_file(keyfile.path)) == {old_id, new_id}


def test_inclusion_and_consistency_proofs_verify_offline(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=7)
    fill(lg, 23)
    admin = AuditAdmin(lg, "auditor", roles={"audit_admin"})
    doc = json.loads(json.dumps(admin.prove(17)))
    verify_proof_document(doc, keyfile.trusted_keys())
    assert json.loads(doc["record"])["seq"] == 17
    tampered = dict(doc, record=doc["record"].replace('"user2"', '"user1"'))
    with pytest.raises(ProofError):
        verify_proof_document(tampered, keyfile.trusted_keys())
    cons = admin.prove_consistency(9)
    from sectorflow.compliance.merkle import verify_consistency

    verify_consistency(9, cons["second"], base64.b64decode(cons["first_root"]), base64.b64decode(cons["second_root"]),
                       [base64.b64decode(p) for p in cons["proof"]])


def test_reads_need_the_audit_admin_role_and_are_logged(make_log: Any) -> None:
    lg = make_log(audit_admins=frozenset({"alice"}), operators=frozenset({"bob"}))
    fill(lg, 2)
    with pytest.raises(AuditAccessDenied):
        AuditAdmin(lg, "bob")
    with pytest.raises(AuditAccessDenied, match="separation"):
        AuditAdmin(lg, "carol", roles={"audit_admin", "operator"})
    rows = list(AuditAdmin(lg, "alice").export())
    events = [(r["event"], r["actor"], r["outcome"]) for r in bodies(lg)]
    assert ("access.decision", "bob", "denied") in events and ("access.decision", "carol", "denied") in events
    assert ("audit.read", "alice", "success") in events
    assert [r["seq"] for r in rows] == list(range(len(rows)))


def test_crypto_shredding_one_subject_keeps_the_chain(make_log: Any, keyfile: Any) -> None:
    lg = make_log(encrypt_payloads=True, checkpoint_every=3)
    for cust, amount in (("alice-001", 10.0), ("bob-002", 20.0), ("alice-001", 30.0)):
        lg.append("task.call_started", actor="svc", obj=make_object(task="aml"), outcome="started", n_items=1,
                  inputs=[{"customer_id": cust, "amount": amount}], subjects=[cust])
    admin = AuditAdmin(lg, "auditor", roles={"audit_admin"})
    first = admin.read_payloads(0)
    assert first[0]["items"] == '[{"amount":10.0,"customer_id":"alice-001"}]'
    raw = b"".join(ct for s in range(3) for (_p, _s, _n, ct) in lg.store.payloads(s))
    assert b"alice-001" not in raw and b"bob-002" not in raw  # ciphertext only
    assert admin.shred_subject("alice-001", reason="PIPL art. 47 request #7") == 2
    assert admin.read_payloads(0) == [] and admin.read_payloads(2) == []
    assert admin.read_payloads(1)[0]["items"] == '[{"amount":20.0,"customer_id":"bob-002"}]'
    lg.checkpoint()
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert report.ok, report.problems
    erased = [r for r in bodies(lg) if r["event"] == "privacy.subject_erased"]
    assert erased[0]["details"]["subject"] == lg.subject_id("alice-001") and "alice" not in json.dumps(erased)


def test_swapped_records_are_named(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=8)
    fill(lg, 10)
    drop_guards(lg.store)
    r3, r4 = lg.store.iter_records(3, 5)
    raw_sql(lg.store, "UPDATE records SET body = ?, leaf = ? WHERE seq = 3", (r4.body, r4.leaf))
    raw_sql(lg.store, "UPDATE records SET body = ?, leaf = ? WHERE seq = 4", (r3.body, r3.leaf))
    report = verify_log(lg.store, keyfile.trusted_keys())
    assert not report.ok and report.first_bad_seq == 3
    assert "record 3: body says seq 4 (moved or altered)" in report.problems
