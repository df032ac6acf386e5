"""The coordinating side: a Flower ``ServerApp`` that runs the configured strategy for the configured rounds, with
SecAgg+ when asked, and records the run (``training_run_started`` / ``training_run_finished`` or
``training_run_failed``, one ``training_round`` per round) through the core's task-event hook."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from sectorflow import TrainableSpec

from .audit import emit_training
from .config import FederationConfig
from .errors import SimulationStopped
from .ordering import make_client_manager, node_order
from .privacy import privacy_budget
from .strategy import RoundRecord, RunReport, make_audited_strategy

__all__ = ["SimulationStopped", "StoppableGrid", "make_server_app", "new_report", "record_abort", "run_workflow"]

WAIT_POLL_S = 0.2
STOP_GRACE_S = 10.0
"""Once the simulation engine has stopped, how long the ServerApp's work may take to end (recording the failure)
before Flower's ServerApp thread returns without it."""


def new_report(cfg: FederationConfig, spec: TrainableSpec | None = None, run_id: str | None = None) -> RunReport:
    """An empty report for a run of ``cfg`` (``run_id`` generated when not given)."""
    return RunReport(run_id=run_id or uuid.uuid4().hex, task=cfg.task, model=spec.name if spec else cfg.model,
                     strategy=cfg.strategy.name, secagg=cfg.secagg.enabled,
                     privacy=privacy_budget(cfg.dp, cfg.rounds, cfg.strategy.fraction_fit))


def _emitter(cfg: FederationConfig, report: RunReport, plugin: str) -> Callable[..., None]:
    def emit(kind: str, *, details: dict[str, Any], model_sha256: str | None = None, **kw: Any) -> None:
        report.audit_event_ids.append(emit_training(kind, task=cfg.task, run_id=report.run_id,
                                                    model_name=report.model, plugin=plugin, details=details,
                                                    model_sha256=model_sha256, **kw))
    return emit


def record_abort(cfg: FederationConfig, report: RunReport, plugin: str = "",
                 reason: str = "interrupted by the user (SIGINT)") -> bool:
    """Record ``training_run_failed`` for a run stopped from outside (Ctrl-C) unless the run was already closed;
    returns whether a record was written."""
    if report.closed:
        return False
    report.closed = True
    report.error = f"Aborted: {reason} after {len(report.rounds)} of {cfg.rounds} rounds"
    _emitter(cfg, report, plugin)("training_run_failed", details={"rounds_done": len(report.rounds),
                                                                   "aborted": True},
                                  error=report.error, model_sha256=report.model_sha256)
    return True


def run_workflow(grid: Any, context: Any, cfg: FederationConfig, report: RunReport, plugin: str = "",
                 on_round: Callable[[RoundRecord], None] | None = None,
                 stop: threading.Event | None = None) -> RunReport:
    """Run the whole federated training on ``grid`` (Flower's ``DefaultWorkflow``, with ``SecAggPlusWorkflow`` as
    its fit step when SecAgg+ is on), recording the run and each round. Exceptions are recorded and re-raised.

    Institutions are ordered and sampled by :func:`~sectorflow.federated.ordering.make_client_manager` (configured
    order, samples seeded by ``cfg.seed``); its wait for institutions to connect ends with
    :class:`SimulationStopped` once ``stop`` is set."""
    from flwr.server import LegacyContext, ServerConfig
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow

    emit = _emitter(cfg, report, plugin)
    start = time.perf_counter()
    emit("training_run_started", details={"strategy": cfg.strategy.model_dump(), "rounds": cfg.rounds,
                                          "secagg": cfg.secagg.enabled, "dp": cfg.dp.model_dump(),
                                          "local_epochs": cfg.local_epochs, "privacy": report.privacy})
    strategy = make_audited_strategy(cfg, report, emit, on_round)
    manager = make_client_manager(node_order(grid), cfg.seed, stop)
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=cfg.rounds), strategy=strategy,
                           client_manager=manager)
    fit_workflow = None
    if cfg.secagg.enabled:
        fit_workflow = SecAggPlusWorkflow(num_shares=cfg.secagg.num_shares,
                                          reconstruction_threshold=cfg.secagg.reconstruction_threshold,
                                          clipping_range=cfg.secagg.clipping_range,
                                          max_weight=cfg.secagg.max_weight)
    try:
        DefaultWorkflow(fit_workflow=fit_workflow)(grid, legacy)
        strategy.flush()
        if not report.rounds or report.weights is None:
            raise RuntimeError("no round produced a global model: too few institutions answered, or they failed "
                               "(their errors are in the log above; check each institution's data and settings, "
                               "min_available_clients / min_fit_clients, and that the nodes are connected)")
    except BaseException as exc:
        report.seconds = time.perf_counter() - start
        if not report.closed:
            report.closed = True
            report.error = f"{type(exc).__name__}: {exc}"
            emit("training_run_failed", details={"rounds_done": len(report.rounds)}, error=report.error,
                 model_sha256=report.model_sha256, duration_ms=report.seconds * 1000)
        raise
    report.seconds = time.perf_counter() - start
    if report.closed:  # aborted from outside while the last round finished
        return report
    report.closed = True
    emit("training_run_finished", details={"rounds_done": len(report.rounds), "privacy": report.privacy,
                                           "final_eval_metrics": report.rounds[-1].eval_as_details(),
                                           "selection": report.selection},
         model_sha256=report.model_sha256, duration_ms=report.seconds * 1000)
    return report


