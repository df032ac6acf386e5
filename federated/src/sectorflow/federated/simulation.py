"""One-machine federated runs on Flower's simulation engine (Ray): one virtual SuperNode per ``[[institutions]]``
entry, each with one CPU (Flower's default of two CPUs per client runs them one at a time on small machines)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from sectorflow import ConfigError, SectorflowError, TrainableSpec

from .client import make_client_app, partition_for
from .config import FederationConfig
from .errors import FederatedEngineError
from .registry import find_trainable
from .server import STOP_GRACE_S, make_server_app, new_report
from .strategy import RoundRecord, RunReport

FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "RAY_DEDUP_LOGS": "0",
              "RAY_USAGE_STATS_ENABLED": "0"}
"""Environment set before Flower starts: no telemetry, no update check, no Ray usage statistics."""


def quiet_flower() -> None:
    """Telemetry and update checks off (they are on by default in Flower)."""
    for key, value in FLOWER_ENV.items():
        os.environ.setdefault(key, value)


class _Held(logging.Handler):
    """Keeps the log records it is given (see :func:`_flower_logs`)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


HELD_LOGGERS = ("flwr", "ray")
"""The loggers whose records :func:`_flower_logs` holds back without ``verbose``."""


@contextlib.contextmanager
def _flower_logs(verbose: bool) -> Iterator[None]:
    """Without ``verbose``, Flower's per-round INFO lines, its deprecation notice for ``run_simulation`` and Ray's
    accelerator ``FutureWarning`` are not printed; the run report carries the rounds. Flower's and Ray's error
    records (Flower logs a failed engine as its traceback) are held back until the block ends: printed then as
    before, unless the block raised a typed error (:class:`~sectorflow.SectorflowError`: a
    :class:`FederatedEngineError`, an institution that cannot be built), whose message says what happened and
    that ``--verbose`` shows the engine's log (fresh-user report, 3 Dec 2026: an engine failure printed Flower's
    traceback before the message)."""
    if verbose:
        yield
        return
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.setLevel(logging.ERROR)
    held = _Held()
    saved = {}
    for name in HELD_LOGGERS:
        log = logging.getLogger(name)
        saved[name] = (log.handlers[:], log.propagate)
        log.handlers[:] = [held]
        log.propagate = False
    typed = False
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"ray\.")
            yield
    except SectorflowError:
        typed = True
        raise
    finally:
        logger.setLevel(level)
        for name, (handlers, propagate) in saved.items():
            log = logging.getLogger(name)
            log.handlers[:], log.propagate = handlers, propagate
        if not typed:  # success or an untyped error: what Flower and Ray logged is shown, as it was before
            for record in held.records:
                handlers, propagate = saved.get(record.name.split(".")[0], ([], True))
                for handler in handlers or (logging.getLogger().handlers if propagate else []):
                    if record.levelno >= handler.level:
                        handler.handle(record)


def check_institutions(cfg: FederationConfig, spec: TrainableSpec, cause: BaseException | None = None) -> None:
    """After a simulation that produced no global model: build each institution's trainable in this process and
    raise :class:`ConfigError` naming the first ``[[institutions]]`` entry that cannot be built (a missing data
    folder, a bank number out of range, a key the trainable refuses). The simulated institutions raise the same
    error inside Ray actors, where it reached the user only as log lines, followed by "no round produced a global
    model ... check min_available_clients". Returns when every institution builds (the cause lies elsewhere).
    """
    for index in range(len(cfg.institutions)):
        partition = partition_for({"partition-id": index}, cfg)
        try:
            spec.build(dict(partition))
        except Exception as exc:
            # no square brackets in the message: the CLI prints errors as Rich markup, which ate "[[institutions]]"
            settings = ", ".join(f"{k}={v!r}" for k, v in cfg.institutions[index].items())
            raise ConfigError(f"Institution {index + 1} of {len(cfg.institutions)} in the federation config "
                              f"({settings}) cannot be used by {spec.task}/{spec.name}: {type(exc).__name__}: {exc}"
                              ) from (cause or exc)


def _server_app_threads() -> list[threading.Thread]:
    """Flower's ServerApp thread(s) of ``run_simulation`` (target ``server_th_with_start_checks``) still running."""
    return [t for t in threading.enumerate() if t.is_alive() and "server_th" in t.name]


def _stop_server_app(stop: threading.Event, finished: threading.Event, timeout: float = STOP_GRACE_S + 5) -> bool:
    """End the ServerApp thread that Flower's ``run_simulation`` leaves running when its engine fails (waiting for
    institutions to connect, or for their replies), and wait up to ``timeout`` s for it (it records the failure
    first); at once when it has finished or never started. Returns whether no ServerApp thread is left."""
    stop.set()
    deadline = time.monotonic() + timeout
    for thread in _server_app_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    finished.wait(max(0.0, min(1.0, deadline - time.monotonic())))
    return not _server_app_threads()


ENGINE_FAILED = "An error was encountered. Ending simulation."
"""The message of Flower 1.42's ``RuntimeError`` when its simulation engine (not the ServerApp) raised."""


def _chain(exc: BaseException) -> str:
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(parts)


