"""Aggregation strategies (Flower's FedAvg, FedProx, FedAdam) wrapped so that every round is recorded.

:class:`AuditedStrategy` delegates every call to the Flower strategy and, after each round, records one
``training_round`` event (participants, sample counts, failures, aggregated metrics, SHA-256 of the global model)
and appends it to the run's :class:`RunReport`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import FederationConfig
from .ordering import ordered_results
from .weights import model_sha256


@dataclass
class RoundRecord:
    """One round as recorded: ``participants`` holds ``{"node_id", "institution", "num_examples"}`` per institution
    whose update was aggregated; ``failures`` counts institutions that did not answer or failed."""

    round: int
    participants: list[dict[str, Any]]
    num_examples: int
    failures: int
    fit_metrics: dict[str, Any]
    eval_loss: float | None = None
    eval_metrics: dict[str, Any] = field(default_factory=dict)
    model_sha256: str | None = None
    eval_by_institution: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def eval_as_details(self) -> dict[str, Any]:
        """The evaluation metrics without the ``count.*`` histograms."""
        return {k: v for k, v in self.eval_metrics.items() if not k.startswith(COUNT_PREFIX)}

    def as_details(self) -> dict[str, Any]:
        """JSON-ready form for the audit event (the ``count.*`` histograms stay out of it: they are summed
        evaluation counts, kept in the run report)."""
        return {"round": self.round, "participants": self.participants, "num_examples": self.num_examples,
                "failures": self.failures, "fit_metrics": self.fit_metrics, "eval_loss": self.eval_loss,
                "eval_metrics": self.eval_as_details(),
                "eval_by_institution": self.eval_by_institution, "seconds": round(self.seconds, 3)}


@dataclass
class RunReport:
    """What a federated run produced: rounds, the final global weights (name order) and the privacy budget."""

    run_id: str
    task: str
    model: str
    strategy: str
    rounds: list[RoundRecord] = field(default_factory=list)
    weights: list[np.ndarray] | None = None
    model_sha256: str | None = None
    privacy: dict[str, Any] | None = None
    secagg: bool = False
    seconds: float = 0.0
    error: str | None = None
    audit_event_ids: list[str] = field(default_factory=list)
    closed: bool = False
    privacy_utility: dict[str, Any] | None = None
    selection: dict[str, Any] | None = None
    selected_weights: list[np.ndarray] | None = None

    def kept_weights(self) -> list[np.ndarray] | None:
        """The global weights the run keeps (bundle, ``--weights``): those of the selected round
        (:attr:`selection`, ``keep = "best"``), else the last round's."""
        return self.selected_weights if self.selected_weights is not None else self.weights

    def institutions(self) -> list[dict[str, Any]]:
        """Each institution that took part: ``{"institution", "node_id", "num_examples", "data_sha256", ...}`` as
        it last reported (its training example count and the digest of its data as read)."""
        seen: dict[str, dict[str, Any]] = {}
        for r in self.rounds:
            for p in r.participants:
                seen[p.get("institution") or p["node_id"]] = dict(p)
        return [seen[k] for k in sorted(seen)]

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (``sectorflow federate`` prints it)."""
        return {"run_id": self.run_id, "task": self.task, "model": self.model, "strategy": self.strategy,
                "secagg": self.secagg, "rounds": [r.as_details() | {"model_sha256": r.model_sha256}
                                                  for r in self.rounds],
                "institutions": self.institutions(), "model_sha256": self.model_sha256, "privacy": self.privacy,
                "privacy_utility": self.privacy_utility, "selection": self.selection,
                "seconds": round(self.seconds, 2),
                "audit_event_ids": list(self.audit_event_ids), "error": self.error}


COUNT_PREFIX = "count."
"""Metrics whose name starts with this are counts: summed over institutions, not averaged (e.g. histograms a
trainable's export calibrates on)."""
LOWER_IS_BETTER = ("loss", "mse", "mae", "error")
"""Metric names holding one of these are costs (lower is better)."""
METRICS = ("average_precision", "f1", "accuracy")
"""Validation metrics shown per round, in order of preference, when ``metric`` is not configured."""


def metric_of(cfg: FederationConfig, record: RoundRecord) -> str | None:
    """The metric to show, compare and select on: ``cfg.metric``, else the first of :data:`METRICS` the round
    reports."""
    if cfg.metric:
        return cfg.metric
    return next((m for m in METRICS if m in record.eval_metrics), None)


def lower_is_better(metric: str | None) -> bool:
    """Whether ``metric`` is a cost (its name holds one of :data:`LOWER_IS_BETTER`)."""
    return any(word in (metric or "") for word in LOWER_IS_BETTER)


def select_round(cfg: FederationConfig, report: RunReport, record: RoundRecord) -> None:
    """Update ``report.selection`` / ``selected_weights`` after ``record`` (its evaluation done; ``report.weights``
    are the global weights it evaluated). ``keep = "best"``: the round with the best validation metric so far
    (:func:`metric_of`; a tie goes to the later round), ``keep = "last"``: the last round. A round without that
    metric (not evaluated) is never selected under ``best``; when no round has it, the last round is kept."""
    metric = metric_of(cfg, record)
    value = record.eval_metrics.get(metric) if metric else None
    last = {"last_round": record.round, "last_value": None if value is None else round(float(value), 6)}
    previous = report.selection
    if cfg.keep == "best" and value is not None:
        better = previous is None or previous.get("value") is None or (
            float(value) <= previous["value"] if lower_is_better(metric) else float(value) >= previous["value"])
        if better:
            report.selected_weights = [a.copy() for a in report.weights] if report.weights is not None else None
            report.selection = {"keep": "best", "round": record.round, "metric": metric,
                                "value": round(float(value), 6), "model_sha256": record.model_sha256,
                                "why": f"{'lowest' if lower_is_better(metric) else 'highest'} validation {metric} "
                                       "of the rounds (each institution's validation accounts, weighted by their "
                                       "number; a tie goes to the later round)", **last}
        else:
            report.selection = {**previous, **last}
        return
    if previous is not None and previous.get("value") is not None and cfg.keep == "best":
        report.selection = {**previous, **last}  # an unevaluated round after an evaluated one: keep the best
        return
    report.selected_weights = None
    report.selection = {"keep": cfg.keep, "round": record.round, "metric": metric,
                        "value": last["last_value"], "model_sha256": record.model_sha256,
                        "why": "the last round (keep = \"last\")" if cfg.keep == "last" else
                               "the last round (no round was evaluated on a validation metric)", **last}


def weighted_metrics(results: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """Sample-weighted mean of every numeric metric (Flower's ``MetricsAggregationFn``), the sum of ``count.*``
    metrics; strings are dropped."""
    keys = {k for _, m in results for k, v in m.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    out: dict[str, Any] = {}
    for k in sorted(keys):
        pairs = [(n, float(m[k])) for n, m in results if k in m]
        if k.startswith(COUNT_PREFIX):
            out[k] = sum(v for _, v in pairs)
            continue
        weight = sum(n for n, _ in pairs)
        out[k] = sum(n * v for n, v in pairs) / weight if weight else sum(v for _, v in pairs) / len(pairs)
    return out


def base_strategy(cfg: FederationConfig) -> Any:
    """The configured Flower strategy (legacy API, the one SecAgg+ works with), DP wrapper included."""
    from flwr.common import Parameters
    from flwr.server import strategy as st

    s = cfg.strategy
    common = dict(fraction_fit=s.fraction_fit, fraction_evaluate=s.fraction_evaluate,
                  min_fit_clients=s.min_fit_clients, min_evaluate_clients=s.min_evaluate_clients,
                  min_available_clients=s.min_available_clients, accept_failures=True,
                  on_fit_config_fn=cfg.fit_config, on_evaluate_config_fn=lambda rnd: {"server_round": rnd},
                  fit_metrics_aggregation_fn=weighted_metrics, evaluate_metrics_aggregation_fn=weighted_metrics)
    if s.name == "fedprox":
        inner: Any = st.FedProx(proximal_mu=s.proximal_mu, **common)
    elif s.name == "fedadam":
        # FedOpt needs initial weights; AuditedStrategy fills them in from the first round's global model.
        inner = st.FedAdam(initial_parameters=Parameters(tensors=[], tensor_type="numpy.ndarray"),
                           eta=s.server_lr, tau=s.tau, **common)
    else:
        inner = st.FedAvg(**common)
    if cfg.dp.mode == "client_clipping":
        sampled = max(s.min_fit_clients, round(s.fraction_fit * max(len(cfg.institutions), s.min_available_clients)))
        inner = st.DifferentialPrivacyClientSideFixedClipping(
            inner, noise_multiplier=cfg.dp.noise_multiplier, clipping_norm=cfg.dp.clipping_norm,
            num_sampled_clients=sampled)
    return inner


def _participant(proxy: Any, res: Any) -> dict[str, Any]:
    out = {"node_id": str(proxy.cid), "institution": str(res.metrics.get("institution", "")),
           "num_examples": int(res.metrics.get("num_examples", res.num_examples))}
    if out["num_examples"] != int(res.num_examples):  # SecAgg+: the weight sent is capped at max_weight
        out["weight"] = int(res.num_examples)
    for key in ("data_sha256", "transactions"):
        if key in res.metrics:
            value = res.metrics[key]
            out[key] = int(value) if key == "transactions" else str(value)
    return out


def as_float64(res: Any) -> Any:
    """A copy of the fit reply ``res`` whose arrays are float64: Flower's FedAvg sums in the arrays' dtype, and in
    float64 the example-weighted mean of equal float32 arrays is exactly them again (after the cast back), so an
    institution that starts afresh in another process (simulation) gets the very values the others kept."""
    import copy

    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

    out = copy.copy(res)
    out.parameters = ndarrays_to_parameters([np.asarray(a, np.float64) for a in parameters_to_ndarrays(res.parameters)])
    return out


def make_audited_strategy(cfg: FederationConfig, report: RunReport, emit: Any,
                          on_round: Callable[[RoundRecord], None] | None = None) -> Any:
    """Wrap :func:`base_strategy` so each round is recorded through ``emit(kind, details=..., model_sha256=...)``
    and passed to ``on_round`` (progress display)."""
    import time

    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server.strategy import Strategy

    inner = base_strategy(cfg)

    def fedopt() -> Any:
        target = inner
        while hasattr(target, "strategy") and not hasattr(target, "current_weights"):
            target = target.strategy
        return target if hasattr(target, "current_weights") else None

    class AuditedStrategy(Strategy):  # type: ignore[misc]
        pending: RoundRecord | None = None
        started = time.perf_counter()

        def initialize_parameters(self, client_manager: Any) -> Any:
            if fedopt() is not None:
                return None  # ask one institution for its initial weights (FedOpt's placeholder is empty)
            return inner.initialize_parameters(client_manager)

        def configure_fit(self, server_round: int, parameters: Any, client_manager: Any) -> Any:
            self.flush()
            self.started = time.perf_counter()  # a round: from asking for updates to its evaluation
            opt = fedopt()
            if opt is not None and server_round == 1:
                opt.current_weights = parameters_to_ndarrays(parameters)
            return inner.configure_fit(server_round, parameters, client_manager)

        def aggregate_fit(self, server_round: int, results: list, failures: list) -> Any:
            results = ordered_results(results)
            params, metrics = inner.aggregate_fit(server_round, [(p, as_float64(r)) for p, r in results], failures)
            if params is not None:  # summed in float64, sent back as float32 (what the institutions load)
                params = ndarrays_to_parameters([np.asarray(a, np.float32) for a in parameters_to_ndarrays(params)])
            participants = [_participant(proxy, res) for proxy, res in results]
            arrays = parameters_to_ndarrays(params) if params is not None else None
            self.pending = RoundRecord(
                round=server_round, participants=participants, num_examples=sum(p["num_examples"] for p in participants),
                failures=len(failures), fit_metrics=dict(metrics or {}),
                model_sha256=model_sha256(arrays) if arrays is not None else report.model_sha256)
            if arrays is not None:
                report.weights = [np.asarray(a, dtype=np.float32) for a in arrays]
                report.model_sha256 = self.pending.model_sha256
            if cfg.strategy.fraction_evaluate == 0:
                self.flush()
            return params, metrics

        def configure_evaluate(self, server_round: int, parameters: Any, client_manager: Any) -> Any:
            return inner.configure_evaluate(server_round, parameters, client_manager)

        def aggregate_evaluate(self, server_round: int, results: list, failures: list) -> Any:
            results = ordered_results(results)
            loss, metrics = inner.aggregate_evaluate(server_round, results, failures)
            if self.pending is not None and self.pending.round == server_round:
                self.pending.eval_loss = None if loss is None else float(loss)
                self.pending.eval_metrics = dict(metrics or {})
                self.pending.failures += len(failures)
                self.pending.eval_by_institution = sorted(
                    ({"institution": str(res.metrics.get("institution", "")), "num_examples": int(res.num_examples),
                      **{k: float(v) for k, v in res.metrics.items() if isinstance(v, (int, float))
                         and not isinstance(v, bool) and not k.startswith(COUNT_PREFIX)}}
                     for _, res in results), key=lambda d: d["institution"])
            self.flush()
            return loss, metrics

        def evaluate(self, server_round: int, parameters: Any) -> Any:
            return inner.evaluate(server_round, parameters)

        def flush(self) -> None:
            record, self.pending = self.pending, None
            if record is None:
                return
            record.seconds = time.perf_counter() - self.started
            report.rounds.append(record)
            select_round(cfg, report, record)
            emit("training_round", details=record.as_details(), model_sha256=record.model_sha256,
                 n_items=record.num_examples)
            if on_round is not None:
                on_round(record)

    return AuditedStrategy()

