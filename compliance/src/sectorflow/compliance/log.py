"""``AuditLog``: append records, sign checkpoints, rotate the signing key, encrypt and shred payloads."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time as _time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import merkle
from .config import AuditConfig
from .errors import AuditKeyError, AuditWriteError
from .group_commit import GroupCommitter
from .keys import KeyFile, verify_signature
from .records import (OUTCOMES, b64, canonical, checkpoint_body, checkpoint_note_text, items_bytes, items_digest, make_object,
                      make_record, utc_iso)
from .replica import Replica
from .store import Checkpoint, Store

_audit_logger = logging.getLogger("sectorflow.audit")


class AuditLog:
    """An append-only, Merkle-hashed, checkpoint-signed audit log over a :class:`~.store.Store`.

    Thread-safe; several processes may append to one store (the store's write lock orders them).

    Args:
        store: where records live.
        keys: the key file (signing, digest and key-wrapping keys), kept apart from the store.
        config: checkpoint cadence, payload encryption and subject fields.
    """

    def __init__(self, store: Store, keys: KeyFile, config: AuditConfig | None = None,
                 replica: Replica | None = None) -> None:
        self.store = store
        self.keys = keys
        self.config = config or AuditConfig()
        self.replica: Replica | None = None
        """The replica every record and checkpoint is copied to (``None``: none configured)."""
        self._replicating = False
        self._kick = threading.Event()
        self._closing = False
        self._worker: threading.Thread | None = None
        self._lock = threading.RLock()
        self._group: GroupCommitter | None = None  # started by the first submit()
        self.on_lost: Any = None
        """Called with a count when queued records could not be committed (:mod:`.group_commit`)."""
        self.stats = {"appended": 0, "retried": 0, "lost": 0, "checkpoints": 0}
        with store.transaction():
            store.set_meta("log_id", uuid.uuid4().hex)
        self.log_id = store.get_meta("log_id") or ""
        last = store.last_checkpoint()
        try:
            self._cr = merkle.CompactRange.restore(last.size, last.peaks) if last else merkle.CompactRange()
        except (merkle.ProofError, ValueError) as exc:
            raise AuditWriteError(f"The store's last checkpoint (size {last.size if last else 0}) cannot be restored "
                                  f"({exc}): the store was altered behind its guards. Run `sectorflow audit verify` "
                                  f"to see what changed.") from exc
        self._last_cp_size = last.size if last else 0
        self._last_cp_time = _time.monotonic()
        self.unsigned_at_open = max(0, store.size() - self._last_cp_size)
        """Records no checkpoint covered when this log was opened; signed just below (see ``VerifyReport``)."""
        if self.unsigned_at_open:  # a writer died before its checkpoint: sign the tail now
            self.checkpoint()
        if replica is not None:
            self.attach_replica(replica)

    def attach_replica(self, replica: Replica) -> None:
        """Start copying to ``replica`` (now, and after every commit or from a thread, per ``replica_mode``)."""
        self.replica = replica
        if replica is not None:
            if self.config.replica_mode == "async":
                self._worker = threading.Thread(target=self._replicate_forever, name="sectorflow-audit-replica",
                                                daemon=True)
                self._worker.start()
            else:
                self.replicate()

    # --- the replica ---------------------------------------------------------------------------------------------
    def replicate(self) -> None:
        """Copy what the replica lacks now. A failure appends one ``audit.replica_failed`` alarm record (until the
        replica is back, when ``audit.replica_restored`` says how many records were caught up) and logs an ERROR;
        it never fails the append that triggered it."""
        if self.replica is None or self._replicating:
            return
        with self._lock:
            self._replicating = True
            try:
                try:
                    copied = self.replica.sync(self.store, self.log_id)
                except Exception as exc:  # noqa: BLE001 - any failure is the same alarm
                    if self.replica.down_since is None:
                        self.replica.down_since, self.replica.error = utc_iso(), str(exc)
                        _audit_logger.error("audit replica lost: %s; records stay in the log and are copied when "
                                            "it is back (see `sectorflow audit status`)", exc)
                        self._append_locked("audit.replica_failed", actor="sectorflow", outcome="failure",
                                            reason=str(exc), details={"replica": self.replica.describe(),
                                                                      "lag": self.replica.lag()})
                    return
                if self.replica.down_since is not None:
                    since = self.replica.down_since
                    self.replica.down_since = self.replica.error = None
                    self._append_locked("audit.replica_restored", actor="sectorflow", outcome="success",
                                        details={"replica": self.replica.describe(), "down_since": since,
                                                 "caught_up": copied})
                    try:
                        self.replica.sync(self.store, self.log_id)
                    except Exception:  # noqa: BLE001 - the next append tries again
                        pass
            finally:
                self._replicating = False

    def _replicate_forever(self) -> None:
        while not self._closing:
            self._kick.wait(timeout=1.0)
            self._kick.clear()
            try:
                self.replicate()
            except Exception:  # noqa: BLE001 - the alarm is in replicate(); keep the thread alive
                _audit_logger.exception("audit replica thread")

    def _after_commit(self, n: int = 1) -> None:
        if self.replica is None or self._replicating:
            return
        if self.config.replica_mode == "sync" or self.replica.lag()["records"] >= self.config.replica_max_lag:
            self.replicate()
        else:
            self.replica.primary_size += n
            self._kick.set()

    # --- appending -------------------------------------------------------------------------------------------
    def append(self, event: str, *, actor: str, tenant: str | None = None, source: str | None = None,
               channel: str | None = None, obj: dict[str, Any] | None = None, outcome: str = "success",
               reason: str | None = None, request_id: str | None = None, n_items: int = 0,
               inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
               subjects: Sequence[str | None] | None = None, duration_ms: float | None = None,
               details: dict[str, Any] | None = None, when: datetime | None = None,
               input_digest: str | None = None, durable: bool = True) -> int:
        """Append one record durably and return its sequence number.

        ``durable=False``: the record is committed before this returns (every reader sees it, a killed process
        keeps it) but its flush to disk rides on the next durable commit of the store
        (:meth:`~.store.Store.transaction`): for a record that a durable one of the same operation is sure to follow
        before the operation returns (an unregulated call's ``task.call_started``, whose ``call_finished`` or
        ``call_failed`` is fsynced before the call returns). Saves one fsync per call.

        ``inputs``/``outputs`` are digested with HMAC-SHA256 and never stored in clear (``input_digest`` gives the
        digest of ``inputs`` when the caller already computed it); with
        ``config.encrypt_payloads`` and ``subjects`` (one subject id per input item) they are also stored AES-GCM
        encrypted under each subject's own key.

        Raises:
            AuditWriteError: the store refused the write (the record is not in the log).
            ValueError: malformed fields (unknown outcome, empty event or actor).
        """
        digests = {"input_digest": input_digest or items_digest(self.keys, inputs),
                   "output_digest": items_digest(self.keys, outputs)}
        sealed = self._seal(inputs, outputs, subjects) if self.config.encrypt_payloads and subjects else []
        self.flush()  # records queued before this one are committed first: the log keeps the order of events
        with self._lock:
            seq = self._append_locked(event, actor=actor, tenant=tenant, source=source, channel=channel, obj=obj,
                                      outcome=outcome, reason=reason, request_id=request_id, n_items=n_items,
                                      duration_ms=duration_ms, details=details, when=when, digests=digests,
                                      sealed=sealed, durable=durable)
            self._after_commit()
            return seq

    def submit(self, event: str, *, actor: str, tenant: str | None = None, source: str | None = None,
               channel: str | None = None, obj: dict[str, Any] | None = None, outcome: str = "success",
               reason: str | None = None, request_id: str | None = None, n_items: int = 0,
               inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
               subjects: Sequence[str | None] | None = None, duration_ms: float | None = None,
               details: dict[str, Any] | None = None, when: datetime | None = None,
               input_digest: str | None = None) -> None:
        """Queue one record for the group-commit writer (:mod:`.group_commit`) and return at once: the same fields
        and digests as :meth:`append`, committed durably by the writer thread together with whatever else queued
        meanwhile (one commit per group). :meth:`flush` waits for it.

        Raises:
            ValueError: malformed fields (checked here, before queueing). AuditWriteError: the log is closed.
        """
        if outcome not in OUTCOMES:  # the checks of make_record, before the record leaves this thread
            raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}")
        if not event or not actor:
            raise ValueError("event and actor must not be empty")
        digests = {"input_digest": input_digest or items_digest(self.keys, inputs),
                   "output_digest": items_digest(self.keys, outputs)}
        sealed = self._seal(inputs, outputs, subjects) if self.config.encrypt_payloads and subjects else []
        with self._lock:
            if self._group is None:
                self._group = GroupCommitter(self, retries=self.config.retries,
                                             on_lost=lambda n: self.on_lost(n) if self.on_lost else None)
        self._group.submit(dict(event=event, actor=actor, tenant=tenant, source=source, channel=channel, obj=obj,
                                outcome=outcome, reason=reason, request_id=request_id, n_items=n_items,
                                duration_ms=duration_ms, details=details, when=when, digests=digests,
                                sealed=sealed))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record queued by :meth:`submit` is committed (or counted as lost); ``True`` when none
        is left (at once when nothing is queued)."""
        group = self._group
        if group is None or threading.current_thread() is group._thread:
            return True
        return group.flush(timeout)

    def _append_locked(self, event: str, *, actor: str, tenant: str | None = None, source: str | None = None,
                       channel: str | None = None, obj: dict[str, Any] | None = None, outcome: str = "success",
                       reason: str | None = None, request_id: str | None = None, n_items: int = 0,
                       duration_ms: float | None = None, details: dict[str, Any] | None = None,
                       when: datetime | None = None, digests: dict[str, str | None] | None = None,
                       sealed: list[tuple[str, str, bytes, bytes]] | None = None, durable: bool = True) -> int:
        # the caller holds self._lock
        try:
            with self._transaction(durable=durable):
                seq = self._write_locked(event, actor=actor, tenant=tenant, source=source, channel=channel, obj=obj,
                                         outcome=outcome, reason=reason, request_id=request_id, n_items=n_items,
                                         duration_ms=duration_ms, details=details, when=when, digests=digests,
                                         sealed=sealed)
        except (ValueError, AuditKeyError):
            raise
        except Exception as exc:
            raise AuditWriteError(f"Audit record {event!r} could not be written: {type(exc).__name__}: {exc}. "
                                  f"Check the audit store ({type(self.store).__name__}).") from exc
        self.stats["appended"] += 1
        return seq

    @contextmanager
    def _transaction(self, durable: bool = True) -> Iterator[None]:
        """The store's transaction (the caller holds ``self._lock``); when it rolls back, the running Merkle root
        and the checkpoint bookkeeping go back to what they were at its start (they follow each record written)."""
        size, peaks, last_cp = self._cr.size, self._cr.peaks, (self._last_cp_size, self._last_cp_time)
        try:
            with self.store.transaction(durable=durable):
                yield
        except BaseException:
            self._cr = merkle.CompactRange.restore(size, peaks)
            self._last_cp_size, self._last_cp_time = last_cp
            raise

    def _write_many_locked(self, entries: Sequence[dict[str, Any]]) -> list[int]:
        """Write ``entries`` (keyword arguments of :meth:`_write_locked`, with ``event``) in ONE durable commit (the
        group-commit writer's; :mod:`.group_commit`). The caller holds ``self._lock``.

        Raises:
            AuditWriteError: the commit failed (none of ``entries`` is written).
        """
        try:
            with self._transaction():
                seqs = [self._write_locked(**entry) for entry in entries]
        except Exception as exc:
            raise AuditWriteError(f"{len(entries)} audit record(s) could not be written in one commit: "
                                  f"{type(exc).__name__}: {exc}. Check the audit store "
                                  f"({type(self.store).__name__}).") from exc
        self.stats["appended"] += len(seqs)
        return seqs

    def _write_locked(self, event: str, *, actor: str, tenant: str | None = None, source: str | None = None,
                      channel: str | None = None, obj: dict[str, Any] | None = None, outcome: str = "success",
                      reason: str | None = None, request_id: str | None = None, n_items: int = 0,
                      duration_ms: float | None = None, details: dict[str, Any] | None = None,
                      when: datetime | None = None, digests: dict[str, str | None] | None = None,
                      sealed: list[tuple[str, str, bytes, bytes]] | None = None) -> int:
        """One record (and its sealed payloads, and a checkpoint when one is due) inside the caller's transaction."""
        digests = digests or {"input_digest": None, "output_digest": None}
        sealed = sealed or []
        seq = self.store.size()
        payload_refs = []
        for part, subject, _nonce, ct in sealed:
            payload_refs.append({"part": part, "subject": subject,
                                 "sha256": hashlib.sha256(ct).hexdigest()})
        record = make_record(seq=seq, event=event, actor=actor, tenant=tenant, source=source,
                             channel=channel, obj=obj or make_object(), outcome=outcome, reason=reason,
                             request_id=request_id, n_items=n_items, digest_key=self.keys.hmac_key_id,
                             duration_ms=duration_ms, payloads=payload_refs, details=details,
                             time=utc_iso(when), **digests)
        body = canonical(record)
        leaf = merkle.leaf_hash(body)
        self.store.insert_record(seq, record["time"], event, body, leaf)
        if self._cr.size == seq:  # the running root follows each record (else another writer came between)
            self._cr.append(leaf)
        for part, subject, nonce, ct in sealed:
            self.store.insert_payload(seq, part, subject, nonce, ct)
        if (seq + 1 - self._last_cp_size >= self.config.checkpoint_every
                or _time.monotonic() - self._last_cp_time >= self.config.checkpoint_seconds):
            self._checkpoint_locked()
        return seq

    def append_batch(self, entries: Sequence[dict[str, Any]]) -> list[int]:
        """Append many records with one durable commit per checkpoint: each run of ``checkpoint_every`` records is
        written in one transaction that ends with its signed checkpoint, so with ``synchronous=FULL`` a batch costs
        one fsync per checkpoint instead of one per record (``benchmarks/audit_bench.py``: appends per second).

        Args:
            entries: keyword arguments of :meth:`append` for each record (``event``, ``actor``, ``obj``, ``outcome``,
                ``inputs``, ...; no encrypted payloads).

        Returns:
            the records' sequence numbers. When a commit fails, the records of the earlier commits stay written and
            the error says how many.

        Raises:
            AuditWriteError: a commit failed. ValueError: malformed fields (nothing of that run is written).
        """
        seqs: list[int] = []
        every = self.config.checkpoint_every
        with self._lock:
            for at in range(0, len(entries), every):
                run = entries[at:at + every]
                try:
                    with self._transaction():
                        seq = self.store.size()
                        for entry in run:
                            kw = dict(entry)
                            event = kw.pop("event")
                            inputs, outputs = kw.pop("inputs", None), kw.pop("outputs", None)
                            digest = kw.pop("input_digest", None) or items_digest(self.keys, inputs)
                            record = make_record(seq=seq, event=event, obj=kw.pop("obj", None) or make_object(),
                                                 outcome=kw.pop("outcome", "success"), digest_key=self.keys.hmac_key_id,
                                                 time=utc_iso(kw.pop("when", None)), input_digest=digest,
                                                 output_digest=items_digest(self.keys, outputs),
                                                 **{"tenant": None, "source": None, "channel": None, "reason": None,
                                                    "request_id": None, **kw})
                            body = canonical(record)
                            leaf = merkle.leaf_hash(body)
                            self.store.insert_record(seq, record["time"], event, body, leaf)
                            if self._cr.size == seq:
                                self._cr.append(leaf)
                            seqs.append(seq)
                            seq += 1
                        self._checkpoint_locked()
                except (ValueError, TypeError, KeyError):
                    del seqs[at:]
                    raise
                except Exception as exc:
                    del seqs[at:]
                    raise AuditWriteError(f"Audit batch could not be written after {len(seqs)} record(s): "
                                          f"{type(exc).__name__}: {exc}.") from exc
                self.stats["appended"] += len(run)
            self._after_commit(len(seqs))
        return seqs

    # --- checkpoints -------------------------------------------------------------------------------------------
    def checkpoint(self) -> Checkpoint | None:
        """Sign a checkpoint of the current tree now (``None`` if nothing was appended since the last one); queued
        records are committed first.

        Raises:
            AuditWriteError: the store refused the checkpoint (the records stay, signed by the next checkpoint).
        """
        self.flush()
        with self._lock:
            try:
                with self._transaction():
                    cp = self._checkpoint_locked()
            except AuditWriteError:
                raise
            except Exception as exc:
                raise AuditWriteError(f"The audit checkpoint could not be signed: {type(exc).__name__}: {exc}. "
                                      f"Check the audit store ({type(self.store).__name__}).") from exc
            if cp is not None and self.config.replica_mode == "sync":
                self.replicate()
            return cp

    def _checkpoint_locked(self) -> Checkpoint | None:
        size = self.store.size()
        last = self.store.last_checkpoint()
        if last is not None and last.size >= size:
            self._last_cp_size = last.size
            return None
        if self._cr.size > size:
            self._cr = merkle.CompactRange()
        if last is not None and last.size > self._cr.size:
            self._cr = merkle.CompactRange.restore(last.size, last.peaks)
        if self._cr.size < size:  # records another process appended (this one's are in the running root already)
            for leaf in self.store.leaf_hashes(self._cr.size, size):
                self._cr.append(leaf)
        if self._cr.size != size:
            raise AuditWriteError(f"The store has gaps: {self._cr.size} leaf hashes for {size} records.")
        root, when = self._cr.root(), utc_iso()
        signature = self.keys.sign(checkpoint_body(self.log_id, size, b64(root), when))
        note_sig = self.keys.sign(checkpoint_note_text(self.log_id, size, b64(root)))  # C2SP tlog-checkpoint
        cp = Checkpoint(size, root, when, self.keys.key_id, signature, tuple(self._cr.peaks), note_sig)
        self.store.insert_checkpoint(cp)
        self._last_cp_size, self._last_cp_time = size, _time.monotonic()
        self.stats["checkpoints"] += 1
        return cp

    def verify_checkpoint_signature(self, cp: Checkpoint, public_key: bytes) -> bool:
        """Ed25519 check of ``cp`` under ``public_key`` (raw 32 bytes)."""
        return verify_signature(public_key, cp.signature, checkpoint_body(self.log_id, cp.size, b64(cp.root), cp.time))

    # --- key rotation ------------------------------------------------------------------------------------------
    def rotate_key(self, *, actor: str, source: str | None = None, reason: str | None = None) -> str:
        """Replace the Ed25519 signing key and return the new key id.

        Order: a ``key.rotated`` record naming the new public key is appended and covered by a checkpoint signed
        with the OLD key (so a verifier trusting the old key learns the new one from the log), then the key file
        is rewritten atomically. Later checkpoints use the new key.
        """
        new = self.keys.rotated()
        self.append("key.rotated", actor=actor, source=source, reason=reason, details={
            "old_key_id": self.keys.key_id, "new_key_id": new.key_id, "new_public_key": b64(new.public_key)})
        self.checkpoint()
        with self._lock:
            new.save()
            self.keys = new
        return new.key_id

    # --- payloads (opt-in) -------------------------------------------------------------------------------------
    def subject_id(self, subject: str) -> str:
        """The pseudonymous id of a data subject in records: HMAC-SHA256 of its id (hex), never the id itself."""
        return self.keys.digest(b"subject:" + subject.encode("utf-8")).split(":", 1)[1]

    def _subject_key(self, subject_id: str) -> bytes | None:
        row = self.store.get_subject_key(subject_id)
        if row is None:
            return None
        nonce, wrapped = row
        return AESGCM(self.keys.kek).decrypt(nonce, wrapped, subject_id.encode("ascii"))

    def _ensure_subject_key(self, subject_id: str) -> bytes:
        key = self._subject_key(subject_id)
        if key is None:
            key = AESGCM.generate_key(bit_length=256)
            nonce = os.urandom(12)
            self.store.put_subject_key(subject_id, nonce, AESGCM(self.keys.kek).encrypt(nonce, key,
                                                                                       subject_id.encode("ascii")))
        return key

    def _seal(self, inputs: Sequence[Any] | None, outputs: Sequence[Any] | None,
              subjects: Sequence[str | None]) -> list[tuple[str, str, bytes, bytes]]:
        groups: dict[tuple[str, str], list[Any]] = {}
        for part, items in (("input", inputs), ("output", outputs)):
            for item, subject in zip(items or [], subjects):
                if subject is not None:
                    groups.setdefault((part, self.subject_id(str(subject))), []).append(item)
        sealed = []
        with self._lock, self.store.transaction():
            for (part, sid), items in groups.items():
                key = self._ensure_subject_key(sid)
                nonce = os.urandom(12)
                sealed.append((part, sid, nonce,
                               AESGCM(key).encrypt(nonce, items_bytes(items), f"{part}:{sid}".encode("ascii"))))
        return sealed

    def read_payloads(self, seq: int) -> list[dict[str, Any]]:
        """Decrypted payloads of record ``seq``: ``[{"part", "subject", "items" (JSON text) or None if shredded}]``."""
        out = []
        for part, sid, nonce, ct in self.store.payloads(seq):
            key = self._subject_key(sid)
            text = (AESGCM(key).decrypt(nonce, ct, f"{part}:{sid}".encode("ascii")).decode("utf-8")
                    if key is not None else None)
            out.append({"part": part, "subject": sid, "items": text})
        return out

    def shred_subject(self, subject: str, *, actor: str, source: str | None = None,
                      reason: str | None = None) -> int:
        """Crypto-shred one data subject (PIPL art. 47 deletion): delete its key and ciphertexts and record it.

        The records (and so the Merkle tree and checkpoints) are untouched: they hold only SHA-256 of the
        ciphertexts. Returns the number of payloads deleted.
        """
        sid = self.subject_id(subject)
        with self._lock, self.store.transaction():
            deleted = self.store.shred_subject(sid)
        self.append("privacy.subject_erased", actor=actor, source=source, reason=reason,
                    details={"subject": sid, "payloads_deleted": deleted})
        return deleted

    def close(self) -> None:
        """Commit the queued records, sign a final checkpoint, bring the replica up to date (best effort), and close
        both stores."""
        if self._group is not None:
            self._group.close()
        try:
            self.checkpoint()
        finally:
            self._closing = True
            self._kick.set()
            if self._worker is not None:
                self._worker.join(timeout=10)
            if self.replica is not None:
                try:
                    self.replicate()
                finally:
                    self.replica.close()
            self.store.close()