def engine_error(exc: BaseException, cfg: FederationConfig, report: RunReport) -> FederatedEngineError:
    """The typed error for a failure of Flower's simulation engine (``exc``: Flower's ``RuntimeError``), saying
    what happened to the run and what to do."""
    chain = _chain(exc)
    timed_out = "timed out" in chain
    advice = ("Ray's node start has a fixed 30 s timeout, which a loaded machine misses: run it again when the "
              "load is lower, or with fewer institutions per machine" if timed_out else
              "run it again with --verbose to see Ray's log (and /tmp/ray/session_latest/logs); if it fails the "
              "same way, check that Ray starts on this machine: python -c 'import ray; ray.init()'")
    return FederatedEngineError(
        f"Flower's simulation engine (Ray) failed: {chain.rstrip('.')}. Run {report.run_id} stopped after "
        f"{len(report.rounds)} of {cfg.rounds} rounds and is recorded as failed (the federation config passed its "
        f"checks). What to do: {advice}.",
        details={"run_id": report.run_id, "rounds_done": len(report.rounds), "cause": chain})


def check_simulation_config(cfg: FederationConfig) -> None:
    """Raise :class:`ConfigError` when ``cfg`` has no ``[[institutions]]``, fewer than ``min_available_clients``, or
    a ``num_cpus_per_client`` above this machine's CPUs (fresh-user report, 3 Dec 2026: 64 on 2 cores was an engine
    error that said nothing in the config was wrong)."""
    if not cfg.institutions:
        raise ConfigError("A simulation needs [[institutions]] entries in the federation config (one per "
                          "institution: the partition its trainable is built on).")
    if len(cfg.institutions) < cfg.strategy.min_available_clients:
        raise ConfigError(f"strategy.min_available_clients = {cfg.strategy.min_available_clients} but only "
                          f"{len(cfg.institutions)} institutions are configured.")
    cpus = os.cpu_count() or 1
    if cfg.num_cpus_per_client > cpus:  # Ray would place no client and Flower fails with an engine error
        raise ConfigError(f"num_cpus_per_client = {cfg.num_cpus_per_client:g} exceeds the {cpus} CPU(s) of this "
                          f"machine: Ray could place no institution. Give at most {cpus} (default 1).",
                          details={"num_cpus_per_client": cfg.num_cpus_per_client, "cpus": cpus})


def simulate(cfg: FederationConfig, spec: TrainableSpec | None = None, *, num_cpus: int | None = None,
             verbose: bool = False, report: RunReport | None = None,
             on_round: Callable[[RoundRecord], None] | None = None) -> RunReport:
    """Run ``cfg`` in simulation and return the :class:`RunReport` (rounds, final weights, model hash, budget).

    ``report``: the (empty) report to fill (default a new one), so a caller can abort it; ``on_round`` gets each
    round's record as it is recorded (progress display).

    Raises:
        ConfigError: no ``[[institutions]]``, fewer than ``min_available_clients`` of them, no trainable for the
            task, an institution its trainable's ``check`` refuses (before Flower starts), or (after a run without
            a global model) an institution whose trainable cannot be built.
        FederatedEngineError: Flower's simulation engine (Ray) failed to start or crashed (the run is recorded as
            failed; the message says what to do).
        RuntimeError: the run failed otherwise (recorded as ``training_run_failed`` first).

    Whatever ends the run (an engine failure, an exception, Ctrl-C), Flower's ServerApp thread has ended when this
    returns or raises (within :data:`~sectorflow.federated.server.STOP_GRACE_S` s of the end).
    """
    quiet_flower()
    check_simulation_config(cfg)
    spec = spec or find_trainable(cfg.task, cfg.model)
    from .runner import preflight

    preflight(cfg, spec)
    report = report if report is not None else new_report(cfg, spec)
    from flwr.simulation import run_simulation

    n = len(cfg.institutions)
    backend: dict[str, Any] = {"client_resources": {"num_cpus": cfg.num_cpus_per_client, "num_gpus": 0.0},
                               "init_args": {"num_cpus": num_cpus or max(1, min(n, os.cpu_count() or 1)),
                                             "num_gpus": 0, "include_dashboard": False,
                                             "logging_level": logging.INFO if verbose else logging.ERROR,
                                             "log_to_driver": verbose}}
    stop, finished = threading.Event(), threading.Event()
    server_app = make_server_app(cfg, report, spec.plugin, on_round, stop=stop, finished=finished)
    with _flower_logs(verbose):  # also while the ServerApp thread ends: it logs on its way out
        try:
            run_simulation(server_app=server_app, client_app=make_client_app(cfg, spec), num_supernodes=n,
                           backend_config=backend, verbose_logging=verbose)
        except Exception as exc:
            _stop_server_app(stop, finished)
            if isinstance(exc, RuntimeError) and str(exc) == ENGINE_FAILED:
                raise engine_error(exc, cfg, report) from exc
            if report.weights is None:
                check_institutions(cfg, spec, exc)
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit: the ServerApp thread must end with the run
            _stop_server_app(stop, finished)
            raise
        _stop_server_app(stop, finished)
    if report.weights is None:
        check_institutions(cfg, spec)
    if report.error:
        raise RuntimeError(f"federated run {report.run_id} failed: {report.error}")
    if report.weights is None:
        raise RuntimeError(f"federated run {report.run_id} produced no global model (see the Flower log above)")
    return report
