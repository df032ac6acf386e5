"""``sectorflow run aml ... --output NAME.gz`` (``sectorflow.output_files``): gzip results that ``aml cases`` and
``aml evaluate --results`` read, and a ``--state`` run to a ``.gz`` that is killed after a checkpoint resumes to the
same bytes as an uninterrupted one (one gzip member per checkpoint). Before 2 Dec 2026 a ``.gz`` output held plain
JSON lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from sectorflow.cli_state import PARTIAL_SUFFIX
from sectorflow.state_keeper import StateKeeper

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
NODES = REPO / "samples" / "aml" / "nodes.csv.gz"


def test_gz_results_are_read_by_cases_and_evaluate(cli_main, capsys, tmp_path):
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    for out in (plain, packed):
        assert cli_main(["run", "aml", str(SAMPLE), "--format", "amlsim", "-o", str(out), "--no-progress"]) == 0
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    listings = []
    for out in (plain, packed):
        capsys.readouterr()
        assert cli_main(["aml", "cases", "--results", str(out)]) == 0
        cases = capsys.readouterr().out
        assert cli_main(["aml", "evaluate", "--results", str(out), "--labels", str(NODES), "--transactions",
                         str(SAMPLE), "--format", "amlsim", "--json"]) == 0
        listings.append((cases, capsys.readouterr().out))
    assert listings[0] == listings[1] and listings[0][0].count("\n") > 10 and '"average_precision"' in listings[0][1]


class _Killed(BaseException):
    """Stands in for SIGKILL after a checkpoint: nothing of the run's own clean-up runs for it."""


def test_a_state_run_to_gz_killed_after_a_checkpoint_resumes_to_the_same_bytes(cli_main, tmp_path, monkeypatch,
                                                                              capsys):
    args = ["run", "aml", str(SAMPLE), "--format", "amlsim", "-O", "model=false", "--checkpoint-rows", "1000",
            "--no-progress"]
    clean = tmp_path / "clean.jsonl.gz"
    assert cli_main([*args, "--state", str(tmp_path / "clean.db"), "-o", str(clean)]) == 0
    assert gzip.decompress(clean.read_bytes()).count(b"\n") == 3814

    record, calls = StateKeeper.record, []

    def record_then_die(self, *a, **k):
        record(self, *a, **k)
        calls.append(1)
        if len(calls) == 2:
            raise _Killed

    monkeypatch.setattr(StateKeeper, "record", record_then_die)
    out = tmp_path / "killed.jsonl.gz"
    with pytest.raises(_Killed):
        cli_main([*args, "--state", str(tmp_path / "killed.db"), "-o", str(out)])
    partial = tmp_path / f".{out.name}{PARTIAL_SUFFIX}"
    assert not out.exists() and gzip.decompress(partial.read_bytes()).count(b"\n") == 2000  # 2 members
    monkeypatch.setattr(StateKeeper, "record", record)
    assert cli_main([*args, "--state", str(tmp_path / "killed.db"), "-o", str(out)]) == 0
    assert "resuming the unfinished run" in capsys.readouterr().err
    assert out.read_bytes() == clean.read_bytes() and not partial.exists()
