"""Audit-admin operations: verify, prove, export, archive, shred. Each needs the audit-admin role, which is
separate from the operator role, and each use (or refusal) is itself recorded (MLPS 2.0 8.1.5.2 a)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from . import merkle
from .config import RECORD_KINDS, AuditConfig
from .errors import AuditAccessDenied, AuditArchiveError
from .log import AuditLog
from .records import b64, record_kind, utc_iso
from .verify import VerifyReport, verify_log

KEPT_LIVE = frozenset({"audit.archived", "key.rotated"})
"""Events never archived: verify reads their bodies (which archive file holds which records; which signing keys
the log introduced), so they stay in the live store."""

AUDIT_ADMIN = "audit_admin"
OPERATOR = "operator"


class AuditAdmin:
    """Audit-admin access to a log on behalf of ``actor``.

    Args:
        log: the audit log.
        actor: who asks (the OS user on the command line; the authenticated API key's actor over HTTP).
        roles: the actor's roles when an authenticator supplies them (the server); ``None`` looks the actor up in
            the configuration's ``audit_admins``.
        source: where the request comes from (IP, host).

    Raises:
        AuditAccessDenied: the actor is not an audit admin (the refusal is recorded as ``access.decision``).
    """

    def __init__(self, log: AuditLog, actor: str, *, roles: set[str] | None = None, source: str | None = None,
                 config: AuditConfig | None = None, action: str = "audit.read") -> None:
        self.log, self.actor, self.source = log, actor, source or "local"
        cfg = config or log.config
        from .policy import admins_of, read_policy

        policy = read_policy(log.store) or {}
        operators = frozenset(policy.get("operators", cfg.operators))
        # over HTTP the server passes the key's scopes: ``audit`` is the audit-admin role, ``admin`` (reload models)
        # an operator's; a task key (``task:...``) holds neither
        has_role = bool(roles & {AUDIT_ADMIN, "audit"}) if roles is not None else actor in admins_of(log.store, cfg)
        is_operator = bool(roles & {OPERATOR, "admin"}) if roles is not None else actor in operators
        if not has_role or is_operator:
            why = ("holds the operator role too (separation of duties)" if has_role
                   else "is not an audit admin")
            log.append("access.decision", actor=actor, source=self.source, outcome="denied",
                       reason=f"{actor!r} {why}", details={"action": action, "roles": sorted(roles or [])})
            raise AuditAccessDenied(f"{actor!r} {why}: {action} needs the audit-admin role (SECTORFLOW_AUDIT_ADMINS, "
                                    f"or the pinned audit policy's audit_admins; over HTTP an API key's audit scope), "
                                    f"held by nobody who is also an operator.")

    def _logged(self, action: str, **details: Any) -> None:
        self.log.append("audit.read", actor=self.actor, source=self.source, outcome="success",
                        details={"action": action, **details})

    def verify(self, trusted: dict[str, bytes], external: list[dict[str, Any]] | None = None) -> VerifyReport:
        """Verify the whole log (see :func:`~.verify.verify_log`); recorded as ``audit.read`` action ``verify``
        before the check (so the check covers its own record)."""
        self._logged("verify")
        self.log.checkpoint()
        report = verify_log(self.log.store, trusted, external=external, log_id=self.log.log_id)
        # reported once: the first verify of the process is the one that signed them
        report.unsigned_at_open, self.log.unsigned_at_open = self.log.unsigned_at_open, 0
        return report

    def prove(self, seq: int) -> dict[str, Any]:
        """An inclusion proof of record ``seq`` against a freshly signed checkpoint: a JSON-ready document that
        :func:`~.verify.verify_proof_document` checks offline.

        Raises:
            merkle.ProofError: no such record.
        """
        self._logged("prove", seq=seq)
        self.log.checkpoint()
        cp = self.log.store.last_checkpoint()
        if cp is None or not 0 <= seq < cp.size:
            raise merkle.ProofError(f"record {seq} is not in the log (size {cp.size if cp else 0}).")
        leaves = self.log.store.leaf_hashes(0, cp.size)
        rec = next(self.log.store.iter_records(seq, seq + 1))
        return {"leaf_index": seq, "tree_size": cp.size, "leaf_hash": b64(leaves[seq]),
                "proof": [b64(p) for p in merkle.inclusion_proof(seq, leaves)],
                "record": rec.body.decode("utf-8") if rec.body is not None else None,
                "checkpoint": cp.to_json(self.log.log_id)}

    def prove_consistency(self, first: int, second: int | None = None) -> dict[str, Any]:
        """A consistency proof between tree sizes ``first`` and ``second`` (default: the latest checkpoint)."""
        self._logged("prove_consistency", first=first, second=second)
        self.log.checkpoint()
        second = second if second is not None else self.log.store.size()
        leaves = self.log.store.leaf_hashes(0, second)
        return {"first": first, "second": second, "first_root": b64(merkle.root_of(leaves[:first])),
                "second_root": b64(merkle.root_of(leaves)),
                "proof": [b64(p) for p in merkle.consistency_proof(first, leaves)]}

    def export(self, since: str | None = None, until: str | None = None) -> Iterator[dict[str, Any]]:
        """Records with ``since <= time < until`` (ISO-8601 UTC) as dicts for a SIEM, each with its
        ``leaf_hash``; archived records come as ``{"seq", "archived": file}``."""
        self._logged("export", since=since, until=until)
        for rec in self.log.store.iter_records(since=since, until=until):
            if rec.body is None:
                yield {"seq": rec.seq, "time": rec.time, "event": rec.event, "archived": rec.archive,
                       "leaf_hash": b64(rec.leaf)}
            else:
                yield {**json.loads(rec.body), "leaf_hash": b64(rec.leaf)}

    def export_checkpoints(self, path: str | Path) -> int:
        """Append to ``path`` (JSON lines) every checkpoint it does not hold yet, for a third party to keep.
        Returns how many were added."""
        self._logged("export_checkpoints", path=str(path))
        self.log.checkpoint()
        path = Path(path)
        have = set()
        if path.exists():
            have = {json.loads(line)["size"] for line in path.read_text(encoding="utf-8").splitlines() if line}
        new = [cp for cp in self.log.store.checkpoints() if cp.size not in have]
        with open(path, "a", encoding="utf-8") as fh:
            for cp in new:
                fh.write(json.dumps(cp.to_json(self.log.log_id)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return len(new)

    def archive_expired(self, out_dir: str | Path, *, now: datetime | None = None) -> Path | None:
        """Move records past their kind's retention (:meth:`AuditConfig.retention_for`: AML calls, case
        dispositions and report drafts 5 years, other operation logs ``retention_days``) out of the live store into
        a gzip JSON-lines archive file.

        The file holds a signed checkpoint, then every record with its inclusion proof against it; it is written
        and fsynced, then an ``audit.archived`` record names the file, its SHA-256 and the range, and only then does
        the store clear those bodies (leaf hashes stay, so the tree still verifies). Nothing is deleted without its
        archive and its record.
        Returns the archive path, or ``None`` when nothing has expired.

        Args:
            out_dir: folder for the archive file (created if missing).
            now: archive as of this time instead of the clock's (a naive time is UTC); it may be earlier than now
                (archives less), never later.

        Raises:
            AuditArchiveError: ``now`` is later than the current time: it would move records out of the live store
                before their ``retention_days`` end (``--now 2099-01-01`` archived every record). To keep records
                in the live store for less time, lower ``retention_days`` (under 180 needs
                ``allow_short_retention``).
        """
        clock = utc_now()
        if now is not None:
            now = now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)
            if now > clock:
                raise AuditArchiveError(
                    f"Cannot archive as of {utc_iso(now)}: that is later than now ({utc_iso(clock)}), and would move "
                    f"records out of the live store before their {self.log.config.retention_days}-day retention "
                    f"ends. Give a time not later than now, or leave --now out; to keep records live for fewer "
                    f"days, set SECTORFLOW_AUDIT_RETENTION_DAYS (under 180 needs allow_short_retention = true in "
                    f"the [audit] table of SECTORFLOW_AUDIT_CONFIG).",
                    details={"now": utc_iso(now), "clock": utc_iso(clock),
                             "retention_days": self.log.config.retention_days})
        cfg = self.log.config
        as_of = now or clock
        cutoffs = {kind: utc_iso(as_of - timedelta(days=cfg.retention_for(kind))) for kind in RECORD_KINDS}
        # each record by its kind's retention: operation logs (>= 6 months) go long before AML calls, case
        # dispositions and report drafts (>= 5 years) that sit between them
        expired = []
        for r in self.log.store.iter_records(until=max(cutoffs.values())):
            if r.archive is None and r.body is not None:
                data = json.loads(r.body)  # the body's time and kind, not the (unsigned) columns
                if data["event"] in KEPT_LIVE:
                    continue
                if data["time"] < cutoffs[record_kind(data)]:
                    expired.append(r)
        if not expired:
            return None
        self.log.checkpoint()
        cp = self.log.store.last_checkpoint()
        assert cp is not None
        start, stop = expired[0].seq, expired[-1].seq + 1
        builder = merkle.ProofBuilder(self.log.store.leaf_hashes(0, cp.size))
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"audit-{self.log.log_id[:8]}-{start:012d}-{stop - 1:012d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(json.dumps({"checkpoint": cp.to_json(self.log.log_id)}) + "\n")
            for rec in expired:
                fh.write(json.dumps({"leaf_index": rec.seq, "leaf_hash": b64(rec.leaf),
                                     "record": rec.body.decode("utf-8") if rec.body is not None else None,
                                     "proof": [b64(p) for p in builder.inclusion(rec.seq)]}) + "\n")
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
            digest = hashlib.sha256(fh.read()).hexdigest()
        # The record first, then the bodies cleared: verify treats a body cleared under a file name that no
        # audit.archived record names as tampering, so a crash between the two must leave bodies, not bare names
        # (a rerun archives them again, to a new file).
        self.log.append("audit.archived", actor=self.actor, source=self.source, outcome="success",
                        details={"first_seq": start, "last_seq": stop - 1, "file": path.name, "sha256": digest,
                                 "records": len(expired), "retention_days": cfg.retention_days,
                                 "retention_by_kind": {k: cfg.retention_for(k) for k in RECORD_KINDS}})
        seqs = [r.seq for r in expired]
        with self.log._lock, self.log.store.transaction():
            self.log.store.mark_archived_seqs(seqs, path.name)
        if self.log.replica is not None:
            self.log.replicate()  # the replica gets the audit.archived record first, then clears the same bodies
            try:
                self.log.replica.mark_archived_seqs(seqs, path.name)
            except Exception:  # noqa: BLE001 - the bodies stay in the replica; restore and verify accept that
                pass
        return path

    def checkpoint_note(self, size: int | None = None) -> tuple[str, str]:
        """``(note, verifier_key)``: the checkpoint at ``size`` (default: a fresh one) as a C2SP tlog-checkpoint
        signed note (origin ``sectorflow-audit/<log id>``, size, base64 root; one Ed25519 signature line, key name =
        origin), and the signer's verifier key (``name+keyid+base64(0x01||key)``). Recorded as ``audit.read``.

        Raises:
            merkle.ProofError: no checkpoint of that size, or one signed before notes were written.
        """
        from .records import checkpoint_note_text, note_verifier_key, signed_note

        self._logged("checkpoint_note", size=size)
        self.log.checkpoint()
        cps = self.log.store.checkpoints()
        cp = cps[-1] if size is None and cps else next((c for c in cps if c.size == size), None)
        if cp is None or cp.note_sig is None:
            raise merkle.ProofError(f"no checkpoint with a C2SP note at size {size}: sizes with notes are "
                                    f"{[c.size for c in cps if c.note_sig is not None][-5:]} (last five).")
        name = f"sectorflow-audit/{self.log.log_id}"
        keys = self.log.keys.trusted_keys()
        public = keys.get(cp.key_id)
        if public is None:
            raise merkle.ProofError(f"checkpoint {cp.size} is signed by {cp.key_id}, which the key file does not hold.")
        text = checkpoint_note_text(self.log.log_id, cp.size, b64(cp.root))
        return signed_note(text, name, public, cp.note_sig), note_verifier_key(name, public)

    def set_policy(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Pin ``settings`` as the audit policy (see :mod:`~.policy`); returns the policy now in force."""
        from .policy import pin

        return pin(self.log, self.actor, settings, source=self.source)

    def read_payloads(self, seq: int) -> list[dict[str, Any]]:
        """Decrypted opt-in payloads of record ``seq`` (``items`` is ``None`` for a shredded subject)."""
        self._logged("read_payloads", seq=seq)
        return self.log.read_payloads(seq)

    def shred_subject(self, subject: str, reason: str | None = None) -> int:
        """Crypto-shred one data subject (see :meth:`AuditLog.shred_subject`)."""
        return self.log.shred_subject(subject, actor=self.actor, source=self.source, reason=reason)


