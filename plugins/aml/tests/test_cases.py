"""Cases: one per account and review period, one score, ranks under an alert budget (sectorflow_aml.cases)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import typer
from typer.testing import CliRunner

from sectorflow import ConfigError, Taskflow
from sectorflow_aml.cases import AlertBudget, CaseBook, case_score, read_cases
from sectorflow_aml.cli import register
from sectorflow_aml.schema import Alert, Reason, Transaction

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


def rec(i: int, src: str, dst: str, amount: str, *, hours: float = 0, channel: str = "transfer",
        currency: str = "CNY") -> dict:
    return {"transaction_id": f"c{i}", "timestamp": (T0 + timedelta(hours=hours)).isoformat(),
            "sender_account": src, "receiver_account": dst, "amount": amount, "currency": currency,
            "channel": channel}


def fan_in_day(hub: str, start: int, hours: float, n: int = 12) -> list[dict]:
    """``n`` distinct senders paying ``hub`` within an hour: one fan-in alert (default min_senders=10)."""
    return [rec(start + k, f"{hub}-S{k}", hub, "900", hours=hours + k / 60) for k in range(n)]


def background(n: int = 60) -> list[dict]:
    """Pairs paying each other once: active accounts, no alert."""
    return [rec(500 + k, f"P{k}", f"Q{k}", "120", hours=0.5 + k / 100) for k in range(n)]


@pytest.fixture(scope="module")
def tf() -> Taskflow:
    return Taskflow("aml", model=False, rules={"cycle": False})


def run(tf: Taskflow, records: list[dict], **_: object) -> list:
    tf.reset_state()
    return tf(records)


def test_a_fan_in_becomes_one_case_of_the_hub_with_its_transactions_and_counterparties(tf: Taskflow) -> None:
    records = background() + fan_in_day("H1", 0, 2.0) + [rec(90, "H1", "Z", "5000", hours=3)]
    results = run(tf, records)
    hit = next(r for r in results if r.alerts)
    assert hit.typologies == ["fan_in"]
    (update,) = hit.cases
    assert update.account == "H1" and update.period == "2024-03" and update.typologies == ["fan_in"]
    assert update.score == pytest.approx(0.6) and update.evidence_score == pytest.approx(0.6)
    assert update.model_score is None and update.rank == 1 and update.within_budget
    assert update.case_id.startswith("case-2024-03-") and update.budget == "share:0.01"
    assert set(update.transaction_ids) == {f"c{k}" for k in range(10)}  # the tenth sender completed it
    assert len(update.counterparties) == 10 and update.transactions == 1 and update.amount_in == 900.0
    # the hub's later transactions join the case; the senders got no case (they are no subject of the fan-in)
    last = results[-1]
    assert [c.case_id for c in last.cases] == [update.case_id]
    assert last.cases[0].transactions == 4 and last.cases[0].amount_out == 5000.0
    assert last.cases[0].transaction_ids == ["c90"] and last.cases[0].counterparties == ["Z"]
    (case,) = tf.pipeline.case_book.cases(everything=True)
    assert case.case_id == update.case_id and case.transactions == 4
    assert case.transaction_ids == [*(f"c{k}" for k in (9, *range(9), 10, 11)), "c90"]
    assert case.active_accounts == 120 + 13 + 1 and case.budget_size == 1  # 1 % of 134, rounded down


def test_one_at_a_time_and_batch_give_the_same_cases(tf: Taskflow) -> None:
    records = background() + fan_in_day("H1", 0, 2.0) + fan_in_day("H2", 20, 4.0, n=15)
    batch = [r.cases for r in run(tf, records)]
    tf.reset_state()
    single = [tf([r])[0].cases for r in records]
    assert batch == single and sum(map(len, batch)) == 3 + 6  # each hub from its tenth sender on


def test_ranks_and_the_budget(tf: Taskflow, tmp_path: Path) -> None:
    """Two fan-in hubs: the one with a second typology ranks first; a budget of one case keeps only it."""
    records = background() + fan_in_day("H1", 0, 2.0) + fan_in_day("H2", 20, 4.0)
    records += [rec(40 + k, "H2", f"H2-R{k}", "850", hours=5 + k / 60) for k in range(12)]  # and a fan-out
    tf.reset_state()
    results = tf(records)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in results))
    cases = read_cases(path, everything=True)
    assert [(c.account, c.rank) for c in cases] == [("H2", 1), ("H1", 2)]
    h2 = cases[0]
    assert h2.typologies == ["fan_in", "fan_out", "gather_scatter"]  # it paid out 80 % of 10,800 at the 11th
    assert h2.score == pytest.approx(1 - 0.4 * 0.3 * 0.4)  # noisy-OR of each typology's alert score
    assert [c.within_budget for c in cases] == [True, False]  # 1 % of 157 active accounts: 1 case (rounded down)
    assert [c.account for c in read_cases(path, alert_budget=1)] == ["H2"]
    assert [c.account for c in read_cases(path, alert_budget="score>=0.7")] == ["H2"]
    # the file gives back the live book's cases (the lists joined from every update)
    assert cases == tf.pipeline.case_book.cases(everything=True)


def test_budget_options_parse_and_refuse_nonsense() -> None:
    assert AlertBudget.parse(None).label() == "share:0.01"
    assert AlertBudget.parse(25).size(10_000) == 25
    assert AlertBudget.parse("2%").size(1_000) == 20 and AlertBudget.parse(0.001).size(1_500) == 1
    # a share is rounded down (never more than it), but a period with an active account gets one case
    assert [AlertBudget.parse(None).size(n) for n in (0, 1, 99, 100, 691, 1_299, 1_300)] == [0, 1, 1, 1, 6, 12, 13]
    assert AlertBudget.parse("score>=0.7").within(50, 0.71, 10, False)
    assert not AlertBudget.parse("score>=0.7").within(1, 0.69, 10, False)
    assert AlertBudget.parse(3).within(9, 0.1, 10, True)  # a mandatory case is within whatever its rank
    for bad in (0, -1, 1.5, "lots", True, "score>=2"):
        with pytest.raises(ConfigError, match="alert_budget"):
            AlertBudget.parse(bad)
    with pytest.raises(ConfigError, match="case_period"):
        Taskflow("aml", model=False, case_period="year")(background(1))


def test_structuring_raises_a_case_within_budget_on_its_own() -> None:
    tf = Taskflow("aml", model=False, alert_budget=1, jurisdiction="US")
    cash = [rec(k, f"W{k}", "A9", "9500", hours=k, channel="cash_deposit", currency="USD") for k in range(3)]
    hubs = [{**r, "currency": "USD"} for r in fan_in_day("H1", 10, 30.0) + fan_in_day("H2", 30, 40.0)]
    results = tf(cash + hubs)
    book = tf.pipeline.case_book
    every = book.cases(everything=True)
    structuring = next(c for c in every if "structuring" in c.typologies)
    assert structuring.account == "A9" and structuring.mandatory and structuring.within_budget
    # it takes the budget's first place: one case in a budget of one
    assert structuring.rank == 1 and [c.account for c in book.cases()] == ["A9"]
    assert all(not c.cases for r in results[:1] for c in [r])  # the first deposit alone opened nothing
    two = Taskflow("aml", model=False, alert_budget=2, jurisdiction="US")
    two(cash + hubs)
    assert [c.account for c in two.pipeline.case_book.cases()] == ["A9", "H1"]  # then the highest score


def test_a_mandatory_case_ranks_first_whatever_its_score() -> None:
    book = CaseBook(timezone.utc, "month", budget=1)
    deposit = Transaction(transaction_id="t1", timestamp=T0, sender_account="TILL", receiver_account="A",
                          amount="9500", currency="USD", channel="cash_deposit")
    book.update(_txn(2, "B", "C", T0), 100.0, [_alert("fan_in", ["B"], "t2", 0.9)])
    (a,) = book.update(deposit, 9500.0, [_alert("structuring", ["A"], "t1", 0.1)], None, {"structuring-t1"})
    assert a.mandatory and a.rank == 1 and a.within_budget
    assert [(c.account, c.rank, c.within_budget) for c in book.cases(everything=True)] == [("A", 1, True),
                                                                                         ("B", 2, False)]
    # told that the alert holds no cash (a funnel of transfers): evidence only, ranked by its score
    plain = CaseBook(timezone.utc, "month", budget=1)
    plain.update(_txn(2, "B", "C", T0), 100.0, [_alert("fan_in", ["B"], "t2", 0.9)])
    (a,) = plain.update(_txn(1, "X", "A", T0), 9500.0, [_alert("structuring", ["A"], "t1", 0.1)], None, set())
    assert not a.mandatory and a.rank == 2 and not a.within_budget


def test_structuring_of_transfers_alone_is_evidence_not_a_mandatory_case(tmp_path: Path) -> None:
    """Three client companies paying an employer 41,000-49,000 CNY within a week: the structuring rule's funnel
    variant fires (just under the 50,000 CNY cash threshold), but no cash moved, so no currency report was evaded:
    the case is ranked by its score like any other, not raised on its own (a generated everyday bank's employers
    got cases beside the budget: 1.16 % of active accounts in a month)."""
    tf = Taskflow("aml", model=False, alert_budget=1)
    clients = [rec(k, f"CLIENT{k}", "EMP", amount, hours=24 * k) for k, amount in enumerate(("45759", "41198", "47067"))]
    results = tf(background() + fan_in_day("H1", 100, 1.0) + clients)
    hit = results[-1]
    assert [(a.typology, a.variant) for a in hit.alerts] == [("structuring", "fan_in")]
    (update,) = [u for u in hit.cases if u.account == "EMP"]
    assert update.typologies == ["structuring"] and not update.mandatory
    assert update.score == pytest.approx(0.8)  # the alert's score: it still ranks as evidence
    # the same payments as cash deposits at three tills: a funnel account, mandatory
    cash = Taskflow("aml", model=False, alert_budget=1)
    tills = [{**r, "sender_account": f"TILL{k}", "channel": "cash_deposit"} for k, r in enumerate(clients)]
    (case,) = [u for u in cash(background() + tills)[-1].cases if u.account == "EMP"]
    assert case.mandatory and case.within_budget and case.rank == 1


def test_periods_follow_the_banks_time_zone() -> None:
    book = CaseBook(ZoneInfo("Asia/Shanghai"), "month")
    assert book.period_of(datetime(2024, 1, 31, 15, 59, tzinfo=timezone.utc)) == "2024-01"
    assert book.period_of(datetime(2024, 1, 31, 16, 0, tzinfo=timezone.utc)) == "2024-02"  # 00:00 on 1 Feb there
    week = CaseBook(ZoneInfo("America/New_York"), "week")
    assert week.period_of(datetime(2024, 3, 11, 3, 59, tzinfo=timezone.utc)) == "2024-W10"  # Sun 23:59 EDT
    assert week.period_of(datetime(2024, 3, 11, 4, 0, tzinfo=timezone.utc)) == "2024-W11"
    day = CaseBook(timezone(timedelta(hours=8)), "day")
    assert day.period_of(datetime(2024, 3, 10, 16, 0, tzinfo=timezone.utc)) == "2024-03-11"


def _txn(i: int, src: str, dst: str, when: datetime) -> Transaction:
    return Transaction(transaction_id=f"t{i}", timestamp=when, sender_account=src, receiver_account=dst,
                       amount="100", currency="CNY")


def _alert(typology: str, accounts: list[str], tid: str, score: float) -> Alert:
    return Alert(alert_id=f"{typology}-{tid}", typology=typology, accounts=accounts, transaction_ids=[tid],
                 score=score, fired_by="test", time=T0,
                 reasons=[Reason(code=f"typology.{typology}", en="x", zh="x", source="test")])


def test_model_scores_open_cases_and_the_case_keeps_the_highest_in_its_period() -> None:
    book = CaseBook(timezone.utc, "month", budget=1, min_model_score=0.3)
    assert book.update(_txn(1, "A", "B", T0), 100.0, [], {"A": 0.2, "B": 0.1}) == []  # below the floor
    (a,) = book.update(_txn(2, "A", "B", T0 + timedelta(hours=1)), 100.0, [], {"A": 0.5, "B": 0.1})
    assert a.account == "A" and a.model_score == 0.5 and a.score == 0.5 and a.evidence_score == 0
    a2, b = book.update(_txn(3, "A", "B", T0 + timedelta(hours=2)), 100.0, [_alert("fan_in", ["B"], "t3", 0.6)],
                        {"A": 0.4, "B": 0.1})
    assert a2.model_score == 0.5  # the highest of the period, not the latest
    # with a model score the case's score is that calibrated score; the fan-in hit is evidence, not rank
    assert b.account == "B" and b.score == case_score(0.1, 0.6) == 0.1 and b.evidence_score == pytest.approx(0.6)
    assert (a2.rank, b.rank) == (1, 2)  # each update's rank when it was made
    assert [(c.account, c.rank, c.within_budget) for c in book.cases(everything=True)] == [("A", 1, True),
                                                                                         ("B", 2, False)]


def test_close_model_score_is_the_latest_in_its_period_and_can_go_down() -> None:
    """``case_model_score="close"`` (a bundle trained on month-end rows): the case's model score is its account's
    score after its latest transaction in the period (at the period's close: the period-close score)."""
    with pytest.raises(ConfigError, match="case_model_score"):
        CaseBook(timezone.utc, "month", model_score="mean")
    book = CaseBook(timezone.utc, "month", budget=1, min_model_score=0.3, model_score="close")
    assert book.update(_txn(1, "A", "B", T0), 100.0, [], {"A": 0.2, "B": 0.1}) == []  # below the floor
    (a,) = book.update(_txn(2, "A", "B", T0 + timedelta(hours=1)), 100.0, [], {"A": 0.5, "B": 0.1})
    assert a.model_score == 0.5 and a.rank == 1
    a2, b = book.update(_txn(3, "A", "B", T0 + timedelta(hours=2)), 100.0, [_alert("fan_in", ["B"], "t3", 0.6)],
                        {"A": 0.4, "B": 0.1})
    assert (a2.model_score, a2.score, b.model_score) == (0.4, 0.4, 0.1)  # the latest, not the highest (0.5)
    # B's latest 0.45 ranks above A's 0.4 (A's update was made first, while B still stood at 0.1)
    a3, b3 = book.update(_txn(4, "A", "B", T0 + timedelta(hours=3)), 100.0, [], {"A": 0.4, "B": 0.45})
    assert (a3.model_score, b3.model_score, a3.rank, b3.rank) == (0.4, 0.45, 1, 1)
    (a4,) = book.update(_txn(5, "A", "C", T0 + timedelta(hours=4)), 100.0, [], {"A": 0.01, "C": 0.0})
    assert a4.model_score == 0.01 and a4.rank == 2  # the case stays open below the floor; C opens none
    final = [(c.account, c.model_score, c.rank) for c in book.cases(everything=True)]
    assert final == [("B", 0.45, 1), ("A", 0.01, 2)]
    # a restored book keeps the setting and the scores; a spawned one the setting
    again = CaseBook(timezone.utc, "month")
    again.load_state_dict(book.state_dict())
    assert again.model_score == "close" and [(c.account, c.model_score, c.rank)
                                             for c in again.cases(everything=True)] == final
    assert book.spawn().model_score == "close"
    updates = {u.account: u for u in again.update(_txn(6, "A", "C", T0 + timedelta(hours=5)), 100.0, [],
                                                  {"A": 0.9, "C": 0.0})}
    assert updates["A"].model_score == 0.9 and updates["A"].rank == 1
    assert updates["B"].model_score == 0.45 and updates["B"].rank == 2  # B's counterparty A crossed a tenth
    # a state written before the option reads as "max"
    old = book.state_dict()
    del old["model_score"]
    again.load_state_dict(old)
    assert again.model_score == "max"


def test_closed_periods_are_pruned_and_late_transactions_of_them_update_nothing() -> None:
    book = CaseBook(timezone.utc, "month")
    jan, feb, mar = (datetime(2024, m, 10, tzinfo=timezone.utc) for m in (1, 2, 3))
    assert book.update(_txn(1, "A", "B", jan), 1.0, [_alert("cycle", ["A", "B"], "t1", 0.8)])
    book.update(_txn(2, "A", "B", feb), 1.0, [_alert("cycle", ["A", "B"], "t2", 0.8)])
    assert {c.period for c in book.cases(everything=True)} == {"2024-01", "2024-02"}
    book.update(_txn(3, "C", "D", mar), 1.0, [])
    assert {c.period for c in book.cases(everything=True)} == {"2024-02"}
    assert book.update(_txn(4, "A", "B", jan), 1.0, [_alert("cycle", ["A", "B"], "t4", 0.8)]) == []
    assert set(book.state_dict()["active"]) == {"2024-02", "2024-03"}


def test_state_dict_round_trip_continues_exactly(tmp_path: Path) -> None:
    records = background() + fan_in_day("H1", 0, 2.0) + fan_in_day("H2", 20, 4.0)
    head, tail = records[:70], records[70:]
    whole = Taskflow("aml", model=False)
    expected = [r.cases for r in whole(records)]
    first = Taskflow("aml", model=False)
    got = [r.cases for r in first(head)]
    state = json.loads(json.dumps(first.pipeline.case_book.state_dict()))  # JSON-serialisable
    second = Taskflow("aml", model=False)
    second.pipeline.window = first.pipeline.window  # the window is the `state` helper's; the book is restored here
    second.pipeline.case_book.load_state_dict(state)
    assert second.pipeline.case_book.state_dict() == state
    got += [r.cases for r in second(tail)]
    assert got == expected
    assert second.pipeline.case_book.cases(everything=True) == whole.pipeline.case_book.cases(everything=True)
    with pytest.raises(ConfigError, match="case-book state is damaged"):
        second.pipeline.case_book.load_state_dict({"version": 7})


def test_cli_lists_cases_and_draws_one(tmp_path: Path) -> None:
    records = background() + fan_in_day("H1", 0, 2.0) + fan_in_day("H2", 20, 4.0)
    source = tmp_path / "input.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    tf = Taskflow("aml", model=False, alert_budget=2)  # 1 % of 157 active accounts would be one case
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in tf(records)))
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    listed = runner.invoke(app, ["aml", "cases", "--results", str(results), "--json"])
    assert listed.exit_code == 0, listed.output
    lines = [json.loads(x) for x in listed.stdout.splitlines()]  # the count goes to stderr
    assert listed.stderr.startswith("2 case(s) within the alert budget in ")
    assert [x["account"] for x in lines] == ["H1", "H2"] and [x["rank"] for x in lines] == [1, 2]
    assert {"case_id", "account", "period", "score", "rank", "typologies", "transaction_ids"} <= set(lines[0])
    text = runner.invoke(app, ["aml", "cases", "--results", str(results), "--period", "2024-02"])
    assert isinstance(text.exception, ConfigError) and "the results' periods: 2024-03" in str(text.exception)
    plain = runner.invoke(app, ["aml", "cases", "--results", str(results)])
    assert plain.stdout.splitlines()[1].split("\t")[1:5] == ["2024-03", "#1/2", "0.600", "H1"]  # after the header
    png = tmp_path / "case.png"
    drawn = runner.invoke(app, ["aml", "explain", lines[0]["case_id"], "--results", str(results), "--input",
                                str(source), "--format", "jsonl", "--png", str(png)])
    assert drawn.exit_code == 0, drawn.output
    assert png.read_bytes()[:4] == b"\x89PNG"
    missing = runner.invoke(app, ["aml", "explain", "case-2024-03-000000000000", "--results", str(results),
                                  "--input", str(source), "--format", "jsonl", "--png", str(png)])
    assert isinstance(missing.exception, ConfigError) and "No case" in str(missing.exception)


