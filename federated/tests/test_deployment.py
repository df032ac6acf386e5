"""Flower's deployment engine on 127.0.0.1: a real SuperLink with TLS (certificates from `sectorflow federate
certs`) and SuperNode authentication, two registered banks, one unregistered node that is refused, one round of
`flwr run` with the app `sectorflow federate app` writes, recorded in a real audit log (SQLite).

One round only: each message starts a `flwr-clientapp` process that imports Paddle (stack-facts.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr", reason="the federated extra (flwr) is not installed")
pytest.importorskip("cryptography", reason="cryptography is not installed")

REPO = Path(__file__).resolve().parents[2]
AMLSIM = REPO.parent / "shared" / "data" / "amlsim_sample"
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.skipif(not (AMLSIM / "20K_cycle200").is_dir(), reason=f"AMLSim sample not at {AMLSIM}"),
              pytest.mark.skipif(not (BIN / "flower-superlink").exists(), reason="flower-superlink not installed")]


def _whole_log(streamed: str, env: dict[str, str], audit_db: Path, timeout: float = 300) -> str:
    """The run's whole log from ``flwr log RUN_ID federation --show``, once the ServerApp has recorded the run's end
    in the audit log. ``flwr run --stream`` returns 0 when its log stream ends, which can happen before the run does
    (the stream stopped after "Starting logstream" once in CI; ``flwr log`` also ends quietly on a gRPC deadline).
    Empty when the run id is not in ``streamed`` or the run does not finish within ``timeout`` seconds."""
    found = re.search(r"Successfully started run (\d+)", streamed)
    if not found:
        return ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:  # never create the file here: the ServerApp's audit sink makes it
            with sqlite3.connect(f"file:{audit_db}?mode=ro", uri=True) as db:
                if db.execute("SELECT 1 FROM records WHERE event = 'task.training_run_finished'").fetchone():
                    break
        except sqlite3.OperationalError:  # no file or no table yet
            pass
        time.sleep(2)
    text = ""
    for _ in range(5):  # the SuperLink may answer the first request late
        shown = subprocess.run([str(BIN / "flwr"), "log", found.group(1), "federation", "--show"], env=env,
                               capture_output=True, text=True, timeout=120)
        text = shown.stdout + shown.stderr
        if "Run finished" in text:
            break
        time.sleep(2)
    return "\n" + text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"exited early: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"port {port} never opened: {log.read_text()[-2000:]}")


class Daemons:
    """Processes this test starts, each in its own session so that it and its children (SuperExec, app
    processes) are stopped together by process-group id."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder, self.procs = env, folder, []

    def start(self, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = self.folder / f"{name}.log"
        proc = subprocess.Popen([str(BIN / args[0]), *args[1:]], env=self.env, stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc, log

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:  # children the leader left behind in its group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_one_round_over_tls_with_node_authentication_refusing_an_unregistered_node(tmp_path):
    from sectorflow.compliance.keys import generate_key_file
    from sectorflow.federated import parse_config
    from sectorflow.federated.certs import make_all
    from sectorflow.federated.deploy import write_app
    from sectorflow_aml.trainable import load_bank

    certs = tmp_path / "certs"
    make_all(certs, ["127.0.0.1"], ["bank_a", "bank_b", "intruder"])
    cache = tmp_path / "cache"
    bank = {"bank_a": 0, "bank_b": 1}
    for b in bank.values():  # each bank's features, replayed once here (the app processes read the cache)
        load_bank(AMLSIM, b, 2, max_transactions=1500, cache_dir=cache)
    generate_key_file(tmp_path / "audit.key")
    port = _free_port()
    home = tmp_path / "flwr"
    home.mkdir()
    (home / "config.toml").write_text(f'[superlink]\ndefault = "federation"\n\n[superlink.federation]\n'
                                      f'address = "127.0.0.1:{port}"\nroot-certificates = "{certs / "ca.crt"}"\n')
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "FLWR_HOME": str(home),
           "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "OMP_NUM_THREADS": "1",
           "SECTORFLOW_AUDIT_DB": str(tmp_path / "audit.db"), "SECTORFLOW_AUDIT_KEY": str(tmp_path / "audit.key")}
    env.pop("SECTORFLOW_LOAD_PLUGINS", None)
    daemons = Daemons(env, tmp_path)
    try:
        link, link_log = daemons.start(
            "superlink", "flower-superlink", "--ssl-ca-certfile", str(certs / "ca.crt"), "--ssl-certfile",
            str(certs / "server.pem"), "--ssl-keyfile", str(certs / "server.key"), "--enable-supernode-auth",
            "--disable-runtime-dependency-installation", "--host", "127.0.0.1", "--port", str(port),
            "--database", str(tmp_path / "superlink.db"))
        _wait_port(port, link, link_log)
        for name in bank:
            registered = subprocess.run([str(BIN / "flwr"), "supernode", "register",
                                         str(certs / "supernodes" / f"{name}.pub"), "federation"],
                                        env=env, capture_output=True, text=True, timeout=120)
            assert registered.returncode == 0, registered.stdout + registered.stderr

        def supernode(name: str, b: int, *extra: str) -> tuple[subprocess.Popen, Path]:
            return daemons.start(name, "flower-supernode", "--root-certificates", str(certs / "ca.crt"),
                                 "--superlink", f"127.0.0.1:{port}", "--auth-supernode-private-key",
                                 str(certs / "supernodes" / name), "--port", str(_free_port()), "--node-config",
                                 f'data="{AMLSIM}" bank={b} num-banks=2 max-transactions=1500 cache-dir="{cache}"',
                                 *extra)

        for name, b in bank.items():
            supernode(name, b)
        intruder, intruder_log = supernode("intruder", 1, "--max-retries", "1", "--max-wait-time", "30")
        assert intruder.wait(timeout=120) != 0  # its key was never registered: the SuperLink refuses it
        assert "Failed to activate SuperNode" in intruder_log.read_text()

        cfg = parse_config({"task": "aml", "model": "risk_mlp", "rounds": 1,
                            "strategy": {"fraction_evaluate": 0.0, "min_available_clients": 2}})
        app = write_app(cfg, tmp_path / "app")
        run = subprocess.run([str(BIN / "flwr"), "run", str(app), "federation", "--stream"], env=env,
                             capture_output=True, text=True, timeout=400)
        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-3000:]
        if "Run finished" not in output:  # the log stream can end early (seen once in CI): ask for the whole log
            output += _whole_log(output, env, tmp_path / "audit.db")
        assert "aggregate_fit: received 2 results and 0 failures" in output, output[-3000:]
        assert "Run finished 1 round(s)" in output, output[-3000:]
    finally:
        daemons.stop()

    with sqlite3.connect(tmp_path / "audit.db") as db:
        rows = [(event, json.loads(body)) for event, body in
                db.execute("SELECT event, body FROM records ORDER BY seq") if event.startswith("task.training_")]
    assert [event for event, _ in rows] == ["task.training_run_started", "task.training_round",
                                            "task.training_run_finished"]
    round_record = rows[1][1]
    assert round_record["channel"] == "federated" and round_record["object"]["task"] == "aml"
    assert len(round_record["details"]["participants"]) == 2 and round_record["details"]["failures"] == 0
    assert round_record["object"]["weights_sha256"] == rows[2][1]["object"]["weights_sha256"]
    assert len(round_record["object"]["weights_sha256"]) == 64
