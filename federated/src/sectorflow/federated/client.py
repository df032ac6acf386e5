"""The institution side: a Flower ``ClientApp`` that trains a plugin's :class:`sectorflow.Trainable` locally.

Legacy Flower client API (``NumPyClient``), because SecAgg+ exists only there in Flower 1.42. Arrays travel in name
order (:mod:`sectorflow.federated.weights`); SecAgg+ hands back float64, cast to float32 before loading.

Partitions: in simulation, virtual node ``partition-id = i`` trains on ``institutions[i]`` of the federation
config; on a real SuperNode, the node's ``--node-config`` is the partition (``data="/srv/bank" bank=0``; dashes
in keys become underscores), so each institution names its own data and no one else sees the path.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from sectorflow import ConfigError, Trainable, TrainableSpec

from .config import FederationConfig
from .weights import to_list, to_named

_TRAINABLES: dict[str, Trainable] = {}
"""Trainables already built in this process, by partition (a simulation actor serves many rounds)."""


def partition_for(node_config: dict[str, Any], cfg: FederationConfig) -> dict[str, Any]:
    """The partition dict one node trains on (see the module docstring).

    Raises:
        ConfigError: a simulated node's ``partition-id`` has no ``institutions`` entry.
    """
    if cfg.institutions and "partition-id" in node_config:
        pid = int(node_config["partition-id"])
        if not 0 <= pid < len(cfg.institutions):
            raise ConfigError(f"partition-id {pid} has no [[institutions]] entry ({len(cfg.institutions)} given).")
        part = dict(cfg.institutions[pid])
        part.setdefault("partition_id", pid)
        part.setdefault("num_partitions", len(cfg.institutions))
        return part
    return {str(k).replace("-", "_"): v for k, v in node_config.items()}


def _institution(partition: dict[str, Any]) -> str:
    for key in ("name", "institution", "bank", "partition_id"):
        if key in partition:
            return str(partition[key])
    return "unnamed"


def trainable_for(spec: TrainableSpec, partition: dict[str, Any]) -> Trainable:
    """Build (once per process and partition) the trainable for ``partition``."""
    key = json.dumps([spec.task, spec.name, partition], sort_keys=True, default=str)
    if key not in _TRAINABLES:
        _TRAINABLES[key] = spec.build(dict(partition))
    return _TRAINABLES[key]


def _scalars(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: (float(v) if isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) else v)
            for k, v in metrics.items() if isinstance(v, (int, float, str, bool, np.floating, np.integer))}


def make_numpy_client(trainable: Trainable, institution: str, max_weight: float | None = None) -> Any:
    """A Flower ``NumPyClient`` around one institution's trainable.

    ``max_weight`` (SecAgg+): the example count sent for weighting is capped at it (Flower's SecAgg+ multiplies each
    update by ``examples / max_weight`` before clipping to ``clipping_range``: above 1 the update is clipped away);
    the true count travels in the metrics as ``num_examples`` (the round's record shows it)."""
    from flwr.client import NumPyClient

    names = sorted(trainable.get_weights())

    class TrainableClient(NumPyClient):  # type: ignore[misc]
        def get_parameters(self, config: dict[str, Any]) -> list[np.ndarray]:
            return to_list(trainable.get_weights())

        def fit(self, parameters: list[np.ndarray], config: dict[str, Any]) -> tuple[list[np.ndarray], int, dict]:
            trainable.set_weights(to_named(names, parameters))
            cfg = dict(config)
            epochs = int(cfg.pop("local_epochs", 1))
            n, metrics = trainable.fit(epochs=epochs, **cfg)
            sent = min(int(n), int(max_weight)) if max_weight else int(n)
            return to_list(trainable.get_weights()), sent, {**_scalars(metrics), "institution": institution,
                                                            "num_examples": int(n)}

        def evaluate(self, parameters: list[np.ndarray], config: dict[str, Any]) -> tuple[float, int, dict]:
            trainable.set_weights(to_named(names, parameters))
            n, loss, metrics = trainable.evaluate(**dict(config))
            return float(loss), int(n), {**_scalars(metrics), "institution": institution}

    return TrainableClient()


def client_mods(cfg: FederationConfig) -> list[Any]:
    """Flower client mods for the configured protections: ``secaggplus_mod`` (SecAgg+), ``fixedclipping_mod``
    (DP with client-side clipping; the server adds the noise) or ``LocalDpMod`` (local DP). Flower's DP mods act
    on training messages only. Without DP, :func:`~sectorflow.federated.ordering.seeded_rounding_mod` comes first:
    SecAgg+'s stochastic rounding then depends on the run's seed only (with DP, NumPy's generator, which draws the
    noise too, is left unseeded)."""
    mods: list[Any] = []
    if cfg.dp.mode == "off":
        from .ordering import seeded_rounding_mod

        mods.append(seeded_rounding_mod(cfg.seed))
    if cfg.secagg.enabled:
        from flwr.client.mod import secaggplus_mod

        mods.append(secaggplus_mod)
    if cfg.dp.mode == "client_clipping":
        from flwr.client.mod import fixedclipping_mod

        mods.append(fixedclipping_mod)
    elif cfg.dp.mode == "local":
        from flwr.client.mod import LocalDpMod

        mods.append(LocalDpMod(cfg.dp.clipping_norm, cfg.dp.clipping_norm, cfg.dp.epsilon, cfg.dp.delta))
    return mods


def make_client_app(cfg: FederationConfig, spec: TrainableSpec | None = None) -> Any:
    """A Flower ``ClientApp`` for the run ``cfg`` describes. Without ``spec`` each node finds the trainable through
    the plugins installed on it (deployment: the node's own ``sectorflow`` installation); with ``spec`` (simulation)
    that spec is used as it is."""
    from flwr.client import ClientApp

    def client_fn(context: Any) -> Any:
        from .registry import find_trainable

        from .registry import check_partition_keys

        the_spec = spec or find_trainable(cfg.task, cfg.model)
        node_config = dict(context.node_config)
        partition = partition_for(node_config, cfg)
        if not (cfg.institutions and "partition-id" in node_config):  # simulation: checked before Flower started
            check_partition_keys(the_spec, partition, "this SuperNode's --node-config")
        trainable = trainable_for(the_spec, partition)
        cap = cfg.secagg.max_weight if cfg.secagg.enabled else None
        return make_numpy_client(trainable, _institution(partition), cap).to_client()

    return ClientApp(client_fn=client_fn, mods=client_mods(cfg))
