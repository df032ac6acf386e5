"""Prometheus metrics of the server (prometheus-client), one registry per app.

Exported names (the Grafana dashboard in ``docs/grafana-dashboard.json`` is built on these):
    sectorflow_requests_total{task, model_version, outcome, status}   every answered request to a served task's
                                                              route (or alias), with its HTTP status; outcome =
                                                              success | failure (the model call raised, or a 500)
                                                              | refused (answered without a model call: 401, 403,
                                                              413, 422, 429, 503)
    sectorflow_items_total{task, model_version, outcome}      input items that reached a model call
    sectorflow_rejections_total{task, reason}                 refused before inference: rate_limited,
                                                              queue_full, queue_timeout, not_ready, shutdown
    sectorflow_queue_seconds{task, lane}                      time from arrival to the start of its batch
    sectorflow_compute_seconds{task, model_version}           wall time of one merged model call
    sectorflow_batch_size{task}                               items per merged model call
    sectorflow_queue_items{task, lane}                        items waiting now
    sectorflow_model_info{task, model_name, model_version, bundle_sha256}   1 for the bundle serving now
    sectorflow_model_reloads_total{task, outcome}             hot reloads; outcome = success | failure
    sectorflow_http_requests_total{method, route, status}     every HTTP response
    sectorflow_grpc_requests_total{method, code}              every gRPC call (Open Inference Protocol), by
                                                              status code name (OK, INVALID_ARGUMENT, ...)
    sectorflow_replica_info{replica}                          1; the replica's name ([server] replica, else the
                                                              host name: the pod's name on Kubernetes)
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .. import ResultMeta

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
MODEL_CALL = "sectorflow_model_call"
"""Key of a request's ASGI ``scope["state"]`` under which the batcher notes the model version of the call that
answered the request (absent: no model call was made for it, e.g. a 401 or a schema 422)."""
OUTCOMES = ("success", "failure", "refused")


def request_outcome(status: int, model_called: bool) -> str:
    """The ``outcome`` label of ``sectorflow_requests_total`` for a response with HTTP ``status``: ``success``
    (below 400), ``refused`` (a 4xx or 503 answered without calling the model), else ``failure`` (the model call
    raised, or the server failed: 500)."""
    if status < 400:
        return "success"
    if not model_called and (status < 500 or status == 503):
        return "refused"
    return "failure"


class ServerMetrics:
    """The server's metric families, registered in their own :class:`CollectorRegistry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("sectorflow_requests", "Task requests answered, with their HTTP status.",
                                ["task", "model_version", "outcome", "status"], registry=r)
        self.items = Counter("sectorflow_items", "Input items of task requests that reached a model call.",
                             ["task", "model_version", "outcome"], registry=r)
        self.rejections = Counter("sectorflow_rejections", "Task requests refused before inference.",
                                  ["task", "reason"], registry=r)
        self.queue_seconds = Histogram("sectorflow_queue_seconds", "Seconds from arrival to the start of the batch.",
                                       ["task", "lane"], buckets=LATENCY_BUCKETS, registry=r)
        self.compute_seconds = Histogram("sectorflow_compute_seconds", "Seconds of one merged model call.",
                                         ["task", "model_version"], buckets=LATENCY_BUCKETS, registry=r)
        self.batch_size = Histogram("sectorflow_batch_size", "Items per merged model call.", ["task"],
                                    buckets=BATCH_BUCKETS, registry=r)
        self.queue_items = Gauge("sectorflow_queue_items", "Items waiting in a task's lane.", ["task", "lane"],
                                 registry=r)
        self.model_info = Gauge("sectorflow_model_info", "1 for the model bundle serving a task now.",
                                ["task", "model_name", "model_version", "bundle_sha256"], registry=r)
        self.reloads = Counter("sectorflow_model_reloads", "Hot reloads of a task's model.", ["task", "outcome"],
                               registry=r)
        self.http = Counter("sectorflow_http_requests", "HTTP responses.", ["method", "route", "status"],
                            registry=r)
        self.grpc = Counter("sectorflow_grpc_requests", "gRPC calls, by method and status code.", ["method", "code"],
                            registry=r)
        self.replica = Gauge("sectorflow_replica_info", "1, labelled with this server process's replica name.",
                             ["replica"], registry=r)
        self._info_labels: dict[str, tuple[str, str, str, str]] = {}
        self._requests: dict[tuple[str, str, str, int], Any] = {}

    def count_request(self, task: str, model_version: str, outcome: str, status: int) -> None:
        """Count one answered task request in ``sectorflow_requests_total``. The counter's children are kept once
        looked up (at most 1,024; ``labels()`` takes a lock and builds its key on every call)."""
        key = (task, model_version, outcome, status)
        child = self._requests.get(key)
        if child is None:
            child = self.requests.labels(task, model_version, outcome, str(status))
            if len(self._requests) < 1024:
                self._requests[key] = child
        child.inc()

    def set_model(self, task: str, meta: ResultMeta) -> None:
        """Point ``sectorflow_model_info`` of ``task`` at the bundle described by ``meta``."""
        labels = (task, meta.model_name or "", meta.model_version or "", meta.bundle_sha256 or "")
        old = self._info_labels.get(task)
        if old is not None and old != labels:
            self.model_info.remove(*old)
        self.model_info.labels(*labels).set(1)
        self._info_labels[task] = labels

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
