"""A request body over ``max_body_bytes``, against a real uvicorn server: the body is never read past the limit, the
key is checked first from the headers, and every refusal leaves its record.

Found in review: an oversized body was answered 413 before the key was looked at, and left no access decision and no
task event, so an auditable server had no trace of who sent it to which task (or that anyone without a key had).
"""

from __future__ import annotations

import json
import socket

import pytest
from sectorflow import hookimpl, plugins

from .conftest import auth

LIMIT = 2048
BIG = {"inputs": [{"text": "Patient Zhang " + "x" * 180}] * 16}  # about 3.4 kB


class Decisions:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, str, str, str]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        self.seen.append((decision.actor, decision.allowed, decision.resource, decision.action, decision.request_id))


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(server={"max_body_bytes": LIMIT}, defaults={"max_queue_delay_ms": 0})


@pytest.fixture()
def decisions():
    recorder = Decisions()
    plugins.get_plugin_manager().register(recorder, name="oversized_decisions")
    yield recorder
    plugins.get_plugin_manager().unregister(name="oversized_decisions")


def declared_only(server, path: str, headers: dict[str, str], length: int) -> tuple[int, dict, dict[str, str]]:
    """Send only the head of a POST declaring ``Content-Length: length`` and no body byte, and read the answer: a
    server that waited for the body would never answer (the socket's 20 s timeout fails the test)."""
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", "Content-Type": "application/json",
                                                   "Content-Length": str(length), **headers}.items())
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1"))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
        raw_head, _, body = data.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        got = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(body) < int(got["content-length"]):
            chunk = sock.recv(65536)
            assert chunk, body
            body += chunk
    return int(lines[0].split()[1]), json.loads(body), got


@pytest.mark.parametrize("who, status, actor, allowed", [
    (None, 401, "anonymous", False), ("sf_not_a_key", 401, "anonymous", False), ("bob", 403, "bob", False),
    ("alice", 413, "alice", True)])
def test_a_declared_oversized_body_is_answered_without_being_read_after_the_key_check(server, tasks, decisions,
                                                                                       who, status, actor, allowed):
    before = len(tasks.events)
    headers = {} if who is None else {"Authorization": f"Bearer {who}"} if who.startswith("sf_not") else auth(who)
    code, body, got = declared_only(server, "/v1/tasks/score", headers, 1_000_000_000)
    assert code == status, body
    assert body["error"] == {401: "Unauthorized", 403: "Forbidden", 413: "RequestTooLarge"}[status]
    if status == 413:
        assert body["message"] == (f"The request body exceeds {LIMIT} bytes (the server's [server] max_body_bytes): split "
                                   "the inputs into several requests (e.g. a few hundred items each), or ask the "
                                   "operator to raise max_body_bytes.")
    rid = got["x-request-id"]
    assert decisions.seen == [(actor, allowed, "score", "POST /v1/tasks/score", rid)]
    failed = [(e.kind, e.task, e.context.actor, e.context.request_id, e.n_items, e.error)
              for e in tasks.events[before:]]
    assert failed == ([("call_failed", "score", "alice", rid, 0,
                        f"RequestTooLarge: The request body exceeds {LIMIT} bytes (the server's [server] "
                        "max_body_bytes): split the inputs into several requests (e.g. a few hundred items each), "
                        "or ask the operator to raise max_body_bytes.")]
                      if status == 413 else [])


@pytest.mark.parametrize("path, task", [("/v1/tasks/echo", "echo"), ("/v1/tasks/shout", "echo")])
def test_a_streamed_oversized_body_is_refused_the_same_way(server, tasks, decisions, path, task):
    """Without Content-Length (chunked), the body is read up to the limit, then refused as above."""
    def chunks():
        yield json.dumps(BIG).encode()

    no_key = server.client.post(path, headers={"Content-Type": "application/json"}, content=chunks())
    assert no_key.status_code == 401, no_key.text
    before = len(tasks.events)
    r = server.client.post(path, headers={**auth("alice"), "Content-Type": "application/json"}, content=chunks())
    assert r.status_code == 413, r.text
    rid = r.headers["x-request-id"]
    assert [(a, ok, res, act) for a, ok, res, act, _ in decisions.seen] == [
        ("anonymous", False, task, f"POST {path}"), ("alice", True, task, f"POST {path}")]
    assert [(e.kind, e.task, e.context.actor, e.context.request_id) for e in tasks.events[before:]] == [
        ("call_failed", task, "alice", rid)]


@pytest.mark.parametrize("who, status, says", [
    (None, 401, "Unauthorized: No API key"), ("sf_not_a_key", 401, "Unauthorized"),
    ("bob", 403, "Forbidden"), ("alice", 413, "RequestTooLarge: The request body exceeds 2048 bytes")])
@pytest.mark.parametrize("path", ["/v2/models/score/infer", "/v2/models/score/versions/1/infer"])
def test_an_oversized_v2_infer_body_is_refused_after_the_key_check(server, tasks, decisions, who, status, says, path):
    """Found in review: ``/v2/models/NAME/infer`` answered an oversized body 413 before looking at the key, so an
    unauthenticated caller learnt the route takes requests and left no access decision (the native route: 401)."""
    before = len(tasks.events)
    headers = {} if who is None else {"Authorization": f"Bearer {who}"} if who.startswith("sf_not") else auth(who)
    code, body, got = declared_only(server, path, headers, 1_000_000_000)
    assert code == status and list(body) == ["error"] and body["error"].startswith(says), body
    if status == 401:
        assert got["www-authenticate"].startswith("Bearer")
    template = path.replace("/versions/1/", "/versions/{version}/")
    assert decisions.seen == [({None: "anonymous", "sf_not_a_key": "anonymous"}.get(who, who), status == 413,
                               "score", f"POST {template}", got["x-request-id"])]
    assert [(e.kind, e.task, e.context.actor, e.n_items) for e in tasks.events[before:]] == (
        [("call_failed", "score", "alice", 0)] if status == 413 else [])


def test_an_oversized_body_to_another_path_is_413_at_once(server, decisions):
    r = server.client.post("/v1/tasks/nope", headers=auth("alice"), json=BIG)
    assert (r.status_code, r.json()["error"]) == (413, "RequestTooLarge")
    code, body, _ = declared_only(server, "/v1/admin/models/score/reload", {}, 1_000_000_000)
    assert (code, body["error"]) == (413, "RequestTooLarge")
    assert decisions.seen == []


def test_a_body_within_the_limit_still_runs(server):
    small = {"inputs": [{"text": "x" * 100}] * 16}
    assert len(json.dumps(small)) < LIMIT
    r = server.client.post("/v1/tasks/echo", headers=auth("alice"), json=small)
    assert r.status_code == 200 and len(r.json()["outputs"]) == 16
