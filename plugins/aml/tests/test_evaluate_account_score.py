"""``sectorflow aml evaluate --account-score``: by default as the run's cases read the account scores (fresh-user
report, 3 Dec 2026: the default was ``max`` also for the results of a bundle trained with ``--points month_end``,
whose cases read each period's close), and ``close`` without ``--transactions`` (which made the whole run one month,
an account's score its last one) is refused, naming the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sectorflow import Taskflow

from sectorflow_aml.evaluation import case_reading, evaluate_results, read_results, transaction_index
from sectorflow_aml.labels import read_labels
from sectorflow_aml.learn_cli import train_bundle
from sectorflow_aml.loaders import load_transactions

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
NODES = REPO / "samples" / "aml" / "nodes.csv.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Results of the AMLSim sample with the shipped bundle (highest) and with a month_end bundle trained on it."""
    folder = tmp_path_factory.mktemp("evaluate")
    train_bundle([SAMPLE], [NODES], folder / "month_end", fmt="amlsim", points="month_end")
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    out = {}
    for name, kwargs in (("max", {}), ("close", {"task_path": str(folder / "month_end")})):
        results = folder / f"{name}.jsonl"
        results.write_text("".join(r.model_dump_json() + "\n" for r in Taskflow("aml", **kwargs)(txns)))
        out[name] = results
    return out


def test_the_results_tell_how_their_cases_read_the_scores(runs):
    assert case_reading(read_results(runs["max"])) == "max"
    assert case_reading(read_results(runs["close"])) == "close"
    assert case_reading([]) is None


def test_the_default_is_the_runs_reading(runs, cli_main, capsys):
    labels = read_labels(NODES)
    index = transaction_index(SAMPLE, "amlsim")
    close = evaluate_results(runs["close"], labels, transactions=index, account_score="close")
    highest = evaluate_results(runs["close"], labels, transactions=index, account_score="max")
    assert close["average_precision"] != highest["average_precision"]
    base = ["aml", "evaluate", "--labels", str(NODES), "--transactions", str(SAMPLE), "--format", "amlsim", "--json"]
    assert cli_main([*base, "--results", str(runs["close"])]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == close  # before: the max reading's figures
    assert "note: --account-score close (the run's cases read each account's score at the period's close)" \
        in captured.err
    assert cli_main([*base, "--results", str(runs["max"])]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == evaluate_results(runs["max"], labels, transactions=index, account_score="max")
    assert "--account-score close" not in captured.err


def test_close_without_transactions_is_refused_with_the_fix(runs, cli_main, capsys):
    base = ["aml", "evaluate", "--labels", str(NODES)]
    assert cli_main([*base, "--results", str(runs["max"]), "--account-score", "close"]) == 2
    err = capsys.readouterr().err
    assert "--account-score close reads each account's score at the close of each month: give the run's input " \
           "with --transactions" in err and "--account-score max" in err
    assert cli_main([*base, "--results", str(runs["close"])]) == 2
    err = capsys.readouterr().err
    assert "so the default is --account-score close" in err and "--transactions" in err
    assert cli_main([*base, "--results", str(runs["close"]), "--account-score", "max"]) == 0
    assert "(1 period)" in capsys.readouterr().out  # not "(1 periods)"
