"""The verifier's record scan, split across processes for large logs (``verify_log``'s hot path).

A scan reads one range of record rows and, for each, recomputes the leaf hash from the stored bytes and compares it
with the stored one, checks that ``seq`` has no gap and matches the body, and that the ``time``, ``event`` and
``archive`` columns say what the body says. It returns the leaf hashes and the hashes of every complete aligned
block of :data:`BLOCK` leaves (perfect subtrees, RFC 9162 2.1.1), so the parent rebuilds the tree from about one
hash per :data:`BLOCK` records instead of one per record. Checkpoint signatures (Ed25519) are checked in the same
pool. Ranges are aligned to :data:`BLOCK`; logs under :data:`PARALLEL_FROM` records are scanned in-process.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from . import merkle
from .keys import verify_signature
from .records import unb64
from .store import Store

BLOCK = 64
"""Leaves per block: a power of two; checkpoints are signed every 64 records by default."""
PARALLEL_FROM = 200_000
"""Records from which ``verify_log`` scans in worker processes (started with :func:`worker_context`)."""

_SPECIAL = frozenset({"audit.archived", "key.rotated", "config.changed"})
_SEQ_KEY = b'"seq":'
_DIGITS = re.compile(rb"(\d+)[,}]")


@dataclass
class Scan:
    """What one range scan found. ``rows`` is how many consecutive records from ``start`` it read before a gap
    (``gap``: True) or the end."""

    start: int
    rows: int = 0
    gap: bool = False
    leaves: bytes = b""
    """The leaf hashes, 32 bytes each, joined (one object to hand back from a worker, not a million)."""
    blocks: list[bytes] = field(default_factory=list)
    problems: list[tuple[str, int | None, bool]] = field(default_factory=list)
    cleared: list[tuple[int, str]] = field(default_factory=list)
    archives: list[tuple[int, int, str]] = field(default_factory=list)
    announced: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    pinned: list[tuple[int, Any]] = field(default_factory=list)
    archived: int = 0


def _body_seq(body: bytes) -> int | None:
    """The top-level ``seq`` of a canonical record: keys are sorted and the keys after ``seq`` (``source``,
    ``tenant``, ``time``, ``v``) hold scalars, so its last occurrence is the top-level one. Falls back to
    ``json.loads`` for anything unexpected."""
    at = body.rfind(_SEQ_KEY)
    if at >= 0:
        m = _DIGITS.match(body, at + len(_SEQ_KEY))
        if m:
            return int(m.group(1))
    try:
        data = json.loads(body)
        return data.get("seq") if isinstance(data, dict) else None
    except ValueError:
        return None


def _column_problems(scan: Scan, seq: int, body: bytes, col_time: Any, col_event: Any) -> None:
    """The slow path after a failed fast column check: name the column that differs from the body, if any."""
    try:
        data = json.loads(body)
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    for name, column in (("time", col_time), ("event", col_event)):
        if data.get(name) != column:
            scan.problems.append((f"record {seq}: its {name} column says {column!r} but the record says "
                                  f"{data.get(name)!r} (column altered)", seq, True))


def _special(scan: Scan, seq: int, body: bytes) -> None:
    """Records verify reads: archive runs, key rotations, the pinned audit policy."""
    fail = scan.problems.append
    if b'"audit.archived"' in body:
        try:
            det = json.loads(body).get("details") or {}
            scan.archives.append((int(det["first_seq"]), int(det["last_seq"]), str(det["file"])))
        except (KeyError, ValueError, TypeError, AttributeError):
            fail((f"record {seq}: malformed audit.archived record", seq, True))
    if b'"audit policy pinned"' in body:
        try:
            data = json.loads(body)
            if data.get("event") == "config.changed":
                scan.pinned.append((seq, data["details"]["policy"]))
        except (KeyError, ValueError, TypeError):
            fail((f"record {seq}: malformed audit policy record", seq, True))
    if b'"key.rotated"' in body:
        try:
            data = json.loads(body)
            if data.get("event") == "key.rotated":
                det = data.get("details") or {}
                scan.announced[det["new_key_id"]] = (seq, unb64(det["new_public_key"]))
        except (KeyError, ValueError, TypeError):
            fail((f"record {seq}: malformed key.rotated record", seq, True))


def scan_range(store: Store, start: int, stop: int | None) -> Scan:
    """Scan records ``start <= seq < stop`` (``stop`` None: to the end, rows with a non-integer seq included)."""
    scan = Scan(start)
    fail = scan.problems.append
    leaves: list[bytes] = []
    add_leaf = leaves.append
    sha256, seq_key, digits = hashlib.sha256, _SEQ_KEY, _DIGITS
    expected = start
    for seq, body, stored_leaf, archive, col_time, col_event in store.iter_leaf_rows(start=start, stop=stop):
        if seq != expected:  # the hot loop: ~1M iterations, kept lean
            if type(seq) is not int:  # e.g. a seq rewritten as text: the row order is meaningless from here on
                fail((f"a record row after record {expected - 1} holds seq {seq!r}, not an integer (altered)",
                      expected, True))
            else:
                fail((f"records {expected}..{seq - 1} are missing (deleted)", expected, True))
            scan.gap = True
            break
        if body is None:
            if not archive:
                fail((f"record {seq}: body removed without an archive", seq, True))
            else:
                scan.cleared.append((seq, archive))
            scan.archived += 1
            leaf = stored_leaf
        else:
            leaf = sha256(b"\x00" + body).digest()  # merkle.leaf_hash, inlined
            if leaf != stored_leaf:
                fail((f"record {seq}: content does not match its stored leaf hash (altered)", seq, True))
            at = body.rfind(seq_key)
            m = digits.match(body, at + 6) if at >= 0 else None  # 6 == len(b'"seq":')
            if (int(m.group(1)) if m else _body_seq(body)) != seq:
                fail((f"record {seq}: body says seq {_body_seq(body)} (moved or altered)", seq, True))
            # The indexed columns (time: export ranges and retention; event) must say what the body says. In
            # canonical JSON the last key is "v" and "time" comes just before it; no key after the top-level "event"
            # is named "event", and a string value cannot hold a bare '"', so its last occurrence is the top one.
            if (type(col_time) is not str or type(col_event) is not str
                    or not body.endswith(b'"time":"' + col_time.encode() + b'","v":1}')
                    or not body.startswith(b'"event":"' + col_event.encode() + b'"', body.rfind(b'"event":'))):
                _column_problems(scan, seq, body, col_time, col_event)
            if archive is not None:
                fail((f"record {seq}: has a body and also names archive {archive!r} (column altered)", seq, True))
            if col_event in _SPECIAL:  # the column was just checked against the body
                _special(scan, seq, body)
        add_leaf(leaf)
        expected += 1
    scan.rows = expected - start
    scan.blocks = block_hashes(leaves, start)
    scan.leaves = b"".join(leaves)
    return scan


def block_hashes(leaves: list[bytes], start: int) -> list[bytes]:
    """Hashes of the complete :data:`BLOCK`-leaf blocks of ``leaves`` (whose first leaf is at ``start``, a multiple
    of BLOCK): each the root of a perfect subtree, computed level by level."""
    assert start % BLOCK == 0
    sha256 = hashlib.sha256
    out = []
    for at in range(0, len(leaves) - BLOCK + 1, BLOCK):
        level = leaves[at:at + BLOCK]
        while len(level) > 1:
            level = [sha256(b"\x01" + a + b).digest() for a, b in zip(level[0::2], level[1::2])]
        out.append(level[0])
    return out


def tree_at(sizes: list[int], scans: list[Scan]) -> tuple[dict[int, bytes], dict[int, list[bytes]], bytes]:
    """``(roots, peaks, root)``: the tree root and peaks at each of ``sizes`` (at most the scanned records) and the
    root of all scanned records, from the scans' block hashes and, for a partial block, their leaves."""
    total = sum(s.rows for s in scans)
    blocks = [b for s in scans for b in s.blocks]
    leaves_of: dict[int, Scan] = {s.start: s for s in scans}
    starts = sorted(leaves_of)

    def leaf(i: int) -> bytes:
        import bisect

        s = leaves_of[starts[bisect.bisect_right(starts, i) - 1]]
        at = 32 * (i - s.start)
        return s.leaves[at:at + 32]

    roots: dict[int, bytes] = {}
    peaks_at: dict[int, list[bytes]] = {}
    cr = merkle.CompactRange()  # over blocks: the upper levels of the real tree
    for size in sorted(set(sizes) | {total}):
        if size > total:
            continue
        while cr.size < size // BLOCK:
            cr.append(blocks[cr.size])
        rest = merkle.CompactRange()
        for i in range(cr.size * BLOCK, size):
            rest.append(leaf(i))
        peaks = cr.peaks + rest.peaks
        roots[size] = _fold(peaks)
        peaks_at[size] = peaks
    return roots, peaks_at, roots[total]


