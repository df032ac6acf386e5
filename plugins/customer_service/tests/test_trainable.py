"""The federated intent head: a branch's own messages, weights in and out, training lowers the loss; it is the
shipped bundle's banking77 head over the vector that head reads, and its export serves like the shipped bundle."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from sectorflow import InvalidInputError, plugins

BANKING77 = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "banking77"

MESSAGES = [("where is my new card", "card_arrival"), ("my card still has not arrived", "card_arrival"),
            ("the card I ordered never came", "card_arrival"), ("how long does card delivery take", "card_arrival"),
            ("I want to close my account", "terminate_account"), ("please delete my account", "terminate_account"),
            ("how can I terminate my account", "terminate_account"), ("close my bank account", "terminate_account"),
            ("I forgot my passcode", "passcode_forgotten"), ("reset my app passcode", "passcode_forgotten")]


def test_intent_head_trains_on_a_branch_file(tmp_path):
    spec = next(s for s in plugins.registered_trainables() if s.task == "customer_service")
    path = tmp_path / "branch.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in MESSAGES), encoding="utf-8")
    model = spec.build({"data": str(path), "init": "zeros"})
    weights = model.get_weights()
    assert weights["weight"].shape == (384, 77) and weights["weight"].dtype == np.float32
    n, before, _ = model.evaluate()
    assert n == 2 and before == pytest.approx(np.log(77), rel=1e-5)  # zeros: uniform over 77 intents
    n_train, metrics = model.fit(epochs=20)
    assert n_train == 8 and metrics["accuracy"] == 1.0
    assert metrics["data_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
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


def test_the_head_is_the_shipped_one_over_the_vector_it_reads_and_exports_as_a_servable_bundle(tmp_path):
    """Built with ``init = "bundle"`` (the default) the trainable holds the shipped banking77 head, and its pooled
    vectors times that head are the logits the pipeline serves; exporting those weights gives a bundle of the
    shipped layout whose answers are the shipped bundle's (the head stored as float16)."""
    from sectorflow import ConfigError, Taskflow, load_bundle
    from sectorflow_customer_service.plugin import BUNDLE_DIR
    from sectorflow_customer_service.trainable import check, export, shipped_head, trainable_spec

    path = tmp_path / "branch.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in MESSAGES), encoding="utf-8")
    model = trainable_spec().build({"data": str(path)})
    w, b = shipped_head(load_bundle(BUNDLE_DIR))
    got = model.get_weights()
    assert np.array_equal(got["weight"], w) and np.array_equal(got["bias"], b)
    texts = [t for t, _ in MESSAGES[:4]]
    shipped = Taskflow("customer_service", english_ensemble=False)
    served = [r.top_k[0].probability for r in shipped(texts)]
    from sectorflow_customer_service.trainable import PooledEncoder, _softmax

    logits = PooledEncoder(load_bundle(BUNDLE_DIR)).encode(texts) @ w + b
    assert _softmax(logits.astype(np.float64)).max(axis=1) == pytest.approx(served, abs=1e-5)
    run = {"run_id": "r1", "rounds": [{"round": 1, "eval_metrics": {"accuracy": 0.9}}],
           "selection": {"round": 1}, "institutions": [{"institution": "branch", "num_examples": 8}]}
    manifest = json.loads(export([b, w], run, tmp_path / "fed").read_text())
    assert manifest["format"] == "sectorflow-cs-int8" and manifest["provenance"]["federation"]["run_id"] == "r1"
    assert manifest["metrics"]["validation"] == {"accuracy": 0.9, "round": 1, "by_institution": []}
    fed = Taskflow("customer_service", task_path=str(tmp_path / "fed"), english_ensemble=False)
    assert [r.intent for r in fed(texts)] == [r.intent for r in shipped(texts)]
    assert [r.top_k[0].probability for r in fed(texts)] == pytest.approx(served, abs=2e-3)  # float16 head
    with pytest.raises(ConfigError, match="is the shipped bundle"):
        export([b, w], run, BUNDLE_DIR)
    with pytest.raises(ConfigError, match="not the banking77 head"):
        export([w, b], run, tmp_path / "other")
    with pytest.raises(ConfigError, match="not found"):
        check({"data": str(tmp_path / "nope.jsonl")})
    assert trainable_spec().check is check and trainable_spec().export is export


def test_a_simulated_branch_is_a_slice_of_banking77_train_with_its_digest(monkeypatch):
    """``partition_id`` / ``num_partitions``: every n-th row of banking77 train (minus the validation slice) and of
    the validation slice; ``max_examples`` keeps the first N; the digest is of the rows as read (same rows, same
    digest; another slice, another digest). A second build reads the cached vectors (no encoder is built: a
    SuperNode's fresh process per message does not encode again)."""
    from sectorflow_customer_service import runtime

    from sectorflow_customer_service.trainable import IntentHeadTrainable

    folder = BANKING77
    if not (folder / "train.csv").is_file():
        pytest.skip(f"banking77 not at {folder}")
    first = IntentHeadTrainable({"partition_id": 0, "num_partitions": 3, "banking77": str(folder), "max_examples": 12})
    with monkeypatch.context() as patched:
        patched.setattr(runtime, "build_layer", lambda bundle: pytest.fail("the vectors were encoded again"))
        again = IntentHeadTrainable({"partition_id": 0, "num_partitions": 3, "banking77": str(folder),
                                     "max_examples": 12})
    other = IntentHeadTrainable({"partition_id": 1, "num_partitions": 3, "banking77": str(folder), "max_examples": 12})
    assert first.x_train.shape == (12, 384) and first.x_val.shape == (3, 384)
    assert np.array_equal(first.x_train, again.x_train) and first.data_sha256 == again.data_sha256
    assert other.data_sha256 != first.data_sha256 and len(first.data_sha256) == 64
    assert 8 < float(np.linalg.norm(first.x_train, axis=1).mean()) < 16  # the un-normalised pooled vector
    with pytest.raises(InvalidInputError, match="partition_id 3"):
        IntentHeadTrainable({"partition_id": 3, "num_partitions": 3, "banking77": str(folder)})
    with pytest.raises(InvalidInputError, match="init="):
        IntentHeadTrainable({"partition_id": 0, "num_partitions": 3, "banking77": str(folder), "init": "shipped"})
