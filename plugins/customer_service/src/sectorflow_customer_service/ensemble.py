"""English intents as an ensemble: the fine-tuned MiniLM heads plus linear heads over e5's frozen sentence vector.

For each intent set the bundle may carry a multinomial logistic-regression head over multilingual-e5-small's
sentence vector (``sectorflow_customer_service.e5``, ``query: `` prefix, unit length, 384 floats), fitted on the
same train split as the MiniLM head (``scripts/fit_e5_heads.py``). The message's score for intent ``j`` is the mean
of the two heads' log-probabilities, ``(log p_minilm(j) + log p_e5(j)) / 2``; its softmax (the renormalised
geometric mean of the two distributions) is the intent probability the pipeline reports and thresholds. On
validation this raised banking77 accuracy from 93.32 to 95.11 and CLINC150 from 96.03 to 97.23
(``scripts/compare_stacked.py``). The mean, not the sum (the renormalised product), because the product's
probabilities are sharper: off-topic messages got confident banking intents, and banking77's calibrated fallback
kept 86.94 % of the validation slice right instead of 90.53 % (``fit_e5_heads.py``; the intent ranking is the same).

Stored in the bundle as ``e5_heads.safetensors`` (named in the manifest's ``e5_heads``): ``<set>.weight`` float32
``[k, 384]`` and ``<set>.bias`` float32 ``[k]`` per intent set, the standardisation of the training vectors
already folded in, so the e5 logits are ``v @ weight.T + bias``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sectorflow import BundleError


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of ``[n, k]`` (float64)."""
    x = np.asarray(x, dtype=np.float64)
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


class E5Heads:
    """Linear heads over e5 sentence vectors, one per intent set (see the module docstring).

    Args:
        heads: ``{intent set: (weight [k, d], bias [k])}``.

    Raises:
        BundleError: a head's shapes do not fit together, or the heads read vectors of different sizes.
    """

    def __init__(self, heads: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        dims = set()
        for name, (w, b) in heads.items():
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise BundleError(f"e5 head {name!r} has weight {w.shape} and bias {b.shape}; expected [k, d] and [k].")
            dims.add(w.shape[1])
        if len(dims) > 1:
            raise BundleError(f"e5 heads read vectors of different sizes {sorted(dims)}.")
        self.heads = {n: (w.astype(np.float64), b.astype(np.float64)) for n, (w, b) in heads.items()}

    def __contains__(self, name: str) -> bool:
        return name in self.heads

    @classmethod
    def load(cls, path: str | Path) -> E5Heads:
        """Read ``e5_heads.safetensors``.

        Raises:
            BundleError: the file is unreadable, or a ``.weight`` has no ``.bias`` (or the reverse).
        """
        from safetensors.numpy import load_file

        try:
            tensors = load_file(str(path))
        except Exception as exc:  # noqa: BLE001 - safetensors raises several types for a damaged file
            raise BundleError(f"{path}: unreadable e5 heads ({type(exc).__name__}: {exc}).") from exc
        names = {k.rsplit(".", 1)[0] for k in tensors}
        missing = [f"{n}.{part}" for n in sorted(names) for part in ("weight", "bias") if f"{n}.{part}" not in tensors]
        if missing or not names:
            raise BundleError(f"{path} lacks {missing or 'any head'}: rebuild it with scripts/fit_e5_heads.py.")
        return cls({n: (tensors[f"{n}.weight"], tensors[f"{n}.bias"]) for n in names})

    def save(self, path: str | Path) -> None:
        """Write the heads as float32 safetensors."""
        from safetensors.numpy import save_file

        out = {}
        for n, (w, b) in self.heads.items():  # C order: safetensors writes the raw buffer (scikit-learn's is F)
            out[f"{n}.weight"] = np.ascontiguousarray(w, dtype=np.float32)
            out[f"{n}.bias"] = np.ascontiguousarray(b, dtype=np.float32)
        save_file(out, str(path))

    def combine(self, name: str, minilm_logits: np.ndarray, e5_vectors: np.ndarray) -> np.ndarray:
        """Ensemble scores ``[n, k]``: ``(log_softmax(minilm_logits) + log_softmax(e5_vectors @ weight.T + bias)) / 2``
        (log of the geometric mean of the two distributions; softmax it for probabilities).

        Args:
            name: the intent set; minilm_logits: ``[n, k]``; e5_vectors: ``[n, d]``.

        Raises:
            KeyError: no e5 head for ``name``. ValueError: shapes that do not fit.
        """
        w, b = self.heads[name]
        logits = np.asarray(minilm_logits, dtype=np.float64)
        vectors = np.asarray(e5_vectors, dtype=np.float64)
        if logits.ndim != 2 or vectors.ndim != 2 or logits.shape != (len(vectors), w.shape[0]) \
                or vectors.shape[1] != w.shape[1]:
            raise ValueError(f"e5 head {name!r}: logits {logits.shape} and vectors {vectors.shape} do not fit "
                             f"[n, {w.shape[0]}] and [n, {w.shape[1]}].")
        return (log_softmax(logits) + log_softmax(vectors @ w.T + b)) / 2.0
