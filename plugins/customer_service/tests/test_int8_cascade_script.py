"""``scripts/fit_int8_cascade.py``'s cascade decision (the figures of docs/performance.md's INT8 cascade table)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fit_int8_cascade import cascade  # noqa: E402
from sectorflow_customer_service.ensemble import E5Heads  # noqa: E402


def test_the_cascade_keeps_minilm_where_sure_and_equals_the_full_ensemble_where_it_escalates():
    # e5 head: identity over 3-d vectors, so the e5 distribution of a message is softmax(its vector)
    heads = E5Heads({"s": (np.eye(3), np.zeros(3))})
    minilm = np.array([[9.0, 0.0, 0.0],    # sure of 0 (p 0.9998): kept at any gate under 1.01
                       [1.0, 0.9, 0.0],    # unsure (p 0.43): escalated from gate 0.5; e5 says 2
                       [0.0, 0.0, 0.2]])   # unsure (p 0.38): escalated; e5 agrees with 2
    vectors = np.array([[0.0, 12.0, 0.0], [0.0, 0.0, 9.0], [0.0, 0.0, 9.0]])
    y = np.array([0, 2, 2])
    rows = {r["gate"]: r for r in cascade(heads, "s", minilm, vectors, y)}
    full = heads.combine("s", minilm, vectors).argmax(1)
    assert full.tolist() == [1, 2, 2]  # the always-ensemble loses message 0 to e5's confident vote
    assert rows[0.5]["e5_share"] == round(2 / 3, 4) and rows[0.5]["right"] == 3  # message 0 kept, 1 and 2 as full
    assert rows[1.01]["e5_share"] == 1.0 and rows[1.01]["right"] == int(np.sum(full == y)) == 2
    assert rows[0.99]["right"] == 3 and rows[0.99]["e5_share"] == round(2 / 3, 4)
