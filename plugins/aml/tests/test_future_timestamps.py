"""A timestamp far ahead of the wall clock is refused at validation, before it reaches the per-account window.

Found by a fresh-user test: ``sectorflow serve`` took a transaction dated 2099; every real transaction of that tenant
was then ``input.out_of_order`` until an admin reset the tenant's state. The limit is one day ahead of the clock
(``SECTORFLOW_AML_MAX_FUTURE_DAYS``: days, or ``off``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from sectorflow import ConfigError, InvalidInputError, Taskflow
from sectorflow_aml.schema import MAX_FUTURE_ENV, reload_max_future_days

SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))


def tx(tid: str, when: str, sender: str = "A", receiver: str = "B") -> dict:
    return {"transaction_id": tid, "timestamp": when, "sender_account": sender, "receiver_account": receiver,
            "amount": "100", "currency": "CNY"}


def ahead(days: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).isoformat()


def test_a_2099_timestamp_is_invalid_input_and_leaves_the_window_as_it_was():
    tf = Taskflow("aml", model=False)
    with pytest.raises(InvalidInputError) as caught:
        tf([tx("t1", "2026-11-30T10:00:00Z"), tx("t2", "2099-01-01T00:00:00Z")])
    (problem,) = caught.value.details
    assert (problem["row"], problem["field"]) == (2, "timestamp")
    assert "lies in the future: more than 1 day(s) ahead of the clock" in problem["reason"]
    assert MAX_FUTURE_ENV in problem["reason"]
    (later,) = tf([tx("t3", "2026-11-30T11:00:00Z")])
    assert "input.out_of_order" not in [r.code for r in later.reasons]


@pytest.fixture()
def limit(monkeypatch):
    """Sets the variable and reads it again (as a process started with it would); the default afterwards."""
    def set_to(value: str) -> None:
        monkeypatch.setenv(MAX_FUTURE_ENV, value)
        reload_max_future_days()

    yield set_to
    monkeypatch.delenv(MAX_FUTURE_ENV, raising=False)
    reload_max_future_days()


def test_within_a_day_ahead_is_taken_and_the_limit_is_configurable(limit):
    tf = Taskflow("aml", model=False)
    assert len(tf([tx("soon", ahead(0.5))])) == 1  # another time zone's today, clock skew
    with pytest.raises(InvalidInputError, match="in the future"):
        tf([tx("later", ahead(3))])
    assert len(tf([tx("soon2", ahead(0.9))])) == 1  # still within the day
    limit("7")
    assert len(Taskflow("aml", model=False)([tx("later", ahead(3))])) == 1
    limit("off")
    assert len(Taskflow("aml", model=False)([tx("far", "2099-01-01T00:00:00Z")])) == 1
    limit("soon")
    with pytest.raises(ConfigError, match=f"{MAX_FUTURE_ENV}='soon': give a number of days"):
        Taskflow("aml", model=False)([tx("x", "2026-11-30T10:00:00Z")])


def test_the_typed_amlsim_reader_sends_a_future_step_to_validation(tmp_path):
    """The AMLSim fast path (rows built without pydantic) applies the same limit: the row is refused, and
    ``--on-error skip`` skips it."""
    future_step = (datetime.now(timezone.utc).date() - datetime(2017, 1, 1).date()).days + 30
    source = tmp_path / "transactions.csv"
    source.write_text(f"sourceNodeId,targetNodeId,value,time\n1,2,100,3\n2,3,50,{future_step}\n3,1,20,4\n")
    out = tmp_path / "out.jsonl"
    done = subprocess.run([SECTORFLOW, "run", "aml", str(source), "--format", "amlsim", "-O", "model=false",
                           "--on-error", "skip", "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "2 item(s) processed, 1 row(s) skipped" in done.stderr
    assert "in the future" in done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["transaction_id"] for r in rows] == ["amlsim-1", "amlsim-3"]
    assert all("input.out_of_order" not in [x["code"] for x in r["reasons"]] for r in rows)


def test_serve_answers_422_for_a_2099_timestamp_and_the_tenant_stays_usable(tmp_path):
    from sectorflow.serving import hash_key

    secret = "sf_test_future_0123456789abcdef0123"
    config = tmp_path / "serve.toml"
    config.write_text(f'serve = ["aml"]\n[server]\nstate_store = "{tmp_path / "state.sqlite"}"\n'
                      "[tasks.aml.options]\nmodel = false\n")
    keys = [{"id": "k", "sha256": hash_key(secret), "scopes": ["task:aml"], "tenant": "bank-a"}]
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve,aml", "SECTORFLOW_AUDIT": "off",
           "SECTORFLOW_SERVE_KEYS": json.dumps(keys)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "sectorflow.cli", "serve", "--port", str(port), "--config",
                             str(config), "--log-level", "warning"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "sectorflow serve did not start"
            time.sleep(0.2)
        with httpx.Client(headers={"X-API-Key": secret}, timeout=120) as client:
            refused = client.post(f"{url}/v1/tasks/aml", json={"inputs": [tx("f1", "2099-01-01T00:00:00Z")]})
            assert refused.status_code == 422, refused.text
            body = refused.json()
            assert body["error"] == "InvalidInputError" and "in the future" in json.dumps(body["details"])
            taken = client.post(f"{url}/v1/tasks/aml", json={"inputs": [tx("r1", "2026-11-30T10:00:00Z")]})
            assert taken.status_code == 200, taken.text
            (result,) = taken.json()["outputs"]
            assert "input.out_of_order" not in [r["code"] for r in result["reasons"]]
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
