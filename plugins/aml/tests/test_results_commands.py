"""``sectorflow aml cases|alerts|reports`` refuse what is not a ``sectorflow run aml`` results file (another task's
results, text that is not JSON, an empty file) with a message and a non-zero exit, instead of listing nothing, which
reads as "no cases"; a real listing ends with its count on standard error."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sectorflow_aml.cli import register
from sectorflow_aml.schema import TransactionAssessment


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


@pytest.mark.parametrize("command", ["cases", "alerts", "reports"])
@pytest.mark.parametrize("content, says", [
    ('{"meta": {"task": "customer_service"}, "intent": "card_arrival", "risk_score": 0.1}\n',
     "results of task 'customer_service'"),
    ('{"text": "hello"}\n', "not an AML result"),
    ("transaction_id,amount\nt1,100\n", "not JSON"),
    ("", "holds no results"),
    ("\n\n", "holds no results"),
])
def test_what_is_not_aml_results_is_refused(cli_main, capsys, tmp_path: Path, command: str, content: str,
                                            says: str) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(content, encoding="utf-8")
    assert cli_main(["aml", command, "--results", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    said = " ".join(out.err.split())  # the CLI wraps long messages
    assert says in said and "sectorflow run aml" in said and "Traceback" not in said


def test_aml_results_are_listed_with_a_count(app, tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    rows = [TransactionAssessment(transaction_id=f"t{i}", risk_score=0.0, alert=False) for i in range(3)]
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    done = CliRunner().invoke(app, ["aml", "cases", "--results", str(path)])
    assert done.exit_code == 0 and done.stdout == ""
    assert done.stderr == "0 case(s) within the alert budget in 3 results\n"
