"""Tenant isolation of a stateful task over a real server (issue 22): the ``ledger`` task's running balances are per
tenant (the key's ``tenant``), on the fast path and the FastAPI route alike; keys of one tenant share them, keys
without a tenant share the default tenant's; a tenant's reset and a reload touch no other tenant's."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sectorflow import CallContext, Taskflow, hookimpl, plugins
from sectorflow.serving import hash_key

from .conftest import KEYS, LEDGER_GATE, auth

MORE = {name: f"sf_test_{name}_secret_0123456789abcdef" for name in ("alice2", "carol", "dave", "ops1")}
TENANT_KEYS = [
    *KEYS,
    {"id": "alice-2", "sha256": hash_key(MORE["alice2"]), "tenant": "bank-1", "scopes": ["task:ledger"]},
    {"id": "carol", "sha256": hash_key(MORE["carol"]), "tenant": "bank-2", "scopes": ["task:ledger"]},
    {"id": "dave", "sha256": hash_key(MORE["dave"]), "tenant": "bank-3", "scopes": ["task:ledger"]},
    {"id": "ops-1", "sha256": hash_key(MORE["ops1"]), "tenant": "bank-1", "scopes": ["admin"]},
]
VIA_FASTAPI = "?trace=1"  # an unknown query parameter: past the fast path, answered by the FastAPI route


def key(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {MORE[name]}"} if name in MORE else auth(name)


@pytest.fixture(scope="module")
def server(make_server):
    # three calls of the task at a time, so that different tenants' calls really overlap in the Taskflow
    return make_server(keys=TENANT_KEYS, defaults={"max_queue_delay_ms": 0}, tasks={"ledger": {"instances": 3}})


def post(server, who: str, items: list[dict[str, Any]], query: str = "") -> list[dict[str, Any]]:
    response = server.client.post("/v1/tasks/ledger" + query, headers=key(who), json={"inputs": items})
    assert response.status_code == 200, response.text
    return [{k: o[k] for k in ("account", "balance", "seen")} for o in response.json()["outputs"]]


def reset(server, who: str, body: Any = None, task: str = "ledger"):
    return server.client.post(f"/v1/admin/state/{task}/reset", headers=key(who),
                              **({} if body is None else {"json": body}))


def test_each_tenant_keeps_its_own_balances_and_keys_of_one_tenant_share_them(server):
    server.client.post("/v1/admin/models/ledger/reload", headers=auth("admin"))  # a clean start for this test
    for tenant in ("bank-1", "bank-2", None):
        reset(server, "admin", {"tenant": tenant})
    assert post(server, "alice", [{"account": "acc-1", "amount": 10.0}]) == [
        {"account": "acc-1", "balance": 10.0, "seen": 1}]
    # bank 2's acc-1 is another account: bank 1's 10.0 does not appear, nor its count
    assert post(server, "carol", [{"account": "acc-1", "amount": 5.0}], VIA_FASTAPI) == [
        {"account": "acc-1", "balance": 5.0, "seen": 1}]
    # another key of bank 1, through the other path: bank 1's ledger
    assert post(server, "alice2", [{"account": "acc-1", "amount": 1.0}], VIA_FASTAPI) == [
        {"account": "acc-1", "balance": 11.0, "seen": 2}]
    # keys without a tenant (batchy, fuzz) share the default tenant's ledger, apart from every bank's
    assert post(server, "batchy", [{"account": "acc-1", "amount": 100.0}]) == [
        {"account": "acc-1", "balance": 100.0, "seen": 1}]
    assert post(server, "fuzz", [{"account": "acc-1", "amount": 1.0}]) == [
        {"account": "acc-1", "balance": 101.0, "seen": 2}]
    assert post(server, "carol", [{"account": "acc-1", "amount": 5.0}]) == [
        {"account": "acc-1", "balance": 10.0, "seen": 2}]


def test_concurrent_clients_of_three_tenants_get_each_tenants_serial_results(server, tasks):
    """Three tenants' clients (one thread each, 15 requests in turn, interleaved with the others) get exactly what
    each tenant's requests give when run one after another on a fresh Taskflow."""
    rng = random.Random(22)
    who = {"bank-1": "alice", "bank-2": "carol", "bank-3": "dave"}
    for tenant in who:
        reset(server, "admin", {"tenant": tenant})
    requests = {tenant: [[{"account": f"acc-{rng.randint(1, 3)}", "amount": float(rng.randint(-50, 50))}
                          for _ in range(rng.randint(1, 4))] for _ in range(15)] for tenant in who}
    got: dict[str, list[Any]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(who))

    def client(tenant: str) -> None:
        try:
            start.wait(30)
            got[tenant] = [post(server, who[tenant], items, VIA_FASTAPI if i % 3 == 0 else "")
                           for i, items in enumerate(requests[tenant])]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(tenant,)) for tenant in who]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for tenant, calls in requests.items():
        fresh = Taskflow("ledger")
        serial = [[{"account": r.account, "balance": r.balance, "seen": r.seen} for r in fresh(items)]
                  for items in calls]
        assert got[tenant] == serial
    # every ledger call of these clients ran as its key's tenant
    started = [e for e in tasks.events if e.task == "ledger" and e.kind == "call_started"
               and e.context.actor in ("alice", "carol", "dave")][-45:]
    assert {(e.context.actor, e.context.tenant) for e in started} == {
        ("alice", "bank-1"), ("carol", "bank-2"), ("dave", "bank-3")}


