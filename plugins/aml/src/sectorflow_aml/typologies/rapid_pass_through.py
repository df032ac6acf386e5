"""Rapid pass-through (快进快出): money comes in and goes out again within hours, leaving little behind.

Source: FFIEC BSA/AML Manual App. F ("funds transfer activity ... many small incoming transfers ... then wired out
almost immediately"; "rapid movement of funds"). In China the pattern is known as 快进快出 (资金快进快出、过渡性
账户); PBOC's list of suspicious-transaction indicators names it, but no numeric limits are verified here, so all
numbers are configurable heuristics.

Parameters:
    hours: the period, in hours, that both the inflow and the outflow must fit in.
    min_amount: the least inflow (base currency) worth an alert.
    min_out_ratio: outflow after the first counted inflow over that inflow (0.9: at least 90 % passed on).
    max_out_ratio: the most outflow over inflow (above it the account is spending older funds, not passing these).
    min_new_share: at least this share of the inflow's amount comes from senders with no earlier transfer to the
        account in the window (:func:`.history.new_amount_share`): a treasury account sweeping its own sales
        account's takings every day, or an employer paying salaries out of client income, has recurring senders;
        a mule's are new. 0.5 is the project's choice; 0 turns it off.
    burst_ratio: the inflow must be at least this multiple of the account's own level: the most it received in any
        earlier ``hours`` slice of the window (:func:`.history.own_flow_baseline`); passes when the account has no
        earlier slice there. An account that moves 70,000 through every day does so by habit. 2.0 is the project's
        choice; 0 turns it off.
    score: the alert's score.

Evidence (``Alert.evidence``): ``through_share`` (outflow over inflow), ``new_share``, ``own_baseline`` (the largest
earlier slice's inflow; -1 without one) and ``dwell_hours``, the amount-weighted time the money stayed, first in first
out (:func:`.history.dwell_seconds`), also stated in the reason. A busy account (128 or more transfers on a side) that
failed the two tests is judged again an hour later at the earliest (:data:`.base.RECHECK_SECONDS`).

Residual = inflow - outflow within the period; the rule fires on the payment that brings the residual at or below
``1 - min_out_ratio`` of the inflow, at most once per account per period.

Cash: the till, cash or walk-in account a bank books cash against is no pass-through account: the withdrawals it
takes in and the deposits it pays out are no inflow and outflow (before 30 Nov 2026 a day of withdrawals and deposits
booked against ``CASH`` gave a pass-through alert whose subject was ``CASH``), so a cash deposit triggers nothing and
neither counts. A customer's cash deposits are inflow and its cash withdrawals outflow (cash in and wired out, or
wired in and taken out in cash: FFIEC App. F's deposits "wired out almost immediately"). The alert lists the account
and the non-cash counterparties; tills stay in its transactions and sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import Edge, TransactionWindow
from .base import (
    CASH_CHANNELS,
    CASH_SIDE_IN,
    CASH_SIDE_OUT,
    RECHECK_SECONDS,
    Rule,
    fmt_amount,
    fraction,
    judged_busy,
    positive,
)
from .history import dwell_seconds, first_edge_ts, is_burst_amount, new_amount_share, own_flow_baseline
from .flow_sums import BUSY, pass_through_ruled_out


@dataclass(frozen=True)
class RapidPassThroughParams:
    """Parameters of :class:`RapidPassThroughRule`."""

    hours: float = 24.0
    min_amount: float = 50_000.0
    min_out_ratio: float = 0.9
    max_out_ratio: float = 1.1
    min_new_share: float = 0.5
    burst_ratio: float = 2.0
    score: float = 0.65

    def __post_init__(self) -> None:
        positive("hours", self.hours)
        positive("min_amount", self.min_amount, allow_zero=True)
        fraction("min_out_ratio", self.min_out_ratio)
        positive("max_out_ratio", self.max_out_ratio)
        if self.max_out_ratio < self.min_out_ratio:
            raise ValueError("max_out_ratio must be at least min_out_ratio")
        fraction("min_new_share", self.min_new_share)
        positive("burst_ratio", self.burst_ratio, allow_zero=True)
        fraction("score", self.score)


class RapidPassThroughRule(Rule):
    """In and out within hours, low residual (see the module docstring)."""

    name = "rapid_pass_through"
    source = "FFIEC BSA/AML Manual App. F (rapid movement of funds); 快进快出"
    Params = RapidPassThroughParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` (a payment out) passes on the account's recent inflow."""
        p = self.params
        if edge.txn.channel == CASH_SIDE_OUT:  # a cash deposit: its sender is the till, no pass-through account
            return []
        acct = window.accounts[edge.src]
        if not acct.incoming or acct.in_sum < p.min_amount:
            return []
        period = p.hours * 3600.0
        if window.cooling(("rapid_pass_through", edge.src), edge.ts, period):
            return []  # already alerted within the period: skip the scans (a busy hub's payments made it quadratic)
        horizon = edge.ts - p.hours * 3600.0
        if ((len(acct.incoming) >= BUSY or len(acct.outgoing) >= BUSY)
                and pass_through_ruled_out(acct, horizon, edge.ts, edge.amount, p.min_amount, p.min_out_ratio,
                                           p.max_out_ratio)):
            return []  # a busy account's sums prove the tests below fail: no scan (flow_sums)
        ins: list[Edge] = []
        in_total = 0.0
        for e in reversed(acct.incoming):
            if e.ts < horizon:
                break
            if e.ts <= edge.ts and e.src != edge.src and e.txn.channel != CASH_SIDE_IN:
                ins.append(e)
                in_total += e.amount
        if in_total < p.min_amount or not ins:
            return []
        start = min(e.ts for e in ins)
        outs: list[Edge] = []
        out_total = 0.0
        for e in reversed(acct.outgoing):
            if e.ts < start:
                break
            if e.seq <= edge.seq and e.dst != edge.src and e.txn.channel != CASH_SIDE_OUT:
                outs.append(e)
                out_total += e.amount
        ratio = out_total / in_total
        if not p.min_out_ratio <= ratio <= p.max_out_ratio:
            return []
        if out_total - edge.amount >= p.min_out_ratio * in_total:
            return []  # already passed on before this payment: the alert belongs to an earlier one
        held = ("rapid_pass_through", edge.src, "judged")
        if window.cooling(held, edge.ts, RECHECK_SECONDS):
            return []
        new = new_amount_share(acct.senders, ins, incoming=True)
        baseline = None
        if p.burst_ratio > 0 and new >= p.min_new_share:
            baseline = own_flow_baseline(acct.incoming, edge.src, True, edge.ts, period, window.lookback,
                                         first_edge_ts(acct.incoming, acct.outgoing))
        if new < p.min_new_share or not is_burst_amount(in_total, baseline, p.burst_ratio):
            judged_busy(window, held, max(len(acct.incoming), len(acct.outgoing)), edge.ts, False)
            return []  # recurring senders, or as much as the account's own earlier days: its habit, no burst
        if not window.cooldown(("rapid_pass_through", edge.src), edge.ts, period):
            return []
        span_h = (edge.ts - start) / 3600.0
        residual = in_total - out_total
        edges = sorted(ins + outs, key=lambda e: e.seq)
        dwell_h = dwell_seconds(ins, outs) / 3600.0
        evidence = {"through_share": round(ratio, 4), "new_share": round(new, 4), "dwell_hours": round(dwell_h, 2),
                    "own_baseline": -1.0 if baseline is None else round(baseline, 2)}
        history_en = ("no earlier history in the window" if baseline is None else
                      f"at most {fmt_amount(baseline)} in any earlier {p.hours:g} h of the window")
        history_zh = ("窗口内无更早记录" if baseline is None else
                      f"窗口内此前任一 {p.hours:g} 小时最多收入 {fmt_amount(baseline)}")
        return [self.alert(edges, p.score,
                           f"{edge.src} received {fmt_amount(in_total)} and paid out {fmt_amount(out_total)} within "
                           f"{span_h:.1f} h (residual {fmt_amount(residual)}, {100 * ratio:.0f}% passed on, money "
                           f"stayed {dwell_h:.1f} h on average; {100 * new:.0f} % from new senders; {history_en})",
                           f"{edge.src} 在 {span_h:.1f} 小时内收入 {fmt_amount(in_total)} 并转出 "
                           f"{fmt_amount(out_total)}（留存 {fmt_amount(residual)}，快进快出 {100 * ratio:.0f}%，资金平均"
                           f"停留 {dwell_h:.1f} 小时；{100 * new:.0f}% 来自新付款方；{history_zh}）",
                           evidence=evidence,
                           accounts=[edge.src, *dict.fromkeys(e.src for e in ins if e.txn.channel not in CASH_CHANNELS),
                                     *dict.fromkeys(e.dst for e in outs if e.txn.channel not in CASH_CHANNELS)],
                           trigger=edge)]
