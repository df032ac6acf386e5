"""``sectorflow serve-key`` and ``sectorflow serve`` as a user runs them (subprocesses, real port)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
import tomllib
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
    proc, port = _start_serve(env, wait_s=90)
    try:
        proc.terminate()
        output = proc.communicate(timeout=60)[0]
        # uvicorn re-raises the signal after its shutdown; sectorflow serve then exits with status 143
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


def test_sigterm_lets_the_audit_log_sign_its_last_records(tmp_path: Path) -> None:
    """uvicorn raises SIGTERM again after its graceful shutdown; with the default action the process died without
    running atexit handlers, so the audit log never signed its last checkpoint: every graceful stop left the records
    since the last checkpoint unsigned (fresh-user check: 19 records after three requests). `sectorflow serve` now
    turns SIGTERM into a normal exit (status 143)."""
    compliance = pytest.importorskip("sectorflow.compliance")
    key_file = tmp_path / "audit.key"
    compliance.generate_key_file(key_file)
    db = tmp_path / "audit.sqlite"
    secret = "sf_test_sigterm_secret_0123456789abcdef"
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve,audit", "SECTORFLOW_AUDIT_DB": str(db),
           "SECTORFLOW_AUDIT_KEY": str(key_file),
           "SECTORFLOW_SERVE_KEYS": '[{"id": "k", "sha256": "' + compliance_hash(secret) + '", "scopes": ["task:*"]}]'}
    proc, port = _start_serve(env, "--log-level", "warning", wait_s=60)
    try:
        for _ in range(3):
            assert httpx.get(f"http://127.0.0.1:{port}/v1/tasks", headers={"X-API-Key": secret}).status_code == 200
        proc.terminate()
        output = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 143, output[-2000:]
    store = compliance.open_store(str(db))
    try:
        decisions = [r for r in store.iter_records() if r.event == "access.decision"]
        last = store.last_checkpoint()
        assert len(decisions) == 3 and last is not None and last.size == store.size(), (store.size(), last)
    finally:
        store.close()


def compliance_hash(secret: str) -> str:
    from sectorflow.serving import hash_key

    return hash_key(secret)


def _start_serve(env: dict[str, str], *args: str, wait_s: float) -> tuple[subprocess.Popen, int]:
    """``sectorflow serve`` on a free loopback port, once its /readyz answers 200 (within ``wait_s`` seconds)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                    return proc, port
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "sectorflow serve did not start"
            time.sleep(0.1)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise


def test_serve_key_names_the_tenant_and_warns_without_one() -> None:
    env = {**os.environ, "SECTORFLOW_LOAD_PLUGINS": "serve"}
    with_tenant = subprocess.run([*CLI, "serve-key", "bank1-app", "--scope", "task:aml", "--tenant", "bank-1"],
                                 env=env, capture_output=True, text=True, timeout=60, check=True)
    entry = tomllib.loads("\n".join(line for line in with_tenant.stdout.splitlines() if not line.startswith("#")))
    (key,) = entry["keys"]
    assert (key["id"], key["tenant"], key["scopes"]) == ("bank1-app", "bank-1", ["task:aml"])
    assert "no --tenant" not in with_tenant.stderr
    without = subprocess.run([*CLI, "serve-key", "app", "--scope", "task:aml"], env=env, capture_output=True,
                             text=True, timeout=60, check=True)
    assert "tenant" not in without.stdout
    # the note names the key and says how to make it with a tenant; never the secret (no task plugin is loaded
    # here, so the stateful tasks are not named)
    secret = next(line.split()[-1] for line in without.stdout.splitlines() if line.startswith("# sf_"))
    assert without.stderr.strip() == (
        "# no --tenant: key 'app' shares the state of stateful tasks with every other key without a tenant (the "
        "default tenant's state); if it is another institution's key, make it with a tenant: sectorflow serve-key "
        "app --scope task:aml --tenant T")
    assert secret not in without.stderr


def test_serve_key_without_a_tenant_names_the_stateful_tasks_it_reaches(tasks) -> None:
    from sectorflow.serving.plugin import _no_tenant_note

    assert _no_tenant_note("teller-app", ["task:ledger"]) == (
        "# no --tenant: key 'teller-app' shares the state of stateful task 'ledger' with every other key without a "
        "tenant (the default tenant's state); if it is another institution's key, make it with a tenant: "
        "sectorflow serve-key teller-app --scope task:ledger --tenant T")
    assert "stateful task 'ledger'" in _no_tenant_note("ops", ["task:*", "metrics"])
    assert "--scope 'task:*' --scope metrics --tenant T" in _no_tenant_note("ops", ["task:*", "metrics"])
    assert _no_tenant_note("echoer", ["task:echo"]) == (
        "# no --tenant: key 'echoer' calls no stateful task (the stateful ones: 'ledger'), so it shares no state "
        "now; a tenant only matters if its scopes grow to one")


def test_the_start_up_warning_names_the_task_and_each_key_never_its_hash(tasks, caplog) -> None:
    import logging

    from sectorflow.serving import create_app, load_config

    def key(name: str, tenant: str | None, scopes: list[str]) -> dict:
        return {"id": name, "sha256": hashlib.sha256(name.encode()).hexdigest(), "tenant": tenant, "scopes": scopes}

    keys = [key("teller-app", None, ["task:ledger"]), key("batch-loader", None, ["task:*"]),
            key("bank3", "bank-3", ["task:ledger"]), key("echoer", None, ["task:echo"])]
    config = load_config(data={"keys": keys, "serve": ["ledger", "echo"]}, environ={})
    with caplog.at_level(logging.WARNING, logger="sectorflow.serving"):
        create_app(config)
    (message,) = [r.getMessage() for r in caplog.records if "no tenant" in r.getMessage()]
    assert message == (
        "stateful task 'ledger': API keys 'teller-app', 'batch-loader' have no tenant, so they share one state, the "
        "default tenant's (windows, same-day totals, cases); if they are different institutions, set tenant = "
        "\"...\" in each of their [[keys]] entries (id = \"teller-app\", id = \"batch-loader\"), or make keys with "
        "`sectorflow serve-key ID --tenant T`")
    assert not any(k["sha256"] in caplog.text for k in keys)


def test_tenantless_keys_of_a_stateful_task_are_named_at_start(tasks) -> None:
    from sectorflow import plugins
    from sectorflow.serving import load_config
    from sectorflow.serving.app import shared_state_keys

    def key(name: str, tenant: str | None, scopes: list[str]) -> dict:
        return {"id": name, "sha256": hashlib.sha256(name.encode()).hexdigest(), "tenant": tenant, "scopes": scopes}

    specs = {name: plugins.get_task(name) for name in ("ledger", "echo")}  # the test tasks: ledger is stateful
    assert specs["ledger"].stateful and not specs["echo"].stateful
    keys = [key("a", None, ["task:ledger"]), key("b", None, ["task:*"]), key("c", "bank-3", ["task:ledger"]),
            key("d", None, ["metrics"]), key("e", None, ["task:echo"])]
    assert shared_state_keys(load_config(data={"keys": keys}, environ={}), specs) == {"ledger": ["a", "b"]}
    keys[1]["tenant"] = "bank-2"
    assert shared_state_keys(load_config(data={"keys": keys}, environ={}), specs) == {}
