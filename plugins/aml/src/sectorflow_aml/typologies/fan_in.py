"""Fan-in: many distinct accounts pay into one account within a short period (funnel / collection account).

Source: FinCEN advisory FIN-2014-A005 ("funnel accounts": one account receives many deposits, often below the
reporting threshold, and the funds leave soon after); FFIEC BSA/AML Manual App. F (many small incoming transfers).
Neither text gives numbers: ``min_senders`` and ``days`` are configurable heuristics.

Parameters:
    days: the period, in days (``None``: the whole lookback window).
    min_senders: distinct senders needed within ``days`` (each with at least ``min_txns_per_sender`` transfers).
    min_txns_per_sender: transfers each counted sender must have made within ``days`` (1 = any sender). With 2 the
        rule looks for senders that split their payment, as in AMLSim's planted fan-ins, where every member sends
        several near-equal transfers on one day.
    min_total: the least total amount (base currency) received from the counted senders.
    score: the alert's score.

The alert fires on the transfer that brings the count to ``min_senders`` (or above), at most once per receiving
account per ``days`` (the whole lookback when ``days`` is ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import DAY, Edge, TransactionWindow
from .base import Rule, fan_counterparties, fmt_amount, fraction, positive


@dataclass(frozen=True)
class FanInParams:
    """Parameters of :class:`FanInRule`."""

    days: float | None = 7.0
    min_senders: int = 10
    min_txns_per_sender: int = 1
    min_total: float = 0.0
    score: float = 0.6

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_senders", self.min_senders)
        positive("min_txns_per_sender", self.min_txns_per_sender)
        positive("min_total", self.min_total, allow_zero=True)
        fraction("score", self.score)


class FanInRule(Rule):
    """Many distinct senders into one account (see the module docstring)."""

    name = "fan_in"
    source = "FinCEN FIN-2014-A005 (funnel accounts); FFIEC BSA/AML Manual App. F"
    Params = FanInParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` completes the fan-in of its receiver."""
        p = self.params
        found = fan_counterparties(window, edge, typology="fan_in", incoming=True, days=p.days,
                                   per=p.min_txns_per_sender, need=p.min_senders, min_total=p.min_total)
        if found is None:
            return []
        edges, counted, total, period = found
        days = period / DAY
        return [self.alert(edges, p.score,
                           f"{len(counted)} distinct accounts paid into {edge.dst} within {days:g} days "
                           f"({len(edges)} transfers, total {fmt_amount(total)})",
                           f"{days:g} 天内有 {len(counted)} 个不同账户向 {edge.dst} 转入（{len(edges)} 笔，合计 "
                           f"{fmt_amount(total)}）",
                           accounts=[edge.dst, *counted], trigger=edge)]
