"""Work of the cycle rule's search on a settlement hub between customers, counted (no timings): customers paid a
salary by one employer pay ``HUB``, and ``HUB`` pays customers (``benchmarks/aml_busy_accounts.py settlement2``). A
transfer ``C -> HUB`` searches forward from ``HUB``, whose receivers are thousands of customers, for an account that
pays one of the few accounts that could close a loop back to ``C``; the search starts from those few accounts
(``CycleRule._from_targets``), so the work per transfer stays the same as the hub grows. The loops found stay those
of the entry-by-entry search (``_find_short_counted``), the first one in its search order."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from aml_cycle_support import Counted, Graph, Loops, counting


def HubGraph(edges: list[tuple[str, str]] = ()) -> Graph:
    """A hub of thousands of transfers fits the 30-day window: one a minute."""
    return Graph(edges, step=timedelta(minutes=1))


class CountedAccounts(dict):
    """The window's account map, counting the account states the search looks up."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.looked_up = 0

    def __getitem__(self, key):
        self.looked_up += 1
        return dict.__getitem__(self, key)


def hub(n: int) -> Graph:
    """``EMP`` pays customers ``C0..C<n-1>``; each customer pays ``HUB``, then ``HUB`` pays each customer (so ``HUB``
    has ``n`` senders and ``n`` receivers, and every customer has paid ``HUB`` and been paid by it)."""
    g = HubGraph([("EMP", f"C{i}") for i in range(n)])
    for i in range(n):
        g.add(f"C{i}", "HUB")
    for i in range(n):
        g.add("HUB", f"C{i}")
    return g


def work(g: Graph, transfers: list[tuple[str, str]]) -> tuple[list, int, int]:
    """Alerts of ``transfers`` fed to the cycle rule, with the account states looked up and the hub's receivers
    walked entry by entry while the rule checks them (window bookkeeping not counted)."""
    rule = Loops()
    alerts, looked_up, walked = [], 0, 0
    for src, dst in transfers:
        edge = g.add(src, dst)
        accounts = g.window.accounts = CountedAccounts(g.window.accounts)
        receivers = accounts["HUB"].receivers = Counted(accounts["HUB"].receivers)
        accounts.looked_up = 0
        alerts += rule.check(g.window, edge)
        looked_up += accounts.looked_up
        walked += receivers.walked
        g.window.accounts = dict(accounts)
        g.window.accounts["HUB"].receivers = dict(receivers)
    return alerts, looked_up, walked


def test_work_per_hub_transfer_does_not_grow_with_the_hub():
    """Customers paying the hub and the hub paying customers, with 500 and 4,000 customers: no loop, and the same
    handful of account look-ups per transfer at both sizes; the hub's receivers are never walked."""
    transfers = [("C7", "HUB"), ("HUB", "C3"), ("C250", "HUB"), ("HUB", "C499"), ("C1", "HUB")]
    out = {}
    for n in (500, 4000):
        alerts, looked_up, walked = work(hub(n), transfers)
        assert alerts == [] and walked == 0
        out[n] = looked_up
    assert out[500] == out[4000] <= 6 * len(transfers)


@pytest.mark.parametrize("n", [500, 4000])
def test_loops_through_the_hub_are_still_found_with_bounded_work(n):
    """A customer who passes money on: ``C20 -> W -> C5`` (four accounts with ``C5 -> HUB -> C20``) and ``C30 -> P ->
    Q -> C5`` (five). The three-account loop ``C9 -> HUB -> C8 -> C9`` is found too."""
    g = hub(n)
    g.add("C20", "W")
    g.add("W", "C5")
    alerts, looked_up, walked = work(g, [("C5", "HUB")])
    assert [a.accounts for a in alerts] == [["C5", "HUB", "C20", "W"]]
    assert walked == 0 and looked_up <= 20
    g = hub(n)
    for src, dst in [("C30", "P"), ("P", "Q"), ("Q", "C5")]:
        g.add(src, dst)
    alerts, looked_up, walked = work(g, [("C5", "HUB")])
    assert [a.accounts for a in alerts] == [["C5", "HUB", "C30", "P", "Q"]]
    assert walked == 0 and looked_up <= 20
    g = hub(n)
    g.add("C8", "C9")
    alerts, _, walked = work(g, [("C9", "HUB")])
    assert [a.accounts for a in alerts] == [["C9", "HUB", "C8"]] and walked == 0


def test_of_several_loops_the_first_in_the_hubs_order_of_receivers_is_reported():
    """Two loops close with ``C2 -> HUB``: ``C2 -> HUB -> C10 -> W1 -> C2`` and ``C2 -> HUB -> C40 -> W2 -> C2``. The
    entry-by-entry search walks ``HUB``'s receivers in the order ``HUB`` first paid them, so the loop reported is the
    one through whichever of ``C10`` and ``C40`` ``HUB`` paid first, as before."""
    for order, first in (([10, 40], "C10"), ([40, 10], "C40")):
        g = HubGraph([("EMP", f"C{i}") for i in range(600)])
        for i in range(600):
            g.add(f"C{i}", "HUB")
        for i in order + [i for i in range(600) if i not in order]:
            g.add("HUB", f"C{i}")
        for src, dst in [("C10", "W1"), ("W1", "C2"), ("C40", "W2"), ("W2", "C2")]:
            g.add(src, dst)
        rule = Loops()
        taken = counting(rule, "_from_targets")
        out = rule.check(g.window, g.add("C2", "HUB"))
        w = "W1" if first == "C10" else "W2"
        assert [a.accounts for a in out] == [["C2", "HUB", first, w]] and len(taken) == 1
        assert rule._find_short_counted(g.window.accounts, "C2", "HUB") == ["C2", "HUB", first, w]


def test_the_search_answers_as_the_counted_search_around_busy_hubs():
    """``_find_short_any`` against ``_find_short_counted`` with ``min_txns_per_hop=1`` (the entry-by-entry
    reference) on random transfers where a few hubs pay and are paid by most accounts, so the search often starts
    from the accounts that could close a loop, and several loops through different hub receivers are common."""
    rng = random.Random(5)
    accounts = [f"c{i}" for i in range(300)]
    hubs = ["H0", "H1"]
    rules = [Loops(), Loops(min_length=2), Loops(max_length=4), Loops(min_length=5),
             Loops(min_length=4), Loops(max_degree=3), Loops(max_length=3)]
    g = HubGraph()
    started = [counting(rule, "_from_targets") for rule in rules]
    searched = found = 0
    for step in range(5000):
        if rng.random() < 0.6:
            h = rng.choice(hubs)
            src, dst = (h, rng.choice(accounts)) if rng.random() < 0.5 else (rng.choice(accounts), h)
        else:
            src, dst = rng.choice(accounts), rng.choice(accounts)
        g.add(src, dst)
        if src == dst or step % 3:
            continue
        for rule in rules:
            for s, d in ((src, dst), (dst, src)):
                fast = rule._find_short_any(g.window.accounts, s, d)
                assert fast == rule._find_short_counted(g.window.accounts, s, d), (g.n, s, d, rule.params)
                searched += 1
                found += fast is not None
    assert searched > 15_000 and 0.05 < found / searched < 0.95
    assert sum(len(s) for s in started) > 1000  # the search from the targets ran often
