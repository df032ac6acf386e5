"""The verifier's parallel scan and the batched append (issue 23, item 8): the scan split across worker processes
reports exactly what the in-process scan reports, on clean and on tampered logs (a gap at a range boundary
included); ``append_batch`` commits once per checkpoint and its records verify. Speed figures are in
``benchmarks/audit_bench.py``, not here."""

from __future__ import annotations

from typing import Any

import pytest

from audit_support import drop_guards, raw_sql
from sectorflow.compliance import verify_log, verify_scan
from sectorflow.compliance.records import make_object


def entries(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"event": "task.call_finished", "actor": f"user{i % 7}", "obj": make_object(task="aml"),
             "request_id": f"r{i}", "n_items": 1, "inputs": [{"account": f"62{i:08d}"}]} for i in range(start, start + n)]


@pytest.fixture
def big(make_log: Any) -> Any:
    lg = make_log(checkpoint_every=64, sqlite_synchronous="FULL")
    seqs = lg.append_batch(entries(1000))
    assert seqs == list(range(1000))
    assert [cp.size for cp in lg.store.checkpoints()] == [*range(64, 1000, 64), 1000]  # one per run of 64
    return lg


def same(lg: Any, keyfile: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    one = verify_log(lg.store, keyfile.trusted_keys(), workers=1)
    monkeypatch.setattr(verify_scan, "PARALLEL_FROM", 0)
    two = verify_log(lg.store, keyfile.trusted_keys(), workers=3)
    monkeypatch.undo()
    assert two.to_json() == one.to_json()
    return one


def test_parallel_scan_matches_on_a_clean_log(big: Any, keyfile: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    report = same(big, keyfile, monkeypatch)
    assert report.ok and report.size == 1000 and report.checkpoints == 16


def test_the_scan_workers_are_fresh_processes_not_forks_of_this_one(big: Any, keyfile: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker forked from this process would see the scan patched here and fail; a fresh worker (``forkserver``
    or ``spawn``) imports its own. A fork of a process with other threads (a server's, Paddle's, Ray's: a parallel
    test run's worker after the federated tests) can block forever on a lock one of them held at the fork."""
    expected = verify_log(big.store, keyfile.trusted_keys(), workers=1).to_json()

    def forked(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker forked from the verifying process ran its patched scan")

    monkeypatch.setattr(verify_scan, "PARALLEL_FROM", 0)
    monkeypatch.setattr(verify_scan, "scan_range", forked)
    assert verify_scan.worker_context().get_start_method() in ("forkserver", "spawn")
    assert verify_log(big.store, keyfile.trusted_keys(), workers=3).to_json() == expected


@pytest.mark.parametrize("tamper, first_bad", [
    ("UPDATE records SET event = 'x.y' WHERE seq = 700", 700),
    ("DELETE FROM records WHERE seq >= 380 AND seq < 390", 380),  # the end of the first of three ranges (0..383)
    ("DELETE FROM records WHERE seq = 384", 384),  # the first row of the second range
    ("UPDATE checkpoints SET time = '2020-01-01T00:00:00.000000Z' WHERE size = 512", None),
])
def test_parallel_scan_matches_on_a_tampered_log(big: Any, keyfile: Any, monkeypatch: pytest.MonkeyPatch,
                                                  tamper: str, first_bad: int | None) -> None:
    drop_guards(big.store)
    raw_sql(big.store, tamper)
    report = same(big, keyfile, monkeypatch)
    assert not report.ok
    if first_bad is not None:
        assert report.first_bad_seq == first_bad
    else:
        assert any("bad signature" in p for p in report.problems)


def test_a_batch_that_fails_keeps_earlier_runs_and_says_so(make_log: Any, keyfile: Any) -> None:
    lg = make_log(checkpoint_every=10)
    bad = entries(25)
    bad[15]["outcome"] = "maybe"
    with pytest.raises(ValueError, match="outcome"):
        lg.append_batch(bad)
    assert lg.store.size() == 10 and verify_log(lg.store, keyfile.trusted_keys()).ok
