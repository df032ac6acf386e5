"""The account's own history and the path of its money: the tests the hub typologies and rapid pass-through add to
counts (issue 21, section 2).

A fixed count (ten distinct senders in a week) fires on every shop, biller and payroll. What sets a funnel or a
dispersal account apart is how the pattern compares with the account's *own* past and what happens to the money:

- **burst against its own history** (:func:`own_baseline`, :func:`is_burst`): the counterparties of the period
  against the most the account had in any earlier slice of the same length inside the window. A shop that had 60
  distinct customers every earlier week is no funnel when it has 60 this week; a quiet account that suddenly has 15
  is. An account with no earlier edge in the window has no history to compare with: the test passes (a new account
  and a funnel look alike until the money moves).
- **through-flow** (:func:`fifo_flows`, :func:`through_share`), first in first out over the window: the share of
  the collected money the hub paid on (fan-in), or of the paid-out money that came in shortly before (fan-out), and
  the share that was money held longer (``stale``): the residual balance and the time from money in to money out. FinCEN's funnel accounts (FIN-2014-A005, as quoted in secondary sources) have the
  money "withdrawn ... soon after"; FFIEC's BSA/AML Manual App. F lists funds "received and quickly sent out" (read in
  an unofficial copy). A merchant keeps its takings, a payroll pays salaries out of a month of income.
- **similar amounts** (:func:`amount_similarity`): the share of the counted transfers within a ratio of their median,
  and their coefficient of variation. Structured deposits and split transfers look alike (31 CFR 1010.100(xx):
  structuring "in any amount"; FinCEN's funnel deposits "often in amounts below the cash reporting threshold"); card
  purchases at a shop do not. Evidence (and a score, where configured); not required (AMLGentex's planted fan-ins draw each
  amount anew: coefficient of variation 0.15 to 0.49 on dev_s101, like its legitimate fan-ins' 0.17 to 0.53).
- **dwell** (:func:`dwell_seconds`): the amount-weighted time money stayed, first in, first out, for rapid
  pass-through's reason and evidence.

Window-exact: every figure is computed from the account's deques in the
:class:`~sectorflow_aml.window.TransactionWindow` when a rule's cheap count test already holds, never from anything
older than the window (no lifetime counts, no first-seen date), so a run with ``--history`` equal to the window, a
continuous run, one batch, chunks and one transaction at a time give the same alerts, and nothing new is kept in the
state (a restored window gives the same figures). The numbers the rules use are the project's choices (no text gives
numbers for these patterns), each measured in docs/aml-rules.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..schema import Channel
from ..window import Edge

CASH_SIDE_IN = Channel.cash_withdrawal  # as in .base (which imports this module)
CASH_SIDE_OUT = Channel.cash_deposit


def slice_count(lookback: float, period: float) -> int:
    """The earlier slices of the window :func:`own_baseline` compares with: ``[now - (k + 1) period, now - k period)``
    for ``k = 1 .. ceil(lookback / period) - 1``, the last one cut at the window's start (``now - lookback``): with a
    7-day period and a 30-day window, three weeks and the two days before them."""
    return max(0, -int(-lookback // period) - 1)


def own_baseline(side: Iterable[Edge], hub: str, incoming: bool, now: float, period: float, lookback: float,
                 first_ts: float) -> float | None:
    """The account's own level: the mean number of distinct counterparties (other than itself, cash sides left out)
    it had on one side per earlier slice of the window (:func:`slice_count`), over the slices that lie wholly after
    the account's first edge in the window (``first_ts``; a slice it entered half-way would read low); ``None`` when
    there is no such slice (the account is newer in the window than a period and a slice, or the period is the whole
    window). The mean, not the most: on AMLGentex dev_s101 the most per slice kept 12 of the 61 alerts on planted
    laundering accounts that the peer test leaves (against 40 with the mean, both at ``ratio`` 2), and on the
    everyday bank of seed 101 40 against 46 of 398 alerts on shops.

    ``side`` is the account's incoming (``incoming``) or outgoing deque, oldest first; the scan stops at the window's
    start. Cost: the deque's edges before the period.
    """
    slices = slice_count(lookback, period)
    if slices < 1:
        return None
    start = now - lookback
    usable = [k for k in range(1, slices + 1) if max(start, now - (k + 1) * period) >= first_ts]
    if not usable:
        return None
    skip = CASH_SIDE_IN if incoming else CASH_SIDE_OUT
    seen: dict[int, set[str]] = {}
    for e in side:
        ts = e.ts
        if ts < start or e.txn.channel == skip:
            continue
        k = min(slices, int((now - ts) // period))
        if k < 1:
            continue
        other = e.src if incoming else e.dst
        if other != hub:
            seen.setdefault(k, set()).add(other)
    return sum(len(seen.get(k, ())) for k in usable) / len(usable)


def own_flow_baseline(side: Iterable[Edge], hub: str, incoming: bool, now: float, period: float, lookback: float,
                      first_ts: float) -> float | None:
    """As :func:`own_baseline`, for amounts, and the largest slice, not the mean: the most the account received
    (``incoming``) or paid in any earlier period-long slice of the window wholly after its first edge there;
    ``None`` without such a slice (rapid pass-through compares one day's inflow with the account's biggest earlier
    day).
    Transfers with itself and cash sides left out."""
    slices = slice_count(lookback, period)
    if slices < 1:
        return None
    start = now - lookback
    usable = [k for k in range(1, slices + 1) if max(start, now - (k + 1) * period) >= first_ts]
    if not usable:
        return None
    skip = CASH_SIDE_IN if incoming else CASH_SIDE_OUT
    sums: dict[int, float] = {}
    for e in side:
        ts = e.ts
        if ts < start or e.txn.channel == skip or (e.src if incoming else e.dst) == hub:
            continue
        k = min(slices, int((now - ts) // period))
        if k >= 1:
            sums[k] = sums.get(k, 0.0) + e.amount
    return max((sums.get(k, 0.0) for k in usable), default=0.0)


def is_burst(count: int, baseline: float | None, ratio: float) -> bool:
    """Whether ``count`` counterparties stand out from the account's own ``baseline`` (:func:`own_baseline`):
    ``count >= ratio * baseline``; always when there is no baseline (``None``) or ``ratio`` is 0."""
    return ratio <= 0 or baseline is None or count >= ratio * baseline


def is_burst_amount(total: float, baseline: float | None, ratio: float) -> bool:
    """:func:`is_burst` for amounts (:func:`own_flow_baseline`): ``total >= ratio * baseline``; always without a
    baseline or with ``ratio`` 0."""
    return ratio <= 0 or baseline is None or total >= ratio * baseline


def first_edge_ts(incoming: Iterable[Edge], outgoing: Iterable[Edge]) -> float:
    """The time of an account's first edge in the window (either side; deques are in arrival order, so the first
    element of each is the oldest but for late transactions, which only make the account look older)."""
    first = float("inf")
    for side in (incoming, outgoing):
        for e in side:
            first = min(first, e.ts)
            break
    return first


def fifo_flows(incoming: Iterable[Edge], outgoing: Iterable[Edge], hub: str, until: float, dwell: float,
               ) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """First in, first out over the account's window: each payment out (time order, then arrival order) spends the
    oldest inflow left. Returns ``(spent, fresh, stale)``: ``spent[seq]``, how much of inflow ``seq`` was paid on by
    ``until``; ``fresh[seq]`` / ``stale[seq]``, how much of payment out ``seq`` was money that had come in at most /
    more than ``dwell`` seconds before it (the rest of the payment matched no inflow in the window: its source is
    unknown). Transfers with itself and edges whose account end is their cash side are left out (as :mod:`.flow_sums` counts); the
    balance the account had before the window is unknown and taken as none, so this never reads past the window."""
    ins = sorted((e for e in incoming if e.ts <= until and e.src != hub and e.txn.channel != CASH_SIDE_IN),
                 key=lambda e: (e.ts, e.seq))
    outs = sorted((e for e in outgoing if e.ts <= until and e.dst != hub and e.txn.channel != CASH_SIDE_OUT),
                  key=lambda e: (e.ts, e.seq))
    spent: dict[int, float] = {}
    fresh: dict[int, float] = {}
    stale: dict[int, float] = {}
    left = [e.amount for e in ins]
    i = j = 0  # i: oldest inflow with money left; j: inflows that have arrived
    for out in outs:
        while j < len(ins) and (ins[j].ts, ins[j].seq) <= (out.ts, out.seq):
            j += 1
        need = out.amount
        while need > 0 and i < j:
            take = min(left[i], need)
            if take > 0:
                seq = ins[i].seq
                spent[seq] = spent.get(seq, 0.0) + take
                into = fresh if out.ts - ins[i].ts <= dwell else stale
                into[out.seq] = into.get(out.seq, 0.0) + take
                left[i] -= take
                need -= take
            if left[i] <= 0:
                i += 1
    return spent, fresh, stale


def through_share(counted_total: float, other_total: float) -> float:
    """The share of ``counted_total`` (a fan-in's collected or a fan-out's paid-out sum) matched by the other side's
    flow (paid on, or received), capped at 1: ``1 - residual / counted_total`` for a fan-in."""
    if counted_total <= 0:
        return 0.0
    return min(other_total, counted_total) / counted_total


def amount_similarity(amounts: list[float], ratio: float) -> tuple[float, float]:
    """``(share, cv)``: the share of ``amounts`` within a factor ``ratio`` of their median (``median / ratio <= x <=
    median * ratio``) and their coefficient of variation (population standard deviation over mean); ``(0.0, 0.0)``
    for fewer than two amounts."""
    n = len(amounts)
    if n < 2:
        return 0.0, 0.0
    ordered = sorted(amounts)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    if median <= 0:
        return 0.0, 0.0
    low, high = median / ratio, median * ratio
    share = sum(1 for x in ordered if low <= x <= high) / n
    mean = sum(ordered) / n
    var = sum((x - mean) ** 2 for x in ordered) / n
    return share, (var ** 0.5) / mean if mean > 0 else 0.0


def dwell_seconds(ins: list[Edge], outs: list[Edge]) -> float:
    """Amount-weighted mean time from money in to money out, first in first out: each payment out consumes the
    oldest inflow left; what is not matched is left out. ``0.0`` when nothing matches."""
    queue = [[e.ts, e.amount] for e in sorted(ins, key=lambda e: (e.ts, e.seq))]
    i = 0
    weighted = matched = 0.0
    for out in sorted(outs, key=lambda e: (e.ts, e.seq)):
        need = out.amount
        while need > 0 and i < len(queue):
            ts, left = queue[i]
            if ts > out.ts:
                break
            take = min(left, need)
            weighted += take * (out.ts - ts)
            matched += take
            need -= take
            queue[i][1] = left - take
            if queue[i][1] <= 0:
                i += 1
    return weighted / matched if matched > 0 else 0.0


def new_amount_share(state_counts: Mapping[str, int], edges: list[Edge], incoming: bool) -> float:
    """The share of ``edges``' amount from (``incoming``) or to counterparties with no transfer with the account
    earlier in the window: each counterparty's window count (``state_counts``) equals its count among ``edges``."""
    counts: dict[str, int] = {}
    for e in edges:
        k = e.src if incoming else e.dst
        counts[k] = counts.get(k, 0) + 1
    total = sum(e.amount for e in edges)
    if total <= 0:
        return 0.0
    new = sum(e.amount for e in edges if state_counts.get(e.src if incoming else e.dst, 0) <= counts[
        e.src if incoming else e.dst])
    return new / total
