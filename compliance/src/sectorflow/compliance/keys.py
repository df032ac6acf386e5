"""The audit key file: Ed25519 checkpoint-signing key, HMAC-SHA256 digest key and the key-wrapping key of the
per-subject payload keys. The file lives apart from the log store (a path in the configuration, mode 0600).

Format (JSON): ``{"format": "sectorflow-audit-key/1", "signing_key": b64 raw Ed25519 private key,
"hmac_key": b64 32 bytes, "kek": b64 32 bytes, "created": ISO time, "previous": [{"key_id", "public_key",
"retired"}]}``. The public half can be given to a third party as a trust file (``write_trust_file``).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sectorflow import PathNotWritableError, writable_file

from .errors import AuditKeyError
from .records import b64, unb64

FORMAT = "sectorflow-audit-key/1"
TRUST_FORMAT = "sectorflow-audit-trust/1"


def key_id_of(public_raw: bytes) -> str:
    """``ed25519:`` + the first 16 hex digits of SHA-256 of the raw 32-byte public key."""
    return "ed25519:" + hashlib.sha256(public_raw).hexdigest()[:16]


def public_raw(private: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def private_raw(private: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                 serialization.NoEncryption())


def verify_signature(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Ed25519 verification (RFC 8032) of ``signature`` over ``message`` with a raw 32-byte public key."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


@dataclass
class KeyFile:
    """The loaded key file. ``path`` is where it is saved."""

    path: Path
    signing_key: Ed25519PrivateKey
    hmac_key: bytes
    kek: bytes
    created: str
    previous: list[dict[str, Any]] = field(default_factory=list)

    @functools.cached_property
    def public_key(self) -> bytes:
        return public_raw(self.signing_key)

    @functools.cached_property
    def key_id(self) -> str:
        return key_id_of(self.public_key)

    @functools.cached_property
    def hmac_key_id(self) -> str:
        """``hmac:`` + 16 hex digits identifying the digest key without revealing it."""
        return "hmac:" + hashlib.sha256(b"sectorflow-audit-hmac-id" + self.hmac_key).hexdigest()[:16]

    def digest(self, data: bytes) -> str:
        """HMAC-SHA256 (RFC 2104) of ``data`` under the digest key, as ``hmac-sha256:<hex>``."""
        return "hmac-sha256:" + hmac.new(self.hmac_key, data, hashlib.sha256).hexdigest()

    def sign(self, message: bytes) -> bytes:
        return self.signing_key.sign(message)

    def trusted_keys(self) -> dict[str, bytes]:
        """Every public key this file has signed with: ``{key_id: raw public key}``."""
        keys = {p["key_id"]: unb64(p["public_key"]) for p in self.previous}
        keys[self.key_id] = self.public_key
        return keys

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "key_id": self.key_id, "signing_key": b64(private_raw(self.signing_key)),
                "public_key": b64(self.public_key), "hmac_key": b64(self.hmac_key), "kek": b64(self.kek),
                "created": self.created, "previous": self.previous}

    def save(self) -> None:
        """Write atomically (temporary file + rename), readable by the owner only."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".audit-key-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.to_json(), fh, indent=2)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def rotated(self) -> KeyFile:
        """A copy with a new signing key; the old public key moves to ``previous`` (its private half is dropped)."""
        now = datetime.now(timezone.utc).isoformat()
        prev = [*self.previous, {"key_id": self.key_id, "public_key": b64(self.public_key), "retired": now}]
        return KeyFile(self.path, Ed25519PrivateKey.generate(), self.hmac_key, self.kek, self.created, prev)


def generate_key_file(path: str | Path, *, overwrite: bool = False) -> KeyFile:
    """Create a new key file at ``path`` (fresh Ed25519 key, 32-byte HMAC key and KEK from ``os.urandom``).

    Raises:
        AuditKeyError: the file exists and ``overwrite`` is false (overwriting loses the digest key: old digests
            can then no longer be matched).
    """
    path = Path(path)
    try:
        writable_file(path, what="audit key file", setting="the key file path (SECTORFLOW_AUDIT_KEY)")
    except PathNotWritableError as exc:
        raise AuditKeyError(exc.message, details=exc.details) from exc
    if path.exists() and not overwrite:
        raise AuditKeyError(f"{path} exists; use `sectorflow audit rotate-key` to change the signing key, or "
                            f"choose another path.")
    kf = KeyFile(path, Ed25519PrivateKey.generate(), os.urandom(32), os.urandom(32),
                 datetime.now(timezone.utc).isoformat())
    kf.save()
    return kf


def load_key_file(path: str | Path) -> KeyFile:
    """Read a key file.

    Raises:
        AuditKeyError: missing, unreadable or malformed file (says which).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        _check_private(path)
        return KeyFile(path, Ed25519PrivateKey.from_private_bytes(unb64(data["signing_key"])),
                       unb64(data["hmac_key"]), unb64(data["kek"]), data.get("created", ""),
                       list(data.get("previous", [])))
    except FileNotFoundError as exc:
        raise AuditKeyError(f"No audit key file at {path}: create one with `sectorflow audit keygen {path}`.") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AuditKeyError(f"Audit key file {path} is unreadable: {exc}.") from exc


def _check_private(path: Path) -> None:
    """Refuse a key file that other users may read or that its group may change (POSIX): it holds the signing key,
    the digest key and the key-wrapping key (a fresh-user check found a 0644 key file accepted without a word).
    Group read (0640, a service account's group) is allowed."""
    if os.name != "posix":
        return
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return  # reported by the reader, with the keygen hint
    except OSError as exc:
        raise AuditKeyError(f"Audit key file {path} is unreadable: {exc}.") from exc
    if mode & 0o027:
        raise AuditKeyError(f"Audit key file {path} has mode {mode:04o}: other users can read or change it, and it "
                            f"holds the signing, digest and key-wrapping keys. Run `chmod 600 {path}` (or 640 for a "
                            f"service account's group).")


def write_trust_file(keys: dict[str, bytes], path: str | Path) -> None:
    """Write public keys ``{key_id: raw}`` as a trust file a third party keeps to verify checkpoints offline."""
    Path(path).write_text(json.dumps({"format": TRUST_FORMAT, "keys": [
        {"key_id": k, "public_key": b64(v)} for k, v in keys.items()]}, indent=2) + "\n", encoding="utf-8")


def load_trust_file(path: str | Path) -> dict[str, bytes]:
    """Read a trust file (or a key file: its public keys are taken).

    Raises:
        AuditKeyError: unreadable or malformed.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") == FORMAT:
            return load_key_file(path).trusted_keys()
        if data.get("format") != TRUST_FORMAT:
            raise ValueError(f"format is {data.get('format')!r}")
        keys = {k["key_id"]: unb64(k["public_key"]) for k in data["keys"]}
        for kid, raw in keys.items():
            if key_id_of(raw) != kid:
                raise ValueError(f"key id {kid} does not match its public key")
        return keys
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AuditKeyError(f"Trust file {path} is unreadable: {exc}.") from exc
