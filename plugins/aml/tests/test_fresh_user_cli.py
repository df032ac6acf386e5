"""What a fresh user found in ``sectorflow run aml`` / ``aml evaluate`` / ``aml cases`` (issue 21), one test each:
results of another input are refused by ``aml evaluate``; ``alert`` follows the case budget (rule hits are
``flagged``); ``--on-error skip`` skips a row whose currency has no FX rate and the message names ``-O fx_rates=FILE``;
an empty input leaves an existing ``--output`` as it was; a malformed or absent ``--period`` says which periods the
results have; ``meta.model_name`` names the account model; the plain cases listing has a header line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sectorflow import ConfigError, InvalidInputError, Taskflow
from sectorflow_aml.cases import read_cases
from sectorflow_aml.evaluation import evaluate_results
from sectorflow_aml.labels import LabelsError, read_labels

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


def rec(i: int, src: str, dst: str, amount: str = "900", *, hours: float = 0, currency: str = "CNY") -> dict:
    return {"transaction_id": f"c{i}", "timestamp": (T0 + timedelta(hours=hours)).isoformat(),
            "sender_account": src, "receiver_account": dst, "amount": amount, "currency": currency,
            "channel": "transfer"}


def records(hub: str = "H1", pairs: int = 300) -> list[dict]:
    """``pairs`` pairs paying each other once (active accounts, no alert), then one fan-in of 12 senders to ``hub``
    within an hour (one fan-in alert, one case)."""
    out = [rec(500 + k, f"P{k}", f"Q{k}", "120", hours=0.5 + k / 1000) for k in range(pairs)]
    return out + [rec(k, f"{hub}-S{k}", hub, hours=2 + k / 60) for k in range(12)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# 1. aml evaluate: results of another input -------------------------------------------------------------------------

def _results(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_evaluate_refuses_results_of_another_transaction_file(tmp_path: Path) -> None:
    """Two AMLGentex banks number transactions 0..N-1 and accounts 0-3999 alike: ids match, accounts do not."""
    from sectorflow_aml.evaluation import transaction_index

    ours = write_jsonl(tmp_path / "ours.jsonl", [rec(0, "1", "2"), rec(1, "2", "3"), rec(2, "3", "1")])
    other = write_jsonl(tmp_path / "other.jsonl", [rec(0, "1", "3"), rec(1, "3", "2"), rec(2, "2", "1")])
    results = _results(tmp_path, "results.jsonl", [
        {"transaction_id": "c0", "account_scores": {"1": 0.9, "2": 0.1}},
        {"transaction_id": "c1", "account_scores": {"2": 0.2, "3": 0.3}},
        {"transaction_id": "c2", "account_scores": {"3": 0.3, "1": 0.8}}])
    labels = tmp_path / "labels.csv"
    labels.write_text("account_id,label\n1,1\n2,0\n3,0\n", encoding="utf-8")
    metrics = evaluate_results(results, read_labels(labels), transactions=transaction_index(ours, "jsonl"))
    assert metrics["scored_accounts"] == 3 and metrics["average_precision"] == 1.0
    with pytest.raises(InvalidInputError) as raised:
        evaluate_results(results, read_labels(labels), transactions=transaction_index(other, "jsonl"),
                         transactions_name=str(other))
    message = str(raised.value)
    assert "are not the results of --transactions" in message and str(other) in message
    assert "2 of its 3 results score other accounts" in message and "transaction c0" in message
    assert raised.value.details["foreign"] == ["c0", "c2"]  # c1 is 3 -> 2 in both files: its scores fit


def test_evaluate_refuses_labels_that_barely_overlap_the_results(tmp_path: Path) -> None:
    results = _results(tmp_path, "results.jsonl", [
        {"transaction_id": f"t{i}", "account_scores": {f"A{i}": 0.5, f"B{i}": 0.1}} for i in range(10)])
    labels = tmp_path / "labels.csv"  # 20 labelled accounts, 2 of which (A0, A1) are in the results
    labels.write_text("account_id,label\n" + "".join(f"Z{i},{i % 2}\n" for i in range(18)) + "A0,1\nA1,0\n")
    with pytest.raises(LabelsError, match=r"Only 2 of the 20 accounts .* \(10 %\) appear in .*labels of another"):
        evaluate_results(results, read_labels(labels))


def test_evaluate_cli_without_transactions_says_the_results_are_unchecked(cli_main, capsys, tmp_path: Path) -> None:
    results = _results(tmp_path, "results.jsonl", [
        {"transaction_id": "c0", "account_scores": {"1": 0.9, "2": 0.1}}])
    labels = tmp_path / "labels.csv"
    labels.write_text("account_id,label\n1,1\n2,0\n", encoding="utf-8")
    assert cli_main(["aml", "evaluate", "--results", str(results), "--labels", str(labels)]) == 0
    assert "not checked against the run's input" in " ".join(capsys.readouterr().err.split())


# 2. alert follows the case budget; rule and model hits are `flagged` ------------------------------------------------

def test_alert_is_true_only_for_transactions_of_a_case_within_the_budget() -> None:
    """Two fan-ins of the same evidence score under a budget of one case: both are flagged (evidence), only the
    first hub's case (ties rank by account id) is within the budget, so only its transactions alert, from the one that
    completed its fan-in alert (which opened the case) on; background transfers are neither."""
    tf = Taskflow("aml", model=False, rules={"cycle": False}, alert_budget=1)
    rows = records("H1") + [rec(100 + k, f"H2-S{k}", "H2", "500", hours=4 + k / 60) for k in range(12)]
    out = tf(rows)
    hub1 = [r for r, x in zip(out, rows) if x["receiver_account"] == "H1"]
    hub2 = [r for r, x in zip(out, rows) if x["receiver_account"] == "H2"]
    quiet = [r for r, x in zip(out, rows) if x["sender_account"].startswith("P")]
    assert not any(r.flagged or r.alert for r in quiet)
    first = next(i for i, r in enumerate(hub1) if r.flagged)
    assert "fan_in" in hub1[first].typologies and any(r.flagged for r in hub2)
    assert [r.alert for r in hub1] == [False] * first + [True] * (12 - first)
    assert not any(r.alert for r in hub2)
    assert [(c.account, c.within_budget) for c in read_cases_of(out)] == [("H1", True)]
    assert sum(r.flagged for r in out) == 2 and sum(r.alert for r in out) == 12 - first  # two alerts, one case


def read_cases_of(results: list) -> list:
    """The cases within the budget of in-memory results, as `sectorflow aml cases` reads them from a file."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.jsonl"
        path.write_text("".join(r.model_dump_json() + "\n" for r in results), encoding="utf-8")
        return read_cases(path)


