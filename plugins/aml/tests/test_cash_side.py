"""The cash side of a cash transaction (the till, cash or walk-in account a bank books cash against: the receiver of a
cash withdrawal, the sender of a cash deposit) is no hub of the hub typologies (fan-in, fan-out, gather-scatter,
rapid pass-through) and no leg of a scatter-gather; the customer side keeps every pattern, and many deposits at
distinct tills into one account stay a funnel (the structuring rule's cash side is tested in test_typologies)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from sectorflow import Taskflow
from sectorflow_aml.schema import Alert, Transaction
from sectorflow_aml.typologies import (
    FanInRule,
    FanOutRule,
    GatherScatterRule,
    RapidPassThroughRule,
    ScatterGatherRule,
)
from sectorflow_aml.window import TransactionWindow

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)
HUB_RULES = (FanInRule, FanOutRule, GatherScatterRule, RapidPassThroughRule, ScatterGatherRule)


class Feed:
    """Runs transactions with consecutive ids t1, t2, ... through a window and rules (as in test_typologies)."""

    def __init__(self, *rules) -> None:
        self.window = TransactionWindow(30.0)
        self.rules = rules
        self.n = 0
        self.alerts: list[Alert] = []

    def tx(self, src: str, dst: str, amount: float, *, days: float = 0, hours: float = 0,
           channel: str = "transfer") -> list[Alert]:
        self.n += 1
        txn = Transaction(transaction_id=f"t{self.n}", timestamp=T0 + timedelta(days=days, hours=hours),
                          sender_account=src, receiver_account=dst, amount=Decimal(str(amount)), currency="CNY",
                          channel=channel)
        edge = self.window.add(txn)
        out = [a for rule in self.rules for a in rule.check(self.window, edge)]
        self.alerts.extend(out)
        return out


def all_hub_rules() -> Feed:
    return Feed(*(cls() for cls in HUB_RULES))


# --- the till is no hub ------------------------------------------------------------------------------------------

def test_cash_withdrawals_booked_against_one_till_give_no_fan_in_on_the_till():
    """12 customers withdraw cash at a bank that books cash against CASH: was a fan_in alert whose subject is CASH."""
    f = all_hub_rules()
    for i in range(12):
        f.tx(f"C{i}", "CASH", 3000, hours=i, channel="cash_withdrawal")
    assert f.alerts == []


def test_cash_deposits_booked_against_one_till_give_no_fan_out_on_the_till():
    f = all_hub_rules()
    for i in range(12):
        f.tx("CASH", f"C{i}", 3000, hours=i, channel="cash_deposit")
    assert f.alerts == []


def test_till_taking_withdrawals_and_paying_deposits_is_no_gather_scatter_nor_pass_through():
    """Was gather_scatter (0.7) and rapid_pass_through (0.65) alerts on CASH: 6 customers withdraw 20,000 each,
    6 others deposit 19,000 each within the day."""
    f = all_hub_rules()
    for i in range(6):
        f.tx(f"W{i}", "CASH", 20_000, hours=i, channel="cash_withdrawal")
    for i in range(6):
        f.tx("CASH", f"D{i}", 19_000, hours=8 + i, channel="cash_deposit")
    assert f.alerts == []


def test_cash_legs_through_a_till_are_no_scatter_gather():
    # an employer pays three employees, who each withdraw most of it at the till: was "EMP split 45,000 over 3
    # intermediaries, which then paid CASH", score 0.75, a suspicious report draft by default
    salaries = Feed(ScatterGatherRule())
    for i in range(3):
        salaries.tx("EMP", f"E{i}", 15_000, days=0, hours=i)
    for i in range(3):
        salaries.tx(f"E{i}", "CASH", 12_000, days=1, hours=i, channel="cash_withdrawal")
    # three customers deposit cash at one till and each pays one landlord: CASH was the originator (the subject)
    rent = Feed(ScatterGatherRule())
    for i in range(3):
        rent.tx("CASH", f"T{i}", 4_000, days=0, hours=i, channel="cash_deposit")
    for i in range(3):
        rent.tx(f"T{i}", "LANDLORD", 4_000, days=1, hours=i)
    # A withdraws at three branch tills, B deposits at the same three: the tills are no intermediaries
    tills = Feed(ScatterGatherRule())
    for i in range(3):
        tills.tx("A", f"TILL-{i}", 9_000, days=0, hours=i, channel="cash_withdrawal")
    for i in range(3):
        tills.tx(f"TILL-{i}", "B", 9_000, days=1, hours=i, channel="cash_deposit")
    assert salaries.alerts == [] and rent.alerts == [] and tills.alerts == []
    # the same shapes paid by transfer still are the pattern
    transfers = Feed(ScatterGatherRule())
    for i in range(3):
        transfers.tx("EMP", f"E{i}", 15_000, days=0, hours=i)
    for i in range(3):
        transfers.tx(f"E{i}", "OUT", 12_000, days=1, hours=i)
    (alert,) = transfers.alerts
    assert alert.typology == "scatter_gather" and alert.accounts == ["EMP", "E0", "E1", "E2", "OUT"]


# --- the customer side keeps its patterns ------------------------------------------------------------------------

def test_deposits_at_ten_distinct_tills_into_one_account_are_a_fan_in_of_that_account():
    """FinCEN FIN-2014-A005's funnel account: cash deposits at branches into one account. Each till counts as a
    sender, as in the structuring fan-in; the tills are not listed as accounts of the alert."""
    f = Feed(FanInRule())
    for i in range(9):
        f.tx(f"TILL-{i:03d}", "FUNNEL", 3_000, hours=i, channel="cash_deposit")
    assert f.alerts == []
    (alert,) = f.tx("S1", "FUNNEL", 3_000, hours=10)  # a transfer from a customer is the tenth sender
    assert alert.typology == "fan_in" and alert.accounts == ["FUNNEL", "S1"]
    assert alert.transaction_ids == [f"t{i}" for i in range(1, 11)]
    assert alert.reasons[0].en == ("10 distinct senders paid into FUNNEL within 7 days (10 transfers, total "
                                   "30,000.00; 9 of the senders are the tills or walk-in ids of cash deposits); "
                                   "0 % of it paid on so far; no earlier history in the window; 100 % of the "
                                   "amounts within a factor 1.25 of their median")
    assert "9 个为现金存入的柜台或临柜编号" in alert.reasons[0].zh
    # ten deposits at one till are one sender; deposits booked on the account itself are none
    one_till = Feed(FanInRule())
    for i in range(10):
        one_till.tx("CASH", "C1", 3_000, hours=i, channel="cash_deposit")
        one_till.tx("C2", "C2", 3_000, hours=i, channel="cash_deposit")
    assert one_till.alerts == []


def test_a_customer_withdrawing_at_ten_tills_is_a_fan_out_of_the_customer():
    f = Feed(FanOutRule())
    for i in range(10):
        f.tx("MULE", f"ATM-{i}", 2_000, hours=i, channel="cash_withdrawal")
    (alert,) = f.alerts
    assert alert.typology == "fan_out" and alert.accounts == ["MULE"] and len(alert.transaction_ids) == 10


def test_cash_in_and_wire_out_is_rapid_pass_through_of_the_customer():
    cash_in = Feed(RapidPassThroughRule())
    cash_in.tx("CASH", "M", 100_000, hours=0, channel="cash_deposit")
    (alert,) = cash_in.tx("M", "Y", 95_000, hours=3, channel="wire")
    assert alert.accounts == ["M", "Y"] and alert.transaction_ids == ["t1", "t2"]
    cash_out = Feed(RapidPassThroughRule())
    cash_out.tx("X", "M", 100_000, hours=0)
    (alert,) = cash_out.tx("M", "CASH", 96_000, hours=3, channel="cash_withdrawal")
    assert alert.accounts == ["M", "X"] and alert.transaction_ids == ["t1", "t2"]
    # the till's own side (withdrawals in, deposits out) adds nothing to a customer's flows either
    mixed = Feed(RapidPassThroughRule())
    mixed.tx("X", "CASH", 100_000, hours=0, channel="cash_withdrawal")
    assert mixed.tx("CASH", "M", 96_000, hours=2, channel="cash_deposit") == []


def test_customer_hub_fed_by_cash_at_tills_and_paying_out_is_gather_scatter():
    f = Feed(GatherScatterRule())
    for i in range(5):
        f.tx(f"TILL-{i}", "H", 2_000, hours=i, channel="cash_deposit")
    for i in range(4):
        f.tx("H", f"R{i}", 1_900, hours=10 + i)
    (alert,) = f.tx("H", "R4", 1_900, hours=15)
    assert alert.typology == "gather_scatter" and alert.accounts == ["H", "R4", "R3", "R2", "R1", "R0"]
    assert len(alert.transaction_ids) == 10
    assert alert.reasons[0].en == ("H collected 10,000.00 from 5 accounts and paid 9,500.00 to 5 accounts within 7 "
                                   "days (5 of them the tills or walk-in ids of cash deposits and withdrawals)")


# --- however the stream is cut -----------------------------------------------------------------------------------

def till_stream(n: int) -> list[dict]:
    """Customers K0..K14 paying each other and depositing / withdrawing at tills CASH, TILL-1, TILL-2 (and on their
    own accounts), amounts around the structuring band, over about 20 days."""
    rng = random.Random(5)
    out, t = [], 0.0
    customers = [f"K{k}" for k in range(15)]
    for i in range(n):
        t += rng.expovariate(1 / 1.5)
        kind = rng.choice(["transfer", "transfer", "cash_deposit", "cash_withdrawal"])
        who, other = rng.sample(customers, 2)
        till = rng.choice(["CASH", "CASH", "TILL-1", "TILL-2", who])
        src, dst = {"transfer": (who, other), "cash_deposit": (till, who), "cash_withdrawal": (who, till)}[kind]
        amount = rng.choice([rng.uniform(500, 5_000), rng.uniform(41_000, 49_999), rng.uniform(20_000, 60_000)])
        out.append({"transaction_id": f"k{i}", "timestamp": (T0 + timedelta(hours=t)).isoformat(),
                    "sender_account": src, "receiver_account": dst, "amount": f"{amount:.2f}", "currency": "CNY",
                    "channel": kind})
    return out


def test_till_stream_gives_the_same_alerts_in_one_batch_in_chunks_and_one_at_a_time():
    rules = {"fan_in": {"min_senders": 4}, "fan_out": {"min_receivers": 4},
             "gather_scatter": {"min_senders": 3, "min_receivers": 3}, "rapid_pass_through": {"min_amount": 40_000}}
    items = till_stream(400)
    tf = Taskflow("aml", model=False, rules=rules)

    def alerts(results) -> list:
        return [[(a.alert_id, tuple(a.accounts), tuple(a.transaction_ids)) for a in r.alerts] for r in results]

    batch = alerts(tf(items))
    tf.reset_state()
    single = alerts([tf(t) for t in items])
    tf.reset_state()
    chunked = alerts(tf.stream(iter(items), chunk_size=41))
    fired = [a for r in batch for a in r]
    typologies = {a[0].split("-")[0] for a in fired}
    assert {"fan_in", "fan_out", "gather_scatter", "rapid_pass_through", "structuring"} <= typologies, typologies
    tills = {"CASH", "TILL-1", "TILL-2"}
    assert not any(a[1][0] in tills for a in fired)  # no till is the subject of any alert
    assert single == batch and chunked == batch

