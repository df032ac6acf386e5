"""Gather-scatter: one hub account collects from many accounts and then pays out to many accounts.

``{S1..Sk} -> H -> {R1..Rk}``. Source: FFIEC BSA/AML Manual App. F (many incoming transfers followed by many
outgoing ones; funds that do not stay); IBM AMLSim's ``gather_scatter`` alert pattern (Suzumura and Kanezashi, 2021).
The numbers are configurable heuristics.

Parameters:
    days: period, in days (``None``: the whole lookback window).
    min_senders: distinct senders into the hub within the period, before the trigger.
    min_receivers: distinct receivers paid by the hub within the period, counting only payments made after the
        first counted incoming transfer.
    min_flow_ratio: paid-out amount over collected amount, at least (the residual balance: a hub that keeps more
        than a fifth is collecting, not passing on; 0 disables the check). 0.8 is the project's choice (AMLSim's and
        AMLGentex's planted hubs pass on what they got less a margin of about a tenth).
    max_flow_ratio: paid-out amount over collected amount, at most (above it the hub pays out other money: a
        salaried account paying bills; ``None`` disables the check). 1.2, the project's choice.
    peer_alpha, min_new_share: as in :mod:`.fan_in`, for the senders and for the receivers: each side's count must
        be a Poisson tail of at most ``peer_alpha`` at the peers' rate, and at least ``min_new_share`` of each side
        new to the hub in the window (:func:`.base.hub_judged`).
    burst_ratio: each side's count must be at least this multiple of the hub's own level on that side, its mean
        number of distinct senders (receivers) per earlier slice of ``days`` in the window (:func:`.history.own_baseline`;
        no earlier slice: passes), as in :mod:`.fan_in`. 0 (off) by default: on AMLSim 20K_fanin200cycle200 2.0 took
        gather-scatter's subjects from 45 (precision 0.778) to 16 (0.750), and on AMLGentex dev_s101 / dev_s202 and
        the everyday banks gather-scatter raised no alert with or without it (docs/aml-rules.md), so no gain was
        measured. The alert's ``evidence`` holds ``through_share`` (paid out over collected) and, with the test on,
        ``own_baseline_in`` and ``own_baseline_out``.
    score: the alert's score.

The alert fires on the payment that brings the receivers to ``min_receivers``, at most once per hub per period.

Cash, as in :mod:`.fan_in` and :mod:`.fan_out`: the till, cash or walk-in account a bank books cash against is no hub
(its withdrawals in and deposits out are no collection and payout: before 30 Nov 2026 withdrawals and deposits booked
against ``CASH`` gave a gather-scatter alert whose subject was ``CASH``); a customer's cash deposits from distinct
tills count as distinct senders and its withdrawals at distinct tills as distinct receivers. The alert lists the hub
and its non-cash counterparties; tills stay in its transactions and sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import DAY, Edge, TransactionWindow
from .base import (
    Rule,
    enough_counterparties,
    fmt_amount,
    fraction,
    hub_is_cash_side,
    RECHECK_SECONDS,
    hub_judged,
    judged_busy,
    non_cash_counterparties,
    positive,
    recent_by_counterparty,
    rule_period,
)
from .flow_sums import BUSY, ratio_below
from .history import first_edge_ts, is_burst, own_baseline


@dataclass(frozen=True)
class GatherScatterParams:
    """Parameters of :class:`GatherScatterRule`."""

    days: float | None = 7.0
    min_senders: int = 5
    min_receivers: int = 5
    min_flow_ratio: float = 0.8
    max_flow_ratio: float | None = 1.2
    peer_alpha: float = 1e-4
    min_new_share: float = 0.5
    burst_ratio: float = 0.0
    score: float = 0.7

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_senders", self.min_senders)
        positive("min_receivers", self.min_receivers)
        positive("min_flow_ratio", self.min_flow_ratio, allow_zero=True)
        if self.max_flow_ratio is not None:
            positive("max_flow_ratio", self.max_flow_ratio)
            if self.max_flow_ratio < self.min_flow_ratio:
                raise ValueError("max_flow_ratio must not be below min_flow_ratio")
        fraction("peer_alpha", self.peer_alpha)
        fraction("min_new_share", self.min_new_share)
        positive("burst_ratio", self.burst_ratio, allow_zero=True)
        fraction("score", self.score)


class GatherScatterRule(Rule):
    """Many senders into a hub, then many receivers out of it (see the module docstring)."""

    name = "gather_scatter"
    source = "FFIEC BSA/AML Manual App. F; AMLSim gather_scatter pattern"
    Params = GatherScatterParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` (a payment out of the hub) completes the pattern."""
        p = self.params
        if hub_is_cash_side(edge, incoming=False):  # a cash deposit: its sender is the till, no hub
            return []
        hub = window.accounts[edge.src]
        if len(hub.senders) < p.min_senders or len(hub.receivers) < p.min_receivers:
            return []
        period = rule_period(window, p.days)
        if window.cooling(("gather_scatter", edge.src), edge.ts, period) or window.cooling(
                ("gather_scatter", edge.src, "judged"), edge.ts, RECHECK_SECONDS):
            return []
        horizon = edge.ts - period
        if (p.min_flow_ratio > 0 and (len(hub.incoming) >= BUSY or len(hub.outgoing) >= BUSY)
                and ratio_below(hub, horizon, edge.ts, p.min_flow_ratio)):
            return []  # a busy hub's outflow in the period is provably under the ratio: no scan (flow_sums)
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
        if in_total <= 0 or out_total < p.min_flow_ratio * in_total or (
                p.max_flow_ratio is not None and out_total > p.max_flow_ratio * in_total):
            return []
        if not (hub_judged(window, hub.senders, ins, period, p.peer_alpha, p.min_new_share)
                and hub_judged(window, hub.receivers, outs, period, p.peer_alpha, p.min_new_share)):
            judged_busy(window, ("gather_scatter", edge.src, "judged"), max(len(hub.incoming), len(hub.outgoing)),
                        edge.ts, False)
            return []
        baselines = []
        if p.burst_ratio > 0:
            first = first_edge_ts(hub.incoming, hub.outgoing)
            for side, groups, incoming in ((hub.incoming, ins, True), (hub.outgoing, outs, False)):
                baseline = own_baseline(side, edge.src, incoming, edge.ts, period, window.lookback, first)
                if not is_burst(len(groups), baseline, p.burst_ratio):
                    judged_busy(window, ("gather_scatter", edge.src, "judged"),
                                max(len(hub.incoming), len(hub.outgoing)), edge.ts, False)
                    return []  # as many counterparties as in its own earlier weeks: its habit, no burst
                baselines.append(-1.0 if baseline is None else round(baseline, 2))
        if not window.cooldown(("gather_scatter", edge.src), edge.ts, period):
            return []
        edges = sorted((e for d in (ins, outs) for g in d.values() for e in g), key=lambda e: e.seq)
        days = period / DAY
        senders, receivers = non_cash_counterparties(ins), non_cash_counterparties(outs)
        tills = len(ins) - len(senders) + len(outs) - len(receivers)
        en = (f"{edge.src} collected {fmt_amount(in_total)} from {len(ins)} accounts and paid "
              f"{fmt_amount(out_total)} to {len(outs)} accounts within {days:g} days")
        zh = (f"{edge.src} 在 {days:g} 天内从 {len(ins)} 个账户收款 {fmt_amount(in_total)}，并向 "
              f"{len(outs)} 个账户付款 {fmt_amount(out_total)}")
        if tills:
            en += f" ({tills} of them the tills or walk-in ids of cash deposits and withdrawals)"
            zh += f"（其中 {tills} 个为现金存取的柜台或临柜编号）"
        evidence = {"through_share": round(out_total / in_total, 4)}
        if baselines:
            evidence.update(own_baseline_in=baselines[0], own_baseline_out=baselines[1])
            if min(baselines) >= 0:
                en += (f"; on average {baselines[0]:.1f} senders and {baselines[1]:.1f} receivers per earlier "
                       f"{days:g} days of the window")
                zh += f"；窗口内此前平均每 {days:g} 天 {baselines[0]:.1f} 个付款方、{baselines[1]:.1f} 个收款方"
        return [self.alert(edges, p.score, en, zh, accounts=[edge.src, *senders, *receivers], trigger=edge,
                           evidence=evidence)]
