"""The intent head as a federated :class:`sectorflow.Trainable`: each branch trains a softmax head on its own
labelled messages over the shipped encoder's frozen sentence vectors (only the head's weights travel).

``build(partition)`` accepts:

- ``{"data": "/path/messages.jsonl"}`` (or ``.csv``): the branch's own ``{"text", "label"}`` rows; labels must be
  banking77 intent names (the shared label set); a seeded 20% is held out for :meth:`IntentHeadTrainable.evaluate`;
- ``{"partition_id": i, "num_partitions": n, "banking77": "/path/to/banking77"}``: slice ``i`` of banking77's
  train split (minus the validation slice) for training and of the validation slice for evaluation (a simulation
  of branches; the path is the folder with ``train.csv``).

Optional ``seed``. Weights: ``{"weight": float32 [384, 77], "bias": float32 [77]}`` over the L2-normalised
sentence vector (the ``embedding`` output of the bundle's program), starting from zeros. This is a new head beside
the bundle's own (which reads the un-normalised pooled vector), so federated rounds start from scratch.
Training: mini-batch gradient descent on softmax cross-entropy (NumPy), learning rate ``lr`` (default 2.0, suited
to unit-length inputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import InvalidInputError, TrainableSpec, load_bundle

from . import datasets
from .prototypes import read_examples
from .plugin import BUNDLE_DIR


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class IntentHeadTrainable:
    """A :class:`sectorflow.Trainable` over one branch's messages (see the module docstring)."""

    def __init__(self, partition: Mapping[str, Any]) -> None:
        from .runtime import PredictorEncoder, inference_bundle, tokenizer_of

        bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
        self.labels = list(bundle.read_json("labels.json")["banking77"])
        index = {label: i for i, label in enumerate(self.labels)}
        seed = int(partition.get("seed", 0))
        if "data" in partition:
            rows = read_examples(Path(partition["data"]))
            unknown = sorted({lab for _, lab in rows if lab not in index})
            if unknown:
                raise InvalidInputError(f"{partition['data']}: labels {unknown[:5]} are not banking77 intents.")
            order = np.random.default_rng(seed).permutation(len(rows))
            cut = max(1, round(0.2 * len(rows)))
            val, train = [rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]
        else:
            pid, n = int(partition.get("partition_id", 0)), int(partition.get("num_partitions", 1))
            if not 0 <= pid < n:
                raise InvalidInputError(f"partition_id {pid} must be in [0, num_partitions={n}).")
            if "banking77" not in partition:
                raise InvalidInputError("A simulated partition needs 'banking77': the folder with train.csv.")
            split = datasets.banking77(partition["banking77"])
            train, val = split["train"][pid::n], split["val"][pid::n]
        infer = inference_bundle(bundle)
        encoder = PredictorEncoder(_pool(infer), tokenizer_of(bundle), bundle.name)
        self.x_train = encoder.encode([t for t, _ in train])
        self.y_train = np.array([index[lab] for _, lab in train])
        self.x_val = encoder.encode([t for t, _ in val])
        self.y_val = np.array([index[lab] for _, lab in val])
        dim = self.x_train.shape[1]
        self.weight = np.zeros((dim, len(self.labels)), np.float32)
        self.bias = np.zeros(len(self.labels), np.float32)
        self.seed = seed

    def get_weights(self) -> dict[str, np.ndarray]:
        return {"weight": self.weight.copy(), "bias": self.bias.copy()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        if set(weights) != {"weight", "bias"}:
            raise ValueError(f"expected weights 'weight' and 'bias', got {sorted(weights)}")
        for name, current in (("weight", self.weight), ("bias", self.bias)):
            if tuple(np.shape(weights[name])) != current.shape:
                raise ValueError(f"{name}: shape {tuple(np.shape(weights[name]))} != {current.shape}")
        self.weight = np.asarray(weights["weight"], np.float32).copy()
        self.bias = np.asarray(weights["bias"], np.float32).copy()

    def _loss(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        p = _softmax(x @ self.weight + self.bias)
        return float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12))), p

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        lr, batch = float(config.get("lr", 2.0)), int(config.get("batch_size", 64))
        rng = np.random.default_rng(self.seed + int(config.get("round", 0)))
        for _ in range(int(epochs)):
            for start in range(0, len(self.y_train), batch):
                rows = rng.permutation(len(self.y_train))[start:start + batch]
                x, y = self.x_train[rows], self.y_train[rows]
                p = _softmax(x @ self.weight + self.bias)
                p[np.arange(len(y)), y] -= 1.0
                self.weight -= lr * (x.T @ p) / len(y)
                self.bias -= lr * p.mean(axis=0)
        loss, p = self._loss(self.x_train, self.y_train)
        return len(self.y_train), {"loss": loss, "accuracy": float(np.mean(p.argmax(1) == self.y_train))}

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        loss, p = self._loss(self.x_val, self.y_val)
        return len(self.y_val), loss, {"accuracy": float(np.mean(p.argmax(1) == self.y_val))}


def _pool(infer_bundle: Any) -> Any:
    """A predictor pool for the rebuilt inference bundle (CPU, 2 threads), built like ``Pipeline.predictor_pool``."""
    from sectorflow import Pipeline, resolve_device

    from .plugin import spec

    shim = Pipeline(spec(), infer_bundle, resolve_device("cpu"), "fp32", 32, 2, {})
    return shim.predictor_pool()


def trainable_spec() -> TrainableSpec:
    """The spec the plugin registers through ``sectorflow_register_trainables``."""
    return TrainableSpec(task="customer_service", name="intent-head",
                         build=IntentHeadTrainable,
                         description="banking77 intent head over the frozen MiniLM sentence vectors; partitions: a "
                                     "branch's labelled messages (jsonl/csv) or a slice of banking77 train.")
