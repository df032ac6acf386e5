"""Replicas behind one address (issue 29): two real server processes on loopback share their rate limits through
one real ``redis-server`` (``[server] rate_limit_storage = "redis://..."``), each reports its own metrics under its
``replica`` label (Prometheus sums them), and an unreachable Redis refuses with 503 rather than letting requests
through unlimited. Skips without ``redis-server`` (``.ci/run`` installs it) or the ``redis`` package.

With one PostgreSQL too (``SECTORFLOW_TEST_POSTGRES_DSN``, from ``scripts/start_postgres.sh``; skipped without it):
two replicas write one audit log and one AML state store there, each tenant's AML calls pinned to one replica and
the stateless calls spread over both (docs/deployment.md "Stateful tasks and replicas"); every answer equals a
single server's, also after the replica holding a tenant's AML state restarts."""

from __future__ import annotations

import getpass
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
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


def start_redis(folder: Path) -> tuple[str, subprocess.Popen]:
    """A real ``redis-server`` on a free loopback port, persisting nothing: ``(url, process)``."""
    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def pong() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    wait_for(pong, "redis-server", 20)
    return f"redis://127.0.0.1:{port}/0", proc


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen]]:
    url, proc = start_redis(tmp_path_factory.mktemp("redis"))
    yield url, proc
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


# --- two replicas with one Redis and one PostgreSQL against one single server (issue 29) ---------------------------

DSN = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
AMLSIM = HERE.parents[1].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200" / "transactions.csv.gz"
BANKS = {"bank-1": "a", "bank-2": "b", "bank-3": "c"}  # tenant -> its keys' suffix; bank-3 only on the single server
SHARED_SECRETS = {f"{kind}-{s}": f"sf_test_{kind}_{s}_replica_pg_0123456789" for s in BANKS.values()
                  for kind in ("aml", "echo")}
SHARED_KEYS = [  # one key per tenant for its stateful calls (docs/deployment.md), another for the stateless task
    *({"id": f"aml-{s}", "sha256": hash_key(SHARED_SECRETS[f"aml-{s}"]), "tenant": bank, "scopes": ["task:aml"]}
      for bank, s in BANKS.items()),
    *({"id": f"echo-{s}", "sha256": hash_key(SHARED_SECRETS[f"echo-{s}"]), "tenant": bank, "scopes": ["task:echo"],
       "rate_limit": "8/minute"} for bank, s in BANKS.items())]


@pytest.fixture()
def pg_database() -> Iterator[str]:
    """A fresh database on the test PostgreSQL server (``SECTORFLOW_TEST_POSTGRES_DSN``), dropped afterwards: the
    replicas' audit log and state store use their default schemas in it, apart from every other test's."""
    if not DSN:
        pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
    psycopg = pytest.importorskip("psycopg")
    name = f"sf_replicas_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{DSN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class Server:
    """One ``replica_server.py`` process with ``config`` and ``env``; its output goes to ``log``."""

    def __init__(self, config: Path, env: dict[str, str], log: Path) -> None:
        self.config, self.env, self.log = config, env, log
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> Server:
        port = free_port()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, str(HERE / "replica_server.py"), str(self.config), str(port)],
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        return self

    def ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.config.stem} exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.config.stem} did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


def call(url: str, step: tuple[str, str, list[dict]]) -> tuple[int, list[dict] | None]:
    """``(status, outputs)`` of one request; outputs only (the envelope's request id, times and versions differ per
    call and per process)."""
    task, key, inputs = step
    response = httpx.post(f"{url}/v1/tasks/{task}", headers={"Authorization": f"Bearer {SHARED_SECRETS[key]}"},
                          json={"inputs": inputs}, timeout=120)
    assert response.status_code in (200, 429), response.text[:500]
    return response.status_code, response.json()["outputs"] if response.status_code == 200 else None


