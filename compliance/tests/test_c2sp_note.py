"""Interoperable checkpoints (issue 23, item 7): every checkpoint is also signed as a C2SP ``tlog-checkpoint``
signed note. This test checks one with its own reading of the two specifications (c2sp.org/signed-note and
c2sp.org/tlog-checkpoint), written here from the spec text and sharing no code with ``sectorflow.compliance``: it
parses the note, recomputes the key ID, verifies the Ed25519 signature with ``cryptography`` directly, and
recomputes the RFC 6962 root from the stored records with hashlib."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from sectorflow import Taskflow, cli
from sectorflow.compliance import plugin as audit_plugin

TXNS = [{"customer_id": "c-100", "amount": 5.0}, {"customer_id": "c-200", "amount": 7.5}]


def spec_verify(note: str, vkey: str) -> tuple[str, int, bytes]:
    """An independent C2SP verifier: returns ``(origin, size, root)`` or raises ``ValueError``."""
    # verifier key, in the name+hex(keyid)+base64(type||key) form
    name, key_id_hex, key_b64 = vkey.split("+", 2)  # base64 may hold "+"; the name and hex id cannot
    raw = base64.b64decode(key_b64, validate=True)
    if raw[0] != 0x01 or len(raw) != 33:
        raise ValueError("not an Ed25519 verifier key")
    public = raw[1:]
    key_id = hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]
    if key_id.hex() != key_id_hex:
        raise ValueError("verifier key id does not match its key")
    # signed-note: text ending in newline, a blank line, signature lines; split at the last empty line
    if any(ord(ch) < 0x20 and ch != "\n" for ch in note) or not note.endswith("\n"):
        raise ValueError("control characters, or no final newline")
    at = note.rfind("\n\n")
    text, sigs = note[:at + 1], note[at + 2:]
    verified = False
    for line in sigs.splitlines():
        if not line.startswith("\u2014 "):
            raise ValueError(f"bad signature line {line!r}")
        signer, sig_b64 = line[2:].split(" ")
        blob = base64.b64decode(sig_b64, validate=True)
        if signer != name or blob[:4] != key_id:
            continue  # unknown keys are ignored
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(blob[4:], text.encode("utf-8"))
        except InvalidSignature as exc:
            raise ValueError("signature of a known key does not verify") from exc
        verified = True
    if not verified:
        raise ValueError("no signature from the known key")
    # tlog-checkpoint: origin, tree size (no leading zeros), base64 root hash, optional extension lines
    lines = text.split("\n")[:-1]
    if len(lines) < 3 or any(not line for line in lines):
        raise ValueError("a checkpoint has at least three non-empty lines")
    origin, size_text, root_b64 = lines[:3]
    if not size_text.isdigit() or (size_text != "0" and size_text.startswith("0")):
        raise ValueError("bad tree size")
    return origin, int(size_text), base64.b64decode(root_b64, validate=True)


def rfc6962_root(leaves: list[bytes]) -> bytes:
    """MTH of RFC 6962 2.1 over the leaf inputs (recursive, split at the largest power of two below n)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + rfc6962_root(leaves[:k]) + rfc6962_root(leaves[k:])).digest()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out


def test_a_checkpoint_note_verifies_with_an_implementation_written_from_the_spec(
        audited: Any, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    lg = audited()
    for _ in range(3):
        Taskflow("score")(TXNS)
    code, vkey = run(["audit", "note", "--vkey"], capsys)
    assert code == 0
    code, out = run(["audit", "note", "-o", str(tmp_path / "cp.note")], capsys)
    assert code == 0
    note = (tmp_path / "cp.note").read_text(encoding="utf-8")
    origin, size, root = spec_verify(note, vkey.strip())
    assert origin == f"sectorflow-audit/{lg.log_id}" and note.count("\n") == 5  # 3 lines, blank, signature
    bodies = [r.body for r in lg.store.iter_records(0, size)]
    assert rfc6962_root(bodies) == root
    # an older checkpoint, by size, verifies too
    older = lg.store.checkpoints()[0]
    code, out = run(["audit", "note", "--size", str(older.size)], capsys)
    assert spec_verify(out, vkey.strip())[1:] == (older.size, rfc6962_root(bodies[:older.size]))
    # and the verifier rejects a changed root or size
    lines = note.split("\n")
    for bad in ([lines[0], str(size + 1), *lines[2:]], [lines[0], lines[1], base64.b64encode(b"\0" * 32).decode(),
                                                        *lines[3:]]):
        with pytest.raises(ValueError, match="does not verify"):
            spec_verify("\n".join(bad), vkey.strip())
    assert json.loads(json.dumps(note))  # plain UTF-8 text
