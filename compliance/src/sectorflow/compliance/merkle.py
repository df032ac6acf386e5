"""Merkle tree hashing, inclusion proofs and consistency proofs exactly as RFC 9162 section 2.1 (SHA-256).

Source: RFC 9162 "Certificate Transparency Version 2.0", section 2.1.1 (hashing: ``MTH({}) = SHA-256()``,
leaf ``SHA-256(0x00 || d)``, node ``SHA-256(0x01 || left || right)``, split at the largest power of two ``k < n``),
2.1.3 (inclusion proofs ``PATH(m, D[n])`` and their verification) and 2.1.4 (consistency proofs
``PROOF(m, D[n])`` and their verification). Checked against the transparency-dev/merkle test vectors
(``compliance/tests/vectors``).

Why not pymerkle: pymerkle 7.0.0 hashes with the same 0x00/0x01 prefixes, but its proofs carry its own
``rule``/``subset`` layout and the leaf itself rather than RFC 9162 audit paths, so they cannot be checked by an
RFC 9162 verifier or against the published vectors; and it is GPL-3.0-or-later, which this Apache-2.0 project
cannot take as a dependency. The code below is the RFC's algorithms, nothing more.

All hashes are 32-byte ``bytes``; indexes and sizes are 0-based leaf counts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from sectorflow import SectorflowError

HASH_SIZE = 32
_sha256 = hashlib.sha256


class ProofError(SectorflowError):
    """An inclusion or consistency proof that does not verify, or a request for a proof the tree cannot give."""


def empty_root() -> bytes:
    """``MTH({})``: SHA-256 of the empty string (RFC 9162 2.1.1)."""
    return _sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """``MTH({d}) = SHA-256(0x00 || d)`` for one leaf's input bytes (RFC 9162 2.1.1)."""
    return _sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 || left || right)``: an interior node (RFC 9162 2.1.1)."""
    return _sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


class CompactRange:
    """Running root of an append-only tree: the hashes of its maximal perfect subtrees ("peaks").

    ``append`` is O(log n) amortised and ``root()`` folds the peaks right to left, which equals ``MTH`` of all
    leaves appended so far (RFC 9162 2.1.1: the left subtree of each split is perfect).
    """

    __slots__ = ("size", "_peaks")

    def __init__(self) -> None:
        self.size = 0
        self._peaks: list[bytes] = []

    def append(self, leaf: bytes) -> None:
        """Add one leaf hash (32 bytes)."""
        self._peaks.append(leaf)
        n = self.size
        while n & 1:
            right = self._peaks.pop()
            self._peaks[-1] = node_hash(self._peaks[-1], right)
            n >>= 1
        self.size += 1

    @classmethod
    def restore(cls, size: int, peaks: Sequence[bytes]) -> CompactRange:
        """Rebuild from a saved ``size`` and its peaks (one per set bit of ``size``, largest first).

        Raises:
            ProofError: the number of peaks does not match ``size``.
        """
        if len(peaks) != bin(size).count("1"):
            raise ProofError(f"{len(peaks)} peak hashes cannot describe a tree of size {size}.")
        cr = cls()
        cr.size, cr._peaks = size, list(peaks)
        return cr

    @property
    def peaks(self) -> list[bytes]:
        """The hashes of the maximal perfect subtrees, largest (leftmost) first."""
        return list(self._peaks)

    def root(self) -> bytes:
        """``MTH`` of the leaves appended so far."""
        if not self._peaks:
            return empty_root()
        h = self._peaks[-1]
        for peak in reversed(self._peaks[:-1]):
            h = node_hash(peak, h)
        return h


def root_of(leaves: Sequence[bytes]) -> bytes:
    """``MTH(D[n])`` of a list of leaf hashes."""
    cr = CompactRange()
    for leaf in leaves:
        cr.append(leaf)
    return cr.root()


class ProofBuilder:
    """Inclusion and consistency proofs over one list of leaf hashes, remembering the roots of subtrees of at least
    ``memo_min`` leaves so that many proofs over one tree cost O(n + k log n) rather than O(k n)."""

    def __init__(self, leaves: Sequence[bytes], memo_min: int = 256) -> None:
        self.leaves = leaves
        self.memo_min = memo_min
        self._memo: dict[tuple[int, int], bytes] = {}

    def root(self, lo: int, hi: int) -> bytes:
        """``MTH(D[lo:hi])``."""
        if hi - lo < self.memo_min:
            return root_of(self.leaves[lo:hi])
        key = (lo, hi)
        h = self._memo.get(key)
        if h is None:
            k = _split(hi - lo)
            h = self._memo[key] = node_hash(self.root(lo, lo + k), self.root(lo + k, hi))
        return h

    def inclusion(self, index: int) -> list[bytes]:
        """``PATH(index, D[n])`` (RFC 9162 2.1.3.1).

        Raises:
            ProofError: ``index`` is not in ``[0, n)``.
        """
        if not 0 <= index < len(self.leaves):
            raise ProofError(f"leaf index {index} is outside a tree of size {len(self.leaves)}.")
        path: list[bytes] = []
        lo, hi, m = 0, len(self.leaves), index
        while hi - lo > 1:
            k = _split(hi - lo)
            if m < k:
                path.append(self.root(lo + k, hi))
                hi = lo + k
            else:
                path.append(self.root(lo, lo + k))
                lo, m = lo + k, m - k
        path.reverse()
        return path

    def consistency(self, first: int) -> list[bytes]:
        """``PROOF(first, D[n])`` (RFC 9162 2.1.4.1).

        Raises:
            ProofError: ``first`` is not in ``[0, n]``.
        """
        n = len(self.leaves)
        if not 0 <= first <= n:
            raise ProofError(f"size {first} is outside [0, {n}].")
        if first == 0 or first == n:
            return []
        path: list[bytes] = []
        lo, hi, m, complete = 0, n, first, True
        while True:
            if m == hi - lo:
                if not complete:
                    path.append(self.root(lo, hi))
                break
            k = _split(hi - lo)
            if m <= k:
                path.append(self.root(lo + k, hi))
                hi = lo + k
            else:
                path.append(self.root(lo, lo + k))
                lo, m, complete = lo + k, m - k, False
        path.reverse()
        return path


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """``PATH(index, D[n])`` (RFC 9162 2.1.3.1) over the leaf hashes ``leaves`` (n = ``len(leaves)``).

    Raises:
        ProofError: ``index`` is not in ``[0, n)``.
    """
    return ProofBuilder(leaves).inclusion(index)


def consistency_proof(first: int, leaves: Sequence[bytes]) -> list[bytes]:
    """``PROOF(first, D[n])`` (RFC 9162 2.1.4.1) between the tree of the first ``first`` leaves and all of them.

    Raises:
        ProofError: ``first`` is not in ``[0, n]``.
    """
    return ProofBuilder(leaves).consistency(first)


def _check_hashes(*hashes: bytes | Iterable[bytes]) -> None:
    for h in hashes:
        items = [h] if isinstance(h, (bytes, bytearray)) else list(h)
        for item in items:
            if len(item) != HASH_SIZE:
                raise ProofError(f"a hash of {len(item)} bytes where SHA-256 gives {HASH_SIZE}.")


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Check that ``leaf`` is leaf number ``index`` of the tree of ``size`` leaves whose root is ``root``.

    The algorithm of RFC 9162 2.1.3.2, step by step.

    Raises:
        ProofError: the proof does not verify (says why).
    """
    _check_hashes(leaf, proof, root)
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is outside a tree of size {size}.")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep.")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep.")
    if r != root:
        raise ProofError("the inclusion proof leads to a different root hash.")


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       proof: Sequence[bytes]) -> None:
    """Check that the tree of ``first`` leaves with root ``first_root`` is a prefix of the tree of ``second`` leaves
    with root ``second_root``.

    The algorithm of RFC 9162 2.1.4.2; sizes 0 and ``first == second`` need an empty proof (and equal roots).

    Raises:
        ProofError: the proof does not verify (says why).
    """
    _check_hashes(first_root, second_root, proof)
    if not 0 <= first <= second:
        raise ProofError(f"sizes {first} and {second}: the first must be between 0 and the second.")
    if first == second:
        if proof:
            raise ProofError("equal tree sizes need an empty consistency proof.")
        if first_root != second_root:
            raise ProofError("equal tree sizes with different root hashes.")
        return
    if first == 0:
        if proof:
            raise ProofError("a consistency proof from the empty tree must be empty.")
        return
    if not proof:
        raise ProofError("the consistency proof is empty.")
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the tree is deep.")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than the tree is deep.")
    if fr != first_root:
        raise ProofError("the consistency proof does not lead to the first root hash.")
    if sr != second_root:
        raise ProofError("the consistency proof does not lead to the second root hash.")
