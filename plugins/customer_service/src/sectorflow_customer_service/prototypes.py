"""Example-based intents: nearest prototypes over labelled example sentences (any encoder, any language).

An examples file is JSON lines ``{"text": ..., "label": ...}`` (optional ``"lang"``), a JSON array, or a CSV with
``text,label`` columns (:mod:`.tables`). Each label's score is the highest cosine similarity between the message and
that label's examples (1-nearest-neighbour, as in Snell et al. 2017's prototype classifiers with one prototype per
example); the probability is a softmax over labels of ``similarity * temperature``. The message is out of scope when the best
similarity is below ``min_similarity``.

The shipped Chinese examples (``data/intents_zh.jsonl``) are written by the project (not translated from any
dataset) for a subset of banking77's intent names, so Chinese and English messages share one label inventory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sectorflow import ConfigError

from .encoders import Encoder
from .tables import lang_code, read_rows, text_fields

PACKAGE_DATA = Path(__file__).resolve().parent / "data"


def read_examples(path: str | Path, lang: str | None = None) -> list[tuple[str, str]]:
    """(text, label) pairs of an examples file (formats: :mod:`.tables`), optionally only those whose ``lang`` is
    ``lang`` (``zh-CN`` reads as ``zh``; a row without ``lang`` belongs to both languages).

    Raises:
        ConfigError: missing file, not UTF-8, no text/label columns, a row that is not an object, lacks text or
            label, or has a ``lang`` that is neither zh nor en (row named).
    """
    out = []
    for where, row in read_rows(path, "Intent examples file", ("text", "label")):
        text, label = text_fields(where, row, ("text", "label"), "text or label")
        row_lang = lang_code(row.get("lang"), where)  # type: ignore[union-attr]
        if lang is None or row_lang in (None, lang):
            out.append((text, label))
    if not out:
        raise ConfigError(f"Intent examples file {path} has no examples" + (f" for lang={lang}." if lang else "."))
    return out


class PrototypeClassifier:
    """Nearest-example intents. ``predict(vectors) -> (labels, probabilities [n, L], best similarity [n])``."""

    def __init__(self, encoder: Encoder, examples: Sequence[tuple[str, str]], temperature: float | None = None,
                 encode: Callable[[Encoder, Sequence[str]], np.ndarray] | None = None) -> None:
        self.encoder = encoder
        self.labels = sorted({label for _, label in examples})
        self._label_of = np.array([self.labels.index(label) for _, label in examples])
        self._encode = encode or (lambda enc, texts: enc.encode(texts))
        self.vectors = np.asarray(self._encode(encoder, [t for t, _ in examples]), dtype=np.float32)
        # e5 was trained with temperature 0.01 (Wang et al. 2022): its cosines are compressed near 0.7-1.0
        self.temperature = temperature or (100.0 if "e5" in encoder.name else 20.0)
        self.min_similarity: float | None = None  # set by calibrate()

    def scores(self, vectors: np.ndarray) -> np.ndarray:
        """Best similarity per label, ``[n, L]``."""
        sims = np.asarray(vectors, dtype=np.float32) @ self.vectors.T
        out = np.full((len(sims), len(self.labels)), -1.0, dtype=np.float32)
        for j in range(len(self.labels)):
            out[:, j] = sims[:, self._label_of == j].max(axis=1)
        return out

    def predict(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities ``[n, L]``, best similarity ``[n]``)."""
        s = self.scores(vectors)
        z = np.exp((s - s.max(axis=1, keepdims=True)) * self.temperature)
        return z / z.sum(axis=1, keepdims=True), s.max(axis=1)

    def calibrate(self, oos_texts: Sequence[str]) -> dict[str, float]:
        """Set ``min_similarity`` to the threshold maximising leave-one-out accuracy on the examples (a rejected
        example counts wrong) + recall on ``oos_texts`` (off-domain sentences). Returns the figures."""
        sims = self.vectors @ self.vectors.T
        np.fill_diagonal(sims, -2.0)
        s_in = np.full((len(sims), len(self.labels)), -2.0, dtype=np.float32)
        for j in range(len(self.labels)):
            s_in[:, j] = sims[:, self._label_of == j].max(axis=1)
        right = s_in.argmax(axis=1) == self._label_of
        best_in = s_in.max(axis=1)
        best_out = self.scores(np.asarray(self._encode(self.encoder, list(oos_texts)), dtype=np.float32)).max(axis=1)
        best = (-1.0, 0.0, 0.0, 0.0)
        for t in np.unique(np.concatenate([best_in, best_out])):
            acc, rec = float(np.mean(right & (best_in >= t))), float(np.mean(best_out < t))
            if acc + rec > best[0]:
                best = (acc + rec, float(t), acc, rec)
        # midway between the chosen value and the next lower score, so the threshold is not a sample's own score
        lower = np.concatenate([best_in, best_out])
        lower = lower[lower < best[1]]
        self.min_similarity = (best[1] + float(lower.max())) / 2 if len(lower) else best[1]
        return {"min_similarity": round(self.min_similarity, 4), "loo_accuracy": round(best[2], 4),
                "oos_recall": round(best[3], 4)}
