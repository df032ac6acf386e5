"""The federated intent head: a branch's own messages, weights in and out, training lowers the loss."""

import json

import numpy as np
import pytest

from sectorflow import InvalidInputError, plugins

MESSAGES = [("where is my new card", "card_arrival"), ("my card still has not arrived", "card_arrival"),
            ("the card I ordered never came", "card_arrival"), ("how long does card delivery take", "card_arrival"),
            ("I want to close my account", "terminate_account"), ("please delete my account", "terminate_account"),
            ("how can I terminate my account", "terminate_account"), ("close my bank account", "terminate_account"),
            ("I forgot my passcode", "passcode_forgotten"), ("reset my app passcode", "passcode_forgotten")]


def test_intent_head_trains_on_a_branch_file(tmp_path):
    spec = next(s for s in plugins.registered_trainables() if s.task == "customer_service")
    path = tmp_path / "branch.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in MESSAGES), encoding="utf-8")
    model = spec.build({"data": str(path)})
    weights = model.get_weights()
    assert weights["weight"].shape == (384, 77) and weights["weight"].dtype == np.float32
    n, before, _ = model.evaluate()
    assert n == 2 and before == pytest.approx(np.log(77), rel=1e-5)  # zeros: uniform over 77 intents
    n_train, metrics = model.fit(epochs=20)
    assert n_train == 8 and metrics["accuracy"] == 1.0
    _, after, _ = model.evaluate()
    assert after < before
    model.set_weights(weights)
    assert model.evaluate()[1] == pytest.approx(before)
    with pytest.raises(ValueError, match="shape"):
        model.set_weights({"weight": np.zeros((3, 3), np.float32), "bias": weights["bias"]})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "hi", "label": "greeting"}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="not banking77 intents"):
        spec.build({"data": str(bad)})
