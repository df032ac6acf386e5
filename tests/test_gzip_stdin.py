"""gzip data on standard input is named as such, with the fix, not "not UTF-8 text" (fresh-user pass)."""

from __future__ import annotations

import gzip
import io
import json
import sys

import pytest

from sectorflow import InvalidInputError, open_text
from sectorflow.cli import main

ROWS = '{"text": "hello"}\n{"text": "world"}\n'


@pytest.fixture
def run(echo_registry, capsys, monkeypatch):
    """``run(*args, stdin=bytes) -> (exit code, stdout, stderr)`` in-process, with the echo plugin."""
    monkeypatch.setenv("COLUMNS", "200")

    def call(*args: str, stdin: bytes) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin)), encoding="utf-8"))
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_gzip_on_standard_input_says_to_give_the_gz_path_or_decompress(run, fmt):
    content = ROWS if fmt == "jsonl" else "text\nhello\nworld\n"
    for mode in ("reject", "skip"):
        code, out, err = run("run", "echo", "-", "--format", fmt, "--on-error", mode,
                             stdin=gzip.compress(content.encode()))
        assert code == 2 and out == ""
        assert "Input standard input is gzip-compressed (it begins with gzip's bytes 1f 8b)" in err
        assert "give the .gz file's path instead of -" in err and "zcat FILE.gz | sectorflow run TASK -" in err
        assert "UTF-8" not in err
    # the same bytes decompressed are read as before
    code, out, err = run("run", "echo", "-", "--format", fmt, stdin=content.encode())
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["hello", "world"]


def test_open_text_of_standard_input_refuses_gzip_and_reads_text(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(b"a\n")))))
    with pytest.raises(InvalidInputError, match="gzip-compressed") as raised:
        with open_text("-"):
            pass
    assert raised.value.details == {"source": "-"}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"\x1fa\n"))))
    with open_text("-") as handle:  # one byte of the magic alone is text
        assert handle.read() == "\x1fa\n"