def _fold(peaks: list[bytes]) -> bytes:
    if not peaks:
        return merkle.empty_root()
    h = peaks[-1]
    for peak in reversed(peaks[:-1]):
        h = merkle.node_hash(peak, h)
    return h


def check_signatures(items: list[tuple[int, bytes, bytes, bytes]]) -> list[int]:
    """Sizes whose Ed25519 signature verifies: ``items`` are ``(size, public key, signature, message)``."""
    return [size for size, key, sig, msg in items if verify_signature(key, sig, msg)]


def _scan_in_worker(args: tuple[Callable[[], Store], int, int | None]) -> Scan:
    open_reader, start, end = args
    reader = open_reader()
    try:
        return scan_range(reader, start, end)
    finally:
        reader.close()


def worker_context() -> multiprocessing.context.BaseContext:
    """The start method of the scan's worker processes: ``forkserver`` where the platform has it, else ``spawn``;
    never ``fork``, since the verifier runs inside processes with other threads (a server, Ray, Paddle), and a child
    forked from them can block forever on a lock another thread held at the fork (the Python docs,
    multiprocessing "Contexts and start methods")."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # the server imports this module once; each worker is a fork of it
    return context


def scan_all(store: Store, signatures: list[tuple[int, bytes, bytes, bytes]],
             workers: int | None = None) -> tuple[list[Scan], set[int]]:
    """Scan every record (in ``workers`` worker processes for large logs, each with its own read connection from
    ``store.reader_factory()``) and check ``signatures`` alongside. Returns the scans in order, up to and including
    the first with a gap, and the sizes whose signature verified."""
    try:
        top = store._q("SELECT MAX(seq) FROM records").fetchone()[0]
    except Exception:  # noqa: BLE001 - an unreadable store: the plain scan reports what it can
        top = None
    n = top + 1 if type(top) is int else 0
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers < 2 or n < PARALLEL_FROM or type(top) is not int:
        return [scan_range(store, 0, None)], set(check_signatures(signatures))
    step = -(-n // workers)
    step += (-step) % BLOCK
    open_reader = store.reader_factory()
    ranges: list[tuple[Callable[[], Store], int, int | None]] = [(open_reader, a, a + step) for a in range(0, n, step)]
    ranges[-1] = (open_reader, ranges[-1][1], None)
    with worker_context().Pool(workers) as pool:
        half = len(signatures) // 2
        sig_jobs = [pool.apply_async(check_signatures, (part,)) for part in (signatures[:half], signatures[half:])]
        scans = pool.map(_scan_in_worker, ranges, chunksize=1)
        good = {size for job in sig_jobs for size in job.get()}
    out = []
    for scan in scans:
        out.append(scan)
        if scan.gap:
            break
        if scan is not scans[-1] and scan.rows < step:  # rows missing at the end of this range
            first = scan.start + scan.rows
            after = store._q("SELECT MIN(seq) FROM records WHERE seq > ?", (first,)).fetchone()[0]
            scan.problems.append((f"records {first}..{after - 1 if after is not None else '?'} are missing "
                                  f"(deleted)", first, True))
            scan.gap = True
            break
    return out, good
