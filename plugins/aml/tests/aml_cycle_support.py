"""Shared by the cycle-search cost tests: a window built one transfer per edge, and a counterparty map that counts
the entries Python iterates from it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

from sectorflow_aml.schema import Transaction
from sectorflow_aml.typologies import CycleRule
from sectorflow_aml.window import TransactionWindow

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


class Counted(dict):
    """A counterparty map that counts the entries iterated from it in Python (``for b in receivers``); a set test
    on its keys view (``keys().isdisjoint``, ``keys() & keys()``) reads it in C without counting."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.walked = 0

    def __iter__(self):
        for key in dict.__iter__(self):
            self.walked += 1
            yield key


class Graph:
    """A 30-day window fed with one transfer of 1,000 per edge, ``step`` apart (default an hour), with consecutive
    ids ``t1, t2, ...``."""

    def __init__(self, edges: list[tuple[str, str]] = (), step: timedelta = timedelta(hours=1)) -> None:
        self.window = TransactionWindow(30.0)
        self.step = step
        self.n = 0
        for src, dst in edges:
            self.add(src, dst)

    def add(self, src: str, dst: str, channel: str = "transfer", amount: float = 1000):
        self.n += 1
        txn = Transaction(transaction_id=f"t{self.n}", timestamp=T0 + self.step * self.n, sender_account=src,
                          receiver_account=dst, amount=Decimal(str(amount)), channel=channel)
        return self.window.add(txn)

    def count_receivers(self, accounts: list[str]) -> list[Counted]:
        """Swap the receiver maps of ``accounts`` for counting copies (call after the last ``add``)."""
        out = []
        for name in accounts:
            state = self.window.accounts[name]
            state.receivers = Counted(state.receivers)
            out.append(state.receivers)
        return out


def counting(rule: CycleRule, method: str) -> list[tuple]:
    """Record the calls of ``rule.<method>`` (an instance attribute shadows the class's method)."""
    calls: list[tuple] = []
    inner = getattr(rule, method)

    def wrapper(*args):
        calls.append(args)
        return inner(*args)

    setattr(rule, method, wrapper)
    return calls


def Loops(**params) -> CycleRule:  # noqa: N802 (reads as the rule it builds)
    """The cycle rule with the closed-loop semantics these cost tests pin (any time order, any amounts): its account
    search is the first stage of the default rule too, which then looks for a time-ordered chain with conserved amounts
    only where this stage found a loop (``CycleRule._chain``; its cost is pinned in test_cycle_search_cost)."""
    return CycleRule(**{"ordered": False, "amount_ratio": None, **params})
