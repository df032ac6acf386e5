"""Out-of-scope detection by a distance of a message's sentence vector: to the nearest intent (Mahalanobis,
:class:`MahalanobisScorer`) or to the nearest training message (cosine, :class:`NearestNeighbourScorer`, the
CLINC150 rule since bundle 0.3.1); ``calibration.json``'s ``method`` says which (:func:`load_scorer`).

Each in-scope intent is a Gaussian with its own mean and one covariance shared by all intents (a linear discriminant
model), fitted on the training split's sentence vectors; a message whose vector lies far from every intent's mean
is out of scope, however confident the softmax head is. Lee et al. (2018), "A Simple Unified Framework for
Detecting Out-of-Distribution Samples and Adversarial Attacks", NeurIPS; Podolskiy et al. (2021), "Revisiting
Mahalanobis Distance for Transformer-Based Out-of-Domain Detection", AAAI (CLINC150 among their benchmarks). On this
bundle's CLINC150 validation split the distance separates oos_val from in-scope messages with AUROC 0.985, the top
softmax probability with 0.938 (``scripts/fit_oos.py`` prints both).

Stored in the bundle as ``oos_<intent set>.safetensors``:

- ``whitener``: float32 ``[d, d]``, the lower Cholesky factor ``L`` of the shrunk precision matrix
  ``P = L L^T`` (Ledoit-Wolf shrinkage of the pooled within-intent covariance);
- ``means``: float32 ``[k, d]``, the intent means already multiplied by ``L``.

Then ``(x - mu)^T P (x - mu) = ||x L - mu L||^2``, so a batch costs one ``[n, d] x [d, d]`` and one
``[n, d] x [d, k]`` product.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sectorflow import BundleError


class MahalanobisScorer:
    """Squared Mahalanobis distance to the nearest intent mean (see the module docstring).

    Args:
        whitener: float ``[d, d]``, ``L`` with ``P = L L^T``.
        means: float ``[k, d]``, the intent means times ``L``.

    Raises:
        BundleError: shapes that do not fit together.
    """

    def __init__(self, whitener: np.ndarray, means: np.ndarray) -> None:
        if whitener.ndim != 2 or whitener.shape[0] != whitener.shape[1] or means.ndim != 2 \
                or means.shape[1] != whitener.shape[0] or len(means) == 0:
            raise BundleError(f"Out-of-scope statistics have shapes whitener {whitener.shape} and means "
                              f"{means.shape}; expected [d, d] and [k, d] with k >= 1.")
        self.whitener = whitener.astype(np.float64)
        self.means = means.astype(np.float64)
        self._mean_sq = (self.means ** 2).sum(axis=1)

    @property
    def dim(self) -> int:
        """The sentence-vector dimension ``d``."""
        return int(self.whitener.shape[0])

    @classmethod
    def fit(cls, vectors: np.ndarray, labels: np.ndarray) -> MahalanobisScorer:
        """Fit intent means and the shared, Ledoit-Wolf-shrunk covariance (scikit-learn, build time only).

        Args:
            vectors: float ``[n, d]`` sentence vectors of in-scope training messages.
            labels: ``[n]`` intent of each row (any hashable values).
        """
        from sklearn.covariance import LedoitWolf  # build-time dependency of scripts/, not of the plugin

        vectors = np.asarray(vectors, dtype=np.float64)
        labels = np.asarray(labels)
        classes, index = np.unique(labels, return_inverse=True)
        means = np.stack([vectors[index == c].mean(axis=0) for c in range(len(classes))])
        precision = LedoitWolf().fit(vectors - means[index]).precision_
        whitener = np.linalg.cholesky((precision + precision.T) / 2.0)
        return cls(whitener, means @ whitener)

    @classmethod
    def load(cls, path: str | Path) -> MahalanobisScorer:
        """Read ``oos_<intent set>.safetensors`` (see the module docstring).

        Raises:
            BundleError: the file lacks ``whitener`` or ``means``, or their shapes do not fit.
        """
        from safetensors.numpy import load_file

        tensors = load_file(str(path))
        missing = [k for k in ("whitener", "means") if k not in tensors]
        if missing:
            raise BundleError(f"{path} lacks {missing}: rebuild it with scripts/fit_oos.py.")
        return cls(tensors["whitener"], tensors["means"])

    def save(self, path: str | Path) -> None:
        """Write the statistics as float32 safetensors."""
        from safetensors.numpy import save_file

        save_file({"whitener": self.whitener.astype(np.float32), "means": self.means.astype(np.float32)}, str(path))

    def distance(self, vectors: np.ndarray) -> np.ndarray:
        """Squared Mahalanobis distance of each row of ``vectors`` (``[n, d]``) to its nearest intent mean: ``[n]``.

        Raises:
            ValueError: ``vectors`` is not ``[n, d]``.
        """
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected sentence vectors of shape [n, {self.dim}], got {x.shape}")
        xw = x @ self.whitener
        d2 = (xw ** 2).sum(axis=1)[:, None] - 2.0 * (xw @ self.means.T) + self._mean_sq[None, :]
        return np.maximum(d2.min(axis=1), 0.0)



class NearestNeighbourScorer:
    """Cosine distance to the nearest training message: ``1 - max_j cos(x, t_j)`` (k = 1; Sun et al. 2022, "Out-of-
    Distribution Detection with Deep Nearest Neighbors", ICML). Far from every in-scope training message = out of
    scope. Stored as ``oos_<intent set>_knn.safetensors`` with ``vectors``: float16 ``[n, d]``, the training
    messages' sentence vectors scaled to unit length (the threshold in ``calibration.json`` is calibrated on these
    stored float16 vectors, so the runtime reproduces the validation scores).

    Args:
        vectors: float ``[n, d]`` training sentence vectors, n >= 1 (scaled to unit length here).

    Raises:
        BundleError: not ``[n, d]`` with n >= 1, or a zero row.
    """

    def __init__(self, vectors: np.ndarray) -> None:
        v = np.asarray(vectors, dtype=np.float32)
        if v.ndim != 2 or len(v) == 0 or v.shape[1] == 0:
            raise BundleError(f"Out-of-scope neighbour vectors have shape {v.shape}; expected [n, d] with n >= 1.")
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise BundleError("Out-of-scope neighbour vectors contain a zero row; rebuild them with "
                              "scripts/fit_oos_operating_point.py.")
        self.vectors = v / norms

    @property
    def dim(self) -> int:
        """The sentence-vector dimension ``d``."""
        return int(self.vectors.shape[1])

    @classmethod
    def load(cls, path: str | Path) -> NearestNeighbourScorer:
        """Read ``oos_<intent set>_knn.safetensors`` (``vectors``, float16 ``[n, d]``).

        Raises:
            BundleError: the file lacks ``vectors`` or its shape is wrong.
        """
        from safetensors.numpy import load_file

        tensors = load_file(str(path))
        if "vectors" not in tensors:
            raise BundleError(f"{path} lacks 'vectors': rebuild it with scripts/fit_oos_operating_point.py.")
        return cls(tensors["vectors"])

    def save(self, path: str | Path) -> None:
        """Write the unit-length vectors as float16 safetensors (what :meth:`load` and the runtime read)."""
        from safetensors.numpy import save_file

        save_file({"vectors": self.vectors.astype(np.float16)}, str(path))

    def distance(self, vectors: np.ndarray, chunk: int = 512) -> np.ndarray:
        """Cosine distance of each row of ``vectors`` (``[n, d]``, any length > 0) to its nearest stored vector:
        ``[n]``, in ``[0, 2]``.

        Raises:
            ValueError: ``vectors`` is not ``[n, d]``, or has a zero row.
        """
        x = np.asarray(vectors, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected sentence vectors of shape [n, {self.dim}], got {x.shape}")
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise ValueError("a sentence vector is all zeros; its cosine distance is undefined")
        x = x / norms
        best = [(x[i:i + chunk] @ self.vectors.T).max(axis=1) for i in range(0, len(x), chunk)]
        return np.clip(1.0 - np.concatenate(best).astype(np.float64), 0.0, 2.0)


SCORERS = {"mahalanobis": MahalanobisScorer, "knn": NearestNeighbourScorer}


def load_scorer(method: str, path: str | Path) -> MahalanobisScorer | NearestNeighbourScorer:
    """The out-of-scope scorer that ``calibration.json``'s ``method`` names (``mahalanobis`` or ``knn``), read from
    ``path``.

    Raises:
        BundleError: an unknown method, or a file that does not fit it.
    """
    if method not in SCORERS:
        raise BundleError(f"Unknown out-of-scope method {method!r} in calibration.json; expected one of "
                          f"{sorted(SCORERS)}.")
    return SCORERS[method].load(path)

def wilson_lower(successes: int, n: int, z: float = 1.959964) -> float:
    """Lower end of the Wilson score interval of a binomial proportion (default 95 %): how low the true rate may
    be when ``successes`` of ``n`` were seen. ``0.0`` when ``n`` is 0. (Wilson, 1927, JASA 22:209.)"""
    if n <= 0:
        return 0.0
    p = successes / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def calibrate_distance(d_in: np.ndarray, right_in: np.ndarray, forced_in: np.ndarray, d_out: np.ndarray,
                       forced_out: np.ndarray, min_recall: float = 0.75) -> dict[str, float]:
    """The distance threshold: the best in-scope accuracy among thresholds whose out-of-scope recall is at least
    ``min_recall`` with 95 % confidence (the Wilson lower bound over the out-of-scope validation messages, so that
    100 oos_val messages need about 84 caught for 75 %); if none reaches it, the best lower bound.

    Args:
        d_in / d_out: ``[n]`` distances of in-scope / out-of-scope validation messages.
        right_in: ``[n_in]`` bool, the head's top intent is right; forced_*: out of scope for another reason (the
            head's top class is ``oos``).

    Returns:
        ``{"distance_threshold", "val_in_scope_accuracy", "val_oos_recall", "val_oos_recall_wilson_lower"}``; a
        message is out of scope when its distance is above the threshold.
    """
    candidates = np.unique(np.concatenate([d_in, d_out]))
    best: tuple[tuple[bool, float, float], dict[str, float]] | None = None
    n_out = len(d_out)
    for t in candidates:
        caught = int(np.sum((d_out > t) | forced_out))
        lower = wilson_lower(caught, n_out)
        acc = float(np.mean(right_in & (d_in <= t) & ~forced_in))
        key = (lower >= min_recall, acc if lower >= min_recall else lower, float(t))
        if best is None or key > best[0]:
            best = (key, {"distance_threshold": float(t), "val_in_scope_accuracy": round(acc, 4),
                          "val_oos_recall": round(caught / max(1, n_out), 4),
                          "val_oos_recall_wilson_lower": round(lower, 4)})
    assert best is not None
    return best[1]
