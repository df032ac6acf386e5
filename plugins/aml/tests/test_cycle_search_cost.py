"""Work of the cycle rule's search per transaction, counted on small constructed graphs (no timings): the search
(``CycleRule._find_short_any``) tests whether the two sides of a loop can meet with one set test before walking a
counterparty map entry by entry, and builds the two-hop map backwards (or its entries) only when some account
forward can close a loop. Its answers stay those of the entry-by-entry search; the scorer's ``find_cycle`` is
checked against an entry-by-entry walk too."""

from __future__ import annotations

import random
from collections import deque
from datetime import timedelta

import pytest
from aml_cycle_support import Graph, Loops, counting
from sectorflow_aml import features
from sectorflow_aml.features import find_cycle
from sectorflow_aml.typologies import CycleRule
from sectorflow_aml.window import TransactionWindow


def star(u: str, v: str, n_back: int, n_fwd: int) -> list[tuple[str, str]]:
    """Edges around a closing transfer ``u -> v`` that close no loop: ``n_back`` senders ``X<i>`` of ``u``, each paid by
    two accounts ``Y<i>a``/``Y<i>b``; ``n_fwd`` receivers ``A<j>`` of ``v``, each paying two accounts ``B<j>a``/``B<j>b``
    that pay on to ``Z<j>`` (so every ``B`` has a receiver, and none of them is within two hops back of ``u``)."""
    edges = []
    for i in range(1, n_back + 1):
        edges += [(f"Y{i}a", f"X{i}"), (f"Y{i}b", f"X{i}"), (f"X{i}", u)]
    for j in range(1, n_fwd + 1):
        edges += [(v, f"A{j}"), (f"A{j}", f"B{j}a"), (f"A{j}", f"B{j}b"), (f"B{j}a", f"Z{j}"), (f"B{j}b", f"Z{j}")]
    return edges


# --- the cycle rule --------------------------------------------------------------------------------------------

def test_a_search_that_meets_nothing_walks_no_forward_map_and_builds_no_two_hop_map():
    g = Graph(star("U", "V", n_back=3, n_fwd=3))
    second_hop = g.count_receivers(["A1", "A2", "A3"])
    rule = Loops()
    built = counting(rule, "_back2")
    assert rule.check(g.window, g.add("U", "V")) == []
    assert [m.walked for m in second_hop] == [0, 0, 0]  # each A's receivers passed with one set test
    assert built == []  # and the two-hop map backwards from U is never built
    # the same graph with B2b -> X3: the five-account loop U -> V -> A2 -> B2b -> X3 -> U
    g = Graph(star("U", "V", n_back=3, n_fwd=3) + [("B2b", "X3")])
    second_hop = g.count_receivers(["A1", "A2", "A3"])
    rule = Loops()
    built = counting(rule, "_back2")
    out = rule.check(g.window, g.add("U", "V"))
    assert len(out) == 1 and out[0].accounts == ["U", "V", "A2", "B2b", "X3"]
    assert [m.walked for m in second_hop] == [0, 2, 0]  # only A2's map is walked, to the loop's B (its second entry)
    assert len(built) == 1


def test_a_hub_search_works_out_two_hop_entries_only_for_accounts_that_pay_a_sender_of_the_hub():
    """Above the eager-map limit (8 senders of u), the two-hop entry of each forward account b is worked out on
    demand (``_via``); a b whose receivers miss u's senders is answered by one set test instead."""
    g = Graph(star("HUB", "V", n_back=10, n_fwd=3))
    rule = Loops()
    looked_up = counting(rule, "_via")
    assert rule.check(g.window, g.add("HUB", "V")) == []
    assert looked_up == []  # six forward accounts B, none pays a sender of HUB
    g = Graph(star("HUB", "V", n_back=10, n_fwd=3) + [("B3a", "X7")])
    rule = Loops()
    looked_up = counting(rule, "_via")
    out = rule.check(g.window, g.add("HUB", "V"))
    assert len(out) == 1 and out[0].accounts == ["HUB", "V", "A3", "B3a", "X7"]
    assert [args[4] for args in looked_up] == ["B3a"]  # the one B that pays a sender of HUB


