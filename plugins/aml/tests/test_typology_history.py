"""Issue 21, section 2: the hub typologies and rapid pass-through judged against the account's own history and the
path of its money (``typologies/history.py``), with real values: a payroll is no fan-out, a merchant no fan-in, a
treasury sweep no pass-through; a new account that collects from fifteen new senders and forwards the money is a
fan-in."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from sectorflow import ConfigError
from sectorflow_aml.schema import Alert, Transaction
from sectorflow_aml.typologies import (
    FanInRule,
    FanOutRule,
    GatherScatterRule,
    RapidPassThroughRule,
    ScatterGatherRule,
    build_rules,
)
from sectorflow_aml.typologies.history import amount_similarity, dwell_seconds, own_baseline, slice_count
from sectorflow_aml.window import DAY, TransactionWindow

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


class Feed:
    """Transactions with consecutive ids through a window and rules (as in test_typologies)."""

    def __init__(self, *rules, lookback_days: float = 30.0) -> None:
        self.window = TransactionWindow(lookback_days)
        self.rules = rules
        self.n = 0
        self.alerts: list[Alert] = []

    def tx(self, src: str, dst: str, amount: float, days: float) -> list[Alert]:
        self.n += 1
        txn = Transaction(transaction_id=f"t{self.n}", timestamp=T0 + timedelta(days=days), sender_account=src,
                          receiver_account=dst, amount=Decimal(str(round(amount, 2))), currency="CNY")
        edge = self.window.add(txn)
        out = [a for rule in self.rules for a in rule.check(self.window, edge)]
        self.alerts.extend(out)
        return out

    def of(self, typology: str, subject: str | None = None) -> list[Alert]:
        return [a for a in self.alerts if a.typology == typology and (subject is None or a.accounts[0] == subject)]


def background(rng: random.Random, people: int = 100, transfers: int = 1500, days: float = 30.0,
               start: float = 0.0) -> list[tuple[float, str, str, float]]:
    """Small random transfers (10 to 500) between ``people`` over ``days``: the peers of the hub rules' Poisson
    test (at least 50 active accounts)."""
    names = [f"p{i}" for i in range(people)]
    out = []
    for _ in range(transfers):
        src, dst = rng.sample(names, 2)
        out.append((start + rng.uniform(0, days), src, dst, round(rng.uniform(10, 500), 2)))
    return out


def run(feed: Feed, events: list[tuple[float, str, str, float]]) -> None:
    for day, src, dst, amount in sorted(events):
        feed.tx(src, dst, amount, day)


def payroll_events(rng: random.Random, paydays: list[float], funded_the_day_before: bool,
                   ) -> list[tuple[float, str, str, float]]:
    """An employer paying 200 employees fixed salaries (4,000 to 12,000) on each payday, in an early-morning batch,
    its money coming either from 8 client companies paying it on their own days through the month or from its parent
    the day before each payday."""
    salaries = {f"emp{i:03d}": round(rng.uniform(4_000, 12_000), 2) for i in range(200)}
    payroll = sum(salaries.values())
    events = []
    for pay in paydays:
        if funded_the_day_before:
            events.append((pay - 1, "PARENT", "EMPLOYER", round(payroll * 1.02, 2)))
        else:
            for c in range(8):
                events.append((pay - 27 + c * 3.4 + rng.uniform(0, 1), f"CLIENT{c}", "EMPLOYER",
                               round(payroll / 8 * 1.1, 2)))
        for i, (emp, salary) in enumerate(salaries.items()):
            events.append((pay + 0.1 + i / 1440, "EMPLOYER", emp, salary))
    return events


# --- fan-out: a payroll against its own history -----------------------------------------------------------------

def test_a_payroll_paid_out_of_a_month_of_client_income_is_no_fan_out():
    """200 salaries at once are 200 distinct receivers in a day, far beyond the peers: the count rules fired on every
    payroll. But the money paid out came in over the month (8 client companies): less than half of it arrived within
    3 days before the batch: first in first out, the salaries were money it had held for weeks (``max_stale_share``),
    so it is no dispersal of money just received."""
    rng = random.Random(3)
    events = background(rng, days=90) + payroll_events(rng, [25.0, 53.0, 81.0], funded_the_day_before=False)
    counts_only = Feed(FanOutRule(burst_ratio=0, max_stale_share=1, min_new_share=0))
    run(counts_only, events)
    assert len(counts_only.of("fan_out", "EMPLOYER")) == 3  # what a fixed count does: every payday
    f = Feed(*build_rules())
    run(f, events)
    assert f.of("fan_out", "EMPLOYER") == []


def test_a_monthly_payroll_is_judged_against_its_own_last_month():
    """Funded by its parent the day before, the first payroll in the window looks like a dispersal (a new account,
    200 new receivers, all the money just received: nothing in the window tells it from one). A month later the
    window holds last month's run: the payees recur, so no fan-out. The window must hold the last month (35 days
    here; a 30-day window misses a 31-day month). Its weekly level is no help: last month's run lies in no whole
    earlier week of the window, and the three weeks between paid nobody (a level of 0: no burst test, and the money
    was fresh)."""
    paydays = [(datetime(2024, m, 25, tzinfo=timezone.utc) - T0).total_seconds() / DAY for m in (1, 2, 3)]
    rng = random.Random(4)
    events = background(rng, days=90) + payroll_events(rng, paydays, funded_the_day_before=True)
    f = Feed(*build_rules(), lookback_days=35)
    run(f, events)
    alerts = f.of("fan_out", "EMPLOYER")
    assert [a.time.month for a in alerts] == [1]
    assert alerts[0].evidence["own_baseline"] == -1 and alerts[0].evidence["through_share"] == 1.0
    assert alerts[0].evidence["stale_share"] == 0.0
    weekly_only = Feed(FanOutRule(min_new_share=0), lookback_days=35)
    run(weekly_only, events)
    later = weekly_only.of("fan_out", "EMPLOYER")[1:]
    assert [a.time.month for a in later] == [2, 3] and [a.evidence["own_baseline"] for a in later] == [0.0, 0.0]


# --- fan-in: a funnel against a merchant ---------------------------------------------------------------------------

def funnel_events(forward: float | None) -> list[tuple[float, str, str, float]]:
    """A new account receiving from 15 new senders 4,850 to 5,150 each within 2 days (75,000 in all), then paying
    ``forward`` of it on within a day."""
    rng = random.Random(15)
    events = [(20.0 + i * 2 / 15, f"snd{i}", "NEWACCT", round(5_000 * rng.uniform(0.97, 1.03), 2)) for i in range(15)]
    if forward:
        total = sum(e[3] for e in events)
        events.append((22.5, "NEWACCT", "ONWARD", round(total * forward, 2)))
    return events


def test_a_new_account_collecting_from_fifteen_new_senders_and_forwarding_95_percent_is_a_fan_in():
    """With no history in the window the count is its own burst; the similar amounts are in the evidence (and raise
    the score when ``similar_score`` is set). With the funnel reading of FIN-2014-A005 switched on
    (``min_through_share``: the money must move on), the alert waits for the payment out, which raises it."""
    rng = random.Random(21)
    f = Feed(*build_rules())
    run(f, background(rng) + funnel_events(0.95))
    alerts = f.of("fan_in", "NEWACCT")
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.time == T0 + timedelta(days=20 + 11 * 2 / 15)  # the twelfth new sender: ten are within the peers'
    # Poisson tail at 1e-4 (about 3 transfers a week each among the background's 100 people), twelve are not
    assert len(alert.accounts) == 13 and alert.score == 0.6
    assert alert.evidence["own_baseline"] == -1 and alert.evidence["similar_share"] == 1.0
    assert alert.evidence["amount_cv"] < 0.03 and alert.evidence["through_share"] == 0.0
    rng = random.Random(21)
    funnel = Feed(FanInRule(min_through_share=0.5))
    run(funnel, background(rng) + funnel_events(0.95))
    (alert,) = funnel.of("fan_in", "NEWACCT")
    assert alert.time == T0 + timedelta(days=22.5)
    assert funnel.window.ids[alert.transaction_ids[-1]].dst == "ONWARD"  # the payment out is its last transaction
    assert len(alert.accounts) == 16 and alert.evidence["through_share"] == pytest.approx(0.95, abs=1e-4)
    assert "95 % of it paid on so far" in alert.reasons[0].en and "95% 已转出" in alert.reasons[0].zh
    rng = random.Random(21)
    scored = Feed(FanInRule(similar_score=0.7))
    run(scored, background(rng) + funnel_events(0.95))
    assert [a.score for a in scored.of("fan_in", "NEWACCT")] == [0.7]


def test_with_the_funnel_reading_the_same_collection_kept_on_the_account_is_no_fan_in():
    for forward in (None, 0.3):  # kept, or 30 % paid on: most of it stays
        rng = random.Random(21)
        f = Feed(FanInRule(min_through_share=0.5))
        run(f, background(rng) + funnel_events(forward))
        assert f.of("fan_in") == []


def merchant_events(rng: random.Random, days: int = 60) -> list[tuple[float, str, str, float]]:
    """Four shops (the merchant and its peers, other merchants), each with 40 regular customers paying 1 to 500
    (log-uniform) two or three times a week, each shop paying its supplier 60 % of the week's takings weekly."""
    events = []
    for s in range(4):
        shop = f"SHOP{s}"
        takings = [0.0] * (days // 7 + 1)
        for c in range(40):
            day = rng.uniform(0, 3)
            while day < days:
                amount = round(10 ** rng.uniform(0, 2.7), 2)
                events.append((day, f"cust{s}-{c}", shop, amount))
                takings[int(day // 7)] += amount
                day += rng.uniform(2, 4)
        for week, total in enumerate(takings[:-1]):
            events.append((week * 7 + 6.9, shop, f"SUPPLIER{s}", round(total * 0.6, 2)))
    return events


def test_a_merchant_with_many_regular_customers_is_no_fan_in():
    """Each shop has 40 distinct payers a week, far above the peers' Poisson level, and pays 60 % of its takings
    on: a fixed count fires on every shop every week. Judged against its own history (as many customers every
    earlier week: no burst) and its customers (they recur: not new), no shop is a fan-in once it has a whole week of
    history in the window before the period; before that a shop new to the window has nothing to be judged by."""
    rng = random.Random(8)
    events = background(rng, days=60) + merchant_events(rng)
    counts_only = Feed(FanInRule(burst_ratio=0, min_through_share=0, min_new_share=0))
    run(counts_only, events)
    assert len({a.accounts[0] for a in counts_only.of("fan_in")} & {f"SHOP{s}" for s in range(4)}) == 4
    f = Feed(*build_rules())
    run(f, events)
    late = [a for a in f.of("fan_in") if a.accounts[0].startswith("SHOP") and a.time >= T0 + timedelta(days=14)]
    assert late == []
    assert len([a for a in f.of("fan_in") if a.accounts[0].startswith("SHOP")]) <= 8  # at most its first two weeks


# --- rapid pass-through -------------------------------------------------------------------------------------------

def test_a_daily_treasury_sweep_is_no_rapid_pass_through_but_a_new_mule_is():
    """An account that takes in 60,000 to 80,000 from its own sales account and sweeps it all on every day for a
    month passes on 100 % within hours each day: the fixed rule fires daily. Its sender recurs and each day is no more
    than its earlier days: from the second day on, no alert. A new account taking 3 x 30,000 from new senders and
    paying 95 % on within 6 hours is one, with its dwell time and new-sender share in the evidence."""
    rng = random.Random(5)
    events = []
    for day in range(30):
        amount = round(rng.uniform(60_000, 80_000), 2)
        events.append((day + 0.4, "SALES", "TREASURY", amount))
        events.append((day + 0.6, "TREASURY", "INVEST", amount))
    fixed = Feed(RapidPassThroughRule(min_new_share=0, burst_ratio=0))
    run(fixed, events)
    assert len(fixed.of("rapid_pass_through", "TREASURY")) == 30
    f = Feed(RapidPassThroughRule())
    run(f, events)
    assert [a.time.day for a in f.of("rapid_pass_through", "TREASURY")] == [1]  # its first day in the window only
    burst_only = Feed(RapidPassThroughRule(min_new_share=0))
    run(burst_only, events)
    assert [a.time.day for a in burst_only.of("rapid_pass_through", "TREASURY")] == [1, 2]  # a whole earlier
    # day is needed to compare with: from the third day on its own days say it is habit
    mule = Feed(RapidPassThroughRule())
    for i in range(3):
        mule.tx(f"new{i}", "MULE", 30_000, 40 + i * 0.05)
    out = mule.tx("MULE", "AWAY", 85_500, 40.35)
    assert len(out) == 1 and out[0].evidence["new_share"] == 1.0
    assert out[0].evidence["dwell_hours"] == pytest.approx(621 / 85.5, abs=0.01)  # first in first out: 30,000 for
    # 8.4 h, 30,000 for 7.2 h, 25,500 for 6.0 h
    assert "from new senders" in out[0].reasons[0].en


# --- gather-scatter ---------------------------------------------------------------------------------------------

def test_a_gather_scatter_hub_at_its_usual_weekly_level_is_no_burst():
    """(``burst_ratio`` is off by default for gather-scatter: docs/aml-rules.md.) A broker that every week takes from
    6 fresh clients and pays 6 fresh payees, passing on 95 %: a
    gather-scatter in its first two weeks (before a whole earlier week of history lies in the window); after that each
    week is what its own earlier weeks were."""
    f = Feed(GatherScatterRule(min_new_share=0, burst_ratio=2.0))
    n = 0
    for week in range(4):
        for i in range(6):
            n += 1
            f.tx(f"in{n}", "BROKER", 2_000, week * 7 + i * 0.1)
        for i in range(6):
            f.tx("BROKER", f"out{n}-{i}", 1_900, week * 7 + 1 + i * 0.1)
    assert [a.time.day for a in f.of("gather_scatter", "BROKER")] == [2, 9]  # weeks 0 and 1 only
    assert f.of("gather_scatter")[0].evidence["own_baseline_in"] == -1


def test_a_firm_funding_its_branches_every_week_is_no_scatter_gather_but_new_intermediaries_are():
    """A firm pays its three branches 5,000 every Monday and each branch pays the same wholesaler 4,600 on Wednesday:
    a scatter-gather the first week (nothing earlier in the window), then the firm's own usual path (every branch
    was paid and paid the wholesaler before). In week 7 the firm splits 9,000 over three accounts it never paid,
    which each pass 2,900 on to the wholesaler the next day: new paths, an alert."""
    f = Feed(ScatterGatherRule())
    for week in range(7):
        for i in range(3):
            f.tx("FIRM", f"BRANCH{i}", 5_000, week * 7 + i * 0.01)
            f.tx(f"BRANCH{i}", "WHOLESALE", 4_600, week * 7 + 2 + i * 0.01)
    assert [a.time.day for a in f.of("scatter_gather")] == [3]  # week 0 only (one alert per pair per window too)
    assert f.of("scatter_gather")[0].evidence == {"new_share": 1.0}
    for i in range(3):
        f.tx("FIRM", f"NEW{i}", 9_000 / 3, 49 + i * 0.01)
        f.tx(f"NEW{i}", "WHOLESALE", 2_900, 50 + i * 0.01)
    late = f.of("scatter_gather")[1:]  # the branches' week-6 legs lie in the window too: 3 of 6 paths are new
    assert len(late) == 1 and set(late[0].accounts[1:-1]) == {"NEW0", "NEW1", "NEW2", "BRANCH0", "BRANCH1", "BRANCH2"}
    assert late[0].time == T0 + timedelta(days=50.02) and late[0].evidence == {"new_share": 0.5}
    off = Feed(ScatterGatherRule(min_new_share=0))  # without the test the usual path alerts once a window
    for week in range(7):
        for i in range(3):
            off.tx("FIRM", f"BRANCH{i}", 5_000, week * 7 + i * 0.01)
            off.tx(f"BRANCH{i}", "WHOLESALE", 4_600, week * 7 + 2 + i * 0.01)
    assert len(off.of("scatter_gather")) == 2
    with pytest.raises(ConfigError, match="min_new_share"):
        ScatterGatherRule(min_new_share=2)


def test_a_gather_scatter_hub_with_its_usual_counterparties_is_none_but_a_new_crowd_is():
    """Defaults (new counterparties, no burst test): a broker that every week takes from the same 6 clients and pays
    the same 6 payees, passing on 95 %, is a gather-scatter only in its first week in the window; a new crowd of 8
    senders and 8 payees in week 6 is one again."""
    f = Feed(GatherScatterRule())
    for week in range(6):
        for i in range(6):
            f.tx(f"client{i}", "BROKER", 2_000, week * 7 + i * 0.1)
        for i in range(6):
            f.tx("BROKER", f"payee{i}", 1_900, week * 7 + 1 + i * 0.1)
    assert [a.time.day for a in f.of("gather_scatter", "BROKER")] == [2]
    for i in range(8):
        f.tx(f"stranger{i}", "BROKER", 2_000, 43 + i * 0.1)
    for i in range(8):
        f.tx("BROKER", f"mule{i}", 1_900, 44 + i * 0.1)
    late = f.of("gather_scatter", "BROKER")[1:]
    assert len(late) == 1 and late[0].time.day == 14  # day 44.5 after 1 January 2024
    # the seventh payment brings the payout to 80 % of the 16,000 collected (7 x 1,900 = 13,300)
    assert set(late[0].accounts[1:]) == {f"stranger{i}" for i in range(8)} | {f"mule{i}" for i in range(7)}


# --- the helpers ------------------------------------------------------------------------------------------------

def test_history_helpers_give_exact_figures():
    assert slice_count(30 * DAY, 7 * DAY) == 4 and slice_count(30 * DAY, DAY) == 29 and slice_count(30 * DAY, 30 * DAY) == 0
    share, cv = amount_similarity([100, 100, 100, 300], 1.25)
    assert share == 0.75 and cv == pytest.approx(0.5774, abs=1e-4)
    assert amount_similarity([5.0], 1.25) == (0.0, 0.0)
    f = Feed()
    f.tx("A", "H", 100, 8)       # slice 2 of H's weeks before the period (now = day 28: [7, 14))
    f.tx("B", "H", 100, 9)
    f.tx("C", "H", 100, 15)      # slice 1
    f.tx("D", "H", 100, 27)      # the period itself: not in the baseline
    h = f.window.get("H")
    now = T0.timestamp() + 28 * DAY
    assert own_baseline(h.incoming, "H", True, now, 7 * DAY, 30 * DAY, h.incoming[0].ts) == 1.0  # [7, 14) began
    # before H's first edge (day 8): only [14, 21) is a whole slice of its history
    assert own_baseline(h.incoming, "H", True, now, 7 * DAY, 30 * DAY, now - 21 * DAY) == 1.5  # (1 + 2) / 2
    assert own_baseline(h.incoming, "H", True, now, 7 * DAY, 30 * DAY, now - 10 * DAY) is None  # no whole slice
    ins = list(h.incoming)[:2]
    f.tx("H", "Z", 150, 10)
    assert dwell_seconds(ins, [h.outgoing[0]]) == pytest.approx((100 * 2 + 50 * 1) / 150 * DAY)


def test_new_parameters_are_checked():
    with pytest.raises(ConfigError, match="similar_ratio"):
        FanInRule(similar_ratio=0.5)
    with pytest.raises(ConfigError, match="min_through_share"):
        FanOutRule(min_through_share=1.5)
    with pytest.raises(ConfigError, match="burst_ratio"):
        RapidPassThroughRule(burst_ratio=-1)
