"""kill -9 of a process in the middle of appends loses no acknowledged record, and the log still verifies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sectorflow.compliance import AuditConfig, AuditLog, open_store, verify_log

WRITER = Path(__file__).with_name("crash_writer.py")


@pytest.mark.parametrize("mode", ["durable", "alternate"])
def test_kill_9_mid_append_loses_no_acknowledged_record(store_url: tuple[str, str], keyfile: Any, mode: str) -> None:
    """``alternate``: every other record committed with ``durable=False`` (a call's start): a killed process keeps
    it too (only a power loss before the next durable commit could lose it)."""
    url, schema = store_url
    acknowledged: list[int] = []
    for round_ in range(2):  # kill, restart on the same store, kill again
        child = subprocess.Popen([sys.executable, str(WRITER), url, schema, str(keyfile.path),
                                  *(["alternate"] if mode == "alternate" else [])],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        target = len(acknowledged) + 60 + 23 * round_
        while len(acknowledged) < target:
            line = child.stdout.readline()
            assert line, f"writer exited early with {child.wait()}"
            acknowledged.append(int(line))
        os.kill(child.pid, signal.SIGKILL)  # while it is appending the next records
        child.wait()
        assert child.returncode == -signal.SIGKILL
        child.stdout.close()
    store = open_store(url, pg_schema=schema)
    try:
        stored = {r.seq: json.loads(r.body) for r in store.iter_records()}
        assert set(acknowledged) <= set(stored), "an acknowledged record was lost"
        assert acknowledged == sorted(acknowledged) and len(set(acknowledged)) == len(acknowledged)
        assert sorted(stored) == list(range(len(stored)))
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok, report.problems
        # reopening signs the tail the killed writer could not
        lg = AuditLog(store, keyfile, AuditConfig(pg_schema=schema))
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok and report.unsigned_tail == 0 and report.size == len(stored)
        assert lg.store.size() == len(stored)
    finally:
        store.close()


def test_two_processes_appending_at_once_share_one_gap_free_log(store_url: tuple[str, str], keyfile: Any) -> None:
    url, schema = store_url
    AuditLog(open_store(url, pg_schema=schema), keyfile, AuditConfig(pg_schema=schema)).store.close()  # create
    children = [subprocess.Popen([sys.executable, str(WRITER), url, schema, str(keyfile.path)],
                                 stdout=subprocess.PIPE, text=True) for _ in range(2)]
    acks: list[list[int]] = [[], []]
    for child, mine in zip(children, acks):
        assert child.stdout is not None
        while len(mine) < 40:
            line = child.stdout.readline()
            assert line, f"writer exited early with {child.wait()}"
            mine.append(int(line))
    for child in children:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert not set(acks[0]) & set(acks[1])  # no sequence number handed out twice
    store = open_store(url, pg_schema=schema)
    try:
        assert set(acks[0]) | set(acks[1]) <= {r.seq for r in store.iter_records()}
        report = verify_log(store, keyfile.trusted_keys())
        assert report.ok, report.problems
    finally:
        store.close()