def test_searches_run_only_where_a_loop_can_close():
    """No search for a receiver without outgoing transfers, a sender without incoming ones, a self-transfer or a cash
    transaction; the chain A -> B -> C -> D is no cycle and D -> A closes one, found by the one search it runs."""
    g = Graph()
    rule = Loops()
    searched = counting(rule, "_find_short_any")
    alerts = []
    for src, dst, channel in [("A", "B", "transfer"), ("B", "C", "transfer"), ("C", "D", "transfer"),
                              ("D", "D", "transfer"), ("D", "CASH", "cash_withdrawal")]:
        alerts += rule.check(g.window, g.add(src, dst, channel))
    assert alerts == [] and searched == []  # the chain: each receiver had paid no one yet when it was paid
    out = rule.check(g.window, g.add("D", "A"))
    assert len(searched) == 1 and len(out) == 1
    assert out[0].accounts == ["D", "A", "B", "C"] and out[0].transaction_ids == ["t1", "t2", "t3", "t6"]
    assert "closed loop of 4 accounts: D -> A -> B -> C -> D" in out[0].reasons[0].en


@pytest.mark.parametrize("size", [3, 4, 5])
def test_a_closed_loop_is_found_and_the_chain_short_of_it_is_not(size):
    names = [f"L{i}" for i in range(size)]
    g = Graph()
    rule = Loops()
    chain = [rule.check(g.window, g.add(names[i], names[i + 1])) for i in range(size - 1)]
    chain.append(rule.check(g.window, g.add(names[-1], "OUT")))  # the chain goes on: still no loop
    assert chain == [[]] * size
    out = rule.check(g.window, g.add(names[-1], names[0]))
    assert len(out) == 1 and out[0].accounts == [names[-1], *names[:-1]]
    assert find_cycle(g.window, names[-1], names[0]) == (names if size <= 4 else None)  # the feature: <= 4 edges
    assert find_cycle(g.window, names[-1], "OUT") is None


def test_the_search_answers_as_the_counted_search_on_a_sparse_graph_with_hubs():
    """``_find_short_any`` against ``_find_short_counted`` with ``min_txns_per_hop=1`` (the entry-by-entry
    reference) where most searches find nothing: sparse random transfers, a few hubs, self-transfers."""
    rng = random.Random(11)
    accounts = [f"s{i}" for i in range(250)]
    hubs = accounts[:4]
    rules = [Loops(), Loops(min_length=2), Loops(max_length=4), Loops(min_length=5),
             Loops(min_length=4), Loops(max_degree=3)]
    g = Graph()
    searched = found = 0
    for _ in range(4000):
        src = rng.choice(hubs) if rng.random() < 0.2 else rng.choice(accounts)
        dst = rng.choice(hubs) if rng.random() < 0.2 else rng.choice(accounts)
        if rng.random() < 0.02:
            dst = src
        g.add(src, dst)
        if src == dst:
            continue
        for rule in rules:
            fast = rule._find_short_any(g.window.accounts, src, dst)
            assert fast == rule._find_short_counted(g.window.accounts, src, dst), (g.n, rule.params)
            searched += 1
            found += fast is not None
    assert searched > 20_000 and 0.05 < found / searched < 0.8  # loops and misses both common
    assert min(len(g.window.accounts[h].senders) for h in hubs) > 8  # the hub path ran too


# --- the scorer's find_cycle -------------------------------------------------------------------------------------

def _find_cycle_walk(window: TransactionWindow, src: str, dst: str, budget: int) -> list[str] | None:
    """Reference: ``find_cycle`` as an entry-by-entry walk, one budget unit per membership check."""
    if src == dst:
        return None
    d, s = window.accounts.get(dst), window.accounts.get(src)
    if d is None or s is None or not d.receivers or not s.senders:
        return None
    fwd1, back1 = d.receivers, s.senders
    if src in fwd1:
        return [dst, src]
    for a in fwd1:
        if a in back1:
            return [dst, a, src]
    forward = len(fwd1) <= len(back1)
    for first in (fwd1 if forward else back1):
        for second in (window.accounts[first].receivers if forward else window.accounts[first].senders):
            if (second in back1 if forward else second in fwd1) and second != dst and second != src:
                return [dst, first, second, src] if forward else [dst, second, first, src]
            budget -= 1
            if not budget:
                return None
    return None


