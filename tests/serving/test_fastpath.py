"""The task fast path (plain ASGI) answers exactly as the FastAPI route does, and the proxy-headers wrapper of
``sectorflow serve`` sets the client address exactly as uvicorn's own middleware does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sectorflow import hookimpl, plugins
from sectorflow.serving.server import ProxyHeaders

from .conftest import auth

BODY = {"inputs": [{"text": "fast", "repeat": 2}, {"text": "path"}]}
# An unknown query parameter is ignored by FastAPI but sends the request past the fast path: the same request,
# answered by the FastAPI route.
VIA_FASTAPI = "?trace=1"


class Decisions:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, str, str]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        if decision.action.startswith("POST /v1/tasks"):  # leave out the test's own /metrics reads
            self.seen.append((decision.actor, decision.allowed, decision.action, decision.request_id))


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(defaults={"max_queue_delay_ms": 0},
                       tasks={"ledger": {"interactive": {"max_queue_items": 1}}})


@pytest.fixture()
def decisions():
    recorder = Decisions()
    plugins.get_plugin_manager().register(recorder, name="fastpath_decisions")
    yield recorder
    plugins.get_plugin_manager().unregister(name="fastpath_decisions")


def _without_ids(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "call_id": None}


@pytest.mark.parametrize("path", ["/v1/tasks/echo", "/v1/tasks/shout"])
def test_fast_path_and_fastapi_route_answer_alike(server, decisions, path):
    http_before = server.metric("sectorflow_http_requests_total", route="/v1/tasks/echo" if "echo" in path
                                else "/v1/tasks/shout", status="200")
    fast = server.client.post(path, headers={**auth("alice"), "X-Request-ID": "fast-1"}, json=BODY)
    slow = server.client.post(path + VIA_FASTAPI, headers={**auth("alice"), "X-Request-ID": "slow-1"}, json=BODY)
    assert fast.status_code == slow.status_code == 200, (fast.text, slow.text)
    assert _without_ids(fast.json()) == _without_ids(slow.json())
    assert [o["text"] for o in fast.json()["outputs"]] == ["FASTFAST", "PATH"]
    # the same headers, in the same order (the fast path sends them without building a Starlette Response)
    assert [(k, v) for k, v in fast.headers.multi_items() if k not in ("date", "x-request-id", "x-sectorflow-call-id")
            ] == [(k, v) for k, v in slow.headers.multi_items() if k not in ("date", "x-request-id",
                                                                              "x-sectorflow-call-id")]
    assert [k for k, _ in fast.headers.multi_items()] == [k for k, _ in slow.headers.multi_items()]
    for r, rid in ((fast, "fast-1"), (slow, "slow-1")):
        assert r.headers["x-request-id"] == rid
        assert r.headers["x-sectorflow-call-id"] == r.json()["call_id"]
        assert r.headers["x-sectorflow-batch-items"] == "2"
        assert r.headers["content-type"] == "application/json"
    # one access decision per request, whichever path answered it
    assert [(a, ok, rid) for a, ok, _, rid in decisions.seen] == [("alice", True, "fast-1"), ("alice", True, "slow-1")]
    assert decisions.seen[0][2] == decisions.seen[1][2] == f"POST {path}"
    http_after = server.metric("sectorflow_http_requests_total", route=path, status="200")
    assert http_after - http_before == 2


def test_refusals_are_answered_by_fastapi_once(server, decisions):
    """Whatever the fast path does not accept goes on to FastAPI, which answers and records it once."""
    bad = server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": ""}]})
    assert bad.status_code == 422
    assert bad.json()["details"][0]["field"] == "inputs.0.text"
    assert server.client.post("/v1/tasks/score", headers=auth("bob"), json={"inputs": [{"text": "x"}]}
                              ).status_code == 403
    assert server.client.post("/v1/tasks/echo", json=BODY).status_code == 401
    assert server.client.post("/v1/tasks/echo?lane=sideways", headers=auth("alice"), json=BODY).status_code == 422
    text = server.client.post("/v1/tasks/echo", headers={**auth("alice"), "Content-Type": "text/plain"},
                              content=b'{"inputs": [{"text": "x"}]}')
    assert text.status_code == 422
    assert [(actor, ok) for actor, ok, _, _ in decisions.seen] == [
        ("alice", True), ("bob", False), ("anonymous", False), ("alice", True), ("alice", True)]


def test_key_refusals_of_a_valid_body_are_answered_alike_by_both_paths(server, decisions):
    """The fast path answers 401/403 itself through the one access check (access.authorize): same status, body and
    WWW-Authenticate header as the FastAPI route, one access decision each."""
    cases = [({}, 401), ({"Authorization": "Bearer sf_no_such_key_0123456789abcdefghijklmnop"}, 401),
             (auth("bob"), 403)]
    for headers, status in cases:
        fast = server.client.post("/v1/tasks/score", headers=headers, json={"inputs": [{"text": "x"}]})
        slow = server.client.post("/v1/tasks/score" + VIA_FASTAPI, headers=headers, json={"inputs": [{"text": "x"}]})
        assert fast.status_code == slow.status_code == status
        assert fast.json() == slow.json()
        assert fast.headers.get("www-authenticate") == slow.headers.get("www-authenticate")
    assert [(actor, ok) for actor, ok, _, _ in decisions.seen] == [
        ("anonymous", False), ("anonymous", False), ("anonymous", False), ("anonymous", False), ("bob", False),
        ("bob", False)]
    assert {action for _, _, action, _ in decisions.seen} == {"POST /v1/tasks/score"}


def test_errors_after_validation_match_the_route(server):
    """Errors raised once the request is accepted (lane, pipeline refusal, full queue) give the same status and
    body on both paths."""
    for query in ("?lane=interactive", "?lane=interactive&trace=1"):
        r = server.client.post("/v1/tasks/echo" + query, headers=auth("batchy"), json=BODY)
        assert (r.status_code, r.json()["error"]) == (403, "Forbidden")
    answers = [server.client.post("/v1/tasks/echo" + q, headers=auth("alice"), json={"inputs": [{"text": "boom"}]})
               for q in ("", VIA_FASTAPI)]
    assert [a.status_code for a in answers] == [422, 422]
    assert answers[0].json() == answers[1].json()
    assert answers[0].json()["details"] == [{"row": 1, "field": "text", "reason": "refused"}]
    full = [server.client.post("/v1/tasks/ledger" + q, headers=auth("alice"),
                               json={"inputs": [{"account": "a", "amount": 1}, {"account": "b", "amount": 1}]})
            for q in ("", VIA_FASTAPI)]
    assert [f.status_code for f in full] == [503, 503]
    assert full[0].json() == full[1].json()
    assert full[0].headers["retry-after"] == full[1].headers["retry-after"]


def _run_proxy(headers: list[tuple[bytes, bytes]], client: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(client=scope["client"], scheme=scope["scheme"])

    scope = {"type": "http", "headers": headers, "client": (client, 5000), "scheme": "http"}
    asyncio.run(ProxyHeaders(app, "127.0.0.1")(scope, None, None))
    return seen


def test_proxy_headers_trusted_only_from_allowed_proxies():
    forwarded = [(b"x-forwarded-for", b"203.0.113.7, 10.0.0.2"), (b"x-forwarded-proto", b"https")]
    assert _run_proxy(forwarded, "127.0.0.1") == {"client": ("10.0.0.2", 0), "scheme": "https"}
    assert _run_proxy(forwarded, "192.0.2.1") == {"client": ("192.0.2.1", 5000), "scheme": "http"}
    assert _run_proxy([(b"host", b"x")], "127.0.0.1") == {"client": ("127.0.0.1", 5000), "scheme": "http"}
