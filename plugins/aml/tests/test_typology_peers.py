"""Issue 21, section 2: peer groups (``typologies/peers.py``). The incremental figures equal a recount over the
window at every point (evictions, reset, a restored state), quantiles and groups have exact values, and the hub
rules use them where an account has no own level: shops in their first week are no fan-in, a funnel among everyday
customers is."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from sectorflow import ConfigError
from sectorflow_aml.schema import Transaction
from sectorflow_aml.state import TransactionTable, decode_transactions
from sectorflow_aml.typologies import FanInRule, FanOutRule, build_rules
from sectorflow_aml.typologies.peers import MIN_GROUP, above_peers, band_of, peer_groups, recount
from sectorflow_aml.window import TransactionWindow

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def txn(n: int, src: str, dst: str, amount: float, days: float) -> Transaction:
    return Transaction(transaction_id=f"t{n}", timestamp=T0 + timedelta(days=days), sender_account=src,
                       receiver_account=dst, amount=Decimal(str(round(amount, 2))), currency="CNY")


def random_transfers(seed: int, n: int, people: int, days: float) -> list[Transaction]:
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(people)]
    stamps = sorted(rng.uniform(0, days) for _ in range(n))
    return [txn(i, *rng.sample(names, 2), rng.uniform(10, 500), d) for i, d in enumerate(stamps)]


def test_the_incremental_figures_equal_a_recount_through_evictions_reset_and_a_restored_state():
    window = TransactionWindow(lookback_days=3.0)
    txns = random_transfers(1, 3000, 120, 12.0)
    checked = 0
    for i, t in enumerate(txns):
        window.add(t)
        if i % 97 == 0 or i == len(txns) - 1:  # queried now and then: the gaps are caught up exactly
            groups = peer_groups(window)
            assert dict(groups.registered()) == recount(window)
            checked += 1
    assert checked == 32 and len(window) < 1000  # the 3-day window evicted most of the 12 days
    assert sum(v[1] for v in recount(window).values()) > 100  # and the day's counts are not all zero
    table = TransactionTable()
    state = window.state_dict(table)
    restored = TransactionWindow(lookback_days=3.0)
    restored.load_state_dict(state, decode_transactions(table.rows))
    assert dict(peer_groups(restored).registered()) == dict(peer_groups(window).registered())
    window.load_state_dict(state, decode_transactions(table.rows))  # the same window object, a new edges deque: recounted
    assert dict(peer_groups(window).registered()) == recount(window)
    window.reset()
    for t in random_transfers(2, 200, 60, 1.0):
        window.add(t)
    groups = peer_groups(window)
    assert dict(groups.registered()) == recount(window) and len(groups.registered()) == 60


def test_bands_groups_and_quantiles_have_exact_values():
    assert [band_of(n) for n in (0, 1, 2, 3, 4, 7, 8, 15, 16, 100)] == [0, 1, 2, 2, 3, 3, 4, 4, 5, 7]
    window = TransactionWindow(lookback_days=30.0)
    n = 0
    for i in range(40):  # 40 receivers with 8 transfers each (band 4) within a day, from i % 8 + 1 distinct senders
        for k in range(8):
            n += 1
            window.add(txn(n, f"s{i}-{k % (i % 8 + 1)}", f"r{i:02d}", 100, n / 1000))
    groups = peer_groups(window)
    # the 220 senders have 1 to 8 transfers each (bands 1 to 4) and no sender; the receivers are all in band 4
    assert dict(groups._size) == {1: 100, 2: 65, 3: 10, 4: 45}
    assert groups.quantile(4, True, 0.5) == (4, 45)  # 5 senders with 8 transfers (0 senders), 5 r at each 1..8
    assert groups.quantile(4, True, 0.99) == (8, 45)
    assert groups.quantile(4, True, 0.99, exclude=8) == (8, 44)  # one of the five at 8 left out: still 8
    assert above_peers(window, "r07", True, 0.99) == (False, 8, 8, 44)  # the hub itself is no peer
    assert above_peers(window, "r00", False, 0.99) == (False, 0, 1, 44)  # r00 pays nobody
    assert above_peers(window, "r07", True, 1.0) == (True, 0, 0, 0)  # off
    assert groups.quantile(1, False, 0.99) == (1, 100)  # the one-transfer senders: one receiver each
    assert [groups.group(b) for b in (1, 2, 3, 4)] == [[1], [2], [3, 2, 4], [4]]  # band 3 (10) takes in 2 and 4
    assert MIN_GROUP == 30


def shops_and_customers(seed: int, weeks: float) -> list[tuple[float, str, str, float]]:
    """300 customers paid by 10 employers on day 0.3 and paying 2-4 times a week at their 3 favourite of 30 shops
    (5 to 800, log-uniform); every shop has about 20 distinct payers a week."""
    rng = random.Random(seed)
    out = []
    shops = [f"SHOP{i:02d}" for i in range(30)]
    for c in range(300):
        cust = f"C{c:03d}"
        out.append((0.3 + c / 10_000, f"EMP{c % 10}", cust, round(rng.uniform(6_000, 12_000), 2)))
        favourite = rng.sample(shops, 3)
        for week in range(int(weeks * 7) // 7 + 1):
            for _ in range(rng.randint(2, 4)):
                day = week * 7 + rng.uniform(0, 7)
                if day < weeks * 7:
                    out.append((day, cust, rng.choice(favourite), round(5 * 160 ** rng.random(), 2)))
    return out


def feed(rules, events) -> list:
    window = TransactionWindow(30.0)
    alerts = []
    for n, (day, src, dst, amount) in enumerate(sorted(events)):
        edge = window.add(txn(n, src, dst, amount, day))
        alerts.extend(a for rule in rules for a in rule.check(window, edge))
    return alerts


def test_shops_in_their_first_week_are_no_fan_in_but_a_funnel_among_everyday_customers_is():
    """The bank's first week in the window: no shop has an own level yet, so each is judged by its peers, the other
    busy accounts of its activity band, which have as many distinct payers within a day. On day 5 a new account
    collects from 15 of the customers within a day: twice what 99 % of the accounts with as many transfers get."""
    events = shops_and_customers(3, 1.0)
    events += [(5.0 + i / 20, f"C{i * 7:03d}", "FUNNEL", round(4_900 + 13 * i, 2)) for i in range(15)]
    alerts = feed(build_rules(), events)
    fan_in = [a for a in alerts if a.typology == "fan_in"]
    assert [a.accounts[0] for a in fan_in] == ["FUNNEL"]
    (alert,) = fan_in
    # at the 14th sender: twice the most distinct payers within a day that 99 % of its band (the shops, 8-15
    # transfers in the window) had
    assert alert.time == T0 + timedelta(days=5 + 13 / 20)
    assert alert.evidence["own_baseline"] == -1 and alert.evidence["peer_group"] == 186
    assert alert.evidence["day_counterparties"] == 14 and alert.evidence["peer_level"] == 7
    assert "14 of them within a day, against 7 at the high quantile of its peer group" in alert.reasons[0].en
    assert "同类账户" in alert.reasons[0].zh
    counts_only = feed(build_rules({"fan_in": {"peer_quantile": 1.0}}), events)  # without the peer test
    shops = {a.accounts[0] for a in counts_only if a.typology == "fan_in"} - {"FUNNEL"}
    assert len(shops) >= 20 and all(s.startswith("SHOP") for s in shops)


def test_the_peer_parameter_is_checked():
    with pytest.raises(ConfigError, match="peer_quantile"):
        FanInRule(peer_quantile=1.5)
    with pytest.raises(ConfigError, match="peer_quantile"):
        FanOutRule(peer_quantile=-0.1)
    assert FanInRule().describe()["params"]["peer_quantile"] == 0.99
