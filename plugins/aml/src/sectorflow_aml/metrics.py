"""Account-level ranking metrics of an AML model (numpy only; tests check them against scikit-learn).

Every function takes ``scores`` (float array ``[n]``, higher = riskier) and ``labels`` (0/1 array ``[n]``) over the
same ``n`` accounts. Ties are handled as scikit-learn does (a tie group is one threshold).

- :func:`average_precision`: ``sum_k (R_k - R_{k-1}) P_k`` over thresholds (scikit-learn's definition, no
  interpolation); the base rate is what a random ranking scores.
- :func:`precision_at_k`: the share of laundering accounts among the ``k`` highest scores (ties broken by order).
- :func:`recall_at_fpr`: the largest recall at a threshold whose false-positive rate is at most ``fpr``.
- :func:`best_f1`: the highest F1 over thresholds and its threshold.
"""

from __future__ import annotations

import numpy as np


def _curve(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tp, fp, thresholds)`` at each distinct score, from the highest down."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be 1-d arrays of one length; got {s.shape} and {y.shape}")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1] if s.size else np.zeros(0, dtype=int)
    tp = np.cumsum(y)[last]
    fp = (last + 1) - tp
    return tp, fp, s[last]


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """Average precision (area under the precision-recall step curve); ``nan`` without a positive."""
    tp, fp, _ = _curve(scores, labels)
    if not tp.size or tp[-1] == 0:
        return float("nan")
    precision = tp / (tp + fp)
    recall = tp / tp[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def precision_at_k(scores: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Share of positives among the ``k`` highest-scored accounts (``nan`` for ``k <= 0``)."""
    if k <= 0:
        return float("nan")
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    top = np.asarray(labels)[order[:k]]
    return float(np.sum(top) / min(k, top.size)) if top.size else float("nan")


def recall_at_fpr(scores: np.ndarray, labels: np.ndarray, fpr: float = 0.01) -> float:
    """The largest recall at a threshold with false-positive rate ``<= fpr`` (``nan`` without both classes)."""
    tp, fp, _ = _curve(scores, labels)
    if not tp.size or tp[-1] == 0 or fp[-1] == 0:
        return float("nan")
    ok = fp / fp[-1] <= fpr
    return float(np.max(tp[ok]) / tp[-1]) if ok.any() else 0.0


def best_f1(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(f1, threshold)``: the highest F1 over thresholds ``score >= threshold``."""
    tp, fp, thresholds = _curve(scores, labels)
    if not tp.size or tp[-1] == 0:
        return float("nan"), float("nan")
    f1 = 2 * tp / (tp + fp + tp[-1])
    i = int(np.argmax(f1))
    return float(f1[i]), float(thresholds[i])


def f1_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """Precision, recall and F1 of flagging ``score >= threshold``."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    flag = s >= threshold
    tp = int(np.sum(flag & y))
    fp = int(np.sum(flag & ~y))
    fn = int(np.sum(~flag & y))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "tp": tp, "fp": fp, "fn": fn}