# 3. --on-error skip skips a row in a currency without an FX rate ---------------------------------------------------

def test_on_error_skip_skips_and_counts_rows_without_an_fx_rate(cli_main, capsys, tmp_path: Path) -> None:
    rows = [rec(0, "A", "B"), rec(1, "B", "C", currency="EUR", hours=1), rec(2, "C", "D", hours=2),
            rec(3, "D", "E", currency="EUR", hours=3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    code = cli_main(["run", "aml", str(source), "--format", "jsonl", "--on-error", "skip", "--output", str(out),
                     "-O", "model=false"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    assert [json.loads(x)["transaction_id"] for x in out.read_text().splitlines()] == ["c0", "c2"]
    assert "2 item(s) processed, 2 row(s) skipped" in err and "skipped row 2" in err and "skipped row 4" in err
    assert "-O fx_rates=FILE" in err
    state = tmp_path / "bank.sqlite"  # a --state run skips them too, and journals only the rows that ran
    code = cli_main(["run", "aml", str(source), "--format", "jsonl", "--on-error", "skip", "--output",
                     str(tmp_path / "s.jsonl"), "--state", str(state), "-O", "model=false"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0 and "2 item(s) processed, 2 row(s) skipped" in err and "skipped row 4" in err, err
    assert [json.loads(x)["transaction_id"] for x in (tmp_path / "s.jsonl").read_text().splitlines()] == ["c0", "c2"]
    later = write_jsonl(tmp_path / "later.jsonl", [rec(1, "B", "C", hours=5)])  # c1 never entered the window
    code = cli_main(["run", "aml", str(later), "--format", "jsonl", "--output", str(tmp_path / "l.jsonl"),
                     "--state", str(state), "-O", "model=false"])
    capsys.readouterr()
    (again,) = [json.loads(x) for x in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert code == 0 and not any(r["code"] == "input.duplicate_id" for r in again["reasons"])
    # reject (the default) still refuses the run, naming the CLI option
    code = cli_main(["run", "aml", str(source), "--format", "jsonl", "--output", str(tmp_path / "o2.jsonl"),
                     "-O", "model=false"])
    err = " ".join(capsys.readouterr().err.split())
    assert code != 0 and "EUR" in err and "-O fx_rates=FILE" in err and not (tmp_path / "o2.jsonl").exists()


# 4. an empty input leaves an existing --output as it was -----------------------------------------------------------

@pytest.mark.parametrize("content", ["", "transaction_id,timestamp,sender_account,receiver_account,amount,currency\n"])
def test_an_empty_input_does_not_empty_an_existing_output(cli_main, capsys, tmp_path: Path, content: str) -> None:
    source = tmp_path / "empty.csv"
    source.write_text(content, encoding="utf-8")
    out = tmp_path / "results.jsonl"
    out.write_text('{"transaction_id": "earlier"}\n', encoding="utf-8")
    assert cli_main(["run", "aml", str(source), "--format", "csv", "--output", str(out), "-O", "model=false"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert out.read_text() == '{"transaction_id": "earlier"}\n'
    assert "nothing was processed" in err and "left as it was (30 bytes of earlier results)" in err
    assert not list(tmp_path.glob(".results.jsonl.partial*"))
    state = ["--state", str(tmp_path / "bank.sqlite"), "-O", "model=false"]  # a --state run keeps it too
    assert cli_main(["run", "aml", str(source), "--format", "csv", "--output", str(out), *state]) == 1
    assert out.read_text() == '{"transaction_id": "earlier"}\n' and "left as it was" in capsys.readouterr().err
    assert not list(tmp_path.glob(".results.jsonl.partial*"))
    fresh = tmp_path / "new.jsonl"  # no earlier file: the same error, exit 1, no file (test_fresh_user_cli_state.py)
    assert cli_main(["run", "aml", str(source), "--format", "csv", "--output", str(fresh), "-O", "model=false"]) == 1
    assert not fresh.exists() and "no rows in" in capsys.readouterr().err


# 5. --period: malformed, another kind of period, a period the results do not reach ---------------------------------

def test_period_is_validated_and_the_results_periods_are_named(cli_main, capsys, tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n"
                               for r in Taskflow("aml", model=False, rules={"cycle": False})(records())))
    from sectorflow_aml.periods import period_kind

    assert [period_kind(p) for p in ("2024-03", "2024-W10", "2024-03-04")] == ["month", "week", "day"]
    for bad in ("2023-13", "2023-W54", "2023-02-30", "March"):
        with pytest.raises(ConfigError, match="--period"):
            read_cases(results, period=bad)
    assert cli_main(["aml", "cases", "--results", str(results), "--period", "2023-13"]) == 2
    assert "no such date" in " ".join(capsys.readouterr().err.split())
    assert cli_main(["aml", "cases", "--results", str(results), "--period", "2024-W10"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "cases are by month" in said and "2024-03" in said
    assert cli_main(["aml", "cases", "--results", str(results), "--period", "2024-04"]) == 2
    assert "no case in that month; the results' periods: 2024-03" in " ".join(capsys.readouterr().err.split())
    assert cli_main(["aml", "cases", "--results", str(results), "--period", "2024-03"]) == 0
    capsys.readouterr()


# 6. meta names the model that produced the score --------------------------------------------------------------------

def test_meta_names_the_account_model_and_the_transaction_scorer_only_when_it_runs() -> None:
    tf = Taskflow("aml")
    (result,) = tf([rec(0, "A", "B")])
    manifest = tf.pipeline.bundle.manifest
    assert manifest["name"] == "aml-risk-mlp"  # the bundle's own name: its per-transaction scorer
    account = manifest["account_model"]
    assert (result.meta.model_name, result.meta.model_version) == (account["name"], account["version"])
    assert result.meta.bundle_sha256 == tf.pipeline.bundle.sha256 and tf.meta.model_name == account["name"]
    assert tf.pipeline.model_source == f"{account['name']}@{account['version']}"
    both = Taskflow("aml", transaction_model=True)
    assert both.meta.model_name == f"aml-risk-mlp+{account['name']}"
    assert both.meta.model_version == f"{manifest['version']}+{account['version']}"
    assert Taskflow("aml", model=False).meta.model_name is None


# 7. the plain cases listing has a header line ------------------------------------------------------------------------

def test_the_plain_cases_listing_starts_with_a_header_and_json_has_none(cli_main, capsys, tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n"
                               for r in Taskflow("aml", model=False, rules={"cycle": False})(records())))
    assert cli_main(["aml", "cases", "--results", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    from sectorflow_aml.cli import CASE_COLUMNS

    assert lines[0].split("\t") == list(CASE_COLUMNS) == ["case_id", "period", "rank", "score", "account",
                                                           "typologies", "transactions", "budget"]
    assert lines[1].split("\t")[:2] == [read_cases(results)[0].case_id, "2024-03"] and len(lines) == 2
    assert cli_main(["aml", "cases", "--results", str(results), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["account"] == "H1"


def test_on_error_reject_lists_rows_without_an_fx_rate_with_the_other_bad_rows(cli_main, capsys,
                                                                                 tmp_path: Path) -> None:
    """Fresh-user report: under ``--on-error reject`` (the default) a row in a currency without an FX rate was not
    listed with the rows that do not validate (only those were, or only the FX error when it came first). Now one
    error lists every bad row, in row order, in each way a run goes (plain, --state to a file, --state to stdout,
    one checkpoint per row)."""
    rows = [rec(0, "A", "B"), rec(1, "B", "C", currency="EUR", hours=1), rec(2, "C", "D", "abc", hours=2),
            rec(3, "D", "E", currency="EUR", hours=3), rec(4, "E", "F", hours=4)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    state = str(tmp_path / "bank.sqlite")
    for extra in ([], ["--state", state], ["--state", state, "--checkpoint-rows", "1"]):
        for output in (["--output", str(tmp_path / "out.jsonl")], []):
            code = cli_main(["run", "aml", str(source), "--no-progress", "-O", "model=false", *output, *extra])
            captured = capsys.readouterr()
            err = " ".join(captured.err.split())
            assert code == 2, (extra, output, err)
            assert "3 bad row(s) in" in err and "(first: row 2)" in err, err
            listed = [line.split(":")[0].strip() for line in captured.err.splitlines() if line.startswith("  row ")]
            assert listed == ["row 2", "row 3", "row 4"], (extra, output, captured.err)
            assert "row 2: currency: Transaction c1" in err and "row 4: currency: Transaction c3" in err
            assert "row 3: amount:" in err and "-O fx_rates=FILE" in err
            assert captured.out == "" and not (tmp_path / "out.jsonl").exists()
    fine = write_jsonl(tmp_path / "fine.jsonl", [rows[0], rows[4]])  # the state was put back each time: still empty
    assert cli_main(["run", "aml", str(fine), "--no-progress", "-O", "model=false", "--state", state,
                     "--output", str(tmp_path / "fine-out.jsonl")]) == 0
    assert len((tmp_path / "fine-out.jsonl").read_text().splitlines()) == 2
