"""The Open Inference Protocol (KServe v2) over REST, driven by clients nobody here wrote: ``tritonclient.http``
(binary tensor extension and plain JSON) and the ``kserve`` SDK's ``InferenceRESTClient``, against a real uvicorn
server on loopback. The v2 routes share keys, scopes, tenant state, rate limits, batching, audit and metrics with
``POST /v1/tasks/NAME``; every refusal is the protocol's ``{"error": ...}`` with a 4xx."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
import pytest
from sectorflow import hookimpl, plugins
from sectorflow.serving import hash_key

from .conftest import GATE, KEYS, SECRETS, auth

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402

CAROL = "sf_test_carol_v2_secret_0123456789abcdef"
V2_KEYS = [*KEYS, {"id": "carol", "sha256": hash_key(CAROL), "tenant": "bank-2", "scopes": ["task:ledger"]}]


class Decisions:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        self.seen.append({"actor": decision.actor, "tenant": decision.tenant, "resource": decision.resource,
                          "action": decision.action, "allowed": decision.allowed, "request_id": decision.request_id,
                          "channel": decision.channel})


@pytest.fixture(scope="module")
def decisions(tasks):
    observer = Decisions()
    plugins.get_plugin_manager().register(observer, name="v2_rest_decisions")
    yield observer
    plugins.get_plugin_manager().unregister(observer)


@pytest.fixture(scope="module")
def server(make_server, decisions):
    return make_server(keys=V2_KEYS, defaults={"max_queue_delay_ms": 0})


def triton(server, who: str = "alice"):
    return httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", connection_timeout=30, network_timeout=30), \
        {"Authorization": f"Bearer {SECRETS[who] if who in SECRETS else CAROL}"}


def items_input(items: list[dict[str, Any]], binary: bool = True):
    tensor = httpclient.InferInput("items", [len(items)], "BYTES")
    tensor.set_data_from_numpy(np.array([json.dumps(i).encode() for i in items], dtype=np.object_),
                               binary_data=binary)
    return tensor


def results(result) -> list[dict[str, Any]]:
    return [json.loads(e) for e in result.as_numpy("results")]


def test_health_and_metadata_as_tritonclient_reads_them(server):
    client, headers = triton(server)
    assert client.is_server_live() and client.is_server_ready()  # open, like /healthz and /readyz
    assert client.is_model_ready("echo", headers=headers)
    meta = client.get_server_metadata(headers=headers)
    assert meta["name"] == "sectorflow" and "binary_tensor_data" in meta["extensions"]
    score = client.get_model_metadata("score", headers=headers)
    assert score["versions"] == ["1"] and score["outputs"] == [{"name": "results", "datatype": "BYTES",
                                                                "shape": [-1]}]
    assert {"name": "features", "datatype": "FP64", "shape": [-1, 4]} in score["inputs"]
    assert score["inputs"][0] == {"name": "items", "datatype": "BYTES", "shape": [-1]}
    echo = client.get_model_metadata("echo", headers=headers)
    assert {"name": "text", "datatype": "BYTES", "shape": [-1]} in echo["inputs"]
    assert {"name": "repeat", "datatype": "INT64", "shape": [-1]} in echo["inputs"]
    with pytest.raises(InferenceServerException) as no_key:
        client.get_model_metadata("echo")
    assert no_key.value.status() == "401"


def test_items_binary_and_json_give_the_native_routes_outputs(server):
    client, headers = triton(server)
    items = [{"text": "héllo", "repeat": 2}, {"text": "ab"}]
    native = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": items}).json()["outputs"]
    for binary in (True, False):
        # a fresh headers dict per call: tritonclient adds Inference-Header-Content-Length to the one it is given
        result = client.infer("echo", [items_input(items, binary)], headers=dict(headers), request_id="r-1")
        got = results(result)
        assert [{"text": o["text"], "length": o["length"]} for o in got] == [
            {"text": "HÉLLOHÉLLO", "length": 10}, {"text": "AB", "length": 2}]
        assert [{k: o[k] for k in ("text", "length")} for o in got] == [
            {k: o[k] for k in ("text", "length")} for o in native]
        response = result.get_response()
        assert response["id"] == "r-1" and response["model_name"] == "echo"
        assert len(response["parameters"]["call_id"]) == 32
    via_alias = client.infer("shout", [items_input(items[:1])], headers=dict(headers))
    assert results(via_alias)[0]["text"] == "HÉLLOHÉLLO"


def test_field_tensors_run_the_real_paddle_model(server):
    client, headers = triton(server)
    features = httpclient.InferInput("features", [3, 4], "FP32")
    features.set_data_from_numpy(np.array([[1, 2, 3, 4], [0, 0, 0, 0.5], [-1, -1, -1, -1]], dtype=np.float32))
    got = results(client.infer("score", [features], headers=dict(headers)))
    assert [round(o["score"], 5) for o in got] == [10.0, 0.5, -4.0]  # the v1 bundle: 1.0 * sum(features)
    text = httpclient.InferInput("text", [2], "BYTES")
    text.set_data_from_numpy(np.array([b"x", b"yz"], dtype=np.object_))
    repeat = httpclient.InferInput("repeat", [2], "INT64")
    repeat.set_data_from_numpy(np.array([3, 1], dtype=np.int64), binary_data=False)
    assert [o["text"] for o in results(client.infer("echo", [text, repeat], headers=dict(headers)))] == ["XXX", "YZ"]


KSERVE_CLIENT = """
import asyncio, json, os, sys
from kserve import InferInput, InferRequest
from kserve.inference_client import InferenceRESTClient, RESTConfig

