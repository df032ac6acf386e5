"""``sectorflow serve`` with ``[server] state_store`` takes the store's lock, as ``sectorflow run --state`` does
(fresh-user report, 2 Dec 2026: a server and a ``run --state`` on the same store both wrote it). Real processes: a
server holding the store refuses a run on it naming the server's pid; a server started while a run holds the store
does not serve aml, naming the run's pid in ``/readyz``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from test_state_server import _start, _stop

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "aml" / "transactions.csv.gz"
ENV = {**os.environ, "SECTORFLOW_AUDIT": "off"}


def _config(path: Path, store: Path) -> Path:
    path.write_text(f'serve = ["aml"]\n[server]\nstate_store = "{store}"\n[tasks.aml.options]\nmodel = false\n')
    return path


def test_a_server_holds_the_store_and_a_run_on_it_is_refused(tmp_path):
    store = tmp_path / "state.sqlite"
    proc, url = _start(_config(tmp_path / "serve.toml", store))
    try:
        run = subprocess.run([sys.executable, "-m", "sectorflow.cli", "run", "aml", str(SAMPLE), "--format", "amlsim",
                              "-O", "model=false", "--state", str(store), "-o", str(tmp_path / "r.jsonl"),
                              "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
        assert run.returncode == 2, run.stderr
        assert f"another serve (pid {proc.pid}) is using {store}" in run.stderr
        assert not (tmp_path / "r.jsonl").exists()
    finally:
        _stop(proc)
    # the server gone, the lock is free again
    run = subprocess.run([sys.executable, "-m", "sectorflow.cli", "run", "aml", str(SAMPLE), "--format", "amlsim",
                          "-O", "model=false", "--state", str(store), "-o", str(tmp_path / "r.jsonl"),
                          "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_a_server_on_a_postgresql_store_refuses_a_run_on_it(tmp_path):
    dsn = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
    proc, url = _start(_config(tmp_path / "serve.toml", dsn))  # before 3 Dec 2026 PostgreSQL stores had no lock
    try:
        run = subprocess.run([sys.executable, "-m", "sectorflow.cli", "run", "aml", str(SAMPLE), "--format", "amlsim",
                              "-O", "model=false", "--state", dsn, "-o", str(tmp_path / "r.jsonl"), "--no-progress"],
                             env=ENV, capture_output=True, text=True, timeout=300)
        assert run.returncode == 2, run.stderr
        assert f"another serve (pid {proc.pid}) is using postgresql://" in run.stderr, run.stderr
        assert not (tmp_path / "r.jsonl").exists()
    finally:
        _stop(proc)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_server_started_while_a_run_holds_the_store_does_not_serve_aml(tmp_path, kind):
    """... and says so without the store URL's password (fresh-user report, 3 Dec 2026: the unauthenticated
    /readyz and the log showed a PostgreSQL URL's password in clear)."""
    import re
    import socket
    import time

    store, shown = tmp_path / "state.sqlite", None
    if kind == "postgresql":
        dsn = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
        if not dsn:
            pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
        store = re.sub(r"//([^@/:]*)@", r"//\1:S3cretPW@", dsn, count=1)  # trust authentication ignores it
        shown = re.sub(r"//[^@/]*@", "//***@", dsn)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from sectorflow import state_lock
        with state_lock({str(store)!r}):
            print("locked", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "sectorflow.cli", "serve", "--port", str(port), "--config",
                                 str(_config(tmp_path / "serve.toml", store)), "--log-level", "warning"],
                                env={**ENV, "SECTORFLOW_LOAD_PLUGINS": "serve,aml"}, stdout=subprocess.DEVNULL,
                                stderr=(tmp_path / "serve.log").open("w"))
        try:
            deadline, body = time.monotonic() + 120, None
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    answer = httpx.get(f"http://127.0.0.1:{port}/readyz")
                    if answer.json()["tasks"].get("aml") != "loading":
                        body = answer
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            assert body is not None and body.status_code == 503, body
            failed = body.json()["failed"]["aml"]
            shown = shown or store
            assert failed.startswith(f"ConfigError: [server] state_store {shown}: another run (pid {holder.pid}) "
                                     f"is using {shown}"), failed
        finally:
            _stop(proc)
        assert "S3cretPW" not in body.text and "S3cretPW" not in (tmp_path / "serve.log").read_text()
    finally:
        holder.communicate("", timeout=30)
