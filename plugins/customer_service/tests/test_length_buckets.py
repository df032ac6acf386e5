"""The MiniLM predictor sees a bounded set of input shapes: widths padded to multiples of ``LENGTH_BUCKET`` (the
predictor keeps work buffers per shape, so exact lengths let resident memory grow with every new length), with
the same outputs as exact lengths (padding is masked)."""

from __future__ import annotations

import numpy as np
import pytest

from sectorflow import Taskflow
from sectorflow_customer_service.runtime import LENGTH_BUCKET, PredictorEncoder

TEXTS = ["hi", "I am still waiting on my card?", "why was I charged a fee for my transfer to my sister's account",
         "card declined", "How do I top up my account with a cheque? " * 6]


@pytest.fixture(scope="module")
def encoder():
    return Taskflow("customer_service", english_ensemble=False).pipeline.main


def test_widths_are_multiples_of_the_bucket_and_outputs_equal_exact_lengths(encoder):
    shapes = []
    pool = encoder.pool

    class Recording:  # the real predictor pool; records the shape of each run
        input_names, output_names = pool.input_names, pool.output_names

        def run(self, feed):
            shapes.append(feed["input_ids"].shape)
            return pool.run(feed)

    bucketed = PredictorEncoder(Recording(), encoder.tokenizer, encoder.name, batch_size=2)
    out = bucketed.run(TEXTS)
    assert LENGTH_BUCKET == 8
    assert all(w % LENGTH_BUCKET == 0 or w == 64 for _, w in shapes) and max(w for _, w in shapes) == 64
    ids = encoder.tokenizer.encode_batch(TEXTS, 64)
    lengths = (ids != encoder.tokenizer.pad_id).sum(1)
    for row, text in enumerate(TEXTS):  # each message alone at its exact length, straight through the pool
        exact = pool.run({"input_ids": ids[row:row + 1, :lengths[row]]})
        for k in range(len(out)):
            np.testing.assert_allclose(out[k][row], exact[k][0], atol=2e-5)


def test_batch_one_calls_of_varied_lengths_meet_at_most_eight_widths(encoder):
    ids = encoder.tokenizer.encode_batch([f"message {'word ' * n}" for n in range(60)], 64)
    widths = set()
    pool = encoder.pool

    class Recording:
        input_names, output_names = pool.input_names, pool.output_names

        def run(self, feed):
            widths.add(feed["input_ids"].shape[1])
            return pool.run(feed)

    one = PredictorEncoder(Recording(), encoder.tokenizer, encoder.name, batch_size=1)
    for n in range(60):
        one.run([f"message {'word ' * n}"])
    assert len(set((ids != 0).sum(1).tolist())) > 50  # 60 distinct lengths went in
    assert widths == {8, 16, 24, 32, 40, 48, 56, 64}
