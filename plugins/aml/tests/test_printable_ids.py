"""Ids hold no control character and no bidirectional-text control (fresh-user check, 30 Nov): a U+202E in an
account id made it display reversed in alerts and report drafts, and a NUL passed into results."""

from __future__ import annotations

import gzip

import pytest
from sectorflow import InvalidInputError, Taskflow

from sectorflow_aml.loaders import load_transactions

BASE = {"transaction_id": "t1", "timestamp": "2026-11-02T09:30:00Z", "sender_account": "A", "receiver_account": "B",
        "amount": "100", "channel": "transfer"}


@pytest.mark.parametrize("field, value, code", [
    ("transaction_id", "t\x001", "U+0000"), ("sender_account", "ACC\u202e987", "U+202E"),
    ("receiver_account", "B\n2", "U+000A"), ("sender_bank", "BK\u2066", "U+2066"), ("receiver_account", "B\x852", "U+0085"),
    ("transaction_id", "t\u200f1", "U+200F")])
def test_an_id_with_a_control_character_is_refused_naming_it(field, value, code):
    tf = Taskflow("aml", model=False)
    with pytest.raises(InvalidInputError) as caught:
        tf({**BASE, field: value})
    [problem] = caught.value.details
    assert problem["row"] == 1 and problem["field"] == field
    assert problem["reason"].startswith(f"holds {code} (")


def test_printable_ids_in_any_script_pass():
    tf = Taskflow("aml", model=False)
    out = tf([{**BASE, "transaction_id": "交易-1 é", "sender_account": "账户·甲", "receiver_account": "Ünal-Ltd"}])
    assert out[0].transaction_id == "交易-1 é"


def test_the_typed_amlsim_reader_sends_such_a_row_to_validation(tmp_path):
    path = tmp_path / "transactions.csv.gz"
    with gzip.open(path, "wt", newline="") as handle:
        handle.write("sourceNodeId,targetNodeId,value,time\n1,2,100.0,0\n3\u202e,4,50.0,0\n5,6,70.0,1\n")
    txns, problems = load_transactions(path, format="amlsim")
    assert [(t.sender_account, t.receiver_account) for t in txns] == [("1", "2"), ("5", "6")]
    assert [(p["row"], p["field"]) for p in problems] == [(2, "sender_account")]
    assert "U+202E" in problems[0]["reason"]
