"""Audit records: fields, canonical encoding, keyed digests of items, and checkpoint bodies.

A record is a JSON object encoded canonically (sorted keys, no spaces, UTF-8); those bytes are the Merkle leaf
input (RFC 9162 2.1.1). Fields (all present in every record, ``null`` when not applicable):

``v`` format version (1); ``seq`` 0-based sequence number; ``time`` UTC ISO-8601 with microseconds and ``Z``;
``event`` event type (``task.call_started``, ``task.model_loaded``, ``federated.round_finished``,
``access.decision``, ``key.rotated``, ``config.changed``, ``plugin.loaded``, ``audit.read``, ...);
``actor``, ``tenant``, ``source`` (IP or node id), ``channel``; ``object`` (``task``, ``plugin``, ``model_name``,
``model_version``, ``weights_sha256``, ``dataset_id``, ``device``, ``precision``); ``outcome`` (``success``,
``failure``, ``started`` or ``denied``) and ``reason``; ``request_id``; ``n_items``; ``input_digest`` and
``output_digest`` (``hmac-sha256:<hex>`` under the key file's digest key, never the items themselves);
``digest_key`` (which HMAC key); ``duration_ms``; ``payloads`` (SHA-256 of encrypted payloads, opt-in);
``details`` (free JSON).

These cover MLPS 2.0 (GB/T 22239-2019) 8.1.4.3 b): date and time (``time``), user (``actor``/``tenant``), event type
(``event``), success or failure (``outcome``) and other audit-related information (the rest).
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

if TYPE_CHECKING:  # pragma: no cover
    from .keys import KeyFile

FORMAT_VERSION = 1
OUTCOMES = ("success", "failure", "started", "denied")
OBJECT_FIELDS = ("task", "plugin", "model_name", "model_version", "weights_sha256", "dataset_id", "device",
                 "precision")
CHECKPOINT_ORIGIN = "sectorflow-audit"


def b64(data: bytes) -> str:
    """Standard base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """Bytes of standard base64 ``text``; raises ``ValueError`` (binascii.Error) on bad input."""
    return base64.b64decode(text.encode("ascii"), validate=True)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                              default=str)
"""What ``json.dumps`` builds on every call with these options (it only caches the default encoder)."""


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8, no NaN."""
    return _CANONICAL.encode(obj).encode("utf-8")


def utc_iso(when: datetime | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC (years 1000-9999)."""
    when = datetime.now(timezone.utc) if when is None else when.astimezone(timezone.utc)
    return when.isoformat(timespec="microseconds")[:-6] + "Z"  # drop "+00:00"; 3x faster than strftime


@functools.lru_cache(maxsize=256)
def _list_adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def items_bytes(items: Sequence[Any]) -> bytes:
    """The bytes digested for a list of items: a JSON array of each item's JSON (pydantic's compact JSON for
    models, in field order; canonical JSON otherwise)."""
    if items and isinstance(items[0], BaseModel):
        model = type(items[0])
        if all(type(item) is model for item in items):
            return _list_adapter(model).dump_json(list(items))  # one pass in pydantic-core
    parts = [item.model_dump_json().encode("utf-8") if isinstance(item, BaseModel) else canonical(item)
             for item in items]
    return b"[" + b",".join(parts) + b"]"


def items_digest(keys: KeyFile, items: Sequence[Any] | None) -> str | None:
    """HMAC-SHA256 of :func:`items_bytes` (keyed, so short values such as account numbers cannot be guessed by
    hashing candidates); ``None`` when there are no items."""
    if items is None:
        return None
    return keys.digest(items_bytes(items))


def make_object(**fields: Any) -> dict[str, Any]:
    """The ``object`` field with every key of :data:`OBJECT_FIELDS` (missing ones ``null``).

    Raises:
        ValueError: an unknown key.
    """
    unknown = set(fields) - set(OBJECT_FIELDS)
    if unknown:
        raise ValueError(f"unknown object field(s) {sorted(unknown)}; allowed {OBJECT_FIELDS}")
    return {name: fields.get(name) for name in OBJECT_FIELDS}


