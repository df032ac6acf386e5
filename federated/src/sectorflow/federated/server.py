"""The coordinating side: a Flower ``ServerApp`` that runs the configured strategy for the configured rounds, with
SecAgg+ when asked, and records the run (``training_run_started`` / ``training_run_finished`` or
``training_run_failed``, one ``training_round`` per round) through the core's task-event hook."""

from __future__ import annotations

import time
import uuid
from typing import Any

from sectorflow import TrainableSpec

from .audit import emit_training
from .config import FederationConfig
from .privacy import privacy_budget
from .strategy import RunReport, make_audited_strategy


def new_report(cfg: FederationConfig, spec: TrainableSpec | None = None, run_id: str | None = None) -> RunReport:
    """An empty report for a run of ``cfg`` (``run_id`` generated when not given)."""
    return RunReport(run_id=run_id or uuid.uuid4().hex, task=cfg.task, model=spec.name if spec else cfg.model,
                     strategy=cfg.strategy.name, secagg=cfg.secagg.enabled,
                     privacy=privacy_budget(cfg.dp, cfg.rounds, cfg.strategy.fraction_fit))


def run_workflow(grid: Any, context: Any, cfg: FederationConfig, report: RunReport, plugin: str = "") -> RunReport:
    """Run the whole federated training on ``grid`` (Flower's ``DefaultWorkflow``, with ``SecAggPlusWorkflow`` as
    its fit step when SecAgg+ is on), recording the run and each round. Exceptions are recorded and re-raised."""
    from flwr.server import LegacyContext, ServerConfig
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow

    def emit(kind: str, *, details: dict[str, Any], model_sha256: str | None = None, **kw: Any) -> None:
        emit_training(kind, task=cfg.task, run_id=report.run_id, model_name=report.model, plugin=plugin,
                      details=details, model_sha256=model_sha256, **kw)

    start = time.perf_counter()
    emit("training_run_started", details={"strategy": cfg.strategy.model_dump(), "rounds": cfg.rounds,
                                          "secagg": cfg.secagg.enabled, "dp": cfg.dp.model_dump(),
                                          "local_epochs": cfg.local_epochs, "privacy": report.privacy})
    strategy = make_audited_strategy(cfg, report, emit)
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=cfg.rounds), strategy=strategy)
    fit_workflow = None
    if cfg.secagg.enabled:
        fit_workflow = SecAggPlusWorkflow(num_shares=cfg.secagg.num_shares,
                                          reconstruction_threshold=cfg.secagg.reconstruction_threshold,
                                          clipping_range=cfg.secagg.clipping_range)
    try:
        DefaultWorkflow(fit_workflow=fit_workflow)(grid, legacy)
        strategy.flush()
        if not report.rounds or report.weights is None:
            raise RuntimeError("no round produced a global model: too few institutions answered, or they failed "
                               "(their errors are in the log above; check each institution's data and settings, "
                               "min_available_clients / min_fit_clients, and that the nodes are connected)")
    except BaseException as exc:
        report.seconds = time.perf_counter() - start
        report.error = f"{type(exc).__name__}: {exc}"
        emit("training_run_failed", details={"rounds_done": len(report.rounds)}, error=report.error,
             model_sha256=report.model_sha256, duration_ms=report.seconds * 1000)
        raise
    report.seconds = time.perf_counter() - start
    emit("training_run_finished", details={"rounds_done": len(report.rounds), "privacy": report.privacy,
                                           "final_eval_metrics": report.rounds[-1].eval_metrics},
         model_sha256=report.model_sha256, duration_ms=report.seconds * 1000)
    return report


def make_server_app(cfg: FederationConfig, report: RunReport | None = None, plugin: str = "") -> Any:
    """A Flower ``ServerApp`` running :func:`run_workflow`. ``report`` (simulation: same process) receives the
    rounds and final weights; in deployment each run gets a fresh report in the ServerApp's process."""
    from flwr.server import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        run_workflow(grid, context, cfg, report if report is not None else new_report(cfg), plugin)

    return app
