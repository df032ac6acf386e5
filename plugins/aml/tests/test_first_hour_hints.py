"""Hints that point the right way (issue 28, a user's first hour): the wrong format names the right one, a currency
name that is not ISO 4217 names the code, and a spreadsheet's formatted amount names the thousands separator."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sectorflow.cli import main
from sectorflow_aml.schema import Transaction

ROW = {"transaction_id": "t1", "timestamp": "2026-11-03T10:00:00Z", "sender_account": "A", "receiver_account": "B",
       "amount": "100.00"}


@pytest.mark.parametrize("mode", ["reject", "skip"])
def test_format_jsonl_on_an_amlsim_csv_suggests_format_amlsim_not_on_error_skip(tmp_path, capsys, mode):
    source = tmp_path / "transactions.jsonl"  # named like JSON lines, or --format jsonl: every row was "not JSON"
    source.write_text("sourceNodeId,targetNodeId,value,time\n360,18984,103.55,1\n269,9237,178.96,1\n")
    capsys.readouterr()
    assert main(["run", "aml", str(source), "--format", "jsonl", "--on-error", mode, "-O", "model=false"]) == 2
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert out == ""
    assert (f"Input file {source} is CSV, not JSON lines: line 1 is AMLSim's header "
            "('sourceNodeId,targetNodeId,value,time'). Read it with --format amlsim") in err
    assert "--on-error skip" not in err


def test_a_transaction_csv_read_as_json_lines_suggests_format_csv(tmp_path, capsys):
    source = tmp_path / "export.txt"
    source.write_text(",".join(ROW) + "\n" + ",".join(ROW.values()) + "\n")
    capsys.readouterr()
    assert main(["run", "aml", str(source), "--format", "jsonl", "-O", "model=false"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "is CSV, not JSON lines: line 1 is a CSV header" in err and "Read it with --format csv" in err


def problem(**changes: str) -> str:
    with pytest.raises(ValidationError) as info:
        Transaction.model_validate({**ROW, **changes})
    (error,) = info.value.errors()
    return f"{error['loc'][0]}: {error['msg']}"


def test_currency_rmb_suggests_cny():
    assert problem(currency="RMB") == ("currency: Value error, 'RMB' is not an ISO 4217 currency code: renminbi (RMB) "
                                       "is CNY in ISO 4217; write CNY (e.g. sed 's/,RMB,/,CNY,/' or fix the export)")
    assert problem(currency="rmb").startswith("currency: Value error, 'RMB' is not an ISO 4217")
    assert problem(currency="XYZ") == "currency: Value error, 'XYZ' is not an ISO 4217 currency code"
    assert Transaction.model_validate({**ROW, "currency": "cny"}).currency == "CNY"


@pytest.mark.parametrize("text, plain", [("1,000.50", "1000.50"), ("12,345,678", "12345678"), (" 9,500.00 ", "9500.00")])
def test_an_amount_with_a_thousands_separator_names_it(text, plain):
    assert problem(amount=text) == (f"amount: Value error, {text.strip()!r} has a thousands separator (','): write "
                                    f"{plain} (export the column as a plain number, without digit grouping)")


def test_a_csv_amount_with_a_thousands_separator_is_a_bad_row_naming_it(tmp_path, capsys):
    source = tmp_path / "day.csv"
    source.write_text(",".join(ROW) + '\nt1,2026-11-03T10:00:00Z,A,B,"1,000.50"\nt2,2026-11-03T11:00:00Z,A,B,20\n')
    capsys.readouterr()
    assert main(["run", "aml", str(source), "--on-error", "skip", "-O", "model=false"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    assert "skipped row 2: amount: '1,000.50' has a thousands separator (','): write 1000.50" in \
        " ".join(captured.err.split())
