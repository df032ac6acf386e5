"""A bank's own export read by ``sectorflow run aml FILE --column FIELD=COLUMN --default FIELD=VALUE`` (issue #3):
no renaming by hand, and every mistake a ConfigError (exit 2) that names what to fix."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from sectorflow import ConfigError
from sectorflow.cli import main
from sectorflow_aml.loaders import load_transactions

BANK = ("Txn Ref, Value Date, Debit Acct, Credit Acct, Amt, Ccy\n"  # spaces after the commas, as some exports write
        "R-1001,2024-03-01 09:15,C001,A100,49900.00,CNY\n"
        "R-1002,2024-03-01 11:40,C001,A100,49800.00,\n"
        "R-1003,2024-03-02 10:00,A100,B200,1200.00,CNY\n")
MAPPING = {"transaction_id": "Txn Ref", "timestamp": "Value Date", "sender_account": "Debit Acct",
           "receiver_account": "Credit Acct", "amount": "Amt", "currency": "Ccy"}


def columns(mapping: dict[str, str]) -> list[str]:
    return [arg for field, column in mapping.items() for arg in ("--column", f"{field}={column}")]


COLUMNS = columns(MAPPING)


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    path = tmp_path / "bank.csv"
    path.write_text(BANK, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict], str]:
    capsys.readouterr()
    code = main(["run", "aml", *args, "-O", "model=false"])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], " ".join(err.split())


def test_a_bank_csv_with_its_own_column_names_gives_the_structuring_alert(bank: Path, capsys) -> None:
    code, results, err = run(capsys, str(bank), *COLUMNS, "--default", "channel=cash_deposit",
                             "--default", "currency=CNY")
    assert code == 0, err
    assert [r["transaction_id"] for r in results] == ["R-1001", "R-1002", "R-1003"]
    assert [r["typologies"] for r in results] == [[], ["structuring"], []]
    reason = results[1]["reasons"][0]["en"]
    assert "2 cash deposits by account A100 on one day" in reason and "totalling 99,700.00 CNY" in reason
    # the default matters: without channel=cash_deposit the rows are transfers (the Transaction default), and two
    # same-day transfers under the 50,000 cash threshold are not structuring (transfers report at other levels)
    code, results, err = run(capsys, str(bank), *COLUMNS)
    assert code == 0 and [r["typologies"] for r in results] == [[], [], []]


def test_the_python_loader_reads_the_same_file_the_same_way(bank: Path) -> None:
    txns, problems = load_transactions(bank, format="csv", mapping=MAPPING, defaults={"currency": "USD"},
                                       on_error="reject")
    assert problems == []
    assert [(t.transaction_id, t.sender_account, t.amount, t.currency) for t in txns] == [
        ("R-1001", "C001", Decimal("49900.00"), "CNY"), ("R-1002", "C001", Decimal("49800.00"), "USD"),
        ("R-1003", "A100", Decimal("1200.00"), "CNY")]  # the default fills only the empty cell


def test_jsonl_and_parquet_take_the_options_too(tmp_path: Path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"ref": "J1", "at": "2024-03-01T09:15:00", "from": "C001", "to": "A100", "amt": "49900.00"},
            {"ref": "J2", "at": "2024-03-01T11:40:00", "from": "C001", "to": "A100", "amt": "49800.00"}]
    options = ("--column", "transaction_id=ref", "--column", "timestamp=at", "--column", "sender_account=from",
               "--column", "receiver_account=to", "--column", "amount=amt", "--default", "channel=cash_deposit")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.table({key: [r[key] for r in rows] for key in rows[0]}), tmp_path / "t.parquet")
    for name in ("t.jsonl", "t.parquet"):
        code, results, err = run(capsys, str(tmp_path / name), *options)
        assert code == 0, (name, err)
        assert [r["typologies"] for r in results] == [[], ["structuring"]], name
    code, _, err = run(capsys, str(tmp_path / "t.parquet"), *options, "--column", "currency=ccy")
    assert code == 2
    assert "The Parquet schema of" in err and "lacks the column(s) 'ccy' (mapped to currency)" in err


@pytest.mark.parametrize("args, fragments", [
    (("--column", "amount=amt"), ["lacks the column(s) 'amt' (mapped to amount; did you mean 'Amt'?)",
                                  "found: Txn Ref, Value Date, Debit Acct, Credit Acct, Amt, Ccy",
                                  "Fix the mapping (--column FIELD=COLUMN"]),
    (("--column", "amt=Amt"), ["'amt' is not an input field of task 'aml'",
                               ("its input fields are: transaction_id, timestamp, sender_account, receiver_account, "
                                "amount, currency, channel")]),
    (("--default", "currency"), ["--default 'currency': write FIELD=VALUE"]),
    (("--format", "amlsim", "--column", "amount=Amt"),
     [("Format 'amlsim' of task 'aml' has fixed columns: it takes no --column/--default. "
       "Formats that do: csv, jsonl, parquet.")]),
])
def test_mistakes_are_config_errors_that_say_what_to_fix(bank: Path, capsys, args, fragments) -> None:
    without_amount = columns({field: column for field, column in MAPPING.items() if field != "amount"})
    code, results, err = run(capsys, str(bank), *without_amount, *args)
    assert code == 2 and results == []
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_a_required_field_without_column_mapping_or_default_names_the_field(bank: Path) -> None:
    from sectorflow_aml.loaders import csv_reader

    with pytest.raises(ConfigError, match=r"lacks the column\(s\) transaction_id, timestamp") as raised:
        list(csv_reader(mapping={"amount": "Amt"})(bank))
    assert "Rename the columns, or map yours" in str(raised.value)
    with pytest.raises(ConfigError, match="unknown: amount_cny"):
        csv_reader(defaults={"amount_cny": "1"})
