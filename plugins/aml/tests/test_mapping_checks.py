"""``sectorflow run aml --column/--default`` checked once, before any row is read (fresh-user report, 2 Dec 2026):
``--default currency=yen`` failed on every row with the same error, and a mapping that read one column into two
fields (``sender_account=acct --column receiver_account=acct``) was accepted. Both exit 2 naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

COLUMNS = ["--column", "transaction_id=id", "--column", "timestamp=ts", "--column", "amount=amt"]


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    path = tmp_path / "bank.csv"
    path.write_text("id,ts,from,to,amt\n" + "".join(f"t{i},2024-03-04T09:{i:02d}:00Z,A{i},B{i},100\n"
                                                     for i in range(30)))
    return path


def _run(cli_main, capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli_main(["run", "aml", *args, "--no-progress"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("default", "reason"), [
    ("currency=yen", "--default currency=yen: 'YEN' is not an ISO 4217 currency code: the yen is JPY in ISO 4217"),
    ("currency=EURO", "--default currency=EURO: 'EURO' is not an ISO 4217 currency code"),
    ("channel=teleport", "--default channel=teleport: Input should be 'cash_deposit', 'cash_withdrawal'"),
])
def test_a_bad_default_is_refused_once_naming_the_option(cli_main, capsys, export, tmp_path, default, reason):
    out = tmp_path / "r.jsonl"
    code, err = _run(cli_main, capsys, str(export), *COLUMNS, "--column", "sender_account=from", "--column",
                     "receiver_account=to", "--default", default, "-o", str(out))
    assert code == 2 and err.startswith(f"error: {reason}"), err
    assert "Fix the value of --default" in err and "  row " not in err and err.count("\n") == 1
    assert not out.exists()


def test_a_good_default_still_runs(cli_main, capsys, export, tmp_path):
    out = tmp_path / "r.jsonl"
    code, err = _run(cli_main, capsys, str(export), *COLUMNS, "--column", "sender_account=from", "--column",
                     "receiver_account=to", "--default", "currency=CNY", "--default", "channel=wire", "-o", str(out))
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 30


def test_one_column_mapped_to_two_fields_is_refused_naming_both(cli_main, capsys, export, tmp_path):
    code, err = _run(cli_main, capsys, str(export), *COLUMNS, "--column", "sender_account=from", "--column",
                     "receiver_account=from", "-o", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert ("error: --column maps the column 'from' to 2 fields (sender_account=from, receiver_account=from): a "
            "column is read into one field; map each field to its own column.") in err
    assert not (tmp_path / "r.jsonl").exists()
