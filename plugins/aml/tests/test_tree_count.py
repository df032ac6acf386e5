"""The account model's tree count: the fewest trees whose validation AP is within the tolerance of the best
(``sectorflow_aml.account_training.fewest_trees``), and ``train`` keeps exactly that many."""

from __future__ import annotations

import numpy as np
import pytest
from sectorflow_aml.account_features import N_ACCOUNT_FEATURES
from sectorflow_aml.account_training import TREE_TOLERANCE, Replay, fewest_trees, train
from sectorflow_aml.labels import Labels


def test_fewest_trees_within_tolerance():
    history = [(25, 0.70), (50, 0.741), (75, 0.7485), (100, 0.7501), (125, 0.7499)]
    assert fewest_trees(history, 0.002) == 75     # 0.7485 >= 0.7501 - 0.002; 0.741 is not
    assert fewest_trees(history, 0.0) == 100      # the best count itself
    assert fewest_trees(history, 0.01) == 50
    assert fewest_trees(history, 1.0) == 25
    assert fewest_trees([], 0.002) == 0
    assert TREE_TOLERANCE == 0.002
    with pytest.raises(ValueError):
        fewest_trees(history, -0.1)


def _replay(seed: int, accounts: int = 150, days: int = 5) -> tuple[Replay, Labels]:
    """Synthetic account rows: feature 0 is higher for the 10 % laundering accounts, with noise, so AP rises with
    trees and then flattens."""
    rng = np.random.default_rng(seed)
    y = (np.arange(accounts) % 10 == 0).astype(int)
    acc = np.repeat(np.arange(accounts), days)
    x = rng.normal(size=(acc.size, N_ACCOUNT_FEATURES)).astype(np.float32)
    x[:, 0] += 1.2 * y[acc]
    x[:, 1] += 0.6 * y[acc] * rng.normal(size=acc.size)
    day = np.tile(np.arange(19_000, 19_000 + days), accounts)
    names = [f"a{seed}-{i}" for i in range(accounts)]
    rep = Replay("synthetic", x, acc, day, np.full(acc.size, 2023 * 12), np.ones(acc.size, dtype=bool), names,
                 acc.size, 0.0)
    return rep, Labels(label={n: int(v) for n, v in zip(names, y)})


def test_train_keeps_the_fewest_trees_of_its_history():
    reps, labels = zip(*(_replay(s) for s in (1, 2)))
    loose = train(list(reps), list(labels), seed=3, rounds=75, params={"num_threads": 1}, tree_tolerance=0.05)
    exact = train(list(reps), list(labels), seed=3, rounds=75, params={"num_threads": 1}, tree_tolerance=0.0)
    for m in (loose, exact):
        assert m.num_trees == m.metrics["rounds"] == fewest_trees(m.metrics["history"], m.metrics["tree_tolerance"])
        assert m.model_text.count("\nTree=") == m.num_trees
        assert m.metrics["validation_ap_of_rounds"] >= m.metrics["best_validation_ap"] - m.metrics["tree_tolerance"]
    assert exact.num_trees == exact.metrics["rounds_best_validation_ap"]
    assert loose.num_trees <= exact.num_trees
    # the same boosting run: the history does not depend on the tolerance
    assert loose.metrics["history"] == exact.metrics["history"]
