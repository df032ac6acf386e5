"""Dynamic batching, atomic stateful calls, priority lanes and overload, against a real uvicorn server.

Assertions are on the batch-size histogram, headers, events and outputs, never on timings: the merge window
(``max_queue_delay_ms``) is set far longer than the requests need to arrive, and a full batch leaves at once.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from .conftest import GATE, PROCESSED, SCORE_GATE, SCORE_HOLD, auth


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(tasks={
        "score": {"max_batch_size": 8, "max_queue_delay_ms": 3000},
        "ledger": {"max_batch_size": 64, "max_queue_delay_ms": 1500},
        "echo": {"max_batch_size": 4, "max_queue_delay_ms": 0,
                 "interactive": {"max_queue_items": 2, "queue_timeout_ms": 20000},
                 "batch": {"max_queue_items": 100, "queue_timeout_ms": 1500}},
    })


def _post(url: str, task: str, inputs: list, key: str = "alice", lane: str | None = None) -> httpx.Response:
    params = {"lane": lane} if lane else None
    return httpx.post(f"{url}/v1/tasks/{task}", headers=auth(key), json={"inputs": inputs}, params=params,
                      timeout=30)


def test_concurrent_requests_merge_into_one_model_call(server, tasks):
    SCORE_GATE["entered"].clear()
    SCORE_GATE["release"].clear()
    count0 = server.metric("sectorflow_batch_size_count", task="score")
    sum0 = server.metric("sectorflow_batch_size_sum", task="score")
    with ThreadPoolExecutor(9) as pool:
        held = pool.submit(_post, server.url, "score", [{"features": [SCORE_HOLD, 0, 0, 0]}])
        assert SCORE_GATE["entered"].wait(20)  # the only worker is busy: the next requests queue together
        futures = [pool.submit(_post, server.url, "score", [{"features": [i, 0, 0, 0]}]) for i in range(8)]
        while server.metric("sectorflow_queue_items", task="score", lane="interactive") < 8:
            time.sleep(0.02)
        SCORE_GATE["release"].set()
        responses = [f.result() for f in futures]
        assert held.result().status_code == 200
    assert [r.status_code for r in responses] == [200] * 8
    assert [r.json()["outputs"][0]["score"] for r in responses] == pytest.approx([float(i) for i in range(8)])
    # the held call alone, then the eight queued requests in one call (max_batch_size 8 fills it at once)
    assert server.metric("sectorflow_batch_size_count", task="score") - count0 == 2
    assert server.metric("sectorflow_batch_size_sum", task="score") - sum0 == 9
    assert {r.headers["x-sectorflow-batch-items"] for r in responses} == {"8"}
    # every request of one merged call carries the call id of its single audit event, which names the key
    call_ids = {r.headers["x-sectorflow-call-id"] for r in responses}
    assert len(call_ids) == 1
    finished = [e for e in tasks.events if e.kind == "call_finished" and e.context.request_id in call_ids]
    assert sum(e.n_items for e in finished) == 8 and {e.context.actor for e in finished} == {"alice"}


def test_more_waiting_than_one_call_holds_is_split_evenly(make_server, tasks):
    """12 queued items with max_batch_size 8 run as two calls of 6, not 8 and 4: in a closed loop the items left
    over by full calls wait one call longer than the rest (200 clients, batches of 64: 8 of them wait a fourth
    call), which made the 200-client p99 about 4/3 of the median (docs/benchmarks/serving.md, Load figures)."""
    even = make_server(tasks={"score": {"max_batch_size": 8, "max_queue_delay_ms": 300}})
    SCORE_GATE["entered"].clear()
    SCORE_GATE["release"].clear()
    count0 = even.metric("sectorflow_batch_size_count", task="score")
    with ThreadPoolExecutor(13) as pool:
        held = pool.submit(_post, even.url, "score", [{"features": [SCORE_HOLD, 0, 0, 0]}])
        assert SCORE_GATE["entered"].wait(20)  # the only worker is busy: the next requests queue
        futures = [pool.submit(_post, even.url, "score", [{"features": [i, 0, 0, 0]}]) for i in range(12)]
        _wait_gauge(even, "score", "interactive", 12)
        SCORE_GATE["release"].set()
        responses = [f.result() for f in futures]
        assert held.result().status_code == 200
    assert [r.status_code for r in responses] == [200] * 12
    assert [r.json()["outputs"][0]["score"] for r in responses] == pytest.approx([float(i) for i in range(12)])
    assert [r.headers["x-sectorflow-batch-items"] for r in responses] == ["6"] * 12
    assert len({r.headers["x-sectorflow-call-id"] for r in responses}) == 2
    assert even.metric("sectorflow_batch_size_count", task="score") - count0 == 3  # the held call, then 6 + 6


def test_a_lone_request_does_not_wait_for_company(make_server):
    """With no other request of the task in flight, the merge window is skipped: a one-minute
    max_queue_delay_ms would otherwise outlast the client's 20-second timeout."""
    lone = make_server(tasks={"score": {"max_batch_size": 8, "max_queue_delay_ms": 60000}})
    for i in range(3):
        r = httpx.post(f"{lone.url}/v1/tasks/score", headers=auth("alice"),
                       json={"inputs": [{"features": [i, 0, 0, 0]}]}, timeout=20)
        assert r.status_code == 200 and r.headers["x-sectorflow-batch-items"] == "1"


