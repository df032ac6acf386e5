"""Scatter-gather: one account splits funds over several intermediaries, which all pass them on to one account.

``A -> {M1, M2, ..., Mk} -> B``. Source: FFIEC BSA/AML Manual App. F (funds moved through several accounts to hide
their origin, layering); IBM AMLSim's ``scatter_gather`` alert pattern (Suzumura and Kanezashi, 2021). The numbers
are configurable heuristics.

Parameters:
    days: period covering both legs, in days (``None``: the whole lookback window).
    min_intermediaries: distinct intermediaries ``M`` with both ``A -> M`` and ``M -> B`` in the period.
    ordered: the ``A -> M`` leg must come no later than the ``M -> B`` leg for each intermediary.
    min_flow_ratio: an intermediary counts only when what it paid ``B`` (its ``M -> B`` transfers from its
        ``A -> M`` leg up to the trigger, within the period; with ``ordered=False`` all of them in the period) is at
        least this share of what ``A`` paid it (its latest ``A -> M`` transfer). The same idea and name as
        ``gather_scatter``'s ``min_flow_ratio`` (FFIEC App. F: funds passed on rather than kept); 0.5 is a
        configurable heuristic, not a figure from the source. It keeps salaries followed by small purchases at one
        shop out (15,000 paid to each employee, 9.90 spent at the same supermarket: a share of 0.0007). AMLSim plants
        the pattern with every intermediary passing on what it received less a margin (``ScatterGatherTypology``:
        gather amount = scatter amount x (1 - ``marginRatio``)); AMLGentex's intermediaries pass on 90 %. 0.8 (a
        margin of at most a fifth) is the project's choice since issue 21 (0.5 before: on 300 people paying each
        other random amounts of 10 to 500, 182 accounts were the originator of a "scatter-gather"). 0 disables the
        check.
    max_flow_ratio: nor when what it paid ``B`` is more than this multiple of what ``A`` paid it: then it moves
        mostly other money (shops that all pay one wholesaler: 347 of a customer's purchases, 4,124 paid on; a
        fresh-user check's generated bank, ``benchmarks/aml_everyday.py``, had 866 such alerts). AMLSim's planted
        intermediaries pass on less than they received (ratio below 1). ``None`` disables the check; 1.05 (rounding,
        an exchange rate; 2.0 before issue 21) is the project's choice, like ``min_flow_ratio``.
    max_degree: an intermediary with more distinct senders than this in the window (a merchant or payroll hub, not
        a pass-through account) is not examined, nor an originator with more distinct receivers (a payroll or an
        external source paying thousands: on AMLGentex, whose salaries all come from one external source and whose
        spending all goes to one external sink, every payment into the sink scanned the legs of thousands of
        intermediaries, minutes per thousand transactions); bounds the cost per transaction.
    min_new_share: the account's own history: at least this share of the counted intermediaries must be a new path,
        one the window shows no earlier use of: ``A`` paid ``M`` before the counted first leg, and ``M`` paid ``B``
        before it too (:func:`recurring`). A firm that funds its branches every week, which each pay the same
        wholesaler, repeats its own pattern: after its first week in the window it raises nothing; the same firm
        splitting money over three intermediaries it never used before does. As ``min_new_share`` of
        :mod:`.fan_in` (a funnel's counterparties are new, a merchant's recur); 0.5 is the project's choice, 0 turns
        it off. The alert's ``evidence`` holds ``new_share``.
    score: the alert's score.

Cash deposits and withdrawals are no leg, as in :mod:`.cycle`: one side of each is the till, cash or walk-in account
the bank books cash against (or the customer's own account), so through a cash leg the till would be ``A`` (three
customers deposit at ``CASH`` and each pays a landlord), an intermediary (``A`` withdraws at three tills, ``B``
deposits at the same three) or ``B`` (an employer pays three employees, who each withdraw at ``CASH``: before 30 Nov
2026 an alert with score 0.75 and a suspicious report draft). Only non-cash payments make the two legs.

The alert fires on the ``M -> B`` transfer that brings the count of intermediaries to ``min_intermediaries``, at
most once per ``(A, B)`` pair per period. Its transactions are each counted intermediary's ``A -> M`` transfer and
the ``M -> B`` transfers that passed it on; its reason states both sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import Edge, TransactionWindow
from .base import CASH_CHANNELS, Rule, fmt_amount, fraction, positive, rule_period


@dataclass(frozen=True)
class ScatterGatherParams:
    """Parameters of :class:`ScatterGatherRule`."""

    days: float | None = None
    min_intermediaries: int = 3
    ordered: bool = True
    min_flow_ratio: float = 0.8
    max_flow_ratio: float | None = 1.05
    max_degree: int = 50
    min_new_share: float = 0.5
    score: float = 0.75

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_intermediaries", self.min_intermediaries)
        positive("min_flow_ratio", self.min_flow_ratio, allow_zero=True)
        if self.max_flow_ratio is not None:
            positive("max_flow_ratio", self.max_flow_ratio)
            if self.max_flow_ratio < self.min_flow_ratio:
                raise ValueError(f"max_flow_ratio={self.max_flow_ratio!r} must not be below min_flow_ratio="
                                 f"{self.min_flow_ratio!r}")
        positive("max_degree", self.max_degree)
        fraction("min_new_share", self.min_new_share)
        fraction("score", self.score)


def passed_on(edges: object, dst: str, since: float, until: float) -> list[Edge]:
    """The non-cash edges to ``dst`` in an account's ``outgoing`` deque with ``since <= ts <= until``, oldest
    first."""
    out: list[Edge] = []
    for e in reversed(edges):  # type: ignore[call-overload]
        if e.ts < since:
            break
        if e.dst == dst and e.ts <= until and e.txn.channel not in CASH_CHANNELS:
            out.append(e)
    out.reverse()
    return out


def latest(edges: object, dst: str, horizon: float, before: float | None = None) -> Edge | None:
    """The newest non-cash edge to ``dst`` in an account's ``outgoing`` deque with ``ts >= horizon`` (and
    ``ts <= before``)."""
    for e in reversed(edges):  # type: ignore[call-overload]
        if e.ts < horizon:
            return None
        if e.dst == dst and (before is None or e.ts <= before) and e.txn.channel not in CASH_CHANNELS:
            return e
    return None


def recurring(first: Edge, a_out: object, m_out: object, b: str, horizon: float) -> bool:
    """Whether the window shows the path ``A -> M -> B`` used before ``first`` (the counted ``A -> M`` leg): a non-cash
    ``A -> M`` transfer and a non-cash ``M -> B`` transfer, both arrived before ``first`` and not later than it, at
    or after ``horizon`` (the window's start). ``a_out`` / ``m_out``: the outgoing deques of ``A`` and ``M``."""
    m = first.dst
    found = False
    for e in reversed(a_out):  # type: ignore[call-overload]
        if e.ts < horizon:
            break
        if e.seq < first.seq and e.ts <= first.ts and e.dst == m and e.txn.channel not in CASH_CHANNELS:
            found = True
            break
    if not found:
        return False
    for e in reversed(m_out):  # type: ignore[call-overload]
        if e.ts < horizon:
            break
        if e.seq < first.seq and e.ts <= first.ts and e.dst == b and e.txn.channel not in CASH_CHANNELS:
            return True
    return False


class ScatterGatherRule(Rule):
    """``A -> several M -> B`` (see the module docstring)."""

    name = "scatter_gather"
    source = "FFIEC BSA/AML Manual App. F (layering); AMLSim scatter_gather pattern"
    Params = ScatterGatherParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` (``M -> B``) completes a scatter-gather from some ``A``."""
        p = self.params
        k = p.min_intermediaries
        m, b = edge.src, edge.dst
        accounts = window.accounts
        sb = accounts[b]
        if len(sb.senders) < k or m == b or edge.txn.channel in CASH_CHANNELS:
            return []
        sm = accounts[m]
        if len(sm.senders) > p.max_degree:
            return []
        period = rule_period(window, p.days)
        horizon = edge.ts - period
        for a in sm.senders:
            if a == b or a == m:
                continue
            sa = accounts[a]
            if not k <= len(sa.receivers) <= p.max_degree:
                continue  # too few receivers, or a payroll paying thousands (whose legs would be scanned per payment)
            mids = sa.receivers.keys() & sb.senders.keys()
            mids.discard(a)
            mids.discard(b)
            if len(mids) < k:
                continue
            if window.cooling(("scatter_gather", a, b), edge.ts, period):
                continue  # (A, B) alerted within the period: skip the leg scans (a hub's payers made them quadratic)
            legs: list[tuple[Edge, list[Edge]]] = []  # (A -> M, the M -> B transfers that passed it on)
            for x in sorted(mids):
                second = edge if x == m else latest(accounts[x].outgoing, b, horizon)
                if second is None:
                    continue
                first = latest(sa.outgoing, x, horizon, second.ts if p.ordered else None)
                if first is None:
                    continue
                seconds = passed_on(accounts[x].outgoing, b, max(horizon, first.ts) if p.ordered else horizon,
                                    edge.ts)
                passed = sum(e.amount for e in seconds)
                if passed < p.min_flow_ratio * first.amount or (
                        p.max_flow_ratio is not None and passed > p.max_flow_ratio * first.amount):
                    continue
                legs.append((first, seconds))
            if len(legs) < k or not any(seconds[-1] is edge for _, seconds in legs):
                continue
            new = 1.0
            if p.min_new_share > 0:
                start = window.now - window.lookback
                new = sum(not recurring(f, sa.outgoing, accounts[f.dst].outgoing, b, start) for f, _ in legs) / len(legs)
                if new < p.min_new_share:
                    continue  # the account's own usual path: its intermediaries passed its money to B before
            if not window.cooldown(("scatter_gather", a, b), edge.ts, period):
                continue
            edges = sorted((e for f, seconds in legs for e in (f, *seconds)), key=lambda e: e.seq)
            total = sum(f.amount for f, _ in legs)
            gathered = sum(e.amount for _, seconds in legs for e in seconds)
            via = ", ".join(f.dst for f, _ in legs)
            return [self.alert(edges, p.score,
                               f"{a} split {fmt_amount(total)} over {len(legs)} intermediaries ({via}), which then paid "
                               f"{fmt_amount(gathered)} to {b}",
                               f"{a} 将 {fmt_amount(total)} 分散转给 {len(legs)} 个中间账户（{via}），这些账户随后向 {b} "
                               f"汇集 {fmt_amount(gathered)}",
                               accounts=[a, *(f.dst for f, _ in legs), b], trigger=edge,
                               evidence={"new_share": round(new, 4)})]
        return []
