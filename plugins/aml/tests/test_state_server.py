"""``sectorflow serve`` with ``[server] state_store``: a real server process takes day 1, is stopped, a new server
process on the same store takes day 2; the answers equal those of one uninterrupted server."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sectorflow_aml.loaders import READERS

RUN = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"
SECRET = "sf_test_state_restart_0123456789abcdef"


BANKS = {"bank-a": "sf_test_state_bank_a_0123456789abcdef", "bank-b": "sf_test_state_bank_b_0123456789abcdef"}


def _start(config: Path) -> tuple[subprocess.Popen, str]:
    from sectorflow.serving import hash_key

    keys = [{"id": "k", "sha256": hash_key(SECRET), "scopes": ["task:*"]}]
    keys += [{"id": bank, "sha256": hash_key(secret), "scopes": ["task:aml"], "tenant": bank}
             for bank, secret in BANKS.items()]
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve,aml", "SECTORFLOW_AUDIT": "off",
           "SECTORFLOW_SERVE_KEYS": json.dumps(keys)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "sectorflow.cli", "serve", "--port", str(port), "--config",
                             str(config), "--log-level", "warning"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"sectorflow serve did not start: {proc.stdout.read()[-2000:]}")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)


def _post(url: str, calls: list[list[dict]], secret: str = SECRET) -> list[str]:
    out = []
    with httpx.Client(headers={"X-API-Key": secret}, timeout=120) as client:
        for inputs in calls:
            answer = client.post(f"{url}/v1/tasks/aml", json={"inputs": inputs})
            assert answer.status_code == 200, answer.text[:500]
            out.extend(json.dumps(r, sort_keys=True) for r in answer.json()["outputs"])
    return out


def _config(path: Path, store: Path) -> Path:
    path.write_text(f'serve = ["aml"]\n[server]\nstate_store = "{store}"\n[tasks.aml.options]\nmodel = false\n')
    return path


def test_a_restarted_server_continues_the_state_exactly(tmp_path):
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    txns = [t.model_dump(mode="json") for _, t in itertools.islice(READERS["amlsim"](RUN / "transactions.csv.gz"),
                                                                    8_000)]
    calls = [txns[i:i + 1000] for i in range(0, 8_000, 1000)]

    proc, url = _start(_config(tmp_path / "one.toml", tmp_path / "one.sqlite"))
    try:
        uninterrupted = _post(url, calls)
    finally:
        _stop(proc)

    config = _config(tmp_path / "two.toml", tmp_path / "two.sqlite")
    proc, url = _start(config)
    try:
        day1 = _post(url, calls[:5])
    finally:
        _stop(proc)
    proc, url = _start(config)  # a new process: the state comes from the store
    try:
        day2 = _post(url, calls[5:])
    finally:
        _stop(proc)
    assert day1 + day2 == uninterrupted
    proc, url = _start(_config(tmp_path / "fresh.toml", tmp_path / "fresh.sqlite"))
    try:  # a server without that state answers day 2 otherwise
        assert _post(url, calls[5:]) != day2
    finally:
        _stop(proc)
    assert sum('"flagged": true' in line for line in uninterrupted) > 5  # rule and model hits


def test_each_tenant_continues_its_own_state_after_a_restart(tmp_path):
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    txns = [t.model_dump(mode="json") for _, t in itertools.islice(READERS["amlsim"](RUN / "transactions.csv.gz"),
                                                                    6_000)]
    streams = {"bank-a": [txns[i:i + 1000] for i in range(0, 4_000, 1000)],  # the banks' own transactions, with
               "bank-b": [txns[i:i + 1000] for i in range(2_000, 6_000, 1000)]}  # ids in common
    proc, url = _start(_config(tmp_path / "one.toml", tmp_path / "one.sqlite"))
    try:
        alone = {bank: _post(url, calls, BANKS[bank]) for bank, calls in streams.items()}
    finally:
        _stop(proc)
    config = _config(tmp_path / "two.toml", tmp_path / "two.sqlite")
    proc, url = _start(config)
    try:
        first = {bank: _post(url, calls[:2], BANKS[bank]) for bank, calls in streams.items()}
    finally:
        _stop(proc)
    proc, url = _start(config)
    try:
        then = {bank: _post(url, calls[2:], BANKS[bank]) for bank, calls in streams.items()}
    finally:
        _stop(proc)
    for bank in BANKS:
        assert first[bank] + then[bank] == alone[bank], bank
    # bank-b's first call reuses ids bank-a had sent: not duplicates for bank-b (the states are apart)
    assert not any("input.duplicate_id" in line for line in alone["bank-b"])
    from sectorflow import open_state_store

    assert open_state_store(tmp_path / "two.sqlite").tenants("aml") == ["bank-a", "bank-b", "default"]