class Decisions:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, bool, str]] = []

    @hookimpl
    def sectorflow_access_decision(self, decision) -> None:
        if "/v1/admin/state/" in decision.action:
            self.seen.append((decision.actor, decision.tenant, decision.allowed, decision.reason or ""))


@pytest.fixture()
def decisions():
    recorder = Decisions()
    plugins.get_plugin_manager().register(recorder, name="tenant_decisions")
    yield recorder
    plugins.get_plugin_manager().unregister(name="tenant_decisions")


def test_a_reset_forgets_one_tenant_and_a_reload_keeps_every_tenants_own_state(server, tasks, decisions):
    for tenant in ("bank-1", "bank-2", None):
        reset(server, "admin", {"tenant": tenant})
    post(server, "alice", [{"account": "acc-1", "amount": 7.0}])
    post(server, "carol", [{"account": "acc-1", "amount": 3.0}, {"account": "acc-2", "amount": 1.0}])
    post(server, "batchy", [{"account": "acc-1", "amount": 50.0}])
    reload = server.client.post("/v1/admin/models/ledger/reload", headers=auth("admin"))
    assert reload.status_code == 200, reload.text
    assert post(server, "carol", [{"account": "acc-1", "amount": 1.0}]) == [
        {"account": "acc-1", "balance": 4.0, "seen": 3}]  # bank 2's state, carried over, bank 1's not mixed in
    # bank 1's own admin key resets bank 1 (the body may leave the tenant out)
    mine = reset(server, "ops1")
    assert mine.status_code == 200 and mine.json() == {"task": "ledger", "tenant": "bank-1", "had_state": True}
    assert post(server, "alice", [{"account": "acc-1", "amount": 1.0}]) == [
        {"account": "acc-1", "balance": 1.0, "seen": 1}]
    assert post(server, "carol", [{"account": "acc-2", "amount": 1.0}]) == [
        {"account": "acc-2", "balance": 2.0, "seen": 4}]  # untouched by bank 1's reset
    assert post(server, "batchy", [{"account": "acc-1", "amount": 1.0}]) == [
        {"account": "acc-1", "balance": 51.0, "seen": 2}]
    # ... and may not reset another tenant's, nor the default tenant's
    for body in ({"tenant": "bank-2"}, {"tenant": None}):
        refused = reset(server, "ops1", body)
        assert refused.status_code == 403 and "bank-1" in refused.json()["message"]
    assert post(server, "carol", [{"account": "acc-2", "amount": 0.0}])[0]["seen"] == 5
    # a key without a tenant names the tenant: bank 2, or null for the default tenant
    assert reset(server, "admin").status_code == 422
    assert reset(server, "admin", {}).status_code == 422
    assert reset(server, "admin", {"tenant": "bank-2"}).json() == {"task": "ledger", "tenant": "bank-2",
                                                                   "had_state": True}
    assert reset(server, "admin", {"tenant": None}).json()["had_state"] is True
    assert post(server, "carol", [{"account": "acc-2", "amount": 2.0}])[0] == {"account": "acc-2", "balance": 2.0,
                                                                                "seen": 1}
    assert post(server, "alice", [{"account": "acc-1", "amount": 1.0}])[0]["seen"] == 2  # bank 1 goes on
    events = [e for e in tasks.events if e.kind == "state_reset"][-3:]  # the audit trail: who reset whose state
    assert [(e.context.actor, e.context.tenant, e.details) for e in events] == [
        ("ops-1", "bank-1", {"tenant": "bank-1", "had_state": True}),
        ("admin", None, {"tenant": "bank-2", "had_state": True}), ("admin", None, {"tenant": None, "had_state": True})]
    denied = [d for d in decisions.seen if not d[2]]
    assert [(actor, tenant) for actor, tenant, _, _ in denied] == [("ops-1", "bank-1"), ("ops-1", "bank-1")]
    assert "may not reset the state of tenant 'bank-2'" in denied[0][3]


