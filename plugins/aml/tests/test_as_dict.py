"""``Taskflow("aml", as_dict=True)``: plain dicts with JSON types (datetimes as ISO 8601 text), equal to each
result's ``model_dump(mode="json")``; state carries on across calls as with output models."""

from __future__ import annotations

import json

from sectorflow import Taskflow

TXNS = [{"transaction_id": f"t{i}", "timestamp": f"2026-11-02T09:{30 + i}:00", "sender_account": "A",
         "receiver_account": f"B{i}", "amount": "49900", "currency": "CNY", "channel": "cash_deposit"}
        for i in range(5)]


def test_aml_as_dict_equals_the_json_dump_of_the_models():
    models = Taskflow("aml", model=False)(TXNS)
    dicts = Taskflow("aml", model=False, as_dict=True)(TXNS)
    assert dicts == [m.model_dump(mode="json") for m in models]
    assert [d["transaction_id"] for d in dicts] == [f"t{i}" for i in range(5)]
    assert all(type(d) is dict and type(d["meta"]) is dict for d in dicts)
    assert dicts[0]["meta"]["task"] == "aml"
    assert json.loads(json.dumps(dicts, ensure_ascii=False)) == dicts
    assert [d["risk_score"] for d in dicts] == [m.risk_score for m in models]