class StoppableGrid:
    """Flower's grid whose ``send_and_receive`` gives up once ``stop`` is set (every other attribute is the grid's).

    Flower 1.42's simulation starts the ServerApp in a non-daemon thread and, when the simulation engine fails
    (Ray's "The current node timed out during startup"), sets its own stop event, raises, and leaves that thread in
    ``InMemoryGrid.send_and_receive``, which pulls replies forever when no timeout is given: the process then never
    exits (a fresh-clone CI's pytest hung at exit so). Same loop as Flower's (push, pull every ``pull_interval`` s,
    until every reply or ``timeout`` s), plus the ``stop`` check: raises :class:`SimulationStopped`."""

    def __init__(self, grid: Any, stop: threading.Event) -> None:
        self._grid, self._stop = grid, stop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> list:
        pending = set(self._grid.push_messages(messages))
        end = None if timeout is None else time.time() + timeout
        replies: list = []
        while end is None or time.time() < end:
            if self._stop.is_set():
                raise SimulationStopped(f"the simulation engine stopped with {len(pending)} replies outstanding "
                                        "(its error is above)")
            got = list(self._grid.pull_messages(pending))
            replies.extend(got)
            pending.difference_update({m.metadata.reply_to_message_id for m in got})
            if not pending:
                break
            time.sleep(getattr(self._grid, "pull_interval", 0.1))
        return replies


def make_server_app(cfg: FederationConfig, report: RunReport | None = None, plugin: str = "",
                    on_round: Callable[[RoundRecord], None] | None = None,
                    on_finish: Callable[[RunReport], None] | None = None,
                    stop: threading.Event | None = None, finished: threading.Event | None = None) -> Any:
    """A Flower ``ServerApp`` running :func:`run_workflow`. ``report`` (simulation: same process) receives the
    rounds and final weights; in deployment each run gets a fresh report in the ServerApp's process, and
    ``on_finish`` (deployment: write the bundle named by ``cfg.bundle``) gets it when the run finished.

    ``stop`` (simulation): set by the caller once Flower's ``run_simulation`` has returned or raised. It ends a
    ServerApp still waiting for institutions to connect or for replies (:class:`SimulationStopped`), and whatever
    the ServerApp is doing, Flower's (non-daemon) ServerApp thread returns at most :data:`STOP_GRACE_S` s after
    it: the work runs in a daemon thread that thread waits on, so a stuck wait can never keep the process from
    exiting. ``finished`` is set when the work has ended."""
    from flwr.server import ServerApp

    app = ServerApp()

    def work(grid: Any, context: Any) -> None:
        try:
            done = run_workflow(grid if stop is None else StoppableGrid(grid, stop), context, cfg,
                                report if report is not None else new_report(cfg), plugin, on_round, stop)
            if on_finish is not None:
                on_finish(done)
        finally:
            if finished is not None:
                finished.set()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        if stop is None:  # deployment: the ServerApp has its own process
            work(grid, context)
            return
        outcome: dict[str, BaseException] = {}

        def guarded() -> None:
            try:
                work(grid, context)
            except BaseException as exc:  # noqa: BLE001 - handed to Flower's thread below
                outcome["error"] = exc

        worker = threading.Thread(target=guarded, name="sectorflow-server-app", daemon=True)
        worker.start()
        while worker.is_alive() and not stop.is_set():
            worker.join(WAIT_POLL_S)
        worker.join(STOP_GRACE_S)
        if worker.is_alive():
            raise SimulationStopped(f"the simulation engine stopped and the ServerApp's work did not end within "
                                    f"{STOP_GRACE_S:.0f} s; it is left in a daemon thread")
        if "error" in outcome:
            raise outcome["error"]

    return app