async def run():
    url, headers = os.environ["URL"], {"Authorization": "Bearer " + os.environ["KEY"]}
    client = InferenceRESTClient(RESTConfig(protocol="v2", retries=0, timeout=30))
    request = InferRequest(model_name="echo", request_id="k-1", infer_inputs=[
        InferInput("items", [2], "BYTES", data=[json.dumps({"text": "kserve"}), json.dumps({"text": "v2"})])])
    answer = await client.infer(url, request, model_name="echo", headers=headers)
    out = {"id": answer.id, "name": answer.outputs[0].name, "data": list(answer.outputs[0].data),
           "live": await client.is_server_live(url)}
    try:
        await client.infer(url, request, model_name="score", headers={"Authorization": "Bearer " + os.environ["BOB"]})
    except Exception as exc:  # httpx.HTTPStatusError with the protocol's error message
        out["refused"] = [exc.response.status_code, exc.response.json()]
    await client._client.aclose()
    print(json.dumps(out))

asyncio.run(run())
"""


def test_kserve_rest_client(server):
    """KServe's SDK in its own process: its generated protobuf module and tritonclient.grpc's both register
    ``inference.*`` in protobuf's default pool, so the two clients cannot share one (the server's private pool
    clashes with neither)."""
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("kserve") is None:  # not imported here: see above
        pytest.skip("kserve is not installed")

    env = {**os.environ, "URL": server.url, "KEY": SECRETS["alice"], "BOB": SECRETS["bob"]}
    run = subprocess.run([sys.executable, "-c", KSERVE_CLIENT], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["live"] is True and out["id"] == "k-1" and out["name"] == "results"
    assert [json.loads(e)["text"] for e in out["data"]] == ["KSERVE", "V2"]
    status, body = out["refused"]
    assert status == 403 and "lacks the scope 'task:score'" in body["error"]


def post_v2(server, task: str, body: Any, who: str | None = "alice", headers: dict[str, str] | None = None):
    headers = {**(headers or {}), **({} if who is None else {"Authorization": f"Bearer {SECRETS.get(who, CAROL)}"})}
    if isinstance(body, (bytes, str)):
        return server.client.post(f"/v2/models/{task}/infer", headers=headers, content=body)
    return server.client.post(f"/v2/models/{task}/infer", headers=headers, json=body)


def items_body(items: list[Any], datatype: str = "BYTES", shape: list[int] | None = None, **extra: Any):
    data = [json.dumps(i) for i in items]
    return {"inputs": [{"name": "items", "datatype": datatype, "shape": shape or [len(data)], "data": data}],
            **extra}


@pytest.mark.parametrize(("body", "who", "status", "says"), [
    (items_body([{"text": "a"}], datatype="INT32"), "alice", 400, "is INT32"),
    ({"inputs": [{"name": "items", "datatype": "INT32", "shape": [1], "data": [1]}]}, "alice", 400, "must be BYTES"),
    ({"inputs": [{"name": "items", "datatype": "STRING", "shape": [1], "data": ["x"]}]}, "alice", 400, "datatype"),
    (items_body([{"text": "a"}], shape=[3]), "alice", 400, "shape [3] (3 elements) but 1"),
    ({"inputs": [{"name": "items", "datatype": "BYTES", "shape": [1]}]}, "alice", 400, "no 'data'"),
    ({"inputs": [{"name": "items", "datatype": "BYTES", "shape": [1], "data": ["{not json"]}]}, "alice", 400,
     "not JSON text"),
    ({"inputs": [{"name": "colour", "datatype": "BYTES", "shape": [1], "data": ["x"]}]}, "alice", 400,
     "name no field"),
    ({"inputs": []}, "alice", 400, "no inputs"),
    ({"nothing": 1}, "alice", 400, 'list "inputs"'),
    (b"\xff\xfe not json", "alice", 400, "not JSON"),
    (items_body([{"text": "a"}], outputs=[{"name": "logits"}]), "alice", 400, "only output is 'results'"),
    (items_body([{"text": "a"}], parameters={"lane": "fast"}), "alice", 400, "'lane'"),
    (items_body([{"text": "a", "repeat": 9}]), "alice", 422, "inputs.0.repeat"),
    (items_body([{"repeat": 1}]), "alice", 422, "inputs.0.text: Field required"),
    (items_body([{"text": "boom"}]), "alice", 422, "refused by the echo task"),
    (items_body([{"text": "a"}]), None, 401, "No API key"),
    (items_body([{"text": "a"}]), "watcher", 403, "lacks the scope 'task:echo'"),
])
def test_refusals_are_the_protocols_error_body(server, body, who, status, says):
    response = post_v2(server, "echo", body, who)
    assert response.status_code == status, response.text
    assert list(response.json()) == ["error"] and says in response.json()["error"], response.json()


def test_an_oversized_body_is_413_with_the_protocols_error_body(server):
    big = items_body([{"text": "x" * 150}] * 8000)  # over the default max_body_bytes (1 MiB)
    response = post_v2(server, "echo", big)
    assert response.status_code == 413 and list(response.json()) == ["error"]
    assert response.json()["error"].startswith("RequestTooLarge: The request body exceeds 1048576 bytes")


def test_unknown_model_version_and_route(server):
    for path, says in (("/v2/models/nope/infer", "No model 'nope'"), ("/v2/models/score/versions/9/infer",
                                                                         "serves model version '1' only"),
                       ("/v2/repository/index", "No route POST /v2/repository/index")):
        response = server.client.post(path, headers=auth("alice"), json=items_body([{"features": [1, 2, 3, 4]}]))
        assert response.status_code == 404 and list(response.json()) == ["error"] and says in response.json()["error"]
    same = server.client.post("/v2/models/score/versions/1/infer", headers=auth("alice"),
                              json=items_body([{"features": [1, 1, 1, 1]}]))
    assert same.status_code == 200 and json.loads(same.json()["outputs"][0]["data"][0])["score"] == 4.0


def test_tenant_state_is_shared_with_the_native_route_and_kept_apart_per_tenant(server):
    for tenant in ("bank-1", "bank-2"):
        server.client.post("/v1/admin/state/ledger/reset", headers=auth("admin"), json={"tenant": tenant})
    first = post_v2(server, "ledger", items_body([{"account": "acc-1", "amount": 10.0}]))
    assert [(o["balance"], o["seen"]) for o in map(json.loads, first.json()["outputs"][0]["data"])] == [(10.0, 1)]
    native = server.client.post("/v1/tasks/ledger", headers=auth("alice"),
                                json={"inputs": [{"account": "acc-1", "amount": 5.0}]}).json()["outputs"][0]
    assert (native["balance"], native["seen"]) == (15.0, 2)  # bank 1's ledger, whichever protocol
    other = post_v2(server, "ledger", items_body([{"account": "acc-1", "amount": 1.0}]), who="carol")
    assert [(o["balance"], o["seen"]) for o in map(json.loads, other.json()["outputs"][0]["data"])] == [(1.0, 1)]


def test_rate_limit_is_one_window_for_both_protocols(server):
    # bob: 5 items per minute on task:echo
    assert server.client.post("/v1/tasks/echo", headers=auth("bob"),
                              json={"inputs": [{"text": "a"}] * 3}).status_code == 200
    assert post_v2(server, "echo", items_body([{"text": "b"}] * 2), "bob").status_code == 200
    refused = post_v2(server, "echo", items_body([{"text": "c"}]), "bob")
    assert refused.status_code == 429 and "over its limit '5/minute'" in refused.json()["error"]
    assert int(refused.headers["Retry-After"]) >= 1
    too_many = post_v2(server, "echo", items_body([{"text": "d"}] * 6), "bob")
    assert too_many.status_code == 413 and list(too_many.json()) == ["error"]


def test_audit_events_access_decisions_and_metrics(server, tasks, decisions):
    before = server.metric("sectorflow_requests_total", task="echo", status="200", outcome="success")
    refused_before = server.metric("sectorflow_requests_total", task="echo", status="422", outcome="refused")
    ok = post_v2(server, "echo", items_body([{"text": "audit"}]), headers={"X-Request-ID": "v2-audit-1"})
    bad = post_v2(server, "echo", items_body([{"text": "a", "repeat": 7}]), headers={"X-Request-ID": "v2-audit-2"})
    assert ok.status_code == 200 and bad.status_code == 422
    assert server.metric("sectorflow_requests_total", task="echo", status="200", outcome="success") == before + 1
    assert server.metric("sectorflow_requests_total", task="echo", status="422",
                         outcome="refused") == refused_before + 1
    mine = [d for d in decisions.seen if d["request_id"] in ("v2-audit-1", "v2-audit-2")]
    assert [(d["actor"], d["tenant"], d["resource"], d["action"], d["allowed"], d["channel"]) for d in mine] == [
        ("alice", "bank-1", "echo", "POST /v2/models/echo/infer", True, "http")] * 2
    events = {(e.kind, e.context.request_id) for e in tasks.events if e.context.actor == "alice"}
    assert ("call_finished", ok.json()["parameters"]["call_id"]) in events
    assert ("call_failed", "v2-audit-2") in events


def test_v2_and_native_requests_share_the_batcher(server):
    """While one echo call is held, a native and a v2 request queue up; released, they run as one merged call."""
    GATE["entered"].clear()
    GATE["release"].clear()
    answers: dict[str, Any] = {}

    def send(name: str, call) -> None:
        answers[name] = call()

    held = threading.Thread(target=send, args=("held", lambda: post_v2(server, "echo", items_body([{"text": "block"}]))))
    held.start()
    assert GATE["entered"].wait(20)
    threads = [threading.Thread(target=send, args=("native", lambda: server.client.post(
                   "/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "n"}]}))),
               threading.Thread(target=send, args=("v2", lambda: post_v2(server, "echo", items_body([{"text": "v"}]))))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while server.metric("sectorflow_queue_items", task="echo") < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    GATE["release"].set()
    for thread in (held, *threads):
        thread.join(30)
    assert answers["native"].status_code == answers["v2"].status_code == 200
    assert answers["native"].headers["X-Sectorflow-Call-ID"] == answers["v2"].json()["parameters"]["call_id"]
    assert answers["v2"].json()["parameters"]["batch_items"] == 2
