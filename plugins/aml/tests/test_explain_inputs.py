"""``sectorflow aml explain`` reads the input as the run did (``--column`` / ``--default``) and, when an input is
refused, names what changed."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sectorflow import ConfigError, InvalidInputError, Taskflow, field_pairs
from sectorflow_aml.cli import checked_alert, explain_alert, iter_alerts, register

BANK_COLUMNS = ["Txn Ref", "Value Date", "Debit Acct", "Credit Acct", "Amt"]  # no currency column: --default
MAPPING = {"transaction_id": "Txn Ref", "timestamp": "Value Date", "sender_account": "Debit Acct",
           "receiver_account": "Credit Acct", "amount": "Amt"}


def _bank_rows() -> list[dict[str, str]]:
    """A bank's export: three accounts passing money round a loop (a cycle alert) under its own column names."""
    loop = [("R1", "LOOP1", "LOOP2", "300000.00"), ("R2", "LOOP2", "LOOP3", "298000.00"),
            ("R3", "LOOP3", "LOOP1", "296000.00")]
    return [{"Txn Ref": tid, "Value Date": f"2026-11-07T0{i + 1}:00:00+08:00", "Debit Acct": a, "Credit Acct": b,
             "Amt": amount} for i, (tid, a, b, amount) in enumerate(loop)]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=BANK_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture()
def bank_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """The bank CSV, the results `sectorflow run aml FILE --column ... --default currency=CNY` writes (rules only)
    and the id of its cycle alert."""
    source = _write(tmp_path / "bank.csv", _bank_rows())
    txns = [{field: row[column] for field, column in MAPPING.items()} | {"currency": "CNY"} for row in _bank_rows()]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in Taskflow("aml", model=False)(txns)))
    cycle = next(a for a in iter_alerts(results) if a.typology == "cycle")
    return source, results, cycle.alert_id


def _cli() -> object:
    from sectorflow import cli

    if not any(group.name == "aml" for group in cli.app.registered_groups):
        register(cli.app)  # an earlier test may have loaded the CLI's plugin commands with no plugins selected
    return cli.main


def test_explain_reads_a_bank_csv_with_the_runs_column_and_default_options(
        bank_run: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, results, alert_id = bank_run
    main = _cli()
    base = ["aml", "explain", alert_id, "--results", str(results), "--input", str(source), "--format", "csv"]
    columns = [arg for field, column in MAPPING.items() for arg in ("--column", f"{field}={column}")]
    png = tmp_path / "bank.png"
    assert main(base + columns + ["--default", "currency=CNY", "--png", str(png)]) == 0, capsys.readouterr().err
    assert png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    # without the mapping the file cannot be read: a one-line error that says to pass --column
    assert main(base + ["--png", str(tmp_path / "no.png")]) == 2
    err = capsys.readouterr().err
    assert "--column" in err and "Traceback" not in err and not (tmp_path / "no.png").exists()
    # another currency than the run's default is another input: refused, not drawn
    assert main(base + columns + ["--default", "currency=USD", "--png", str(tmp_path / "usd.png")]) == 2
    err = capsys.readouterr().err
    assert "is not the input that produced alert" in err and not (tmp_path / "usd.png").exists()
    # a malformed pair says how to write it
    assert main(base + ["--column", "transaction_id", "--png", str(tmp_path / "bad.png")]) == 2
    assert "--column 'transaction_id': write FIELD=COLUMN" in capsys.readouterr().err


def test_explain_alert_takes_mapping_and_defaults(bank_run: tuple[Path, Path, str], tmp_path: Path) -> None:
    source, results, alert_id = bank_run
    png = explain_alert(alert_id, results, source, tmp_path / "py.png", "csv", mapping=MAPPING,
                        defaults={"currency": "CNY"})
    assert png.read_bytes()[:4] == b"\x89PNG"
    _, txns, note = checked_alert(alert_id, results, source, "csv", mapping=MAPPING, defaults={"currency": "CNY"})
    assert note is None and sorted((t.transaction_id, str(t.amount), t.currency) for t in txns) == [
        ("R1", "300000.00", "CNY"), ("R2", "298000.00", "CNY"), ("R3", "296000.00", "CNY")]
    with pytest.raises(ConfigError, match="fixed columns"):
        explain_alert(alert_id, results, source, tmp_path / "x.png", "amlsim", mapping=MAPPING)
    with pytest.raises(ConfigError, match="unknown: colour"):
        explain_alert(alert_id, results, source, tmp_path / "x.png", "csv", mapping={**MAPPING, "colour": "Amt"})


def test_field_pairs_is_the_public_parser_of_field_options() -> None:
    assert field_pairs("--column", "COLUMN", ["transaction_id = Txn Ref", "amount=Amt=x"]) == {
        "transaction_id": "Txn Ref", "amount": "Amt=x"}
    with pytest.raises(ConfigError, match="gives 'amount' twice"):
        field_pairs("--default", "VALUE", ["amount=1", "amount=2"])
    with pytest.raises(ConfigError, match="write FIELD=VALUE"):
        field_pairs("--default", "VALUE", ["currency="])
