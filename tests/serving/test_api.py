"""Routes, schemas, errors, keys, scopes and rate limits against a real uvicorn server."""

from __future__ import annotations

import hashlib

import pytest

from .conftest import SECRETS, auth


@pytest.fixture(scope="module")
def server(make_server, bundles):
    return make_server(tasks={"score": {"max_queue_delay_ms": 0}}, server={"max_body_bytes": 2048,
                                                                          "max_items_per_request": 16})


def test_openapi_describes_each_tasks_own_models(server, tasks):
    api = server.client.get("/openapi.json").json()
    schemas = api["components"]["schemas"]
    for task, field in (("score", "features"), ("echo", "text"), ("ledger", "account")):
        op = api["paths"][f"/v1/tasks/{task}"]["post"]
        body = op["requestBody"]["content"]["application/json"]
        request = schemas[body["schema"]["$ref"].split("/")[-1]]
        item_ref = request["properties"]["inputs"]["items"]["$ref"].split("/")[-1]
        assert field in schemas[item_ref]["properties"]
        assert request["properties"]["inputs"]["maxItems"] == 16
        example = body["examples"]["example"]["value"]
        spec = {s.name: s for s in [__import__("sectorflow").plugins.get_task(task)]}[task]
        assert example == {"inputs": list(spec.examples)}
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
        out_ref = schemas[ok]["properties"]["outputs"]["items"]["$ref"].split("/")[-1]
        assert set(spec.output_model.model_fields) <= set(schemas[out_ref]["properties"])
        assert {"401", "403", "422", "429", "503"} <= set(op["responses"])
    assert schemas["ScoreIn"]["properties"]["features"]["minItems"] == 4
    assert "/v1/tasks/shout" not in api["paths"]  # aliases work but stay out of the schema


def test_health_and_readiness_need_no_key(server):
    assert server.client.get("/healthz").json() == {"status": "ok"}
    ready = server.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["tasks"] == {"echo": "ready", "ledger": "ready", "score": "ready"}


def test_task_listing_shows_versions_and_hashes(server, bundles):
    rows = {r["task"]: r for r in server.client.get("/v1/tasks", headers=auth("bob")).json()}
    manifest_sha = hashlib.sha256((bundles["v1"] / "manifest.json").read_bytes()).hexdigest()
    assert rows["score"]["model"] == {"name": "tiny-linear", "version": "1", "bundle_sha256": manifest_sha}
    assert rows["echo"]["model"] == {"name": None, "version": None, "bundle_sha256": None}
    assert rows["echo"]["allowed"] is True and rows["score"]["allowed"] is False
    assert rows["score"]["max_queue_delay_ms"] == 0