@pytest.mark.parametrize("fillers, found", [(3, True), (4, False)])
def test_find_cycle_budget_runs_out_at_check_64(fillers, found):
    """dst pays A1..A5; A1..A3 pay 20 accounts each that are no sender of src (60 checks); A4 pays ``fillers`` more;
    A5's first receiver S1 pays src. With 3 fillers S1 is check 64, within ``CYCLE_BUDGET``; with 4 the budget ends
    at A4."""
    edges = [("S1", "SRC")] + [(f"S{k}", "SRC") for k in range(2, 7)] + [("DST", f"A{j}") for j in range(1, 6)]
    for j in range(1, 4):
        edges += [(f"A{j}", f"F{j}_{k}") for k in range(20)]
    edges += [("A4", f"F4_{k}") for k in range(fillers)] + [("A5", "S1")]
    g = Graph(edges)
    assert features.CYCLE_BUDGET == 64
    expected = ["DST", "A5", "S1", "SRC"] if found else None
    assert find_cycle(g.window, "SRC", "DST") == expected
    assert _find_cycle_walk(g.window, "SRC", "DST", 64) == expected


@pytest.mark.parametrize("budget", [3, 10, 64])
def test_find_cycle_answers_as_the_entry_by_entry_walk(monkeypatch, budget):
    """Both directions of the 3-edge stage (fewer first hops forward or backward) on a sparse random graph, with
    the budget small enough to run out often."""
    monkeypatch.setattr(features, "CYCLE_BUDGET", budget)
    rng = random.Random(budget)
    accounts = [f"c{i}" for i in range(120)]
    hubs = accounts[:3]
    g = Graph()
    outcomes = set()
    for _ in range(2500):
        src = rng.choice(hubs) if rng.random() < 0.25 else rng.choice(accounts)
        dst = rng.choice(hubs) if rng.random() < 0.25 else rng.choice(accounts)
        g.add(src, dst)
        for s, d in ((src, dst), (dst, src)):
            got = find_cycle(g.window, s, d)
            assert got == _find_cycle_walk(g.window, s, d, budget), (g.n, s, d)
            outcomes.add(None if got is None else len(got))
    assert outcomes == {None, 2, 3, 4}


# --- the time-ordered chain search (the default rule's second stage) ------------------------------------------------

class CountedDeque(deque):
    """An incoming deque that counts the transfers read from it newest first (``reversed``)."""

    read = 0

    def __reversed__(self):
        for e in deque.__reversed__(self):
            CountedDeque.read += 1
            yield e


def test_the_chain_search_reads_at_most_max_visits_transfers_around_a_busy_hub():
    """``HUB`` got 3,000 transfers of unrelated amounts from 1,500 accounts that HUB's receiver ``V`` pays back
    (3,000 closed loops ``HUB -> V -> Ci -> HUB``, none a time-ordered chain that keeps one sum): the chain search
    reads at most ``max_visits`` of them; one chain that passes the amount on is found within the budget."""
    g = Graph(step=timedelta(minutes=1))
    for i in range(1500):
        g.add("V", f"C{i}")
    for i in range(3000):
        g.add(f"C{i % 1500}", "HUB", amount=200 + i)  # amounts 200..3199, after V paid them
    rule = CycleRule(max_visits=500)
    g.window.accounts["HUB"].incoming = CountedDeque(g.window.accounts["HUB"].incoming)
    CountedDeque.read = 0
    assert rule.check(g.window, g.add("HUB", "V", amount=50_000)) == []  # nothing passes 50,000 on
    assert 0 < CountedDeque.read <= 500
    g.add("V", "M", amount=60_000)
    g.add("M", "HUB", amount=57_000)
    CountedDeque.read = 0
    out = rule.check(g.window, g.add("HUB", "V", amount=55_000))
    assert CountedDeque.read <= 500
    assert [a.accounts for a in out] == [["HUB", "V", "M"]]