def make_record(*, seq: int, event: str, actor: str, tenant: str | None, source: str | None, channel: str | None,
                obj: dict[str, Any], outcome: str, reason: str | None, request_id: str | None,
                n_items: int = 0, input_digest: str | None = None, output_digest: str | None = None,
                digest_key: str | None = None, duration_ms: float | None = None,
                payloads: list[dict[str, Any]] | None = None, details: dict[str, Any] | None = None,
                time: str | None = None) -> dict[str, Any]:
    """One record as a dict with every field (see the module docstring).

    Raises:
        ValueError: an outcome not in :data:`OUTCOMES` or an empty event/actor.
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}")
    if not event or not actor:
        raise ValueError("event and actor must not be empty")
    return {"v": FORMAT_VERSION, "seq": seq, "time": time or utc_iso(), "event": event, "actor": actor,
            "tenant": tenant, "source": source, "channel": channel, "object": obj, "outcome": outcome,
            "reason": reason, "request_id": request_id, "n_items": n_items, "input_digest": input_digest,
            "output_digest": output_digest, "digest_key": digest_key,
            "duration_ms": round(duration_ms, 3) if duration_ms is not None else None,
            "payloads": payloads or [], "details": details or {}}


def checkpoint_body(log_id: str, size: int, root_b64: str, time: str) -> bytes:
    """The signed text of a checkpoint: origin line, tree size, base64 root hash, UTC time, each ending in ``\\n``."""
    return f"{CHECKPOINT_ORIGIN}/{log_id}\n{size}\n{root_b64}\n{time}\n".encode("ascii")


AML_TASKS = frozenset({"aml"})
"""Tasks whose calls are AML calls (retention kind ``aml_call``)."""


def record_kind(record: dict[str, Any]) -> str:
    """The retention kind of a record: ``case_disposition`` (events ``case.*``), ``report_draft`` (``report.*``),
    ``aml_call`` (``task.*`` events of an AML task: its alerts and report drafts are the call's outputs), else
    ``operations`` (every other operation log: plugins, configuration, access, federated runs, audit reads)."""
    event = str(record.get("event") or "")
    if event.startswith("case."):
        return "case_disposition"
    if event.startswith("report."):
        return "report_draft"
    task = (record.get("object") or {}).get("task")
    if event.startswith("task.") and task in AML_TASKS:
        return "aml_call"
    return "operations"


def checkpoint_note_text(log_id: str, size: int, root_b64: str) -> bytes:
    """The note text of a C2SP ``tlog-checkpoint`` (c2sp.org/tlog-checkpoint): origin line
    (``sectorflow-audit/<log id>``), tree size (decimal, no leading zeros), base64 root hash (RFC 6962/9162), each
    ending in ``\n``; no extension lines."""
    return f"{CHECKPOINT_ORIGIN}/{log_id}\n{size}\n{root_b64}\n".encode("ascii")


def note_key_id(name: str, public_key: bytes) -> bytes:
    """C2SP signed-note key ID of an Ed25519 key: ``SHA-256(key name || 0x0A || 0x01 || public key)[:4]``."""
    import hashlib

    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + public_key).digest()[:4]


def signed_note(text: bytes, name: str, public_key: bytes, signature: bytes) -> str:
    """A C2SP signed note: the text, a blank line, and one signature line
    ``— <key name> base64(key ID || Ed25519 signature)`` (c2sp.org/signed-note)."""
    return (text.decode("utf-8") + "\n" + f"\u2014 {name} {b64(note_key_id(name, public_key) + signature)}\n")


def note_verifier_key(name: str, public_key: bytes) -> str:
    """The key in the ``<name>+<hex key ID>+<base64(0x01 || public key)>`` text form that Go's
    golang.org/x/mod/sumdb/note and transparency-dev tools read as a verifier key."""
    encoded = b64(b"\x01" + public_key)
    return f"{name}+{note_key_id(name, public_key).hex()}+{encoded}"