def test_each_tenant_has_its_own_cases():
    """Two banks' hubs of the same id: each bank's case holds its own transactions, ranks and active accounts."""
    from sectorflow import CallContext

    tf = Taskflow("aml", model=False)
    one, two = CallContext(actor="a", tenant="bank-1"), CallContext(actor="b", tenant="bank-2")
    first = tf(background() + fan_in_day("H1", 0, 2.0), context=one)
    second = tf(fan_in_day("H1", 0, 2.0, n=14), context=two)
    (a,) = [c for r in first for c in r.cases][-1:]
    (b,) = [c for r in second for c in r.cases][-1:]
    assert a.case_id == b.case_id  # the same account and month ...
    assert (a.active_accounts, b.active_accounts) == (133, 15) and a.transactions == 3 and b.transactions == 5
    assert tf.pipeline.case_book.cases(everything=True) == []  # the default tenant sent nothing


def test_the_pipeline_state_carries_the_case_book_and_the_window_peer_count():
    records = background() + fan_in_day("H1", 0, 2.0) + fan_in_day("H2", 20, 4.0)
    whole = Taskflow("aml", model=False)
    expected = [r.cases for r in whole(records)]
    first = Taskflow("aml", model=False)
    got = [r.cases for r in first(records[:70])]
    state = json.loads(json.dumps(first.pipeline.state_dict(), allow_nan=False))
    second = Taskflow("aml", model=False)
    second.pipeline.load_state_dict(state)
    assert second.pipeline.window.active == first.pipeline.window.active == 120 + 11  # 60 pairs, H1 and 10 senders
    got += [r.cases for r in second(records[70:])]
    assert got == expected
    assert second.pipeline.case_book.state_dict() == whole.pipeline.case_book.state_dict()
