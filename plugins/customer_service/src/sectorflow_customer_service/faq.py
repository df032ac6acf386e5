"""FAQ knowledge base: the operator's question/answer file, embedded per language and searched by cosine similarity.

File formats (UTF-8, read with ``sectorflow.open_text``):

- CSV with a header: ``question``, ``answer`` (required), ``lang`` (``zh``/``en``, optional: guessed from the
  question otherwise), ``id`` (optional: the row number otherwise);
- JSON lines with the same keys.

Each language's entries are encoded by that language's encoder. Up to ``hnsw_threshold`` entries per language are
searched exactly (one matrix product); above it an HNSW graph (Malkov and Yashunin 2018, the ``hnswlib`` library,
inner-product space) answers. Embeddings and graphs are cached in a folder beside the FAQ file
(``.<name>.faqcache/``, or under ``$SECTORFLOW_HOME`` when that folder is not writable) with the file's SHA-256
and the encoder names; a changed file or encoder rebuilds them.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sectorflow import ConfigError, InvalidInputError, open_text, sha256_file

from .encoders import Encoder
from .language import detect_language


@dataclass(frozen=True)
class FaqEntry:
    id: str
    question: str
    answer: str
    lang: str


def read_faq(path: str | Path) -> list[FaqEntry]:
    """Entries of a CSV or JSON-lines FAQ file.

    Raises:
        ConfigError: the file is missing, has no question/answer columns, or a row lacks either (row named).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"FAQ file {path} not found (give faq=PATH to a .csv or .jsonl with question,answer).")
    try:
        with open_text(path) as handle:
            text = handle.read()
    except Exception as exc:  # noqa: BLE001 - open_text raises typed errors; re-word them for the option
        raise ConfigError(f"FAQ file {path} cannot be read: {exc}") from exc
    rows: list[dict] = []
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"FAQ file {path} line {n} is not JSON: {exc.msg}") from exc
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames or not {"question", "answer"} <= {f.strip().lower() for f in reader.fieldnames}:
            raise ConfigError(f"FAQ file {path} needs a header with question and answer columns "
                              f"(has {reader.fieldnames}).")
        rows = [{(k or "").strip().lower(): v for k, v in r.items()} for r in reader]
    entries = []
    for n, row in enumerate(rows, 1):
        q, a = str(row.get("question") or "").strip(), str(row.get("answer") or "").strip()
        if not q or not a:
            raise ConfigError(f"FAQ file {path} entry {n} lacks a question or an answer.")
        lang = str(row.get("lang") or "").strip().lower() or detect_language(q).lang
        entries.append(FaqEntry(str(row.get("id") or n), q, a, "zh" if lang == "zh" else "en"))
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
        home = Path(os.environ.get("SECTORFLOW_HOME") or Path.home() / ".cache" / "sectorflow")
        folder = home / "customer_service" / "faq" / digest[:16]
        folder.mkdir(parents=True, exist_ok=True)
        return folder


class _Partition:
    def __init__(self, entries: list[FaqEntry], vectors: np.ndarray, index=None) -> None:
        self.entries, self.vectors, self.index = entries, vectors, index

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        k = min(k, len(self.entries))
        if self.index is not None:
            labels, distances = self.index.knn_query(queries, k=k)
            return [[(int(j), float(1.0 - d)) for j, d in zip(lab, dist)] for lab, dist in zip(labels, distances)]
        sims = queries @ self.vectors.T
        top = np.argsort(-sims, axis=1)[:, :k]
        return [[(int(j), float(sims[r, j])) for j in row] for r, row in enumerate(top)]


class FaqIndex:
    """Search an FAQ file. ``encoders`` maps ``zh``/``en`` to :class:`~.encoders.Encoder` objects.

    ``built`` records per language whether the vectors came from the cache (``"cache"``) or were computed
    (``"encoded"``), and ``kind`` whether the search is ``"exact"`` or ``"hnsw"``.
    """

    def __init__(self, path: str | Path, encoders: Mapping[str, Encoder], hnsw_threshold: int = 2000,
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
            key = hashlib.sha256(f"{self.sha256}|{encoder.name}|{lang}".encode()).hexdigest()[:16]
            vec_file = folder / f"{lang}-{key}.npy" if cacheable else None
            if vec_file is not None and vec_file.is_file():
                vectors = np.load(vec_file)
                self.built[lang] = "cache"
            else:
                vectors = np.asarray(encoder.encode([e.question for e in items]), dtype=np.float32)
                self.built[lang] = "encoded"
                if vec_file is not None:
                    for old in folder.glob(f"{lang}-*"):
                        old.unlink()
                    np.save(vec_file, vectors)
            index = None
            if len(items) > hnsw_threshold:
                index = self._hnsw(vectors, folder / f"{lang}-{key}.hnsw" if cacheable else None)
            self.kind[lang] = "hnsw" if index is not None else "exact"
            self.partitions[lang] = _Partition(items, vectors, index)

    @staticmethod
    def _hnsw(vectors: np.ndarray, file: Path | None):
        import hnswlib

        index = hnswlib.Index(space="ip", dim=vectors.shape[1])
        if file is not None and file.is_file():
            index.load_index(str(file), max_elements=len(vectors))
        else:
            index.init_index(max_elements=len(vectors), ef_construction=200, M=16, random_seed=0)
            index.add_items(vectors, np.arange(len(vectors)))
            if file is not None:
                index.save_index(str(file))
        index.set_ef(max(64, 2 * 10))
        return index

    def search(self, lang: str, queries: np.ndarray, k: int = 3, min_score: float = 0.0
               ) -> list[list[tuple[FaqEntry, float]]]:
        """Best ``k`` entries per query vector (``[n, d]`` from this language's encoder), scores >= min_score."""
        part = self.partitions.get(lang)
        if part is None or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        if queries.shape[1] != part.vectors.shape[1]:
            raise InvalidInputError(f"FAQ vectors have {part.vectors.shape[1]} dimensions, queries {queries.shape[1]}.")
        return [[(part.entries[j], s) for j, s in row if s >= min_score] for row in part.search(queries, k)]
