"""Issue 22 over a real uvicorn server: ``sectorflow serve`` kept one AML transaction window for every API key, so
bank 2's 30,000 CNY cash deposit to its ``ACC-1`` came back with a 60,000 CNY large-value report draft listing bank
1's deposit to bank 1's ``ACC-1``. The state is now per tenant (the key's ``tenant``)."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")

import uvicorn  # noqa: E402
from sectorflow import Taskflow  # noqa: E402
from sectorflow.serving import create_app, hash_key, load_config  # noqa: E402

SECRETS = {name: f"sf_test_{name}_aml_secret_0123456789" for name in ("b1", "b1b", "b2", "b3", "ops")}
KEYS = [
    {"id": "bank1-teller", "sha256": hash_key(SECRETS["b1"]), "tenant": "bank-1", "scopes": ["task:aml"]},
    {"id": "bank1-batch", "sha256": hash_key(SECRETS["b1b"]), "tenant": "bank-1", "scopes": ["task:aml"]},
    {"id": "bank2-teller", "sha256": hash_key(SECRETS["b2"]), "tenant": "bank-2", "scopes": ["task:aml"]},
    {"id": "bank3-teller", "sha256": hash_key(SECRETS["b3"]), "tenant": "bank-3", "scopes": ["task:aml"]},
    {"id": "ops", "sha256": hash_key(SECRETS["ops"]), "scopes": ["admin"]},
]
TENANT_OF = {"b1": "bank-1", "b1b": "bank-1", "b2": "bank-2", "b3": "bank-3"}


def deposit(tid: str, amount: str, when: str, account: str = "ACC-1") -> dict[str, Any]:
    return {"transaction_id": tid, "timestamp": when, "sender_account": "CASH", "receiver_account": account,
            "amount": amount, "currency": "CNY", "channel": "cash_deposit"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A real uvicorn server of the aml task (its defaults: the shipped model) on a free port, three calls at a time
    (so different tenants' calls overlap)."""
    config = load_config(data={"serve": ["aml"], "keys": KEYS, "tasks": {"aml": {"instances": 3}},
                               "server": {"load_in_background": False}}, environ={})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    uv = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    else:
        raise RuntimeError("server did not become ready")
    yield url
    uv.should_exit = True
    thread.join(30)


