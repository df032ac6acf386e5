"""Exact state export / import (``AMLPipeline.state_dict`` / ``load_state_dict``): run part 1, write the state as
JSON text, load it into a fresh pipeline, run part 2; the results equal an uninterrupted run byte for byte (AMLSim
with and without the model, the generated everyday bank with same-day cash totals that straddle the cut)."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sectorflow import ConfigError, Taskflow
from sectorflow_aml.everyday import everyday_bank
from sectorflow_aml.loaders import READERS
from sectorflow_aml.schema import Channel, Transaction

RUN = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"


@pytest.fixture(scope="module")
def amlsim() -> list[Transaction]:
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    rows = itertools.islice(READERS["amlsim"](RUN / "transactions.csv.gz"), 20_000)
    return [Transaction.model_validate(record) for _, record in rows]


def _dumps(results) -> list[str]:
    return [r.model_dump_json() for r in results]


def _cut_runs(txns: list[Transaction], cuts: list[int], **options) -> tuple[list[str], list[list[str]], list[str]]:
    """(uninterrupted results, the resumed results at each cut, the state texts written)."""
    tf = Taskflow("aml", batch_size=64, **options)
    full = _dumps(tf(txns))
    resumed, texts = [], []
    for cut in cuts:
        tf.reset_state()
        first = _dumps(tf(txns[:cut]))
        text = json.dumps(tf.pipeline.state_dict(), allow_nan=False)  # strict JSON: no NaN / Infinity
        fresh = Taskflow("aml", batch_size=64, **options)
        fresh.pipeline.load_state_dict(json.loads(text))
        resumed.append(first + _dumps(fresh(txns[cut:])))
        texts.append(text)
    return full, resumed, texts


def test_rules_resume_exactly_from_a_json_state_on_amlsim(amlsim):
    full, resumed, texts = _cut_runs(amlsim, [1, 5_003, 12_500, 19_999], model=False)
    assert sum('"alert":true' in line for line in full) > 50  # the slice raises alerts (fan-in, cycles)
    for cut, lines in zip([1, 5_003, 12_500, 19_999], resumed):
        assert lines == full, f"cut {cut}: first difference at {next(i for i, (a, b) in enumerate(zip(lines, full)) if a != b)}"
    state = json.loads(texts[2])
    assert state["format"] == "sectorflow.aml.state" and state["version"] == 1 and state["model"] is None
    assert 10_000 < len(state["window"]["edges"]) < 12_500  # the first days already left the 30-day window


def test_model_resumes_exactly_from_a_json_state_on_amlsim(amlsim):
    txns = amlsim[:8_000]
    full, resumed, _ = _cut_runs(txns, [3_001, 4_100, 6_500])
    assert any('"model_risk"' in line for line in full)
    # the account model's features (account_scores) and the case book are in the state too
    assert sum('"account_scores":{"' in line for line in full) == len(txns)
    assert any('"cases":[{' in line for line in full)
    for lines in resumed:
        assert lines == full


def _bank_with_cash() -> list[Transaction]:
    """The everyday bank (seed 11) with cash deposits of 30,000 CNY twice a day for one customer: each day's total
    (60,000) crosses the 50,000 CNY large-value cash threshold on its second deposit."""
    txns = everyday_bank(11, customers=60, days=45)
    extra = []
    for i, base in enumerate(txns[::400]):
        for k in range(2):
            extra.append(base.model_copy(update={
                "transaction_id": f"CASH-{i}-{k}", "timestamp": base.timestamp + timedelta(minutes=k),
                "sender_account": "WALKIN", "receiver_account": "E11-C0001", "amount": Decimal("30000"),
                "channel": Channel.cash_deposit}))
    return sorted(txns + extra, key=lambda t: t.timestamp)


def test_everyday_bank_resumes_exactly_with_same_day_totals_across_the_cut():
    txns = _bank_with_cash()
    cash_at = [i for i, t in enumerate(txns) if t.transaction_id.endswith("-0") and t.transaction_id.startswith("CASH")]
    cuts = [cash_at[1] + 1, len(txns) // 2, cash_at[-1] + 1]  # between the two deposits of one day, and elsewhere
    for options in ({}, {"model": False}):
        full, resumed, _ = _cut_runs(txns, cuts, **options)
        assert sum('"large_value"' in line for line in full) >= 2
        for lines in resumed:
            assert lines == full


def test_state_refers_to_each_transaction_once_and_keeps_object_identity(amlsim):
    tf = Taskflow("aml", model=False)
    tf(amlsim[:3_000])
    state = json.loads(json.dumps(tf.pipeline.state_dict()))
    assert len(state["transactions"]) == 3_000  # window edges and report rows share one table
    fresh = Taskflow("aml", model=False)
    fresh.pipeline.load_state_dict(state)
    w = fresh.pipeline.window
    edge = w.edges[1234]
    assert w.ids[edge.txn.transaction_id] is edge
    assert any(e is edge for e in w.accounts[edge.src].outgoing)
    assert any(e is edge for e in w.accounts[edge.dst].incoming)
    assert json.loads(json.dumps(fresh.pipeline.state_dict())) == state  # load then save gives the same state


def test_a_state_of_another_window_or_model_setting_is_refused(amlsim):
    tf = Taskflow("aml", model=False)
    tf(amlsim[:200])
    state = json.loads(json.dumps(tf.pipeline.state_dict()))
    with pytest.raises(ConfigError, match="7-day window|30.0-day window"):
        Taskflow("aml", model=False, lookback_days=7).pipeline.load_state_dict(state)
    with pytest.raises(ConfigError, match="without an account model"):  # the default runs the account model
        Taskflow("aml").pipeline.load_state_dict(state)
    with pytest.raises(ConfigError, match="version"):
        Taskflow("aml", model=False).pipeline.load_state_dict({**state, "version": 99})
    damaged = {**state, "window": {**state["window"], "edges": [["x"]]}}
    target = Taskflow("aml", model=False)
    with pytest.raises(ConfigError, match="damaged"):
        target.pipeline.load_state_dict(damaged)
    assert len(target.pipeline.window) == 0  # left empty, not half-loaded


def test_a_retried_call_is_skipped_or_refused_as_asked_also_after_a_restart(amlsim, tmp_path):
    from sectorflow import InvalidInputError

    store = tmp_path / "state.sqlite"
    first = Taskflow("aml", model=False, on_duplicate="refuse", state_store=store)
    first(amlsim[:500])
    # a new process on the same store: the retried deposit (same ids) is refused before anything changes
    again = Taskflow("aml", model=False, on_duplicate="refuse", state_store=store)
    assert len(again.pipeline.window) == 500
    retry = amlsim[490:510]  # ten already applied, ten new
    with pytest.raises(InvalidInputError) as caught:
        again(retry)
    assert [p["row"] for p in caught.value.details] == list(range(1, 11))
    assert "amlsim-491" in str(caught.value) and "already in the 30-day window" in caught.value.details[0]["reason"]
    assert len(again.pipeline.window) == 500  # nothing of the refused call was counted
    with pytest.raises(InvalidInputError, match="amlsim-601") as caught:
        again([amlsim[600], amlsim[600]])
    assert caught.value.details == [{"row": 2, "field": "transaction_id", "reason": "amlsim-601 repeats row 1"}]
    skip = Taskflow("aml", model=False, state_store=store)  # on_duplicate="skip", the default
    results = skip(retry)
    assert [r.reasons[0].code for r in results[:10]] == ["input.duplicate_id"] * 10
    assert all(r.risk_score == 0.0 and not r.reports for r in results[:10])
    assert len(skip.pipeline.window) == 510
    with pytest.raises(ConfigError, match="on_duplicate"):
        Taskflow("aml", model=False, on_duplicate="ignore")


def test_a_postgresql_store_resumes_exactly(amlsim):
    import os
    import uuid

    dsn = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
    from sectorflow.state_store_pg import PostgresStateStore

    schema = f"sf_aml_state_{uuid.uuid4().hex[:12]}"
    txns = amlsim[:6_000]
    full = _dumps(Taskflow("aml", model=False)(txns))
    store = PostgresStateStore(dsn, schema=schema)
    try:
        first = Taskflow("aml", model=False, state_store=store)
        part1 = _dumps(first(txns[:2_500])) + _dumps(first(txns[2_500:4_000]))
        first.save_state()  # snapshot + journal after it
        part1 += _dumps(first(txns[4_000:4_100]))
        again = Taskflow("aml", model=False, state_store=PostgresStateStore(dsn, schema=schema))
        assert part1 + _dumps(again(txns[4_100:])) == full
    finally:
        store._execute(f"DROP SCHEMA {schema} CASCADE")


def test_reset_state_of_one_tenant_forgets_its_stored_state_only(amlsim, tmp_path):
    from sectorflow import CallContext

    store = tmp_path / "state.sqlite"
    tf = Taskflow("aml", model=False, state_store=store)
    tf(amlsim[:300], context=CallContext(tenant="bank-a"))
    tf(amlsim[:200], context=CallContext(tenant="bank-b"))
    tf(amlsim[:100])  # the default tenant
    assert tf.reset_state("bank-a") is True
    assert tf.reset_state(None) is True
    restarted = Taskflow("aml", model=False, state_store=store)
    assert len(restarted.pipeline.window) == 0
    assert len(restarted._tenant_pipeline("bank-a")[0].window) == 0
    assert len(restarted._tenant_pipeline("bank-b")[0].window) == 200
    # after the reset the tenant's new calls are kept again
    tf(amlsim[300:350], context=CallContext(tenant="bank-a"))
    assert len(Taskflow("aml", model=False, state_store=store)._tenant_pipeline("bank-a")[0].window) == 50