def test_run_returns_typed_outputs_with_provenance(server, tasks):
    before = len(tasks.events)
    r = server.client.post("/v1/tasks/score", headers={**auth("alice"), "X-Request-ID": "req-123"},
                           json={"inputs": [{"features": [1, 2, 3, 4]}, {"features": [0, 0, 0, -1]}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [o["score"] for o in body["outputs"]] == pytest.approx([10.0, -1.0])
    assert body["outputs"][0]["meta"]["model_version"] == "1"
    assert r.headers["x-request-id"] == "req-123"
    finished = [e for e in tasks.events[before:] if e.kind == "call_finished" and e.task == "score"]
    assert len(finished) == 1
    ctx = finished[0].context
    assert (ctx.actor, ctx.tenant, ctx.channel, ctx.source, ctx.request_id) == (
        "alice", "bank-1", "http", "127.0.0.1", "req-123")
    assert finished[0].n_items == 2


def test_alias_route_runs_the_task(server):
    r = server.client.post("/v1/tasks/shout", headers=auth("alice"), json={"inputs": [{"text": "hi"}]})
    assert r.status_code == 200 and r.json()["outputs"][0]["text"] == "HI"


@pytest.mark.parametrize("headers, status", [
    ({}, 401),
    ({"Authorization": "Bearer sf_not_a_key"}, 401),
    ({"X-API-Key": SECRETS["bob"]}, 403),      # bob may call echo only
    ({"X-API-Key": SECRETS["admin"]}, 403),    # admin scope is not a task scope
    ({"X-API-Key": SECRETS["alice"]}, 200),
])
def test_keys_and_scopes(server, headers, status):
    r = server.client.post("/v1/tasks/score", headers=headers, json={"inputs": [{"features": [1, 1, 1, 1]}]})
    assert r.status_code == status, r.text
    if status == 401:
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"] == "Unauthorized"


def test_every_route_but_health_needs_a_key(server):
    for method, path in (("GET", "/v1/tasks"), ("GET", "/metrics"), ("POST", "/v1/admin/models/score/reload"),
                         ("POST", "/v1/tasks/nope")):
        assert server.client.request(method, path).status_code == 401, path
    assert server.client.get("/metrics", headers=auth("bob")).status_code == 403
    assert server.client.post("/v1/admin/models/score/reload", headers=auth("alice")).status_code == 403


def test_unknown_task_is_404_listing_the_tasks(server):
    r = server.client.post("/v1/tasks/scor", headers=auth("alice"), json={"inputs": []})
    assert r.status_code == 404
    body = r.json()
    assert body["error"] == "UnknownTaskError"
    assert body["details"]["known"] == ["echo", "ledger", "score"]
    assert body["details"]["closest"] == "score"


@pytest.mark.parametrize("payload, field", [
    ({"inputs": [{"features": [1, 2, 3]}]}, "inputs.0.features"),
    ({"inputs": [{"features": [1, 2, 3, 4]}, {"features": "x"}]}, "inputs.1.features"),
    ({"inputs": []}, "inputs"),
    ({"inputs": [{"features": [1, 2, 3, 4]}] * 17}, "inputs"),
    ({"items": [{"features": [1, 2, 3, 4]}]}, "inputs"),
])
def test_invalid_input_is_422_with_field_and_reason(server, tasks, payload, field):
    before = len(tasks.events)
    r = server.client.post("/v1/tasks/score", headers=auth("alice"), json=payload)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidInputError"
    assert field in [d["field"] for d in body["details"]]
    assert all(d["reason"] for d in body["details"])
    # the refused request still leaves a task event naming the key, like Taskflow.run's own refusals
    failed = [e for e in tasks.events[before:] if e.kind == "call_failed" and e.task == "score"]
    assert len(failed) == 1 and failed[0].context.actor == "alice" and field in failed[0].error
    assert failed[0].context.request_id == r.headers["x-request-id"]


def test_malformed_json_and_oversized_body(server):
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), "Content-Type": "application/json"},
                           content=b'{"inputs": [')
    assert r.status_code == 422
    big = {"inputs": [{"text": "x" * 200}] * 16}
    r = server.client.post("/v1/tasks/echo", headers=auth("alice"), json=big)
    assert r.status_code == 413, r.text


@pytest.mark.parametrize("content, content_type", [
    (b"hello", "application/json"),
    (b'{"inputs": [', "application/json"),
    (b"inputs=1", "text/plain"),
])
def test_a_body_that_is_not_json_says_so(server, content, content_type):
    # a fresh user's finding: this used to answer 422 with the field "0" (the character offset of the JSON error)
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), "Content-Type": content_type},
                           content=content)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidInputError"
    assert [d["field"] for d in body["details"]] == ["body"]
    reason = body["details"][0]["reason"]
    assert "JSON" in reason and "inputs" in reason
    if content_type == "application/json":
        assert "not valid JSON" in reason and f"at character {len(content) if content != b'hello' else 0}" in reason
    assert "body: The request body" in body["message"] and not body["message"].endswith("..")


def test_pipeline_refusal_maps_to_its_http_status(server):
    r = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "ok"}, {"text": "boom"}]})
    assert r.status_code == 422
    assert r.json()["details"] == [{"row": 2, "field": "text", "reason": "refused"}]


