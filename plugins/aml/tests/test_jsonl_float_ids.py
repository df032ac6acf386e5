"""JSON-lines ids written as numbers with a fraction or an exponent are bad rows, as in Parquet (fresh-user pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectorflow_aml.loaders import jsonl_reader, load_transactions


def _line(txn: object, sender: object = '"A"', amount: object = "100") -> str:
    # ids are spliced in as written, so a JSON number stays a number
    return (f'{{"transaction_id": {txn}, "timestamp": "2026-11-03T10:00:00Z", "sender_account": {sender}, '
            f'"receiver_account": "B", "amount": {amount}}}\n')


@pytest.mark.parametrize("written", ["1003.0", "1.5", "1e3", "1.2345678901234567e+19", "-0.0", "1E+2"])
def test_an_id_written_as_a_json_float_is_a_bad_row_that_says_why(tmp_path: Path, written: str) -> None:
    source = tmp_path / "f.jsonl"
    source.write_text(_line('"t1"', sender=written) + _line('"t2"'), encoding="utf-8")
    txns, problems = load_transactions(source)
    assert [t.transaction_id for t in txns] == ["t2"]
    ((problem),) = problems
    assert (problem["row"], problem["field"]) == (1, "sender_account")
    assert problem["reason"].startswith(f"sender_account is a floating-point number ({written}), not an id: store "
                                        "ids as text or whole numbers")


def test_two_long_ids_pandas_wrote_as_one_float_are_not_one_id(tmp_path: Path) -> None:
    # 12345678901234567890 and 12345678901234567891 are the same float64; read as text they were one id and the
    # second transaction a duplicate_id, silently uncounted
    ids = [json.dumps(float(n)) for n in (12345678901234567890, 12345678901234567891)]
    assert ids[0] == ids[1] == "1.2345678901234567e+19"
    source = tmp_path / "pandas.jsonl"
    source.write_text("".join(_line(i) for i in ids), encoding="utf-8")
    txns, problems = load_transactions(source)
    assert txns == [] and [(p["row"], p["field"]) for p in problems] == [(1, "transaction_id"), (2, "transaction_id")]


def test_integers_strings_and_float_amounts_still_read(tmp_path: Path) -> None:
    source = tmp_path / "ok.jsonl"
    source.write_text(_line("1003", sender='"1003.0"', amount="49999.99") + _line('"t2"', amount="1e3"),
                      encoding="utf-8")
    txns, problems = load_transactions(source)
    assert problems == []
    assert [(t.transaction_id, t.sender_account, str(t.amount)) for t in txns] == [
        ("1003", "1003.0", "49999.99"), ("t2", "A", "1E+3")]
    # what the reader hands on for a float amount is plain decimal text
    ((_, record), _) = list(jsonl_reader()(source))
    assert type(record["amount"]) is str and record["amount"] == "49999.99"
