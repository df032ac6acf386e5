"""FAQ knowledge base: the operator's question/answer file, embedded per language and searched by cosine similarity.

File formats (:mod:`.tables`: CSV/TSV with a header, JSON lines or a JSON array; UTF-8): ``question``, ``answer``
(required), ``lang`` (``zh``/``en``, also ``zh-CN``, ``zh-TW``, ``en-US`` ...; optional: guessed from the question
otherwise), ``id`` (optional: the entry's number otherwise; ids must be unique).

Each language's entries are encoded by that language's encoder and searched exactly: one matrix product of the
queries with every entry's vector, then the best ``k`` by ``numpy.argpartition``, in blocks of
:data:`QUERY_BLOCK` queries so that memory stays bounded. An FAQ's sizes need nothing approximate: 100,000 entries
of 384 dimensions answer a query in a few milliseconds on one core (``benchmarks/faq_search.py``); until 1 Dec 2026
an HNSW graph (``hnswlib``) answered above 2,000 entries, but hnswlib ships no wheels, so installing it needed a C++
compiler. Embeddings are cached in a folder beside the FAQ file
(``.<name>.faqcache/``, or under ``$SECTORFLOW_HOME`` when that folder is not writable) under a digest of the
questions and the encoder's name; a changed question or encoder rebuilds them, and so does a damaged cache file.
Cache files are written to a temporary name and renamed, so processes sharing the folder never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import sectorflow
from sectorflow import ConfigError, InvalidInputError, sha256_file

from .encoders import Encoder
from .language import detect_language
from .tables import lang_code, read_rows, text_fields


@dataclass(frozen=True)
class FaqEntry:
    id: str
    question: str
    answer: str
    lang: str


def read_faq(path: str | Path) -> list[FaqEntry]:
    """Entries of an FAQ file (formats: :mod:`.tables`); ``lang`` guessed from the question when empty.

    Raises:
        ConfigError: the file is missing, not UTF-8, has no question/answer columns, a row is not an object or
            lacks a question or an answer, a ``lang`` is neither zh nor en, or two entries share an ``id`` (the
            place named: line or entry number).
    """
    entries: list[FaqEntry] = []
    seen: dict[str, str] = {}
    for n, (where, row) in enumerate(read_rows(path, "FAQ file", ("question", "answer")), 1):
        q, a = text_fields(where, row, ("question", "answer"), "a question or an answer")
        raw_id = row.get("id")  # type: ignore[union-attr]
        entry_id = str(n) if raw_id is None or str(raw_id).strip() == "" else str(raw_id).strip()
        if entry_id in seen:
            raise ConfigError(f"{where} has id {entry_id!r}, already used by {seen[entry_id]}: give every entry its "
                              f"own id (the id is what a result names).")
        seen[entry_id] = where
        lang = lang_code(row.get("lang"), where) or ("zh" if detect_language(q).lang == "zh" else "en")
        entries.append(FaqEntry(entry_id, q, a, lang))
    if not entries:
        raise ConfigError(f"FAQ file {path} has no entries.")
    return entries


def _cache_dir(path: Path, digest: str) -> Path:
    beside = path.parent / f".{path.name}.faqcache"
    try:
        beside.mkdir(exist_ok=True)
        probe = beside / ".write-test"
        probe.write_text("")
        probe.unlink()
        return beside
    except OSError:
        folder = sectorflow.home() / "customer_service" / "faq" / digest[:16]
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _read_vectors(file: Path, rows: int) -> np.ndarray | None:
    """Cached vectors ``[rows, d]`` float32, or None when absent, damaged or of another size (then rebuilt)."""
    if not file.is_file():
        return None
    try:
        vectors = np.load(file, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return vectors if vectors.ndim == 2 and len(vectors) == rows and vectors.dtype == np.float32 else None


def _atomic(target: Path, write: Callable[[Path], object]) -> None:
    """Write ``target`` through a temporary file in its folder and rename it into place, so that a process reading
    the cache while another writes it sees the whole file or none."""
    tmp = target.parent / f".tmp-{os.getpid()}-{threading.get_ident()}-{target.name}"
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


QUERY_BLOCK = 64
"""Queries scored at once: a block's similarity matrix is ``QUERY_BLOCK x entries`` float32 (25.6 MB at 100,000)."""