def test_rate_limit_per_key_gives_429_with_retry_after(server):
    for _ in range(5):  # bob: 5 items per minute
        assert server.client.post("/v1/tasks/echo", headers=auth("bob"), json={"inputs": [{"text": "a"}]}
                                  ).status_code == 200
    r = server.client.post("/v1/tasks/echo", headers=auth("bob"), json={"inputs": [{"text": "a"}]})
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert r.json()["error"] == "RateLimited"
    r = server.client.post("/v1/tasks/echo", headers=auth("bob"), json={"inputs": [{"text": "a"}] * 6})
    assert r.status_code == 413  # larger than the whole window: could never pass
    # another key is not affected
    assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "a"}]}
                              ).status_code == 200
    assert server.metric("sectorflow_rejections_total", task="echo", reason="rate_limited") == 2


def test_batch_only_key_cannot_jump_the_queue(server):
    r = server.client.post("/v1/tasks/echo?lane=interactive", headers=auth("batchy"), json={"inputs": [{"text": "a"}]})
    assert r.status_code == 403
    r = server.client.post("/v1/tasks/echo", headers=auth("batchy"), json={"inputs": [{"text": "a"}]})
    assert r.status_code == 200


def test_metrics_count_successes_and_failures_per_model_version(server):
    s0 = server.metric("sectorflow_requests_total", task="score", model_version="1", outcome="success")
    server.client.post("/v1/tasks/score", headers=auth("alice"), json={"inputs": [{"features": [1, 1, 1, 1]}] * 3})
    assert server.metric("sectorflow_requests_total", task="score", model_version="1", outcome="success") == s0 + 1
    f0 = server.metric("sectorflow_requests_total", task="echo", outcome="failure")
    server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "boom"}]})
    assert server.metric("sectorflow_requests_total", task="echo", outcome="failure") == f0 + 1
    assert server.metric("sectorflow_model_info", task="score", model_version="1") == 1
    assert server.metric("sectorflow_compute_seconds_count", task="score") >= 1
    assert server.metric("sectorflow_queue_seconds_count", task="score", lane="interactive") >= 1
    assert server.metric("sectorflow_http_requests_total", route="/v1/tasks/score", status="200") >= 1


def test_grafana_dashboard_uses_only_exported_metrics(server):
    import json
    import re
    from pathlib import Path

    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bsectorflow_[a-z_]+", expr)}
    text = server.client.get("/metrics", headers=auth("admin")).text
    families = {line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")}
    exported = set()
    for family, kind in families.items():
        exported.add(family)
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(kind, [])
        exported.update(family + s for s in suffixes)
    assert used and used <= exported, used - exported
    assert {"sectorflow_batch_size_bucket", "sectorflow_queue_seconds_bucket", "sectorflow_requests_total"} <= used
    # the failure ratio is the model's: requests refused before any model call (401, 413, 429, ...) stay out of it
    failure = next(t["expr"] for p in dashboard["panels"] if p.get("title") == "Failure ratio by model version"
                   for t in p["targets"])
    assert failure.count('outcome!="refused"') == 1 and 'outcome="failure"' in failure


def test_every_response_carries_a_request_id(server):
    assert len(server.client.get("/healthz").headers["x-request-id"]) == 32
    assert server.client.get("/readyz", headers={"X-Request-ID": "abc-1"}).headers["x-request-id"] == "abc-1"
    bad = server.client.get("/healthz", headers={"X-Request-ID": "no spaces allowed"}).headers["x-request-id"]
    assert bad != "no spaces allowed" and len(bad) == 32
    assert "x-request-id" in server.client.post("/v1/tasks/score").headers  # 401 too


def test_openapi_declares_the_key_schemes(server):
    api = server.client.get("/openapi.json").json()
    assert set(api["components"]["securitySchemes"]) == {"bearerAuth", "apiKeyAuth"}
    assert api["paths"]["/v1/tasks/score"]["post"]["security"] == [{"bearerAuth": []}, {"apiKeyAuth": []}]
    assert "security" not in api["paths"]["/healthz"]["get"]


def test_docs_page_renders_offline_from_local_assets(server):
    """/docs must not load Swagger UI from a CDN: the product runs where only the server itself is reachable."""
    import re

    page = server.client.get("/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', page.text)
    assert assets and not [a for a in assets if a.startswith(("http://", "https://", "//"))], assets
    for asset in assets:
        assert server.client.get(asset).status_code == 200, asset
