"""Replicas behind one address (issue 29): two real server processes on loopback share their rate limits through
one real ``redis-server`` (``[server] rate_limit_storage = "redis://..."``), each reports its own metrics under its
``replica`` label (Prometheus sums them), and an unreachable Redis refuses with 503 rather than letting requests
through unlimited. Skips without ``redis-server`` (``.ci/run`` installs it) or the ``redis`` package."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sectorflow.serving import hash_key

pytest.importorskip("redis")
REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (apt-get install redis-server)")
HERE = Path(__file__).resolve().parent
SECRETS = {name: f"sf_test_{name}_replica_secret_0123456789" for name in ("alice", "bob", "ops")}
KEYS = [
    {"id": "alice", "sha256": hash_key(SECRETS["alice"]), "tenant": "bank-1", "scopes": ["task:echo"],
     "rate_limit": "6/minute"},
    {"id": "bob", "sha256": hash_key(SECRETS["bob"]), "tenant": "bank-2", "scopes": ["task:echo"]},
    {"id": "ops", "sha256": hash_key(SECRETS["ops"]), "scopes": ["metrics"]},
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (httpx.TransportError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def pong() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    wait_for(pong, "redis-server", 20)
    yield f"redis://127.0.0.1:{port}/0", proc
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def replicas(redis_url, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    folder = tmp_path_factory.mktemp("replicas")
    procs, urls = [], []
    for name in ("r1", "r2"):
        config = folder / f"{name}.json"
        config.write_text(json.dumps({
            "server": {"rate_limit_storage": redis_url[0], "replica": name, "freeze_gc": False},
            "serve": ["echo"], "keys": KEYS, "tenants": {"bank-2": "4/minute"}}), encoding="utf-8")
        port = free_port()
        procs.append(subprocess.Popen([sys.executable, str(HERE / "replica_server.py"), str(config), str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        for url in urls:
            wait_for(lambda u=url: httpx.get(f"{u}/readyz", timeout=2).status_code == 200, url)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


def echo(url: str, who: str, n: int, v2: bool = False) -> httpx.Response:
    headers = {"Authorization": f"Bearer {SECRETS[who]}"}
    items = [{"text": f"{who}-{i}"} for i in range(n)]
    if v2:
        body = {"inputs": [{"name": "items", "datatype": "BYTES", "shape": [n], "data": [json.dumps(i) for i in items]}]}
        return httpx.post(f"{url}/v2/models/echo/infer", headers=headers, json=body, timeout=30)
    return httpx.post(f"{url}/v1/tasks/echo", headers=headers, json={"inputs": items}, timeout=30)


def samples(url: str, name: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {SECRETS['ops']}"}, timeout=10).text
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, _, value = line.rpartition(" ")
            found[labels[len(name):]] = float(value)
    return found


def test_two_replicas_share_key_and_tenant_limits_through_redis(replicas):
    first, second = replicas
    # alice's key: 6 items a minute, whichever replica counts them
    assert echo(first, "alice", 4).status_code == 200
    assert echo(second, "alice", 2, v2=True).status_code == 200
    refused = echo(second, "alice", 1)
    assert refused.status_code == 429 and "over its limit '6/minute'" in refused.json()["message"]
    assert echo(first, "alice", 1, v2=True).status_code == 429
    # bank 2's tenant limit (4 a minute) is its own: bank 1's exhausted window does not touch it
    assert echo(second, "bob", 3).status_code == 200
    assert echo(first, "bob", 1).status_code == 200
    assert echo(first, "bob", 1).status_code == 429 and echo(second, "bob", 1).status_code == 429
    # each replica counts only what it answered, under its own replica label: Prometheus sums the two
    ok = {url: sum(v for k, v in samples(url, "sectorflow_requests_total").items() if 'status="200"' in k)
          for url in replicas}
    assert ok == {first: 2.0, second: 2.0}
    assert list(samples(first, "sectorflow_replica_info")) == ['{replica="r1"}']
    assert list(samples(second, "sectorflow_replica_info")) == ['{replica="r2"}']


def test_an_unreachable_redis_refuses_with_503(replicas, redis_url):
    redis_url[1].terminate()
    redis_url[1].wait(10)
    refused = echo(replicas[0], "bob", 1)
    assert refused.status_code == 503 and refused.json()["details"] == {"reason": "rate_limit_storage"}
    v2 = echo(replicas[1], "bob", 1, v2=True)
    assert v2.status_code == 503 and "rate-limit storage cannot be reached" in v2.json()["error"]
