"""Sentence encoders the pipeline routes messages to, by language.

An encoder is anything with a ``name`` (str) and ``encode(texts) -> np.ndarray`` of shape ``[n, d]``, float32,
each row L2-normalised (cosine similarity = dot product). English goes to the bundled fine-tuned MiniLM (served
by a Paddle Inference predictor, see :mod:`.pipeline`); Chinese goes to whichever encoder :func:`chinese_encoder`
finds: the project's multilingual-e5-small port in :mod:`sectorflow_customer_service.e5` (shipped), or, if that
fails to load,
:class:`CharNgramEncoder`, a character n-gram TF-IDF model fitted on the texts it must compare (intent examples and
FAQ questions). The latter has no notion of synonyms: it matches shared characters only, and the docs say so.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

log = logging.getLogger(__name__)


@runtime_checkable
class Encoder(Protocol):
    """``encode(texts) -> float32 [n, d]``, rows L2-normalised; ``name`` says which model (goes into results)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class LazyEncoder:
    """An :class:`Encoder` built by ``factory()`` on first use (``encode``, ``name`` or any attribute), once, under a
    lock (thread-safe). ``loaded`` says whether it has been built."""

    def __init__(self, factory: Callable[[], Encoder]) -> None:
        self._factory: Callable[[], Encoder] | None = factory
        self._encoder: Encoder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def get(self) -> Encoder:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    assert self._factory is not None
                    self._encoder, self._factory = self._factory(), None
        return self._encoder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.get().encode(texts)

    def __getattr__(self, attr: str) -> Any:  # name, cacheable, ... of the real encoder
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.get(), attr)


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero). float32 ``[n, d]``."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


class CharNgramEncoder:
    """Character 1-2-gram TF-IDF vectors (sublinear tf, smoothed idf), L2-normalised.

    Fitted on a corpus (``fit``); n-grams outside its vocabulary are ignored. Suits Chinese, where single
    characters and bigrams carry most of the meaning; it does not know synonyms (``冻结`` vs ``锁卡``).
    """

    name = "char-ngram-tfidf"

    def __init__(self, ngram: tuple[int, int] = (1, 2)) -> None:
        self.ngram = ngram
        self.vocab: dict[str, int] = {}
        self.idf = np.zeros(0, dtype=np.float32)

    def _grams(self, text: str) -> list[str]:
        chars = [c for c in text.lower() if not c.isspace() and c not in "，。！？、,.!?;；：:\"'“”‘’()（）"]
        out = []
        for n in range(self.ngram[0], self.ngram[1] + 1):
            out += ["".join(chars[i:i + n]) for i in range(len(chars) - n + 1)]
        return out

    def fit(self, corpus: Sequence[str]) -> CharNgramEncoder:
        docs = [set(self._grams(t)) for t in corpus]
        df: dict[str, int] = {}
        for grams in docs:
            for g in grams:
                df[g] = df.get(g, 0) + 1
        self.vocab = {g: i for i, g in enumerate(sorted(df))}
        n = len(docs)
        self.idf = np.array([np.log((1 + n) / (1 + df[g])) + 1.0 for g in sorted(df)], dtype=np.float32)
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), max(1, len(self.vocab))), dtype=np.float32)
        for row, text in enumerate(texts):
            counts: dict[int, int] = {}
            for g in self._grams(text):
                j = self.vocab.get(g)
                if j is not None:
                    counts[j] = counts.get(j, 0) + 1
            for j, c in counts.items():
                out[row, j] = (1.0 + np.log(c)) * self.idf[j]
        return l2_normalise(out)


def chinese_encoder(num_threads: int = 1) -> Encoder | None:
    """The project's Chinese sentence encoder: multilingual-e5-small (MIT) from :mod:`sectorflow_customer_service.e5`
    when its weights are shipped and load, else ``None`` (the caller then fits a :class:`CharNgramEncoder`)."""
    try:
        module = importlib.import_module("sectorflow_customer_service.e5")
        return module.E5Encoder(num_threads=max(1, int(num_threads)))
    except Exception as exc:  # noqa: BLE001 - any failure falls back to character n-grams, and says so
        log.warning("Chinese encoder (multilingual-e5-small) unavailable (%s: %s); using character n-grams",
                    type(exc).__name__, exc)
        return None


def encode_cached(encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
    """``encoder.encode(texts)``, kept in ``$SECTORFLOW_HOME/customer_service/vectors/`` under the SHA-256 of the
    encoder's name and the texts (fixed example sets are encoded once per machine, not at every load). Encoders
    with ``cacheable = False`` (fitted per corpus) are always run."""
    if not getattr(encoder, "cacheable", True):
        return encoder.encode(texts)
    import hashlib

    from .cache import home

    key = hashlib.sha256("\x1f".join([encoder.name, *texts]).encode("utf-8")).hexdigest()[:32]
    path = home() / "customer_service" / "vectors" / f"{key}.npy"
    if path.is_file():
        try:
            return np.load(path)
        except (OSError, ValueError):
            pass
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home: just do without the cache
        log.info("vector cache not written (%s)", exc)
    return vectors
