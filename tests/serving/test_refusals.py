"""Bodies that cannot be parsed, wrong methods and paths, and an audit log that refuses an access decision: every one
is a 4xx (or 503) saying what to fix, never a 500, and the key is checked before the body is complained about.

Fresh-user findings (a real ``sectorflow serve`` hit with curl): invalid UTF-8, a 5,000-digit number and 100,000
nested brackets were answered 400 "There was an error parsing the body"; an empty body 422 with the field "" and
"Field required"; a malformed body 422 even without a key, leaving no access decision and no ``call_failed`` event;
an access-decision observer that raised (the audit log, when "access" is regulated and its store fails) made the
task fast path answer 500.
"""

from __future__ import annotations

import pytest
from sectorflow import SectorflowError, hookimpl, plugins

from .conftest import auth

JSON = {"Content-Type": "application/json"}


class Decisions:
    def __init__(self, refuse: bool = False) -> None:
        self.seen: list[tuple[str, bool, str]] = []
        self.refuse = refuse

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        if not decision.action.startswith("POST /v1/"):
            return
        self.seen.append((decision.actor, decision.allowed, decision.request_id))
        if self.refuse:
            raise StoreDown("the audit store is down: record not written")


class StoreDown(SectorflowError):
    http_status = 503


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(defaults={"max_queue_delay_ms": 0})


@pytest.fixture()
def decisions():
    recorder = Decisions()
    plugins.get_plugin_manager().register(recorder, name="refusal_decisions")
    yield recorder
    plugins.get_plugin_manager().unregister(name="refusal_decisions")


@pytest.mark.parametrize("content, says", [
    (b'{"inputs": [{"text": "\xff\xfe"}]}', "not valid UTF-8 (byte 0xff at byte offset 22)"),
    (b'{"inputs": [{"text": "x", "repeat": ' + b"9" * 5000 + b"}]}", "number too long to parse"),
    (b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests arrays or objects too deeply"),
])
def test_a_body_json_loads_cannot_parse_is_422_saying_why(server, tasks, decisions, content, says):
    before = len(tasks.events)
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), **JSON}, content=content)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidInputError"
    assert [d["field"] for d in body["details"]] == ["body"]
    assert says in body["details"][0]["reason"] and '{"inputs": [...]}' in body["details"][0]["reason"]
    assert "set_int_max_str_digits" not in body["message"]
    # the key was checked and the refusal left the same event as any other invalid request
    assert decisions.seen == [("alice", True, r.headers["x-request-id"])]
    failed = [e for e in tasks.events[before:] if e.kind == "call_failed"]
    assert [(e.task, e.context.actor, e.context.request_id) for e in failed] == [
        ("echo", "alice", r.headers["x-request-id"])]


def test_an_empty_body_says_it_is_empty(server):
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), **JSON})
    assert r.status_code == 422
    assert r.json()["details"] == [{"field": "body", "row": None, "reason":
                                    'The request body is empty; send a JSON object (for a task: {"inputs": [...]}) '
                                    "with Content-Type: application/json"}]


def test_a_json_body_with_another_content_type_names_the_type_sent(server):
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), "Content-Type": "text/plain"},
                           content=b'{"inputs": [{"text": "x"}]}')
    assert r.status_code == 422
    assert r.json()["details"][0]["reason"].endswith(
        "sent with Content-Type: application/json (this one came with Content-Type: text/plain)")
    # +json media types are JSON
    ok = server.client.post("/v1/tasks/echo", headers={**auth("alice"), "Content-Type": "application/vnd.x+json"},
                            content=b'{"inputs": [{"text": "x"}]}')
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("who, status, actor", [(None, 401, "anonymous"), ("bob", 403, "bob"),
                                                ("alice", 422, "alice")])
def test_the_key_is_checked_before_a_malformed_body(server, tasks, decisions, who, status, actor):
    before = len(tasks.events)
    headers = {**JSON, **(auth(who) if who else {})}
    r = server.client.post("/v1/tasks/score", headers=headers, content=b'{"inputs": [')
    assert r.status_code == status, r.text
    assert decisions.seen == [(actor, status == 422, r.headers["x-request-id"])]
    failed = [e.context.actor for e in tasks.events[before:] if e.kind == "call_failed"]
    assert failed == (["alice"] if status == 422 else [])


def test_reload_with_a_malformed_body_checks_the_admin_scope_first(server):
    r = server.client.post("/v1/admin/models/score/reload", headers={**auth("alice"), **JSON}, content=b"{")
    assert (r.status_code, r.json()["error"]) == (403, "Forbidden")
    r = server.client.post("/v1/admin/models/score/reload", headers={**auth("admin"), **JSON}, content=b"{")
    assert r.status_code == 422 and r.json()["details"][0]["field"] == "body"