def utc_now() -> datetime:
    """The current time, UTC (the clock ``archive_expired`` compares ``now`` with; tests move it)."""
    return datetime.now(timezone.utc)


def read_archive(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(checkpoint, entries)`` of an archive file; each entry is a proof document for
    :func:`~.verify.verify_proof_document` once given the checkpoint."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    head = lines[0]["checkpoint"]
    return head, [{**e, "checkpoint": head} for e in lines[1:]]


def _safe_url(url: str) -> str:
    """A store URL without its password (``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``)."""
    from urllib.parse import urlsplit, urlunsplit

    if "://" not in url:
        return url
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def status_of(admin: AuditAdmin) -> dict[str, Any]:
    """What ``sectorflow audit status`` shows: store, key file and key id, records and bytes, last checkpoint, replica
    and its lag (records the replica is behind, and since when). Recorded as ``audit.read`` action ``status``."""
    admin._logged("status")
    lg, cfg = admin.log, admin.log.config
    store = lg.store
    path = getattr(store, "path", None)
    last = store.last_checkpoint()
    info: dict[str, Any] = {
        "store": _safe_url(str(cfg.db)) + (" (embedded default)" if cfg.embedded else ""),
        "key": f"{cfg.key_file} ({lg.keys.key_id})",
        "records": store.size(),
        "size_bytes": sum(p.stat().st_size for p in (Path(f"{path}{s}") for s in ("", "-wal")) if p.exists())
        if path is not None else None,
        "last_checkpoint": f"size {last.size} at {last.time}" if last else None,
        "retention_days": cfg.retention_days,
        "regulated": ",".join(sorted(cfg.regulated)) or None,
    }
    replica = getattr(lg, "replica", None)
    info["replica"] = replica.describe() if replica is not None else "none (set SECTORFLOW_AUDIT_REPLICA)"
    info["replica_lag"] = replica.lag() if replica is not None else None
    return info
