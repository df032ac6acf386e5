"""The aml task's state per tenant (issue 22): each tenant's pipeline is an ``AMLPipeline.spawn`` of the loaded one,
sharing the model, rules and report configuration (each option file read once) with its own window, report
aggregates, cooldowns and scorer feature state."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from sectorflow import CallContext, Taskflow

from sectorflow_aml import accounts, fx, pipeline


def deposit(tid: str, amount: str, account: str = "ACC-1", when: str = "2026-11-02T02:00:00Z") -> dict:
    return {"transaction_id": tid, "timestamp": when, "sender_account": "CASH", "receiver_account": account,
            "amount": amount, "currency": "CNY", "channel": "cash_deposit"}


def transfer(tid: str, src: str, dst: str, amount: str, when: str) -> dict:
    return {"transaction_id": tid, "timestamp": when, "sender_account": src, "receiver_account": dst,
            "amount": amount, "currency": "CNY", "channel": "transfer"}


def bank(tenant: str | None) -> CallContext:
    return CallContext(actor=f"{tenant}-clerk", tenant=tenant)


def test_two_banks_deposits_to_one_account_id_stay_apart():
    """The reproduction of issue 22: two banks' 30,000 CNY cash deposits to their own ACC-1 made a 60,000 CNY
    large-value report draft for the second bank, listing the first bank's transaction."""
    tf = Taskflow("aml", model=False)
    first = tf(deposit("b1-t1", "30000.00"), context=bank("bank-1"))
    second = tf(deposit("b2-t1", "30000.00"), context=bank("bank-2"))
    assert first.reports == [] and second.reports == []
    assert "b1-t1" not in second.model_dump_json()
    # the same bank's second deposit on that day does reach the 50,000 CNY cash threshold: a 60,000 report
    again = tf(deposit("b1-t2", "30000.00", when="2026-11-02T03:00:00Z"), context=bank("bank-1"))
    (report,) = again.reports
    assert report.transaction_ids == ["b1-t1", "b1-t2"] and str(report.total_amount) == "60000.00"
    assert tf.tenants() == ["bank-1", "bank-2"]


def test_spawn_shares_configuration_and_has_its_own_state(tmp_path: Path, monkeypatch):
    rates = tmp_path / "fx.csv"
    rates.write_text("as_of,base,quote,rate\n2026-11-01,USD,CNY,7.10\n", encoding="utf-8")
    people = tmp_path / "customers.txt"
    people.write_text("ACC-1,PERSON-1\nACC-2,PERSON-1\n", encoding="utf-8")
    reads: list[str] = []
    real_csv, real_accounts = fx.FxRates.from_csv.__func__, accounts.read_account_file
    monkeypatch.setattr(fx.FxRates, "from_csv", classmethod(lambda cls, path, source=None: reads.append("fx") or
                                                            real_csv(cls, path, source)))
    monkeypatch.setattr(accounts, "read_account_file",
                        lambda *args, **kwargs: reads.append("customers") or real_accounts(*args, **kwargs))
    tf = Taskflow("aml", fx_rates=str(rates), customers=str(people))
    for tenant in ("bank-1", "bank-2", "bank-3"):
        tf(deposit(f"{tenant}-t1", "1000.00"), context=bank(tenant))
    assert reads == ["fx", "customers"]  # read once, at load, whatever the number of tenants
    loaded, other = tf.pipeline, tf._tenant_pipeline("bank-2")[0]
    assert other.account_scorer.booster is loaded.account_scorer.booster and other.rules is loaded.rules
    assert loaded.scorer is None and other.scorer is None  # the per-transaction scorer: transaction_model=True
    assert other.reports_engine.fx is loaded.reports_engine.fx
    assert other.reports_engine.customers is loaded.reports_engine.customers
    for attribute in ("window", "reports_engine", "_model_alerted", "account_scorer", "case_book"):
        assert getattr(other, attribute) is not getattr(loaded, attribute)
    assert other.account_scorer.extractor is not loaded.account_scorer.extractor
    assert len(loaded.window) == 0 and len(other.window) == 1  # the default tenant sent nothing


def test_a_tenants_model_scores_ignore_other_tenants_history():
    """The scorer's feature state (in-degrees, pair counts, last incoming amount) is per tenant: bank 1's fan-in to
    HUB changes bank 1's score of a transfer to HUB, not bank 2's, which equals a fresh stream's."""
    tf = Taskflow("aml")
    for i in range(12):
        tf(transfer(f"b1-{i}", f"S{i}", "HUB", "9000.00", f"2026-11-02T0{i // 6}:{10 * (i % 6):02d}:00Z"),
           context=bank("bank-1"))
    probe = transfer("p", "S0", "HUB", "9000.00", "2026-11-02T03:00:00Z")
    seen_by_2 = tf(probe, context=bank("bank-2"))
    fresh = Taskflow("aml")(probe)
    seen_by_1 = tf({**probe, "transaction_id": "p1"}, context=bank("bank-1"))
    assert seen_by_2.model_score == fresh.model_score and seen_by_2.alerts == fresh.alerts
    assert seen_by_1.model_score != fresh.model_score
    # the account model's features too: bank 2's account scores and cases are a fresh stream's
    assert seen_by_2.account_scores == fresh.account_scores and seen_by_2.account_scores
    assert [c.model_dump() for c in seen_by_2.cases] == [c.model_dump() for c in fresh.cases]
    assert seen_by_1.account_scores["HUB"] != fresh.account_scores["HUB"]


def test_reset_and_reload_keep_each_banks_same_day_aggregate():
    tf = Taskflow("aml", model=False)
    tf(deposit("b1-t1", "30000.00"), context=bank("bank-1"))
    tf(deposit("b2-t1", "30000.00"), context=bank("bank-2"))
    tf.reload()
    assert tf.reset_state("bank-1") is True
    later = "2026-11-02T04:00:00Z"
    (kept,) = tf(deposit("b2-t2", "30000.00", when=later), context=bank("bank-2")).reports
    assert kept.transaction_ids == ["b2-t1", "b2-t2"]  # bank 2's history survived bank 1's reset and the reload
    assert tf(deposit("b1-t2", "30000.00", when=later), context=bank("bank-1")).reports == []  # bank 1 forgot


def test_concurrent_stages_leave_the_collector_as_they_found_it():
    """Two tenants' stages overlap in _gc_paused: the collector stays off until the last one leaves, then is on."""
    assert gc.isenabled()
    inside, leave = threading.Event(), threading.Event()

    def stage() -> None:
        with pipeline._gc_paused():
            inside.set()
            leave.wait(30)

    other = threading.Thread(target=stage)
    other.start()
    assert inside.wait(30)
    with pipeline._gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other stage is still inside: not re-enabled under it
    leave.set()
    other.join(30)
    assert gc.isenabled() and pipeline._gc_depth == 0
