"""Run a toy simulation whose engine start fails (injected into Flower's own engine code), then print one JSON line:
the error ``simulate`` raised, the run's recorded error, and the non-daemon threads still running. Then return, so
the interpreter exits, which it can only do once Flower's ServerApp thread (non-daemon) has ended.

    python engine_failure.py before-nodes   # the engine fails before its nodes exist: the ServerApp waits for its
                                            # first institutions (Flower's client manager: up to a day)
    python engine_failure.py ray-timeout    # Ray's node start times out (nodes registered: the ServerApp waits for
                                            # the initial weights' reply)
    python engine_failure.py interrupt      # Ctrl-C (KeyboardInterrupt) while Ray starts
    python engine_failure.py cli DIR [--verbose]   # before-nodes through `sectorflow federate toy -c DIR/fed.toml`:
                                                   # prints {"exit": code}; the CLI's stderr is the test's to read
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import toy_trainable  # noqa: E402
from sectorflow import SectorflowError  # noqa: E402
from sectorflow.federated import parse_config, simulate  # noqa: E402
from sectorflow.federated.server import new_report  # noqa: E402

RAY_TIMEOUT = ("The current node timed out during startup. This could happen because some of the Ray processes "
               "failed to startup.")


def cli(folder: str, *extra: str) -> int:
    """``sectorflow federate toy`` (the CLI's ``main``) on a federation whose engine fails before its nodes exist."""
    from flwr.server.superlink.fleet.vce import vce_api

    from sectorflow.cli import main as sectorflow_main
    from sectorflow.federated import registry

    found = registry.find_trainable
    registry.find_trainable = lambda task, model="": toy_trainable.SPEC if task == "toy" else found(task, model)

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected: the simulation engine failed before registering its nodes")

    vce_api._register_nodes = fail
    config = Path(folder) / "fed.toml"
    config.write_text('task = "toy"\nrounds = 1\n[strategy]\nmin_available_clients = 2\n'
                      '[[institutions]]\npartition_id = 0\n[[institutions]]\npartition_id = 1\n')
    code = sectorflow_main(["federate", "toy", "-c", str(config), *extra])
    print(json.dumps({"exit": code}), flush=True)
    return 0


def main(scenario: str) -> int:
    from flwr.server.superlink.fleet.vce import vce_api
    from flwr.server.superlink.fleet.vce.backend import raybackend

    def fail(*args: object, **kwargs: object) -> None:
        if scenario == "interrupt":
            raise KeyboardInterrupt
        if scenario == "ray-timeout":
            raise RuntimeError(RAY_TIMEOUT)
        raise RuntimeError("injected: the simulation engine failed before registering its nodes")

    if scenario == "before-nodes":
        vce_api._register_nodes = fail
    else:
        raybackend.RayBackend.init_ray = fail
    cfg = parse_config({"task": "toy", "rounds": 1, "strategy": {"min_available_clients": 2},
                        "institutions": [{"partition_id": 0}, {"partition_id": 1}]})
    report = new_report(cfg, toy_trainable.SPEC)
    raised: BaseException | None = None
    try:
        simulate(cfg, toy_trainable.SPEC, report=report)
    except BaseException as exc:  # noqa: BLE001 - reported below
        raised = exc
    left = [t.name for t in threading.enumerate() if t.is_alive() and not t.daemon and t is not threading.main_thread()]
    print(json.dumps({"error": type(raised).__name__ if raised else None, "message": str(raised or ""),
                      "sectorflow_error": isinstance(raised, SectorflowError),
                      "recorded": report.error, "closed": report.closed, "threads": left}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(cli(*sys.argv[2:]) if sys.argv[1] == "cli" else main(sys.argv[1]))
