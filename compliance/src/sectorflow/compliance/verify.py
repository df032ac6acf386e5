"""Offline verification of a whole log, of single proofs, and of archive files.

``verify_log`` recomputes every leaf hash from the stored record bytes, rebuilds the RFC 9162 tree, compares the
root at every checkpoint size, checks every checkpoint's Ed25519 signature against trusted public keys (keys
introduced by ``key.rotated`` records become trusted once a checkpoint signed by an already trusted key covers that
record), and names the first bad record. It needs no secret key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import merkle
from .keys import verify_signature
from .records import b64, checkpoint_body, checkpoint_note_text, unb64
from .store import Checkpoint, Store
from .verify_scan import scan_all, tree_at


@dataclass
class VerifyReport:
    """Outcome of :func:`verify_log`.

    Attributes:
        ok: no tampering found.
        size: records in the store.
        checkpoints: checkpoints whose signature and root were checked.
        first_bad_seq: the first record that is missing, altered, or not covered by a matching checkpoint.
        problems: human-readable findings, first one first.
        unsigned_tail: records after the last checkpoint (not yet signed; not an error).
        archived: records whose bodies are in archive files (checked through their stored leaf hashes).
        root: root hash of the whole tree (base64).
        unsigned_at_open: records that no checkpoint covered when the verifying process opened the log, which it
            then signed (a writer that stopped before its checkpoint, or deleted checkpoints: only checkpoints kept
            elsewhere can vouch for them). Set by ``AuditAdmin.verify``; 0 from :func:`verify_log` alone.
        replica: ``{"ok", "size", "problems"}`` of the configured replica, verified on its own (``sectorflow audit
            verify``); ``None`` when there is none.
    """

    ok: bool = True
    size: int = 0
    checkpoints: int = 0
    first_bad_seq: int | None = None
    problems: list[str] = field(default_factory=list)
    unsigned_tail: int = 0
    archived: int = 0
    root: str = ""
    unsigned_at_open: int = 0
    replica: dict[str, Any] | None = None

    def fail(self, message: str, seq: int | None = None, *, precise: bool = True) -> None:
        """Note a problem; ``precise`` findings name a record exactly, others (a checkpoint range) only when no
        record was named yet."""
        self.ok = False
        if seq is not None and (self.first_bad_seq is None or (precise and seq < self.first_bad_seq)):
            self.first_bad_seq = seq
        self.problems.append(message)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def verify_log(store: Store, trusted: dict[str, bytes], *, external: list[dict[str, Any]] | None = None,
               log_id: str | None = None, workers: int | None = None) -> VerifyReport:
    """Verify everything in ``store``.

    Args:
        store: the log store (read only).
        trusted: ``{key_id: raw Ed25519 public key}`` from a trust file or the key file.
        external: checkpoints exported earlier (``Checkpoint.to_json`` dicts) that a third party kept; each must
            verify and match the tree recomputed now (catches truncation or a rewritten history).
        log_id: expected log id (default the store's own).
        workers: processes scanning the records of a log of at least ``verify_scan.PARALLEL_FROM`` records (default
            one per CPU; 1 scans in this process).

    Returns:
        a :class:`VerifyReport`.
    """
    report = VerifyReport()
    log_id = log_id or store.get_meta("log_id") or ""
    trusted = dict(trusted)
    cps = store.checkpoints()
    ext = sorted((Checkpoint.from_json(e) for e in external or []), key=lambda c: c.size)
    ext_ids = {e.get("log_id") for e in external or []}
    if ext_ids - {log_id}:
        report.fail(f"external checkpoints belong to log(s) {sorted(ext_ids - {log_id})}, not {log_id}")
    wanted = sorted({c.size for c in cps} | {c.size for c in ext})
    # checkpoint signatures by the keys trusted from the start are checked alongside the scan (in its worker pool)
    early = [(cp.size, trusted[cp.key_id], cp.signature, checkpoint_body(log_id, cp.size, b64(cp.root), cp.time))
             for cp in cps if cp.key_id in trusted]
    scans, good_signatures = scan_all(store, early, workers)
    for scan in scans:
        for message, seq, precise in scan.problems:
            report.fail(message, seq, precise=precise)
    cleared = [c for scan in scans for c in scan.cleared]  # (seq, archive file) of bodies cleared as archived
    archives = [a for scan in scans for a in scan.archives]  # (first_seq, last_seq, file) of audit.archived records
    announced: dict[str, tuple[int, bytes]] = {}
    for scan in scans:
        announced.update(scan.announced)
    pinned_all = [p for scan in scans for p in scan.pinned]
    pinned = pinned_all[-1][1] if pinned_all else None  # the audit policy as last recorded (policy.py)
    report.archived = sum(scan.archived for scan in scans)
    roots, peaks_at, root = tree_at(wanted, scans)
    report.size = sum(scan.rows for scan in scans)
    report.root = b64(root)
    stored_policy = store.get_meta("policy")
    if (json.loads(stored_policy) if stored_policy else None) != pinned:
        report.fail("the pinned audit policy in the store differs from the last one an audit admin recorded "
                    "(meta table altered): run `sectorflow audit policy --set ...` as an audit admin to pin it again")
    _check_archived(report, cleared, archives)
    early_keys = {size: key for size, key, _sig, _msg in early}
    verified_size = 0  # the records below this size are covered by a checkpoint that verified
    for cp in cps:
        start = verified_size  # a root covers every record below cp.size: blame only what no good checkpoint covers
        if cp.size not in roots:
            report.fail(f"checkpoint at size {cp.size} is beyond the {report.size} records (log truncated)",
                        report.size)
            continue
        key = trusted.get(cp.key_id)
        if key is None:
            report.fail(f"checkpoint at size {cp.size} is signed by untrusted key {cp.key_id}", start,
                        precise=False)
            continue
        checked = cp.size in good_signatures and early_keys.get(cp.size) == key
        if not checked and not verify_signature(key, cp.signature,
                                                checkpoint_body(log_id, cp.size, b64(cp.root), cp.time)):
            report.fail(f"checkpoint at size {cp.size}: bad signature (checkpoint altered)", start, precise=False)
            continue
        if roots[cp.size] != cp.root:
            report.fail(f"records {start}..{cp.size - 1} do not match the checkpoint signed at {cp.time} "
                        f"(size {cp.size}): a record in that range was altered", start, precise=False)
            continue
        if cp.peaks and list(cp.peaks) != peaks_at.get(cp.size):
            # not signed, but the writer restores its tree from them: a forged set would corrupt later roots
            report.fail(f"checkpoint at size {cp.size}: its stored peak hashes do not match the records (peaks "
                        f"column altered)", start, precise=False)
            continue
        report.checkpoints += 1
        verified_size = max(verified_size, cp.size)
        for kid, (seq, pub) in announced.items():
            if seq < cp.size:
                trusted.setdefault(kid, pub)
    for cp in ext:
        key = trusted.get(cp.key_id)
        if key is None or not verify_signature(key, cp.signature,
                                               checkpoint_body(log_id, cp.size, b64(cp.root), cp.time)):
            report.fail(f"external checkpoint at size {cp.size}: signature does not verify with the trusted keys")
        elif cp.size not in roots:
            report.fail(f"external checkpoint at size {cp.size} but the store has only {report.size} records "
                        f"(log truncated)", report.size)
        elif roots[cp.size] != cp.root:
            report.fail(f"the store's first {cp.size} records do not match an externally kept checkpoint "
                        f"({cp.time}): history rewritten", 0)
    noted = [cp for cp in cps if cp.note_sig is not None]
    if noted:  # the C2SP note signature of the latest checkpoint (the one `audit note` hands out)
        cp = noted[-1]
        key = trusted.get(cp.key_id)
        if key is not None and not verify_signature(key, cp.note_sig or b"",
                                                    checkpoint_note_text(log_id, cp.size, b64(cp.root))):
            report.fail(f"checkpoint at size {cp.size}: its C2SP note signature does not verify (altered)")
    report.unsigned_tail = max(0, report.size - (cps[-1].size if cps else 0))
    return report


def _check_archived(report: VerifyReport, cleared: list[tuple[int, str]],
                    archives: list[tuple[int, int, str]]) -> None:
    """Every record whose body was cleared as archived must lie in the range of an ``audit.archived`` record naming
    the same file (archiving appends one per file). Otherwise the body was removed behind the guards, with an
    archive name set to pass as archived (the leaf hash alone still verifies)."""
    for seq, archive in cleared:
        if not any(first <= seq <= last and file == archive for first, last, file in archives):
            report.fail(f"record {seq}: body cleared as archived to {archive!r}, but no audit.archived record names "
                        f"that file for it (body removed)", seq)


def verify_proof_document(doc: dict[str, Any], trusted: dict[str, bytes]) -> None:
    """Check a proof document written by ``sectorflow audit prove``: the record's leaf hash, its inclusion proof,
    and the checkpoint signature, with no access to the log.

    Raises:
        merkle.ProofError: any part does not verify (says which).
    """
    cp = Checkpoint.from_json(doc["checkpoint"])
    key = trusted.get(cp.key_id)
    if key is None:
        raise merkle.ProofError(f"the checkpoint is signed by {cp.key_id}, which is not in the trust file.")
    if not verify_signature(key, cp.signature, checkpoint_body(doc["checkpoint"]["log_id"], cp.size, b64(cp.root),
                                                               cp.time)):
        raise merkle.ProofError("the checkpoint signature does not verify.")
    leaf = unb64(doc["leaf_hash"])
    if "record" in doc and doc["record"] is not None:
        if merkle.leaf_hash(doc["record"].encode("utf-8")) != leaf:
            raise merkle.ProofError("the record text does not hash to the leaf hash.")
    merkle.verify_inclusion(int(doc["leaf_index"]), cp.size, leaf, [unb64(p) for p in doc["proof"]], cp.root)
