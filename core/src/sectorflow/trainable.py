"""What a plugin offers the federated layer: a trainable model over an institution's own data.

The federated layer (``sectorflow.federated``) names no plugin; it asks the ``sectorflow_register_trainables`` hook
for :class:`TrainableSpec` objects and drives :class:`Trainable` instances through Flower.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Trainable(Protocol):
    """A model one institution trains locally.

    Weights travel as named float32 numpy arrays; metrics are plain floats (e.g. ``{"f1": 0.81}``).
    """

    def get_weights(self) -> dict[str, np.ndarray]:
        """Current weights, name -> array (copies, safe to send)."""

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        """Load weights (same names and shapes as :meth:`get_weights`); raises ``ValueError`` on a mismatch."""

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        """Train on the local data; returns (number of training examples, training metrics)."""

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        """Evaluate on the local validation data; returns (number of examples, loss, metrics)."""


@dataclass
class TrainableSpec:
    """A plugin's offer of a trainable model for federated training.

    Attributes:
        task: the task whose model this trains (``"aml"``).
        name: model name, unique within the task.
        build: ``build(partition: dict) -> Trainable``; ``partition`` says which institution's data to use,
            e.g. ``{"data": "/path/bank_1.csv"}`` or ``{"partition_id": 0, "num_partitions": 3}``.
        description: one line for listings.
        plugin: filled in by the registry.
        check: optional ``check(partition) -> None``: cheap checks of a partition (files exist, labels read) that
            raise :class:`~sectorflow.ConfigError` (or another ``SectorflowError``) before any training process
            starts; ``sectorflow federate`` calls it for every institution first.
        export: optional ``export(arrays, run, out) -> Path``: write the global model (``arrays`` in weight-name
            order, as the federated layer sends them) as a bundle the task's pipeline loads
            (``Taskflow(task, task_path=out)``); ``run`` is the federation's record for the manifest (rounds,
            strategy, privacy, institutions, audit event ids). Returns the manifest path.
        keys: optional, the partition keys ``build`` and ``check`` read (a name ending in ``*`` is a prefix:
            ``"column_*"``). With it, ``sectorflow federate`` refuses a partition (an ``[[institutions]]`` table, a
            SuperNode's ``--node-config``) holding any other key, naming it and the closest accepted one, before
            anything trains: a misspelt key is otherwise silently ignored (``max_transaction = 500`` trained on all
            rows). ``None``: keys not declared, not checked. ``partition_id``, ``num_partitions`` (set by the
            simulation), ``name`` and ``institution`` (the institution's name in the records) are always accepted.
        path_keys: the partition keys whose values name files or folders (aml: ``transactions``, ``labels``): in a
            ``federation.toml`` a relative one is taken relative to that file's folder, as users expect of a
            configuration file (``sectorflow.federated.load_config``), not to the current directory.

    ``build``'s trainable must depend only on the partition, the weights it is given and each call's config
    (``server_round``, ``seed``): in simulation a fresh process may serve an institution in any round, and the
    same seed and data must give the same model (docs/federated.md).
    """

    task: str
    name: str
    build: Callable[[dict[str, Any]], Trainable]
    description: str = ""
    plugin: str = ""
    check: Callable[[dict[str, Any]], None] | None = None
    export: Callable[[list[np.ndarray], dict[str, Any], Path], Path] | None = None
    keys: tuple[str, ...] | None = None
    path_keys: tuple[str, ...] = ()
