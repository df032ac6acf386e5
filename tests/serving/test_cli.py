"""``sectorflow serve-key`` and ``sectorflow serve`` as a user runs them (subprocesses, real port)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

CLI = [sys.executable, "-m", "sectorflow.cli"]


def test_serve_key_then_serve(tmp_path: Path) -> None:
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve"}  # no task plugins: an empty but working server
    made = subprocess.run([*CLI, "serve-key", "ops", "--scope", "task:*", "--scope", "metrics"], env=env,
                          capture_output=True, text=True, timeout=60, check=True).stdout
    secret = next(line.split()[-1] for line in made.splitlines() if line.startswith("# sf_"))
    config = tmp_path / "serve.toml"
    entry = "\n".join(line for line in made.splitlines() if not line.startswith("#"))
    config.write_text("[server]\nthreads = 1\n\n" + entry, encoding="utf-8")
    assert secret not in config.read_text()  # only the hash is stored

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--config", str(config), "--log-level", "warning"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "sectorflow serve did not start"
            time.sleep(0.1)
        key = {"X-API-Key": secret}
        assert httpx.get(f"{url}/v1/tasks", headers=key).json() == []
        assert httpx.get(f"{url}/v1/tasks").status_code == 401
        missing = httpx.post(f"{url}/v1/tasks/aml", headers=key, json={"inputs": [{}]})
        assert missing.status_code == 404 and missing.json()["details"]["known"] == []
        assert "sectorflow_http_requests_total" in httpx.get(f"{url}/metrics", headers=key).text
    finally:
        proc.terminate()
        proc.wait(30)


def test_sigterm_shuts_down_gracefully_with_a_paddle_model_loaded(tmp_path: Path) -> None:
    """SIGTERM (systemd, Kubernetes) must run uvicorn's shutdown: Paddle's own C++ handler, installed when a task
    first loads its model, used to abort the process with a "FatalError" dump and drop in-flight requests."""
    import importlib.util

    if importlib.util.find_spec("sectorflow_aml") is None:
        pytest.skip("needs a task with a Paddle model: the aml plugin")
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve,aml", "SECTORFLOW_AUDIT": "off",
           "SECTORFLOW_SERVE_KEYS": '[{"id": "k", "sha256": "' + "a" * 64 + '", "scopes": ["task:*"]}]'}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "sectorflow serve did not start"
            time.sleep(0.2)
        proc.terminate()
        output = proc.communicate(timeout=60)[0]
        # uvicorn re-raises the signal after its shutdown, so the exit status is -SIGTERM either way
        assert "Application shutdown complete" in output and "FatalError" not in output, output[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[[keys]]\nid = "x"\nsha256 = "not-a-hash"\n', encoding="utf-8")
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve"}
    done = subprocess.run([*CLI, "serve", "--config", str(config)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "keys.0.sha256" in done.stderr
