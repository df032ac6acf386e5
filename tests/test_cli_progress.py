"""``sectorflow run`` progress on standard error (issue 28): with stderr not a terminal, plain lines giving the items
done, the bytes of the file read of its size, the percent and the time left, every SECTORFLOW_PROGRESS_INTERVAL
seconds (0 here: after every chunk, so no timing is asserted); never on standard output; --no-progress: none."""

from __future__ import annotations

import json
import re

import pytest

from sectorflow.cli import main
from sectorflow.errors import ConfigError
from sectorflow.progress import bytes_read, interval

LINE = re.compile(r"progress: echo items\.jsonl: ([\d,]+) items, ([\d.]+ [kM]?B) of ([\d.]+ [kM]?B) \((\d+)%\), "
                  r"\d+:\d\d:\d\d elapsed, about \d+:\d\d:\d\d left")


@pytest.fixture
def items_file(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"text": f"item number {i}"}) + "\n" for i in range(5000)), encoding="utf-8")
    return path


def _run(capsys, *args):
    capsys.readouterr()
    code = main(list(args))
    return (code, *capsys.readouterr())


def test_plain_progress_lines_on_stderr_when_it_is_not_a_terminal(echo_registry, capsys, monkeypatch, items_file):
    monkeypatch.setenv("SECTORFLOW_PROGRESS_INTERVAL", "0")
    code, out, err = _run(capsys, "run", "echo", str(items_file), "--batch-size", "1024")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 5000 and all(json.loads(line)["meta"]["task"] == "echo" for line in lines)
    assert "progress" not in out
    shown = [LINE.fullmatch(line) for line in err.splitlines() if line.startswith("progress:")]
    assert len(shown) == 5 and all(shown), err  # one line per chunk of 1,024 items
    assert [int(m[1].replace(",", "")) for m in shown] == [1024, 2048, 3072, 4096, 5000]
    size = items_file.stat().st_size
    assert {m[3] for m in shown} == {f"{size / 1000:.1f} kB"}
    percents = [int(m[4]) for m in shown]
    assert percents == sorted(percents) and percents[-1] == 100 and 0 < percents[0] < 100


def test_no_progress_turns_it_off(echo_registry, capsys, monkeypatch, items_file):
    monkeypatch.setenv("SECTORFLOW_PROGRESS_INTERVAL", "0")
    code, out, err = _run(capsys, "run", "echo", str(items_file), "--no-progress")
    assert code == 0 and len(out.splitlines()) == 5000
    assert "progress:" not in err and "5000 item(s) processed" in err


def test_the_interval_defaults_to_five_seconds(monkeypatch):
    monkeypatch.delenv("SECTORFLOW_PROGRESS_INTERVAL", raising=False)
    assert interval() == 5.0
    monkeypatch.setenv("SECTORFLOW_PROGRESS_INTERVAL", "0.5")
    assert interval() == 0.5


def test_bytes_read_is_the_offset_of_the_open_file(tmp_path):
    path = tmp_path / "data.txt"
    path.write_bytes(b"x" * 10_000)
    assert bytes_read(path) is None
    with open(path, "rb", buffering=0) as handle:
        handle.read(1234)
        assert bytes_read(path) == 1234


@pytest.mark.parametrize("value", ["x", "-1", "nan"])
def test_a_bad_interval_is_a_config_error(monkeypatch, value):
    monkeypatch.setenv("SECTORFLOW_PROGRESS_INTERVAL", value)
    with pytest.raises(ConfigError, match=r"SECTORFLOW_PROGRESS_INTERVAL=.* is not a number of seconds >= 0"):
        interval()
