"""A small NumPy trainable for the federated tests: least-squares regression ``y = x @ w_true + noise`` on each
institution's own synthetic rows (the institutions share ``w_true``, so the global model can beat each one alone).

Partition keys: ``partition_id`` (seed of the institution's rows), ``n`` rows (default 64), ``fail_in_round``
(raise in ``fit`` of that round: an institution that drops out mid-round), ``sleep`` (seconds ``fit`` waits: a slow
round, to interrupt), ``init_scale`` (initial weights ``init_scale * (partition_id + 1)``: institutions that start
from different weights, as the account MLP's standardisation moments do).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sectorflow import TrainableSpec, hookimpl

W_TRUE = np.array([1.5, -2.0, 0.5, 3.0], dtype=np.float32)


class ToyTrainable:
    def __init__(self, partition: dict[str, Any]) -> None:
        rng = np.random.default_rng(int(partition.get("partition_id", 0)))
        n = int(partition.get("n", 64))
        self.x = rng.normal(size=(n, 4)).astype(np.float32)
        self.y = self.x @ W_TRUE + rng.normal(scale=0.1, size=n).astype(np.float32)
        start = float(partition.get("init_scale", 0.0)) * (int(partition.get("partition_id", 0)) + 1)
        self.w = np.full(4, start, dtype=np.float32)
        self.b = np.full(1, start, dtype=np.float32)
        self.fail_in_round = int(partition.get("fail_in_round", 0))
        self.sleep = float(partition.get("sleep", 0.0))

    def get_weights(self) -> dict[str, np.ndarray]:
        return {"w": self.w.copy(), "b": self.b.copy()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        if set(weights) != {"w", "b"}:
            raise ValueError(f"unexpected weights {sorted(weights)}")
        self.w = np.asarray(weights["w"], dtype=np.float32).copy()
        self.b = np.asarray(weights["b"], dtype=np.float32).copy()

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        if self.fail_in_round and int(config.get("server_round", 0)) == self.fail_in_round:
            raise RuntimeError("institution went away mid-round")
        if self.sleep:
            import time

            time.sleep(self.sleep)
        lr = float(config.get("lr", 0.1))
        for _ in range(epochs * 5):
            err = self.x @ self.w + self.b - self.y
            self.w -= lr * (self.x.T @ err) / len(err)
            self.b -= lr * err.mean(keepdims=True)
        return len(self.y), {"mse": float(np.mean((self.x @ self.w + self.b - self.y) ** 2))}

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        mse = float(np.mean((self.x @ self.w + self.b - self.y) ** 2))
        return len(self.y), mse, {"mse": mse}


SPEC = TrainableSpec(task="toy", name="linear", build=ToyTrainable, description="least squares (tests)",
                     keys=("n", "fail_in_round", "sleep", "init_scale"))


class ToyPlugin:
    @hookimpl
    def sectorflow_register_trainables(self, register: Any) -> None:
        register(SPEC)