def test_a_request_counts_as_many_items_and_is_never_split(server):
    count0 = server.metric("sectorflow_batch_size_count", task="score")
    r = _post(server.url, "score", [{"features": [1, 1, 1, 1]}] * 11)  # larger than max_batch_size=8
    assert r.status_code == 200 and len(r.json()["outputs"]) == 11
    assert r.headers["x-sectorflow-batch-items"] == "11"
    assert server.metric("sectorflow_batch_size_count", task="score") == count0 + 1
    assert server.metric("sectorflow_batch_size_bucket", task="score", le="8.0") < \
        server.metric("sectorflow_batch_size_bucket", task="score", le="16.0")


def test_stateful_task_keeps_every_accepted_request_and_none_refused(server, tasks):
    good = [[{"account": f"acc-{i}", "amount": 10.0}, {"account": f"acc-{i}", "amount": 1.0}] for i in range(5)]
    bad = [{"account": "acc-x", "amount": 1.0}, {"account": "frozen", "amount": 5.0}]
    first_event = len(tasks.events)  # the events of this test only (other modules' ledger calls came before)
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(_post, server.url, "ledger", inputs) for inputs in good[:3]]
        futures.append(pool.submit(_post, server.url, "ledger", bad))
        futures += [pool.submit(_post, server.url, "ledger", inputs) for inputs in good[3:]]
        responses = [f.result() for f in futures]
    statuses = [r.status_code for r in responses]
    assert statuses == [200, 200, 200, 422, 200, 200]
    assert responses[3].json()["details"] == [{"row": 2, "field": "account", "reason": "frozen"}]
    for r in responses[:3] + responses[4:]:
        assert [o["balance"] for o in r.json()["outputs"]] == [10.0, 11.0]
    # the ledger holds exactly the 10 accepted items: the next one is the 11th, and acc-x never moved
    probe = _post(server.url, "ledger", [{"account": "acc-x", "amount": 0.0}]).json()["outputs"][0]
    assert probe["seen"] == 11 and probe["balance"] == 0.0
    # a stateful task is never merged across requests (a merged call that failed and was run again request by
    # request would apply items twice): every ledger call holds exactly one request's items
    calls = [e for e in tasks.events[first_event:] if e.task == "ledger" and e.kind in ("call_started", "call_failed")]
    assert calls and max(e.n_items for e in calls) == 2
    failed = [e for e in calls if e.kind == "call_failed"]
    assert len(failed) == 1 and "frozen" in failed[0].error


def _wait_gauge(server, task: str, lane: str, value: float) -> None:
    deadline = time.monotonic() + 20
    while server.metric("sectorflow_queue_items", task=task, lane=lane) != value:
        assert time.monotonic() < deadline, "queue never reached the expected depth"
        time.sleep(0.02)


def test_interactive_lane_first_and_bounded_queues(server):
    GATE["entered"].clear()
    GATE["release"].clear()
    PROCESSED.clear()
    with ThreadPoolExecutor(8) as pool:
        blocker = pool.submit(_post, server.url, "echo", [{"text": "block"}])
        assert GATE["entered"].wait(20)  # the only worker is busy now
        slow = pool.submit(_post, server.url, "echo", [{"text": "b1"}], "batchy")
        _wait_gauge(server, "echo", "batch", 1)
        fast = pool.submit(_post, server.url, "echo", [{"text": "i1"}, {"text": "i2"}])
        _wait_gauge(server, "echo", "interactive", 2)
        full = _post(server.url, "echo", [{"text": "i3"}])  # the interactive lane holds 2 items at most
        assert full.status_code == 503 and int(full.headers["retry-after"]) >= 1
        assert full.json()["details"] == {"reason": "queue_full"}
        GATE["release"].set()
        assert [f.result().status_code for f in (blocker, slow, fast)] == [200, 200, 200]
    assert PROCESSED[:4] == ["block", "i1", "i2", "b1"]


def test_queue_timeout_is_503_and_the_request_never_runs(server):
    GATE["entered"].clear()
    GATE["release"].clear()
    PROCESSED.clear()
    with ThreadPoolExecutor(2) as pool:
        blocker = pool.submit(_post, server.url, "echo", [{"text": "block"}])
        assert GATE["entered"].wait(20)
        late = _post(server.url, "echo", [{"text": "late"}], "batchy")  # batch lane: 1.5 s at most in the queue
        GATE["release"].set()
        assert blocker.result().status_code == 200
    assert late.status_code == 503 and late.json()["details"] == {"reason": "queue_timeout"}
    assert "late" not in PROCESSED
    assert server.metric("sectorflow_rejections_total", task="echo", reason="queue_timeout") == 1
