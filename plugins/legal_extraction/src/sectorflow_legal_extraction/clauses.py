"""Features of the CUAD clause classifier: hashed word uni- and bigrams of one text segment.

A segment becomes up to :data:`MAX_FEATURES` ``(bucket id, weight)`` pairs: ids are CRC-32 hashes of lower-cased
word unigrams and bigrams modulo ``buckets - 1`` plus one (0 pads), weights are ``1 + log(tf)`` scaled to unit L2
norm. The model (``scripts/train_clause_classifier.py``) is an embedding bag over these ids, a ReLU and a linear layer
with 41 sigmoid outputs, one per CUAD category; it is served from the bundle through ``paddle.inference``.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

MAX_FEATURES = 256
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\W\d_a-z]", re.IGNORECASE)


def features(text: str, buckets: int) -> tuple[list[int], list[float]]:
    """``(ids, weights)`` of one segment (at most :data:`MAX_FEATURES`, the most frequent first)."""
    words = [w.lower() for w in _WORD.findall(text)]
    grams = Counter(words)
    grams.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    counts: Counter[int] = Counter()
    for gram, n in grams.items():
        counts[zlib.crc32(gram.encode("utf-8")) % (buckets - 1) + 1] += n
    top = counts.most_common(MAX_FEATURES)
    weights = [1.0 + math.log(n) for _, n in top]
    norm = math.sqrt(sum(w * w for w in weights)) or 1.0
    return [i for i, _ in top], [w / norm for w in weights]


def batch_arrays(texts: Sequence[str], buckets: int) -> dict[str, np.ndarray]:
    """Padded ``{"ids": int64 [n, L], "weights": float32 [n, L]}`` for a batch of segments (L >= 1)."""
    feats = [features(t, buckets) for t in texts]
    width = max(1, max((len(ids) for ids, _ in feats), default=1))
    ids = np.zeros((len(texts), width), dtype=np.int64)
    weights = np.zeros((len(texts), width), dtype=np.float32)
    for row, (i, w) in enumerate(feats):
        ids[row, :len(i)] = i
        weights[row, :len(w)] = w
    return {"ids": ids, "weights": weights}