def test_reset_is_refused_for_a_stateless_or_unknown_task_and_without_the_admin_scope(server):
    stateless = reset(server, "admin", {"tenant": "bank-1"}, task="echo")
    assert stateless.status_code == 400 and "keeps no state" in stateless.json()["message"]
    assert reset(server, "admin", {"tenant": "bank-1"}, task="nope").status_code == 404
    assert reset(server, "alice").status_code == 403  # no admin scope
    assert reset(server, "admin", {"tenant": "bank-1", "extra": 1}).status_code == 422


def test_a_python_caller_without_context_keeps_the_default_tenant(tasks):
    tf = Taskflow("ledger")
    tf([{"account": "a", "amount": 1.0}])
    assert tf([{"account": "a", "amount": 2.0}], context=CallContext(tenant=None))[0].balance == 3.0
    assert tf([{"account": "a", "amount": 2.0}], context=CallContext(tenant="bank-1"))[0].balance == 2.0


def test_a_held_tenant_holds_one_worker_and_its_next_request_waits_its_turn(server):
    """With three workers, bank 1's held call occupies one; bank 1's next request is not taken by another worker
    (where it would only wait for bank 1's lock, or overtake the held one), so bank 2 is answered meanwhile."""
    for tenant in ("bank-1", "bank-2"):
        reset(server, "admin", {"tenant": tenant})
    LEDGER_GATE["entered"].clear()
    LEDGER_GATE["release"].clear()
    with ThreadPoolExecutor(4) as pool:
        held = pool.submit(post, server, "alice", [{"account": "hold", "amount": 1.0}])
        try:
            assert LEDGER_GATE["entered"].wait(20)
            queued = [pool.submit(post, server, "alice2", [{"account": "hold", "amount": float(i)}])
                      for i in (2, 3)]
            # bank 2 is answered while bank 1's call is held (it would wait for the gate if bank 1's queued
            # requests had taken the other workers)
            assert pool.submit(post, server, "carol", [{"account": "c", "amount": 4.0}]).result(20) == [
                {"account": "c", "balance": 4.0, "seen": 1}]
            assert not held.done() and not any(f.done() for f in queued)
        finally:
            LEDGER_GATE["release"].set()
        assert held.result(20) == [{"account": "hold", "balance": 1.0, "seen": 1}]
        assert sorted(f.result(20)[0]["seen"] for f in queued) == [2, 3]
