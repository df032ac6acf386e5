"""Validation data of the span tagger, for ``sectorflow models quantize|export medical_report``.

The tagger's own validation split: 600 snippets of the project's generated corpus, seed 2 (:mod:`.corpus`, all four
styles; the split ``scripts/train_tagger.py`` selects its epoch on, never its test seed 3), encoded with the bundle's
vocabulary and cut to :data:`~.tagger.MAX_LEN` characters. Batches of 64 rows in corpus order, zero-padded to the
batch's longest row, so the export check covers rows shorter than their batch. Metric: exact-span F1, micro over
ANAT and FIND (:func:`.tagger.span_prf`), the figure recorded in the bundle manifest's ``metrics.validation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sectorflow import ValidationSet

from . import corpus, tagger

N_VALIDATION, SEED, BATCH = 600, 2, 64


def span_f1(outputs: list[list[np.ndarray]], labels: list[np.ndarray]) -> float:
    """Exact-span F1 (micro over ANAT and FIND) of ``outputs[b][0]`` (probabilities ``[rows, time, 5]``) against
    ``labels`` (one int64 tag array per row, all batches in order; a row's length is its label's length).

    Raises:
        ValueError: the outputs hold a different number of rows than ``labels``.
    """
    tags = [row for batch in outputs for row in np.asarray(batch[0]).argmax(-1)]
    if len(tags) != len(labels):
        raise ValueError(f"span_f1: {len(tags)} output rows but {len(labels)} labels")
    tp = fp = fn = 0
    for pred, gold in zip(tags, labels):
        p, g = set(tagger.decode(pred[:len(gold)])), set(tagger.decode(gold))
        tp, fp, fn = tp + len(p & g), fp + len(p - g), fn + len(g - p)
    return float(tagger.span_prf(tp, fp, fn)["f1"]) if tp + fp + fn else 0.0


def validation(bundle: Any, n: int = N_VALIDATION) -> ValidationSet:
    """The tagger's validation set for ``bundle`` (its ``vocab.json`` encodes the characters): ``chars`` int64
    ``[rows, time]``, ``lengths`` int64 ``[rows]`` per batch; labels: BIO tag ids per row."""
    vocab = bundle.read_json("vocab.json")
    index = {c: i for i, c in enumerate(vocab)}
    data = tagger.examples(corpus.generate(n, SEED), index)
    batches, labels = [], []
    for chars, lengths, _ in tagger.batches(data, BATCH, None):
        batches.append({"chars": chars, "lengths": lengths})
    labels = [y for _, y in data]
    return ValidationSet(batches=batches, labels=labels, metric=span_f1, metric_name="span_f1",
                         split=f"generated corpus seed {SEED}, {n} snippets (the tagger's validation split)")
