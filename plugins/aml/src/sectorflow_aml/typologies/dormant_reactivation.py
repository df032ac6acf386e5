"""Dormant-account reactivation: an account idle for a long time suddenly moves large amounts.

Source: FFIEC BSA/AML Manual App. F ("a dormant account ... suddenly receives or sends large amounts"); the PBOC
suspicious-transaction indicators list 长期闲置的账户原因不明地突然启用 (not verified here). Neither gives numbers:
``dormant_days``, ``watch_days`` and ``min_amount`` are configurable heuristics.

Parameters:
    dormant_days: idle days that make an account dormant. The window must be built with the same
        ``dormancy_days`` (the pipeline does this).
    watch_days: days after reactivation during which activity is added up.
    min_amount: total in + out amount (base currency) since reactivation that raises the alert.
    score: the alert's score.

The alert fires on the transaction that brings the activity since reactivation to ``min_amount``, once per
reactivation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import DAY, Edge, TransactionWindow
from .base import Rule, fmt_amount, fraction, positive


@dataclass(frozen=True)
class DormantReactivationParams:
    """Parameters of :class:`DormantReactivationRule`."""

    dormant_days: float = 180.0
    watch_days: float = 30.0
    min_amount: float = 50_000.0
    score: float = 0.6

    def __post_init__(self) -> None:
        positive("dormant_days", self.dormant_days)
        positive("watch_days", self.watch_days)
        positive("min_amount", self.min_amount, allow_zero=True)
        fraction("score", self.score)


class DormantReactivationRule(Rule):
    """Large activity soon after a long idle period (see the module docstring)."""

    name = "dormant_reactivation"
    source = "FFIEC BSA/AML Manual App. F (dormant accounts); PBOC indicator 长期闲置账户突然启用"
    Params = DormantReactivationParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """Alerts for the sender and/or receiver of ``edge`` if it completes a reactivation."""
        accounts = window.accounts
        if accounts[edge.src].resumed_at is None and accounts[edge.dst].resumed_at is None:
            return []
        out: list[Alert] = []
        for account in (edge.src, edge.dst) if edge.src != edge.dst else (edge.src,):
            alert = self._check_account(window, edge, account)
            if alert is not None:
                out.append(alert)
        return out

    def _check_account(self, window: TransactionWindow, edge: Edge, account: str) -> Alert | None:
        p = self.params
        a = window.accounts[account]
        start = a.resumed_at
        if start is None or a.idle_seconds < p.dormant_days * DAY or edge.ts - start > p.watch_days * DAY:
            return None
        if window.cooling(("dormant_reactivation", account), start, 1.0):
            return None  # this reactivation has alerted: skip the scan (a reactivated busy account made it quadratic)
        edges = [e for side in (a.incoming, a.outgoing) for e in side if start <= e.ts and e.seq <= edge.seq]
        total = sum(e.amount for e in edges)
        if total < p.min_amount or total - edge.amount >= p.min_amount:
            return None  # not reached yet, or reached by an earlier transaction
        if not window.cooldown(("dormant_reactivation", account), start, 1.0):
            return None
        edges.sort(key=lambda e: e.seq)
        idle = a.idle_seconds / DAY
        return self.alert(edges, p.score,
                          f"account {account} was idle for {idle:.0f} days, then moved {fmt_amount(total)} in "
                          f"{len(edges)} transactions",
                          f"账户 {account} 闲置 {idle:.0f} 天后突然启用，{len(edges)} 笔交易共 {fmt_amount(total)}",
                          accounts=[account, *dict.fromkeys(x for e in edges for x in (e.src, e.dst) if x != account)],
                          trigger=edge)
