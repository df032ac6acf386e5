"""Work the report engine does per transaction, counted (never timed): the calls one transaction makes, the entries a
prune visits, the time-zone and FX look-ups; and the cached paths give exactly what the direct ones give."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import sectorflow_aml.calendars as calendars_module
from sectorflow_aml.calendars import business_day
from sectorflow_aml.fx import FxRates
from sectorflow_aml.reports import ReportEngine
from sectorflow_aml.schema import Transaction

UTC = timezone.utc


def txn(tid: str, amount: str, when: datetime, sender: str = "walk-in", receiver: str = "acct-A",
        channel: str = "cash_deposit", currency: str = "CNY", **extra: object) -> Transaction:
    return Transaction(transaction_id=tid, timestamp=when, sender_account=sender, receiver_account=receiver,
                       amount=Decimal(amount), currency=currency, channel=channel, **extra)


def calls_in(fn: Callable[[], object]) -> Counter[str]:
    """Python-level and built-in calls made while ``fn`` runs, by qualified name (``sys.setprofile``)."""
    seen: Counter[str] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            seen[frame.f_code.co_qualname] += 1
        elif event == "c_call":
            seen[f"C {getattr(arg, '__qualname__', arg)}"] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return Counter({name: n for name, n in seen.items()
                    if name != "C setprofile" and not name.endswith("<lambda>")})  # the counting's own calls


def test_a_transfer_below_every_threshold_costs_observe_alone_and_three_lookups() -> None:
    """The common case (AMLSim: 95 % of legs open a new aggregate far below its threshold): no helper call, no
    aggregate object, no day computation; the plan, and one look-up per side."""
    engine = ReportEngine("CN")
    when = datetime(2024, 3, 5, 2, tzinfo=UTC)
    for i in range(2):  # the first of a new business day prunes and starts the day; the next one works out its days
        engine.observe(txn(f"w{i}", "100", when, sender=f"S0{i}", receiver=f"R0{i}", channel="transfer"))
    first, second = (txn(f"t{i}", "100", when, sender="S1", receiver="R1", channel="transfer") for i in (1, 2))
    calls = calls_in(lambda: engine.observe(first))
    assert calls == Counter({"ReportEngine.observe": 1, "C dict.get": 3})
    # the same transfer a second time joins both aggregates: one aggregate object per side, no day computation
    again = calls_in(lambda: engine.observe(second))
    assert again["ReportEngine._opened"] == 2 and not any("_dates" in name or "_enter" in name for name in again)
    assert engine.open_reports() == []  # nothing met a threshold


def test_a_prune_visits_the_days_not_their_aggregates() -> None:
    engine = ReportEngine("CN", retention_days=2)
    start = datetime(2024, 3, 4, 2, tzinfo=UTC)
    (fired,) = engine.observe(txn("big", "60000", start, receiver="P"))
    for day in range(3):
        when = start + timedelta(days=day)
        for i in range(1000):
            engine.observe(txn(f"d{day}-{i}", "10", when, sender=f"S{i}", receiver=f"R{day}-{i}", channel="transfer"))
    # 2,000 aggregates a day; the first transaction of 8 March drops 4 and 5 March
    later = txn("next", "10", start + timedelta(days=4), sender="X", receiver="Y", channel="transfer")
    calls = calls_in(lambda: engine.observe(later))
    assert calls["ReportEngine._prune"] == 1
    c_calls = sum(n for name, n in calls.items() if name.startswith("C "))
    # a few per day kept or dropped (5 days seen), not per aggregate (4,001 dropped); the new day's bucket included
    assert c_calls <= 20 and max(calls.values()) <= 7, calls
    assert fired.report_id not in {d.report_id for d in engine.open_reports()}  # 4 March's report went with its day


def test_open_reports_lists_aggregates_in_the_order_they_opened_across_days() -> None:
    engine = ReportEngine("CN", retention_days=7)
    day1, day2 = datetime(2024, 3, 5, 2, tzinfo=UTC), datetime(2024, 3, 6, 2, tzinfo=UTC)
    engine.observe(txn("a", "60000", day1, receiver="A"))
    engine.observe(txn("b", "60000", day2, receiver="B"))
    engine.observe(txn("c", "60000", day1 + timedelta(hours=1), receiver="C"))  # late: 5 March, after 6 March's
    engine.observe(txn("d1", "30000", day1, receiver="D"))  # opens before E, fires after it
    engine.observe(txn("e", "60000", day2, receiver="E"))
    engine.observe(txn("d2", "30000", day1, receiver="D"))
    assert [d.customer_account for d in engine.open_reports()] == ["A", "B", "C", "D", "E"]


def test_the_business_day_is_worked_out_once_per_quarter_hour_even_with_a_us_cutoff(monkeypatch) -> None:
    direct: list[datetime] = []

    def counted(timestamp, *args, **kwargs):
        direct.append(timestamp)
        return business_day(timestamp, *args, **kwargs)

    monkeypatch.setattr(calendars_module, "business_day", counted)
    engine = ReportEngine("US", cutoff="18:00")
    start = datetime(2024, 3, 5, 20, tzinfo=UTC)  # 15:00 in New York
    for i in range(600):  # one deposit every 20 s for 3 h 20 min, across the 18:00 cutoff
        engine.observe(txn(f"c{i}", "10", start + timedelta(seconds=20 * i), currency="USD"))
    assert direct == []  # the cutoff falls on a bucket's start: every bucket took the cached path
    seconds = ReportEngine("US", cutoff="17:07:30.5")
    seconds.observe(txn("x", "10", start, currency="USD"))
    for i in range(90):  # 17:00-17:15 New York holds the cutoff: that bucket's transactions take the direct path
        seconds.observe(txn(f"s{i}", "10", start + timedelta(hours=2, seconds=10 * i), currency="USD"))
    assert len(direct) == 90


def test_the_cached_business_day_is_business_day_exactly() -> None:
    """Every 7 minutes over the New York and Kathmandu days around the March 2024 clock change, with and without a
    cutoff (whole minutes and one with seconds and a fraction), US and CN rules."""
    cases = [("US", "America/New_York", None), ("US", "America/New_York", "18:00"),
             ("US", "America/New_York", "02:30:15.25"), ("CN", "Asia/Shanghai", None),
             ("CN", "Asia/Kathmandu", None), ("US", "Europe/London", "00:10")]
    start = datetime(2024, 3, 8, 0, 3, 11, tzinfo=UTC)
    for jurisdiction, zone, cutoff in cases:
        engine = ReportEngine(jurisdiction, timezone=zone, cutoff=cutoff)
        calendar = engine.calendar if jurisdiction == "US" else None
        for i in range(0, 5 * 24 * 60, 7):
            when = start + timedelta(minutes=i, microseconds=i * 997)
            assert engine._dates(when) == business_day(when, engine.timezone, calendar, engine.cutoff), (zone, when)


def test_a_foreign_currency_rate_is_looked_up_once_per_pair_and_local_day() -> None:
    fx = FxRates.from_mapping({"EUR/USD": "1.1", "USD/CNY": "7.10"}, as_of=datetime(2024, 1, 2).date())
    looked: list[tuple[str, str]] = []
    rate = fx.rate
    fx.rate = lambda base, quote, on: looked.append((base, quote)) or rate(base, quote, on)  # type: ignore[method-assign]
    engine = ReportEngine("CN", fx=fx)
    start = datetime(2024, 3, 5, 1, tzinfo=UTC)  # 09:00 in Beijing
    amounts = [Decimal("1234.5678") + i for i in range(300)]
    for i, amount in enumerate(amounts):  # 300 EUR deposits of one Beijing day, each below USD 10,000
        engine.observe(txn(f"e{i}", str(amount), start + timedelta(minutes=i), receiver=f"A{i}", currency="EUR"))
    assert looked == [("EUR", "USD")]
    # the amounts are those FxRates.convert gives: A0's second deposit takes it over USD 10,000
    (draft,) = engine.observe(txn("big", "9000", start + timedelta(hours=6), receiver="A0", currency="EUR"))
    want = rate("EUR", "USD", start.date())
    assert draft.total_amount == FxRates.convert(fx, amounts[0], "EUR", "USD", start.date()) + \
        FxRates.convert(fx, Decimal(9000), "EUR", "USD", start.date())
    assert [r["amount_usd"] for r in draft.elements["transactions"]] == [
        str((amounts[0] * want).quantize(Decimal("0.01"))), "9900.00"]
    engine.fx = FxRates.from_mapping({"EUR/USD": "2"}, as_of=datetime(2024, 1, 2).date())  # new rates are used
    (doubled,) = engine.observe(txn("b2", "5000", start + timedelta(hours=7), receiver="N", currency="EUR"))
    assert doubled.total_amount == Decimal("10000.00")
