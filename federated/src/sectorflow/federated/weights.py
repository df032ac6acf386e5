"""Named weights <-> the ordered array lists Flower sends, and the model hash recorded in the audit log."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np


def to_list(weights: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Arrays in name order (the order both sides agree on), as float32."""
    return [np.asarray(weights[name], dtype=np.float32) for name in sorted(weights)]


def to_named(names: Sequence[str], arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Inverse of :func:`to_list` for the given names; arrays are cast to float32 (SecAgg+ returns float64).

    Raises:
        ValueError: a different number of arrays than names.
    """
    ordered = sorted(names)
    if len(ordered) != len(arrays):
        raise ValueError(f"{len(arrays)} arrays received for {len(ordered)} named weights")
    return {name: np.asarray(a, dtype=np.float32) for name, a in zip(ordered, arrays)}


def model_sha256(arrays: Sequence[np.ndarray]) -> str:
    """SHA-256 hex over each array's dtype, shape and bytes (float32, C order), in order: the same weights always
    give the same hash, whichever process computes it."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.float32)
        h.update(f"float32{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()
