"""Federated training of plugins' models across institutions with Flower 1.42 (issue 9; see docs/federated.md).

A plugin offers a :class:`sectorflow.TrainableSpec` through ``sectorflow_register_trainables``; this layer finds it
by task (:func:`find_trainable`), wraps it in a Flower ``ClientApp`` (:func:`make_client_app`) and runs FedAvg,
FedProx or FedAdam from a ``ServerApp`` (:func:`make_server_app`), with SecAgg+ and differential privacy when
configured, on Flower's simulation engine (:func:`simulate`) or deployment engine (``sectorflow federate``). Every
run and round is sent to the task-event observers (the audit log among them): see :mod:`sectorflow.federated.audit`.

Flower and Ray are imported only when a run starts (the ``federated`` extra).
"""

from __future__ import annotations

from .audit import TRAINING_EVENT_KINDS
from .config import DPConfig, FederationConfig, SecAggConfig, StrategyConfig, load_config, parse_config
from .privacy import privacy_budget
from .registry import find_trainable
from .strategy import RoundRecord, RunReport
from .weights import model_sha256

__all__ = ["FederationConfig", "StrategyConfig", "SecAggConfig", "DPConfig", "load_config", "parse_config",
           "find_trainable", "privacy_budget", "RunReport", "RoundRecord", "model_sha256", "TRAINING_EVENT_KINDS",
           "simulate", "make_client_app", "make_server_app"]


def __getattr__(name: str) -> object:
    """Lazy exports that import Flower: ``simulate``, ``make_client_app``, ``make_server_app``."""
    if name == "simulate":
        from .simulation import simulate

        return simulate
    if name == "make_client_app":
        from .client import make_client_app

        return make_client_app
    if name == "make_server_app":
        from .server import make_server_app

        return make_server_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
