"""The federated layer's errors (both in sectorflow's one hierarchy: the CLI prints the message and exits with 2)."""

from __future__ import annotations

from sectorflow import SectorflowError


class SimulationStopped(SectorflowError, RuntimeError):
    """The simulation engine stopped (Ray failed to start, the run was interrupted, or it ended) while the ServerApp
    waited for institutions to connect or for their replies."""


class FederatedEngineError(SectorflowError, RuntimeError):
    """Flower's simulation engine (Ray) failed to start or crashed, after the federation config passed its checks.
    The message carries the engine's own error chain and what to do; ``details`` holds ``{"run_id", "rounds_done",
    "cause"}``. A ``RuntimeError`` too, so callers that retried on Flower's ``RuntimeError`` still do."""

    http_status = 503
