"""``sectorflow run ... --output NAME.gz`` writes gzip (``sectorflow.output_files``). Before 2 Dec 2026 it wrote
plain JSON lines under the ``.gz`` name (fresh-user report), which ``zcat`` and every ``.gz`` reader refused. A
``--state`` run to a ``.gz`` killed and resumed: ``plugins/aml/tests/test_gzip_results.py``."""

from __future__ import annotations

import gzip
import json

import pytest

from sectorflow import cli, open_text

TEXTS = [f"item {i} " + "x" * (i % 7) for i in range(50)]


@pytest.fixture()
def source(tmp_path, echo_registry):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    return path


def _run(*args: str) -> int:
    return cli.main(["run", *args, "--no-progress"])


def test_a_gz_output_is_gzip_with_the_plain_runs_lines(source, tmp_path, capsys):
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    assert _run("echo", str(source), "-o", str(plain)) == 0
    for mode in ("reject", "skip"):
        assert _run("echo", str(source), "-o", str(packed), "--on-error", mode) == 0
        data = packed.read_bytes()
        assert data[:2] == b"\x1f\x8b" and gzip.decompress(data) == plain.read_bytes()
        assert len(plain.read_bytes().splitlines()) == 50
    again = tmp_path / "again.jsonl.gz"
    assert _run("echo", str(source), "-o", str(again)) == 0
    assert again.read_bytes() == packed.read_bytes()  # no file name or time in the header: the same bytes
    with open_text(packed) as handle:  # what every results reader opens files with
        assert handle.read() == plain.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.jsonl.gz", "in.jsonl", "r.jsonl", "r.jsonl.gz"]


def test_a_failed_run_leaves_no_gz_and_keeps_an_earlier_one(source, tmp_path, capsys):
    packed = tmp_path / "r.jsonl.gz"
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"text": broken\n')
    assert _run("echo", str(tmp_path / "bad.jsonl"), "-o", str(packed)) == 2
    assert not packed.exists()
    assert _run("echo", str(source), "-o", str(packed)) == 0
    before = packed.read_bytes()
    assert _run("echo", str(tmp_path / "bad.jsonl"), "-o", str(packed)) == 2
    assert packed.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "bad.jsonl", "in.jsonl", "r.jsonl.gz"]
