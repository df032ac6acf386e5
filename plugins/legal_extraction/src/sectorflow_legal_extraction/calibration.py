"""Validation data of the CUAD clause classifier, for ``sectorflow models quantize legal_extraction``.

Segments (:func:`sectorflow_legal_extraction.text.segments`) of the CUAD v1 validation contracts (the by-contract
split of :mod:`sectorflow_legal_extraction.cuad`; CUAD: CC BY 4.0, The Atticus Project, Hendrycks et al. 2021, read
in place from ``../shared/data/cuad``), each labelled with the categories whose annotated clause covers at least half
of it (or half of which it covers); metric: macro average precision (AUPR) over the categories with positives, the
figure ``scripts/train_clause_classifier.py`` selects its epoch on. Never the test contracts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from sectorflow import QuantizationError, ValidationSet

from . import cuad
from .clauses import batch_arrays
from .text import segments

DATA = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "cuad"
"""Where CUAD is read in place (``../shared/data/cuad`` next to the repository)."""

BATCH = 512


def _collapse(text: str) -> tuple[str, list[int]]:
    """Whitespace runs collapsed to one space, and each output character's offset in ``text``."""
    out, index, space = [], [], False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space and out:
                out.append(" ")
                index.append(i)
            space = True
        else:
            out.append(ch)
            index.append(i)
            space = False
    return "".join(out), index


def clause_spans(contract: cuad.CuadContract, cats: list[str]) -> dict[str, list[tuple[int, int]]]:
    """Character spans of each category's annotated clauses in the contract text (those that can be found)."""
    flat, index = _collapse(contract.text)
    lower = flat.lower()
    spans: dict[str, list[tuple[int, int]]] = {c: [] for c in cats}
    for cat in cats:
        for clause in contract.clauses[cat]:
            needle = re.sub(r"\s+", " ", clause).strip().lower()
            if len(needle) < 3:
                continue
            at = lower.find(needle)
            if at >= 0:
                spans[cat].append((index[at], index[at + len(needle) - 1] + 1))
    return spans


def labelled_segments(contracts: list[cuad.CuadContract], cats: list[str]) -> tuple[list[str], np.ndarray, list[int]]:
    """``(texts, labels float32 [n, len(cats)], owner)``: the English segments of ``contracts``, their 0/1 category
    labels, and the index of the contract each came from."""
    texts, labels, owner = [], [], []
    for n, contract in enumerate(contracts):
        spans = clause_spans(contract, cats)
        for start, end in segments(contract.text, "en"):
            row = np.zeros(len(cats), dtype=np.float32)
            for k, cat in enumerate(cats):
                for s, e in spans[cat]:
                    overlap = min(end, e) - max(start, s)
                    if overlap > 0 and (overlap >= 0.5 * (end - start) or overlap >= 0.5 * (e - s)):
                        row[k] = 1.0
                        break
            texts.append(contract.text[start:end])
            labels.append(row)
            owner.append(n)
    return texts, np.stack(labels) if labels else np.zeros((0, len(cats)), np.float32), owner


def validation(bundle: Any, *, data: Path | None = None, limit: int | None = None) -> ValidationSet:
    """The clause classifier's validation set.

    Args:
        bundle: the fp32 ``legal_extraction`` bundle (``classifier.json`` gives the hashing buckets).
        data: the CUAD folder (default :data:`DATA`).
        limit: keep only the first ``limit`` validation contracts (a quick check). ``None``: all of them.

    Returns:
        batches ``{"ids": int64 [<=512, L], "weights": float32 [<=512, L]}``; metric: macro AUPR in ``[0, 1]``.

    Raises:
        QuantizationError: CUAD is not there (the message names the folder).
    """
    from sklearn.metrics import average_precision_score

    root = Path(data) if data is not None else DATA
    if not root.is_dir():
        raise QuantizationError(f"The legal_extraction validation data is missing: {root} (CUAD v1; place "
                                f"../shared/data/cuad next to the repository or pass data=).",
                                details={"task": "legal_extraction", "data": str(root)})
    buckets = int(bundle.read_json("classifier.json")["buckets"])
    cats = cuad.categories(root)
    contracts = [c for c in cuad.load(root) if c.split == "validation"]
    if limit is not None:
        contracts = contracts[:int(limit)]
    texts, labels, _ = labelled_segments(contracts, cats)
    batches = [batch_arrays(texts[i:i + BATCH], buckets) for i in range(0, len(texts), BATCH)]

    def metric(outs: list[list[np.ndarray]], y: np.ndarray) -> float:
        scores = np.concatenate([o[0] for o in outs])
        aps = [average_precision_score(y[:, k], scores[:, k]) for k in range(y.shape[1]) if y[:, k].sum()]
        return float(np.mean(aps)) if aps else 0.0

    return ValidationSet(batches=batches, labels=labels, metric=metric, metric_name="macro AUPR",
                         split=f"CUAD validation contracts ({len(contracts)} contracts, {len(texts)} segments)")