def test_two_replicas_with_one_redis_and_one_postgresql_answer_as_one_server(tmp_path, pg_database):
    pytest.importorskip("sectorflow.compliance")
    aml = pytest.importorskip("sectorflow_aml.loaders")
    if not AMLSIM.is_file():
        pytest.skip(f"AMLSim sample not found at {AMLSIM}")
    from sectorflow.compliance import generate_key_file

    txns = [t.model_dump(mode="json") for _, t in itertools.islice(aml.READERS["amlsim"](AMLSIM), 6000)]
    # the banks' own streams, with transaction ids in common (their states must stay apart)
    streams = {"bank-1": [txns[i:i + 1000] for i in range(0, 4000, 1000)],
               "bank-2": [txns[i:i + 1000] for i in range(2000, 6000, 1000)]}
    redis, redis_proc = start_redis(tmp_path)
    key_file = tmp_path / "keys" / "audit-key.json"  # one signing key for the one log both replicas write
    generate_key_file(key_file)
    base = {**os.environ, "SECTORFLOW_HOME": str(tmp_path / "home")}
    for name in [n for n in base if n.startswith("SECTORFLOW_AUDIT")]:
        del base[name]
    replica_env = {**base, "SECTORFLOW_LOAD_PLUGINS": "builtin_observers,aml,audit", "SECTORFLOW_AUDIT_DB": pg_database,
                   "SECTORFLOW_AUDIT_KEY": str(key_file), "SECTORFLOW_AUDIT_ADMINS": getpass.getuser()}
    single_env = {**base, "SECTORFLOW_LOAD_PLUGINS": "builtin_observers,aml"}
    servers = []
    for name, env, server in (("single", single_env, {"freeze_gc": False}),
                              ("r1", replica_env, {"rate_limit_storage": redis, "replica": "r1", "freeze_gc": False,
                                                   "state_store": pg_database}),
                              ("r2", replica_env, {"rate_limit_storage": redis, "replica": "r2", "freeze_gc": False,
                                                   "state_store": pg_database})):
        config = tmp_path / f"{name}.json"
        config.write_text(json.dumps({"server": server, "serve": ["echo", "aml"], "keys": SHARED_KEYS,
                                      "tasks": {"aml": {"options": {"model": False}}}}), encoding="utf-8")
        servers.append(Server(config, env, tmp_path / f"{name}.log"))
    single, r1, r2 = servers
    try:
        for server in servers:  # started together: the three start-ups overlap
            server.start()
        for server in servers:
            server.ready()
        pinned = {"bank-1": r1, "bank-2": r2}  # each tenant's stateful calls reach one replica (sticky by key)

        def echo_step(s: str, n: int, at: int) -> tuple[tuple[str, str, list[dict]], Server]:
            return ("echo", f"echo-{s}", [{"text": f"{s}-{at}-{i}"} for i in range(n)]), (r1, r2)[at % 2]

        def aml_step(bank: str, i: int) -> tuple[tuple[str, str, list[dict]], Server]:
            return ("aml", f"aml-{BANKS[bank]}", streams[bank][i]), pinned[bank]

        # stateless calls alternate between the replicas; each key's 8 items a minute hold across both
        before = [aml_step("bank-1", 0), echo_step("a", 3, 0), aml_step("bank-2", 0), echo_step("b", 3, 1),
                  echo_step("a", 3, 1), aml_step("bank-1", 1), echo_step("b", 4, 2), aml_step("bank-2", 1),
                  echo_step("a", 3, 2), echo_step("b", 1, 3)]
        after = [aml_step("bank-1", 2), echo_step("a", 2, 3), aml_step("bank-2", 2), aml_step("bank-1", 3),
                 echo_step("a", 1, 4), echo_step("b", 1, 4), aml_step("bank-2", 3),
                 aml_step("bank-1", 1)]  # bank-1 sends its second call again (a client's retry after a timeout)
        got = [call(server.url, step) for step, server in before]
        # (1) limits shared: what one replica let through (a: 3 + 3 items, b: 3 + 4), the other refuses
        assert [status for (step, _), (status, _) in zip(before, got) if step[0] == "echo"] == [200, 200, 200, 200,
                                                                                               429, 200]
        r1.stop()  # the replica holding bank-1's AML state restarts: the state comes back from PostgreSQL
        r1.start().ready()
        got += [call(server.url, step) for step, server in after]
        # (2) + (4) every answer, statuses and outputs, equals the single server's for the same requests in order
        alone = [call(single.url, step) for step, _ in before + after]
        assert got == alone
        assert [status for status, _ in got].count(429) == 3 and got[len(before) + 1][0] == 200  # a's 7th and 8th items
        # the comparison can fail: the restored window knows the retried transactions (input.duplicate_id, not
        # counted again), where a tenant with no state before (bank-3) takes them as new; rules alone answer the
        # same either way on these transactions, so the retry is what shows a lost state
        retried = got[-1][1]
        assert got[-1][0] == 200 and all("input.duplicate_id" in {r["code"] for r in o["reasons"]} for o in retried)
        fresh = call(single.url, ("aml", "aml-c", streams["bank-1"][1]))
        assert fresh[0] == 200 and not any("input.duplicate_id" in {r["code"] for r in o["reasons"]} for o in fresh[1])
        assert sum(o["flagged"] for _, outputs in got if outputs for o in outputs if "flagged" in o) > 0  # rule hits
    finally:
        for server in servers:
            server.stop()
        redis_proc.terminate()
        redis_proc.wait(10)
    from sectorflow import open_state_store

    store = open_state_store(pg_database)
    try:
        assert store.tenants("aml") == ["bank-1", "bank-2", "default"]  # as one server writes it (test_state_server)
    finally:
        store.close()
    # (3) one audit log in PostgreSQL holds every call both replicas answered, and verifies
    cli = [sys.executable, "-m", "sectorflow.cli", "audit"]
    env = {**replica_env, "SECTORFLOW_LOAD_PLUGINS": "audit"}
    verified = subprocess.run([*cli, "verify"], env=env, capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    exported = subprocess.run([*cli, "export"], env=env, capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    finished = sorted((r["actor"], r["object"]["task"]) for r in records if r["event"] == "task.call_finished")
    answered = sorted((step[1], step[0]) for (step, _), (status, _) in zip(before + after, got) if status == 200)
    assert finished == answered
