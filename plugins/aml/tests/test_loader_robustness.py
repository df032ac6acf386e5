"""Unusual input for ``sectorflow run aml``: an empty --task-path is refused on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from sectorflow.cli import main

HEADER = "transaction_id,timestamp,sender_account,receiver_account,amount"


# 7. sectorflow run --task-path "" ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_task_path_is_refused_on_the_command_line(tmp_path: Path, capsys, value: str) -> None:
    # an unset shell variable (--task-path "$MODEL_DIR") was Path(""), the current folder: ". is not a model bundle"
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\nt1,2024-01-01T00:00:00Z,A,B,10\n")
    capsys.readouterr()
    assert main(["run", "aml", str(path), "--task-path", value]) == 2
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert out == "" and f"--task-path {value!r} is {'empty' if not value else 'blank'}: give the path of a model " \
                         "bundle folder, or leave the option out" in err
    assert "is not a model bundle" not in err
