"""Gather-scatter: one hub account collects from many accounts and then pays out to many accounts.

``{S1..Sk} -> H -> {R1..Rk}``. Source: FFIEC BSA/AML Manual App. F (many incoming transfers followed by many
outgoing ones; funds that do not stay); IBM AMLSim's ``gather_scatter`` alert pattern (Suzumura and Kanezashi, 2021).
The numbers are configurable heuristics.

Parameters:
    days: period, in days (``None``: the whole lookback window).
    min_senders: distinct senders into the hub within the period, before the trigger.
    min_receivers: distinct receivers paid by the hub within the period, counting only payments made after the
        first counted incoming transfer.
    min_flow_ratio: paid-out amount over collected amount (0 disables the check).
    score: the alert's score.

The alert fires on the payment that brings the receivers to ``min_receivers``, at most once per hub per period.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import DAY, Edge, TransactionWindow
from .base import (
    rule_period,
    Rule,
    enough_counterparties,
    fmt_amount,
    fraction,
    positive,
    recent_by_counterparty,
)


@dataclass(frozen=True)
class GatherScatterParams:
    """Parameters of :class:`GatherScatterRule`."""

    days: float | None = 7.0
    min_senders: int = 5
    min_receivers: int = 5
    min_flow_ratio: float = 0.5
    score: float = 0.7

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_senders", self.min_senders)
        positive("min_receivers", self.min_receivers)
        positive("min_flow_ratio", self.min_flow_ratio, allow_zero=True)
        fraction("score", self.score)


class GatherScatterRule(Rule):
    """Many senders into a hub, then many receivers out of it (see the module docstring)."""

    name = "gather_scatter"
    source = "FFIEC BSA/AML Manual App. F; AMLSim gather_scatter pattern"
    Params = GatherScatterParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` (a payment out of the hub) completes the pattern."""
        p = self.params
        hub = window.accounts[edge.src]
        if len(hub.senders) < p.min_senders or len(hub.receivers) < p.min_receivers:
            return []
        period = rule_period(window, p.days)
        if window.cooling(("gather_scatter", edge.src), edge.ts, period):
            return []
        horizon = edge.ts - period
        if not (enough_counterparties(hub.incoming, horizon, edge.ts, True, 1, p.min_senders, edge.src)
                and enough_counterparties(hub.outgoing, horizon, edge.ts, False, 1, p.min_receivers, edge.src)):
            return []
        ins = recent_by_counterparty(hub.incoming, horizon, edge.ts, incoming=True)
        ins.pop(edge.src, None)
        if len(ins) < p.min_senders:
            return []
        start = min(e.ts for group in ins.values() for e in group)
        outs = recent_by_counterparty(hub.outgoing, start, edge.ts, incoming=False)
        outs.pop(edge.src, None)
        if len(outs) < p.min_receivers or edge.dst not in outs:
            return []
        in_total = sum(e.amount for g in ins.values() for e in g)
        out_total = sum(e.amount for g in outs.values() for e in g)
        if in_total <= 0 or out_total < p.min_flow_ratio * in_total:
            return []
        if not window.cooldown(("gather_scatter", edge.src), edge.ts, period):
            return []
        edges = sorted((e for d in (ins, outs) for g in d.values() for e in g), key=lambda e: e.seq)
        days = period / DAY
        return [self.alert(edges, p.score,
                           f"{edge.src} collected {fmt_amount(in_total)} from {len(ins)} accounts and paid "
                           f"{fmt_amount(out_total)} to {len(outs)} accounts within {days:g} days",
                           f"{edge.src} 在 {days:g} 天内从 {len(ins)} 个账户收款 {fmt_amount(in_total)}，并向 "
                           f"{len(outs)} 个账户付款 {fmt_amount(out_total)}",
                           accounts=[edge.src, *ins, *outs], trigger=edge)]
