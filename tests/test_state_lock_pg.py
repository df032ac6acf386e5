"""The state store's lock on PostgreSQL (``sectorflow.state_lock``): before 3 Dec 2026 only SQLite stores were
locked, so a ``sectorflow serve`` and a ``sectorflow run --state postgresql://...`` (or two runs) on the same
database both wrote it. Real second processes hold the lock; needs ``SECTORFLOW_TEST_POSTGRES_DSN``
(``bash scripts/start_postgres.sh``, started by .ci/run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from sectorflow import ConfigError, state_lock, state_lock_holder

DSN = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")


def _holder(what: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from sectorflow import state_lock
        with state_lock({DSN!r}, what={what!r}):
            print("locked", flush=True)
            sys.stdin.read()
        print("released", flush=True)
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "SECTORFLOW_AUDIT": "off"})
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_holder_is_refused_naming_the_first_and_gets_it_once_released():
    assert state_lock_holder(DSN) is None
    first = _holder("serve")
    try:
        assert state_lock_holder(DSN) == {"pid": first.pid, "doing": "serve"}
        with pytest.raises(ConfigError) as refused:
            with state_lock(DSN):
                pytest.fail("a second holder got the lock")
        assert f"another serve (pid {first.pid}) is using postgresql://***@" in str(refused.value)
        assert refused.value.details["pid"] == first.pid
    finally:
        out, _ = first.communicate("", timeout=30)
    assert out.strip() == "released"
    assert state_lock_holder(DSN) is None
    with state_lock(DSN, what="reset"):  # free again; the probe (a session of its own) names this process
        assert state_lock_holder(DSN) == {"pid": os.getpid(), "doing": "reset"}
    assert state_lock_holder(DSN) is None


def test_servers_share_the_store_and_a_run_is_refused_while_any_serves():
    first, second = _holder("serve"), _holder("serve")  # replicas on one store (docs/deployment.md)
    try:
        with pytest.raises(ConfigError, match=rf"another serve \(pid ({first.pid}|{second.pid})\) is using"):
            with state_lock(DSN, what="run"):
                pytest.fail("a run got the lock under two servers")
    finally:
        first.communicate("", timeout=30)
        second.communicate("", timeout=30)
    run = _holder("run")
    try:
        with pytest.raises(ConfigError, match=rf"another run \(pid {run.pid}\) is using"):
            with state_lock(DSN, what="serve"):
                pytest.fail("a server got the lock under a run")
    finally:
        run.communicate("", timeout=30)


def test_a_killed_holder_leaves_no_stale_lock():
    holder = _holder("run")
    assert state_lock_holder(DSN) == {"pid": holder.pid, "doing": "run"}
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    deadline = time.monotonic() + 30  # the server ends the session when it sees the closed socket
    while state_lock_holder(DSN) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    with state_lock(DSN):
        pass


def test_an_unreachable_server_is_a_config_error_naming_the_store_without_its_password():
    with pytest.raises(ConfigError, match=r"Cannot open the PostgreSQL state store postgresql://\*\*\*@127\.0\.0\.1:1/x"):
        with state_lock("postgresql://u:secret@127.0.0.1:1/x"):
            pass
