"""Repairing a log store from its replica (``sectorflow audit restore --from REPLICA``).

The replica must verify on its own first (every leaf, root and checkpoint signature against the trusted keys); a
replica that does not is refused and nothing changes. Then each record row of the store is compared with the
replica's: missing rows (deleted, or a truncated tail) are put back, altered rows (any column) are replaced, rows
whose seq is not an integer are removed, and checkpoints missing or altered are put back. Records the store holds
beyond the replica's size (the replica's lag) are kept; rows replaced are returned as they were (``displaced``). The repair runs in one transaction with the append-only
guards lifted for it and put back before the commit. A record the store archived (body cleared under a file name
an ``audit.archived`` record names for it, same leaf hash) is kept archived.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import AuditRestoreError
from .store import Store, StoredRecord
from .verify import verify_log


@dataclass
class RestoreReport:
    """What a restore changed: ``missing`` rows put back, ``altered`` rows replaced, ``removed`` stray rows,
    ``checkpoints`` put back or replaced, ``replica_size`` records in the replica, ``kept_beyond`` records only the
    store had (newer than the replica)."""

    missing: list[int] = field(default_factory=list)
    altered: list[int] = field(default_factory=list)
    displaced: list[StoredRecord] = field(default_factory=list)
    """The store's rows that were replaced, as they were (evidence, and any record appended at a seq the replica
    already held after a truncation): ``sectorflow audit restore`` writes them to a file."""
    removed: int = 0
    checkpoints: int = 0
    replica_size: int = 0
    kept_beyond: int = 0

    @property
    def changed(self) -> int:
        return len(self.missing) + len(self.altered) + self.removed + self.checkpoints

    def to_json(self) -> dict[str, Any]:
        return {"missing": self.missing, "altered": self.altered, "removed": self.removed,
                "checkpoints": self.checkpoints, "replica_size": self.replica_size, "kept_beyond": self.kept_beyond}


def _archive_ranges(store: Store) -> list[tuple[int, int, str]]:
    out = []
    for rec in store.iter_records():
        if rec.body is not None and b'"audit.archived"' in rec.body:
            data = json.loads(rec.body)
            if data.get("event") == "audit.archived":
                det = data.get("details") or {}
                out.append((int(det["first_seq"]), int(det["last_seq"]), str(det["file"])))
    return out


def _same(mine: StoredRecord, theirs: StoredRecord, archives: list[tuple[int, int, str]]) -> bool:
    if (mine.seq, mine.time, mine.event, mine.leaf) != (theirs.seq, theirs.time, theirs.event, theirs.leaf):
        return False
    if mine.body == theirs.body and mine.archive == theirs.archive:
        return True
    # archived here and not (yet) in the replica: fine when an audit.archived record names that file for it
    return (mine.body is None and mine.archive is not None
            and any(a <= mine.seq <= b and f == mine.archive for a, b, f in archives))


def restore_from(store: Store, replica: Store, trusted: dict[str, bytes]) -> RestoreReport:
    """Repair ``store`` from ``replica`` (see the module docstring).

    Raises:
        AuditRestoreError: the replica does not verify, belongs to another log, or is empty; nothing was changed.
    """
    log_id, theirs = store.get_meta("log_id"), replica.get_meta("log_id")
    if theirs is None:
        raise AuditRestoreError("The replica holds no log (no log id): nothing to restore from.")
    if log_id is not None and log_id != theirs:
        raise AuditRestoreError(f"The replica holds log {theirs}, this store log {log_id}: refusing to mix logs.")
    check = verify_log(replica, trusted, log_id=theirs)
    if not check.ok:
        raise AuditRestoreError(f"The replica does not verify, so it cannot be restored from (nothing changed): "
                                f"{'; '.join(check.problems[:3])}", details=check.to_json())
    archives = _archive_ranges(replica)
    report = RestoreReport(replica_size=check.size)
    with store.transaction(), store.guards_lifted():
        stray = [s for s in store.raw_seqs() if type(s) is not int]
        store.delete_records(stray)
        report.removed = len(stray)
        if log_id is None:
            store.set_meta("log_id", theirs)
        mine_iter = store.iter_records(0, check.size)
        mine = next(mine_iter, None)
        for rec in replica.iter_records():
            while mine is not None and mine.seq < rec.seq:  # pragma: no cover - the replica is gap-free
                mine = next(mine_iter, None)
            if mine is None or mine.seq != rec.seq:
                store.put_record(rec)
                report.missing.append(rec.seq)
            else:
                if not _same(mine, rec, archives):
                    report.displaced.append(mine)
                    store.put_record(rec)
                    report.altered.append(rec.seq)
                mine = next(mine_iter, None)
        theirs_cps = {cp.size: cp for cp in replica.checkpoints()}
        for cp in store.checkpoints():
            good = theirs_cps.get(cp.size)
            if cp.size <= check.size and (good is None or (good.root, good.signature, good.time, good.key_id,
                                                            good.peaks) != (cp.root, cp.signature, cp.time,
                                                                            cp.key_id, cp.peaks)):
                store.delete_checkpoint(cp.size)
        have = {cp.size for cp in store.checkpoints()}
        for size, cp in sorted(theirs_cps.items()):
            if size not in have:
                store.insert_checkpoint(cp)
                report.checkpoints += 1
        report.kept_beyond = max(0, store.size() - check.size)
    return report