def call(url: str, who: str, *txns: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    response = httpx.post(f"{url}/v1/tasks/aml", headers={"Authorization": f"Bearer {SECRETS[who]}"},
                          json={"inputs": list(txns)}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["outputs"], response.text


def reset(url: str, *tenants: str) -> None:
    for tenant in tenants:
        done = httpx.post(f"{url}/v1/admin/state/aml/reset", headers={"Authorization": f"Bearer {SECRETS['ops']}"},
                          json={"tenant": tenant}, timeout=60)
        assert done.status_code == 200, done.text


def test_the_reproduction_gives_neither_bank_a_large_value_report(server):
    reset(server, "bank-1", "bank-2")
    (first,), text1 = call(server, "b1", deposit("B1-DEP-0001", "30000.00", "2026-11-02T02:00:00Z"))
    (second,), text2 = call(server, "b2", deposit("B2-DEP-0001", "30000.00", "2026-11-02T02:05:00Z"))
    assert first["reports"] == [] and second["reports"] == []  # each bank has one 30,000 deposit: under 50,000
    # the answers' outputs (not the raw body: its call id is random hex, which may hold any digits)
    assert "B1-DEP" not in json.dumps(second) and "B2-DEP" not in json.dumps(first)
    assert "B1-DEP" not in text2 and "B2-DEP" not in text1 and "60000.0" not in json.dumps(second)
    # another key of bank 1: bank 1's window, where its second deposit of the day makes the 60,000 report
    (third,), text3 = call(server, "b1b", deposit("B1-DEP-0002", "30000.00", "2026-11-02T03:00:00Z"))
    (report,) = third["reports"]
    assert report["transaction_ids"] == ["B1-DEP-0001", "B1-DEP-0002"] and report["total_amount"] == "60000.00"
    assert report["kind"] == "large_value" and "B2-DEP" not in text3


def stream(tenant: str, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` transactions of one bank on one day: cash deposits near the structuring band and transfers among four
    accounts, so that same-day aggregates, reports and alerts depend on the bank's history."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        when = f"2026-11-03T{1 + i // 6:02d}:{(i % 6) * 10:02d}:00Z"
        if rng.random() < 0.5:
            out.append(deposit(f"{tenant}-{i}", f"{rng.choice([18000, 24500, 49000, 9000])}.00", when,
                               account=f"ACC-{rng.randint(1, 2)}"))
        else:
            out.append({"transaction_id": f"{tenant}-{i}", "timestamp": when,
                        "sender_account": f"ACC-{rng.randint(1, 4)}", "receiver_account": f"ACC-{rng.randint(5, 6)}",
                        "amount": f"{rng.randint(1, 9) * 100000}.00", "currency": "CNY", "channel": "transfer"})
    return out


def test_concurrent_banks_get_each_banks_serial_results(server):
    """Three banks' clients, one thread each, send 8 requests in turn, interleaved with the other banks': each bank
    gets exactly what its requests give one after another on a fresh Taskflow."""
    reset(server, "bank-1", "bank-2", "bank-3")
    who = {"b1": 1, "b2": 2, "b3": 3}
    requests = {name: [chunk for chunk in _chunks(stream(TENANT_OF[name], 16, seed))] for name, seed in who.items()}
    got: dict[str, list[Any]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(who))

    def client(name: str) -> None:
        try:
            start.wait(30)
            got[name] = [call(server, name, *chunk)[0] for chunk in requests[name]]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(name,)) for name in who]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    reports = 0
    for name, chunks in requests.items():
        fresh = Taskflow("aml")
        serial = [[json.loads(r.model_dump_json()) for r in fresh(chunk)] for chunk in chunks]
        assert got[name] == serial
        reports += sum(len(r["reports"]) for answer in serial for r in answer)
        others = [t for t in TENANT_OF.values() if t != TENANT_OF[name]]
        assert not any(other in json.dumps(got[name]) for other in others)
    assert reports > 0  # the streams do make report drafts, so a shared state would show


def _chunks(txns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [txns[i:i + 2] for i in range(0, len(txns), 2)]


def test_a_reset_and_a_reload_keep_the_other_banks_same_day_aggregate(server):
    reset(server, "bank-1", "bank-2")
    call(server, "b1", deposit("B1-R-1", "30000.00", "2026-11-04T02:00:00Z"))
    call(server, "b2", deposit("B2-R-1", "30000.00", "2026-11-04T02:00:00Z"))
    reload = httpx.post(f"{server}/v1/admin/models/aml/reload", headers={"Authorization": f"Bearer {SECRETS['ops']}"},
                        timeout=120)
    assert reload.status_code == 200, reload.text
    reset(server, "bank-1")
    (after1,), _ = call(server, "b1", deposit("B1-R-2", "30000.00", "2026-11-04T03:00:00Z"))
    assert after1["reports"] == []  # bank 1 forgot its first deposit
    (after2,), text = call(server, "b2", deposit("B2-R-2", "30000.00", "2026-11-04T03:00:00Z"))
    (report,) = after2["reports"]  # bank 2 kept its own, through bank 1's reset and the reload
    assert report["transaction_ids"] == ["B2-R-1", "B2-R-2"] and "B1-R" not in text


def test_a_transaction_without_an_fx_rate_is_a_4xx_naming_the_option_and_changes_nothing(server):
    """Issue 21 (fresh-user check): the rows `sectorflow run --on-error skip` now skips are a 4xx over HTTP (a call is
    all or nothing), never a 5xx, and the tenant's window is untouched."""
    reset(server, "bank-3")
    eur = {**deposit("B3-EUR-1", "9000.00", "2026-11-04T02:00:00Z"), "currency": "EUR"}
    response = httpx.post(f"{server}/v1/tasks/aml", headers={"Authorization": f"Bearer {SECRETS['b3']}"},
                          json={"inputs": [deposit("B3-CNY-1", "100.00", "2026-11-04T01:00:00Z"), eur]}, timeout=60)
    assert 400 <= response.status_code < 500, response.text
    assert "EUR" in response.text and "fx_rates" in response.text
    (again,), _ = call(server, "b3", deposit("B3-CNY-1", "100.00", "2026-11-04T01:00:00Z"))
    assert not any(r["code"] == "input.duplicate_id" for r in again["reasons"])  # the refused call added nothing
