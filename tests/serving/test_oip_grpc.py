"""The Open Inference Protocol over gRPC (``[server] grpc_listen``), driven by ``tritonclient.grpc`` (Triton's
generated stubs of its superset proto) against a real uvicorn server whose lifespan starts the gRPC service on
loopback: same keys (metadata ``authorization: Bearer``), scopes, tenant state, rate limits, batching, audit and
metrics as the REST routes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sectorflow import hookimpl, plugins
from sectorflow.serving import hash_key

from .conftest import KEYS, SECRETS, auth

grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

CAROL = "sf_test_carol_grpc_secret_0123456789abcdef"
GRPC_KEYS = [*KEYS, {"id": "carol", "sha256": hash_key(CAROL), "tenant": "bank-2", "scopes": ["task:ledger"]}]
ROOT = Path(__file__).resolve().parents[2]


class Decisions:
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        self.seen.append((decision.actor, decision.tenant, decision.resource, decision.action, decision.allowed,
                          decision.request_id, decision.channel))


@pytest.fixture(scope="module")
def decisions(tasks):
    observer = Decisions()
    plugins.get_plugin_manager().register(observer, name="v2_grpc_decisions")
    yield observer
    plugins.get_plugin_manager().unregister(observer)


@pytest.fixture(scope="module")
def server(make_server, decisions):
    return make_server(keys=GRPC_KEYS, server={"grpc_listen": "127.0.0.1:0"}, defaults={"max_queue_delay_ms": 0})


@pytest.fixture(scope="module")
def client(server):
    port = server.app.state.sectorflow.grpc_port
    assert port and port > 0
    with grpcclient.InferenceServerClient(f"127.0.0.1:{port}") as c:
        yield c


def bearer(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {SECRETS[who] if who in SECRETS else CAROL}"}


def items_input(items: list[dict[str, Any]]):
    tensor = grpcclient.InferInput("items", [len(items)], "BYTES")
    tensor.set_data_from_numpy(np.array([json.dumps(i).encode() for i in items], dtype=np.object_))
    return tensor


def results(result) -> list[dict[str, Any]]:
    return [json.loads(e) for e in result.as_numpy("results")]


def refused(call) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as caught:
        call()
    return caught.value


def test_health_and_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("score", headers=bearer("alice"))
    assert client.get_server_metadata(headers=bearer("alice")).name == "sectorflow"
    meta = client.get_model_metadata("score", headers=bearer("alice"), as_json=True)
    assert meta["versions"] == ["1"] and meta["outputs"] == [{"name": "results", "datatype": "BYTES",
                                                              "shape": ["-1"]}]
    assert {"name": "features", "datatype": "FP64", "shape": ["-1", "4"]} in meta["inputs"]
    assert refused(lambda: client.get_model_metadata("score")).status() == "StatusCode.UNAUTHENTICATED"


def test_infer_items_and_field_tensors_match_the_native_route(server, client):
    items = [{"text": "grpc", "repeat": 2}, {"text": "ü"}]
    native = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": items}).json()["outputs"]
    result = client.infer("echo", [items_input(items)], headers=bearer("alice"), request_id="g-1")
    got = results(result)
    assert [(o["text"], o["length"]) for o in got] == [(o["text"], o["length"]) for o in native] == [
        ("GRPCGRPC", 8), ("Ü", 1)]
    response = result.get_response()
    assert response.id == "g-1" and response.model_version == ""  # echo has no model bundle
    assert len(response.parameters["call_id"].string_param) == 32
    features = grpcclient.InferInput("features", [2, 4], "FP32")
    features.set_data_from_numpy(np.array([[1, 2, 3, 4], [0.25, 0.25, 0.25, 0.25]], dtype=np.float32))
    scores = [round(o["score"], 5) for o in results(client.infer("score", [features], headers=bearer("alice")))]
    assert scores == [10.0, 1.0]


def test_refusals_are_status_codes(client):
    bad_type = grpcclient.InferInput("items", [1], "INT32")
    bad_type.set_data_from_numpy(np.array([1], dtype=np.int32))
    cases = [
        (lambda: client.infer("echo", [bad_type], headers=bearer("alice")), "INVALID_ARGUMENT", "must be BYTES"),
        (lambda: client.infer("echo", [items_input([{"text": "a", "repeat": 9}])], headers=bearer("alice")),
         "INVALID_ARGUMENT", "inputs.0.repeat"),
        (lambda: client.infer("echo", [items_input([{"text": "a"}])]), "UNAUTHENTICATED", "No API key"),
        (lambda: client.infer("score", [items_input([{"text": "a"}])], headers=bearer("bob")),
         "PERMISSION_DENIED", "lacks the scope 'task:score'"),
        (lambda: client.infer("nope", [items_input([{"text": "a"}])], headers=bearer("alice")), "NOT_FOUND",
         "No model 'nope'"),
        (lambda: client.infer("score", [items_input([{"features": [1, 2, 3, 4]}])], model_version="7",
                              headers=bearer("alice")), "NOT_FOUND", "serves model version '1' only"),
    ]
    for call, code, says in cases:
        error = refused(call)
        assert error.status() == f"StatusCode.{code}" and says in error.message(), (code, error.message())


def test_tenant_state_and_rate_limits_are_shared_with_rest(server, client):
    for tenant in ("bank-1", "bank-2"):
        server.client.post("/v1/admin/state/ledger/reset", headers=auth("admin"), json={"tenant": tenant})
    one = results(client.infer("ledger", [items_input([{"account": "a", "amount": 4.0}])], headers=bearer("alice")))
    rest = server.client.post("/v1/tasks/ledger", headers=auth("alice"),
                              json={"inputs": [{"account": "a", "amount": 1.0}]}).json()["outputs"][0]
    two = results(client.infer("ledger", [items_input([{"account": "a", "amount": 2.0}])], headers=bearer("carol")))
    assert (one[0]["balance"], rest["balance"], rest["seen"], two[0]["balance"], two[0]["seen"]) == (4.0, 5.0, 2,
                                                                                                     2.0, 1)
    # bob: 5 echo items a minute, counted across REST and gRPC
    assert server.client.post("/v1/tasks/echo", headers=auth("bob"), json={"inputs": [{"text": "x"}] * 4}).status_code == 200
    assert results(client.infer("echo", [items_input([{"text": "y"}])], headers=bearer("bob")))[0]["text"] == "Y"
    over = refused(lambda: client.infer("echo", [items_input([{"text": "z"}])], headers=bearer("bob")))
    assert over.status() == "StatusCode.RESOURCE_EXHAUSTED" and "over its limit '5/minute'" in over.message()


def test_audit_and_metrics(server, client, tasks, decisions):
    before = server.metric("sectorflow_requests_total", task="echo", status="200", outcome="success")
    invalid_before = server.metric("sectorflow_requests_total", task="echo", status="422", outcome="refused")
    ok = client.infer("echo", [items_input([{"text": "m"}])], headers={**bearer("alice"), "x-request-id": "g-a1"})
    refused(lambda: client.infer("echo", [items_input([{"text": "m", "repeat": 0}])],
                                 headers={**bearer("alice"), "x-request-id": "g-a2"}))
    assert server.metric("sectorflow_requests_total", task="echo", status="200", outcome="success") == before + 1
    assert server.metric("sectorflow_requests_total", task="echo", status="422",
                         outcome="refused") == invalid_before + 1
    assert server.metric("sectorflow_grpc_requests_total", method="ModelInfer", code="OK") >= 1
    assert server.metric("sectorflow_grpc_requests_total", method="ModelInfer", code="INVALID_ARGUMENT") >= 1
    mine = [d for d in decisions.seen if d[5] in ("g-a1", "g-a2")]
    assert mine == [("alice", "bank-1", "echo", "grpc ModelInfer", True, "g-a1", "grpc"),
                    ("alice", "bank-1", "echo", "grpc ModelInfer", True, "g-a2", "grpc")]
    call_id = ok.get_response().parameters["call_id"].string_param
    events = {(e.kind, e.context.request_id, e.context.channel) for e in tasks.events}
    assert ("call_finished", call_id, "grpc") in events and ("call_failed", "g-a2", "grpc") in events


def test_committed_descriptor_matches_the_proto():
    pytest.importorskip("grpc_tools")
    check = subprocess.run([sys.executable, str(ROOT / "deploy" / "gen_grpc_descriptor.py"), "--check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr


def test_grpc_listen_and_rate_limit_storage_are_checked(tasks):
    import asyncio
    import socket

    from sectorflow import ConfigError
    from sectorflow.serving import create_app, load_config
    from sectorflow.serving.grpc_v2 import start_grpc

    for server, says in (({"grpc_listen": "8081"}, "grpc_listen"), ({"rate_limit_storage": "mongodb://db"},
                                                                     "rate_limit_storage")):
        with pytest.raises(ConfigError, match=says):
            load_config(data={"server": server}, environ={})
    with socket.socket() as busy:  # a port another process listens on (no SO_REUSEPORT)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        state = create_app(load_config(data={"keys": GRPC_KEYS, "serve": ["echo"]}, environ={})).state.sectorflow
        with pytest.raises(ConfigError, match="cannot listen there"):
            asyncio.run(start_grpc(state, f"127.0.0.1:{busy.getsockname()[1]}"))