def test_wrong_method_and_unknown_path_say_what_to_use(server):
    r = server.client.get("/v1/tasks/echo", headers=auth("alice"))
    assert r.status_code == 405
    assert r.json()["message"] == "Method GET is not allowed on /v1/tasks/echo; use POST (see /docs)."
    r = server.client.get("/v9/tasks", headers=auth("alice"))
    assert r.status_code == 404
    assert r.json()["message"].startswith("No route /v9/tasks: tasks are at POST /v1/tasks/NAME")
    # under /v2, the Open Inference Protocol's namespace, the protocol's error body names its routes
    r = server.client.get("/v2/tasks", headers=auth("alice"))
    assert r.status_code == 404 and list(r.json()) == ["error"]
    assert r.json()["error"].startswith("No route GET /v2/tasks: the protocol's routes are GET /v2, ")


@pytest.mark.parametrize("query", ["", "?trace=1"])  # the fast path, and the FastAPI route
def test_an_access_decision_the_audit_log_cannot_write_is_503_not_500(server, tasks, query):
    refusing = Decisions(refuse=True)
    plugins.get_plugin_manager().register(refusing, name="refusing_decisions")
    try:
        before = len(tasks.events)
        r = server.client.post("/v1/tasks/echo" + query, headers=auth("alice"), json={"inputs": [{"text": "no"}]})
    finally:
        plugins.get_plugin_manager().unregister(name="refusing_decisions")
    assert r.status_code == 503, r.text
    assert r.json() == {"error": "StoreDown", "message": "the audit store is down: record not written",
                        "details": None}
    assert refusing.seen == [("alice", True, r.headers["x-request-id"])]
    assert [e for e in tasks.events[before:] if e.kind.startswith("call_")] == []  # nothing ran


def test_a_lone_surrogate_escape_says_what_is_wrong_with_the_string(server):
    r = server.client.post("/v1/tasks/echo", headers={**auth("alice"), **JSON},
                           content=b'{"inputs": [{"text": "ok"}, {"text": "\\ud83d"}]}')
    assert r.status_code == 422
    assert r.json()["details"] == [{"field": "inputs.1.text", "row": None, "reason":
                                    "Not valid Unicode: the string holds a lone UTF-16 surrogate escape "
                                    "(\\ud800-\\udfff without its pair); send the character itself or both halves "
                                    "of its pair"}]
    pair = server.client.post("/v1/tasks/echo", headers={**auth("alice"), **JSON},
                              content=b'{"inputs": [{"text": "\\ud83d\\ude00"}]}')
    assert pair.status_code == 200 and pair.json()["outputs"][0]["text"] == "\U0001F600"


def test_observers_that_do_not_block_run_on_the_event_loop(server, decisions):
    """Without an observer that declares it blocks (no audit log here), decisions are recorded in line, as before:
    a thread hop per request costs about 85 us of CPU, a sixth of a request's."""
    import threading

    from sectorflow.serving.access import observers_block

    seen: list[str] = []

    class Where:
        @hookimpl
        def sectorflow_access_decision(self, **kwargs: object) -> None:
            seen.append(threading.current_thread().name)

    plugins.get_plugin_manager().register(Where(), name="where")
    try:
        assert not observers_block("sectorflow_access_decision")
        assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "a"}]}
                                  ).status_code == 200
    finally:
        plugins.get_plugin_manager().unregister(name="where")
    assert seen == [server.thread.name]


def test_two_different_keys_in_one_request_are_refused(server, decisions):
    """Fresh-user finding: with 'Authorization: Bearer A' and 'X-API-Key: B', the server silently used B (a
    client's header overrode the identity a proxy had put in Authorization); with B invalid and A valid it refused,
    the other way round it accepted. Two different keys are now refused; the same key in both headers is fine."""
    alice, bob = auth("alice")["Authorization"][7:], auth("bob")["Authorization"][7:]
    for headers in ({"Authorization": f"Bearer {bob}", "X-API-Key": alice},
                    {"Authorization": f"Bearer {alice}", "X-API-Key": "sf_wrong"}):
        r = server.client.post("/v1/tasks/echo", headers=headers, json={"inputs": [{"text": "a"}]})
        assert r.status_code == 401
        assert r.json()["message"] == "Two different API keys (Authorization and X-API-Key): send one of them."
    same = server.client.post("/v1/tasks/echo", headers={"Authorization": f"Bearer {alice}", "X-API-Key": alice},
                              json={"inputs": [{"text": "a"}]})
    assert same.status_code == 200
    assert [(actor, ok) for actor, ok, _ in decisions.seen] == [("anonymous", False)] * 2 + [("alice", True)]
    r = server.client.post("/v1/tasks/echo", json={"inputs": [{"text": "a"}]})
    assert r.json()["message"] == "No API key: send 'Authorization: Bearer <key>' or 'X-API-Key'."
