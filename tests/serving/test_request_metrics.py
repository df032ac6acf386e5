"""``sectorflow_requests_total`` counts every answered request to a served task, with its HTTP status, against a real
uvicorn server.

Found in review: only requests that reached the batcher were counted (200, and the task's own failures), so a 422
for an unparsable or invalid body, and every 401, 403, 413, 429 and 503, left the counter unchanged: a client
sending nothing but bad requests looked idle on the dashboard. ``not_ready`` 503s were not counted in
``sectorflow_rejections_total`` either, although the metric names that reason.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sectorflow import SectorflowError, hookimpl, plugins

from .conftest import auth

JSON = {"Content-Type": "application/json"}


def samples(server, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Every sample of metric ``name`` in /metrics, by its exact label set."""
    text = server.client.get("/metrics", headers=auth("admin")).text
    return {frozenset(s.labels.items()): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name}


def counted(server, task: str) -> dict[tuple[str, str, str], float]:
    """``sectorflow_requests_total`` of ``task`` as ``{(model_version, outcome, status): count}``."""
    out = {}
    for labels, value in samples(server, "sectorflow_requests_total").items():
        got = dict(labels)
        if got["task"] == task:
            out[(got["model_version"], got["outcome"], got["status"])] = value
    return out


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before.get(k, 0.0) for k in after if after[k] != before.get(k, 0.0)}


class RefuseDecisions:
    """An access-decision observer that cannot record (the audit log's store down, ``access`` regulated)."""

    @hookimpl
    def sectorflow_access_decision(self, **kwargs: object) -> None:
        raise StoreDown("the audit store is down: record not written")


class StoreDown(SectorflowError):
    http_status = 503


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(server={"max_body_bytes": 2048, "max_items_per_request": 16},
                       tasks={"echo": {"max_queue_delay_ms": 0, "interactive": {"max_queue_items": 4}}})


@pytest.mark.parametrize("query", ["", "?x=1"])  # the fast path, and the FastAPI route
def test_every_answered_task_request_is_counted_with_its_status(server, query):
    path = "/v1/tasks/echo" + query
    ok = {"inputs": [{"text": "a"}]}
    before = counted(server, "echo")
    sent = [
        (server.client.post(path, headers=auth("alice"), json=ok), "success", 200),
        (server.client.post(path, headers=auth("alice"), json={"inputs": [{"text": "boom"}]}), "failure", 422),
        (server.client.post(path, headers={**auth("alice"), **JSON}, content=b'{"inputs": ['), "refused", 422),
        (server.client.post(path, headers=auth("alice"), json={"inputs": [{"text": ""}]}), "refused", 422),
        (server.client.post(path, json=ok), "refused", 401),
        (server.client.post(path, headers=auth("watcher"), json=ok), "refused", 403),
        (server.client.post(path + ("&" if query else "?") + "lane=interactive", headers=auth("batchy"), json=ok),
         "refused", 403),
        (server.client.post(path, headers=auth("alice"), json={"inputs": [{"text": "x" * 200}] * 16}),
         "refused", 413),
        (server.client.post(path, headers=auth("alice"), json={"inputs": [{"text": "a"}] * 5}), "refused", 503),
    ]
    assert [r.status_code for r, _, _ in sent] == [status for _, _, status in sent], [r.text for r, _, _ in sent]
    expected: dict[tuple[str, str, str], float] = {}
    for _, outcome, status in sent:
        key = ("", outcome, str(status))
        expected[key] = expected.get(key, 0.0) + 1
    # the echo task has no model version: every sample is labelled "" (a versioned task: test_request_versions)
    assert delta(before, counted(server, "echo")) == expected
    # the oversized body is now labelled with its route, not "unmatched"
    http = samples(server, "sectorflow_http_requests_total")
    assert http[frozenset({("method", "POST"), ("route", "/v1/tasks/echo"), ("status", "413")})] >= 1


def test_rate_limit_refusals_and_an_alias_are_counted_under_the_task(server):
    before = counted(server, "echo")
    statuses = [server.client.post("/v1/tasks/shout", headers=auth("bob"), json={"inputs": [{"text": "a"}]}
                                   ).status_code for _ in range(6)]
    statuses.append(server.client.post("/v1/tasks/echo", headers=auth("bob"), json={"inputs": [{"text": "a"}] * 6}
                                       ).status_code)
    assert statuses == [200] * 5 + [429, 413]
    assert delta(before, counted(server, "echo")) == {("", "success", "200"): 5, ("", "refused", "429"): 1,
                                                      ("", "refused", "413"): 1}


def test_a_decision_the_audit_log_cannot_record_is_counted_as_a_refused_503(server):
    before = counted(server, "echo")
    plugins.get_plugin_manager().register(RefuseDecisions(), name="refuse_decisions")
    try:
        r = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "a"}]})
    finally:
        plugins.get_plugin_manager().unregister(name="refuse_decisions")
    assert r.status_code == 503 and r.json()["error"] == "StoreDown"
    assert delta(before, counted(server, "echo")) == {("", "refused", "503"): 1}


def test_request_versions_and_unknown_tasks(server):
    """A versioned task's samples carry the model version, refused ones too (the version serving now); a request
    to a task that is not served is not a task request (only ``sectorflow_http_requests_total`` counts it)."""
    before = counted(server, "score")
    assert server.client.post("/v1/tasks/score", headers=auth("alice"), json={"inputs": [{"features": [1, 1, 1, 1]}]}
                              ).status_code == 200
    assert server.client.post("/v1/tasks/score", headers=auth("bob"), json={"inputs": []}).status_code == 403
    assert delta(before, counted(server, "score")) == {("1", "success", "200"): 1, ("1", "refused", "403"): 1}
    everything = samples(server, "sectorflow_requests_total")
    assert server.client.post("/v1/tasks/nope", headers=auth("alice"), json={"inputs": []}).status_code == 404
    assert samples(server, "sectorflow_requests_total") == everything


def test_a_task_whose_model_failed_to_load_counts_its_503s(make_server, bundles):
    server = make_server(wait="loaded", tasks={"score": {"task_path": str(bundles["corrupt"])}})
    r = server.client.post("/v1/tasks/score", headers=auth("alice"), json={"inputs": [{"features": [1, 1, 1, 1]}]})
    assert r.status_code == 503 and "failed to load" in r.json()["message"]
    assert counted(server, "score") == {("", "refused", "503"): 1}  # no model, no version
    rejections = samples(server, "sectorflow_rejections_total")
    assert rejections[frozenset({("task", "score"), ("reason", "not_ready")})] == 1