class _Partition:
    def __init__(self, entries: list[FaqEntry], vectors: np.ndarray) -> None:
        self.entries, self.vectors = entries, vectors

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """The best ``k`` entries per query by inner product (cosine: vectors are normalised), best first, ties by
        entry order."""
        k = min(k, len(self.entries))
        out: list[list[tuple[int, float]]] = []
        for start in range(0, len(queries), QUERY_BLOCK):
            sims = np.asarray(queries[start:start + QUERY_BLOCK], dtype=np.float32) @ self.vectors.T
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else \
                np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
            for r, row in enumerate(top):
                scores = sims[r, row]
                order = np.lexsort((row, -scores))
                out.append([(int(row[j]), float(scores[j])) for j in order])
        return out


class FaqIndex:
    """Search an FAQ file. ``encoders`` maps ``zh``/``en`` to :class:`~.encoders.Encoder` objects.

    ``built`` records per language whether the vectors came from the cache (``"cache"``) or were computed
    (``"encoded"``), and ``kind`` the search (``"exact"``, at every size). ``hnsw_threshold`` is accepted and
    has no effect (an HNSW graph answered above it until 1 Dec 2026).
    """

    def __init__(self, path: str | Path, encoders: Mapping[str, Encoder], hnsw_threshold: int | None = None,
                 cache: bool = True) -> None:
        self.path = Path(path)
        self.entries = read_faq(self.path)
        self.sha256 = sha256_file(self.path)
        self.encoders = dict(encoders)
        self.partitions: dict[str, _Partition] = {}
        self.built: dict[str, str] = {}
        self.kind: dict[str, str] = {}
        folder = _cache_dir(self.path, self.sha256) if cache else None
        for lang in ("en", "zh"):
            items = [e for e in self.entries if e.lang == lang]
            if not items:
                continue
            encoder = self.encoders[lang]
            cacheable = folder is not None and getattr(encoder, "cacheable", True)
            # keyed by the questions as read (not the file's bytes): a new reading of the same file, or an edit
            # of answers only, cannot pick up vectors of other question texts
            questions = json.dumps([e.question for e in items], ensure_ascii=False)
            key = hashlib.sha256(f"{questions}|{encoder.name}|{lang}".encode()).hexdigest()[:16]
            vec_file = folder / f"{lang}-{key}.npy" if cacheable else None
            vectors = _read_vectors(vec_file, len(items)) if vec_file is not None else None
            if vectors is not None:
                self.built[lang] = "cache"
            else:
                vectors = np.asarray(encoder.encode([e.question for e in items]), dtype=np.float32)
                self.built[lang] = "encoded"
                if vec_file is not None:
                    for old in folder.glob(f"{lang}-*"):
                        old.unlink(missing_ok=True)
                    _atomic(vec_file, lambda tmp, v=vectors: np.save(tmp, v, allow_pickle=False))
            self.kind[lang] = "exact"
            self.partitions[lang] = _Partition(items, vectors)

    def search(self, lang: str, queries: np.ndarray, k: int = 3, min_score: float = 0.0
               ) -> list[list[tuple[FaqEntry, float]]]:
        """Best ``k`` entries per query vector (``[n, d]`` from this language's encoder), scores >= min_score."""
        part = self.partitions.get(lang)
        if part is None or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        if queries.shape[1] != part.vectors.shape[1]:
            raise InvalidInputError(f"FAQ vectors have {part.vectors.shape[1]} dimensions, queries {queries.shape[1]}.")
        return [[(part.entries[j], s) for j, s in row if s >= min_score] for row in part.search(queries, k)]
