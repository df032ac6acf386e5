"""Windowed flow sums of a busy account, so a flow-ratio rule can rule out an alert without rescanning the period.

Gather-scatter and rapid pass-through compare what an account paid out with what it took in within a period (7 days,
24 hours), on each of its payments out. Both found the two amounts by scanning the period's transfers, so a hub that
never reaches the ratio (a settlement account paying out less than it takes in) rescanned its whole period on every
payment: quadratic (``benchmarks/aml_busy_accounts.py nomodel settlement2 4000``: 31.6 s for 6,000 transactions,
most of it in these two rules).

On an account with at least :data:`BUSY` transfers in one direction, :func:`period_sum` gives the period's counted
amount from prefix sums kept per account (``AccountState.memo``), updated incrementally (each transfer added once,
evicted ones dropped by their arrival number), together with a rigorous bound on how far that figure can be from the
rule's own float sum of the same transfers. A rule uses the figure only to rule an alert *out* when the bound proves
its ratio test fails; otherwise it scans as before. So the alerts are exactly those of the scan.

Counted transfers (as in the two rules): incoming ones not from the account itself and not a cash withdrawal booked
against it; outgoing ones not to the account itself and not a cash deposit booked against it
(:func:`~sectorflow_aml.typologies.base.hub_is_cash_side`).

Exactness: amounts are positive floats. Recursive summation of ``m`` positive terms in any order is within
``gamma_m * S`` of the exact sum ``S`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002,
eq. 4.4, ``gamma_m = m u / (1 - m u)``, ``u = 2**-53``). The prefix sums are a recursive sum of at most ``n`` terms
(``n`` transfers since the memo was last rebuilt), so a difference of two of them is within ``2 gamma_n C + u |d|`` of
the exact period sum (``C`` the larger prefix); with the rule's own sum also within ``gamma_n S``,
:func:`period_sum`'s bound ``8 (n + 2) u C`` covers both with room to spare for ``n`` below ``2**40``.

The period must be a time range ``[horizon, until]`` and the rule's scan must stop at the first transfer older than
``horizon`` (newest first): the same transfers when the deque is in time order and none is later than ``until``;
otherwise :func:`period_sum` returns ``None`` (late transactions) and the rule scans.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from sectorflow import ConfigError

from ..window import AccountState, Edge, TransactionWindow
from .base import CASH_SIDE_IN, CASH_SIDE_OUT

BUSY = 128
"""Transfers in one direction of an account within the window from which a rule asks :func:`period_sum` first."""

_U = 2.0 ** -53
"""Unit roundoff of IEEE 754 double precision."""

_COMPACT = 4096
"""Evicted entries a memo keeps before it is rebuilt from the live deque (bounds its size and ``n``)."""


class FlowSums:
    """Prefix sums of one direction of one account: every transfer of the deque since the last rebuild, in arrival
    order (``seqs``, ``ts``), and ``cum[j]``, the float sum of the counted amounts of entries ``0 .. j-1``."""

    __slots__ = ("base", "counted", "cum", "seqs", "ts", "unsorted")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.ts: list[float] = []
        self.counted = bytearray()  # 1 where the entry is a counted transfer
        self.cum: list[float] = [0.0]
        self.base = 0  # entries before this index have left the window
        self.unsorted = 0  # the last index i with ts[i] < ts[i - 1] (0: none), so ts is sorted from there on


def _counted(edge: Edge, account: str, incoming: bool) -> bool:
    if incoming:
        return edge.src != account and edge.txn.channel != CASH_SIDE_IN
    return edge.dst != account and edge.txn.channel != CASH_SIDE_OUT


def _append(sums: FlowSums, edges: list[Edge], account: str, incoming: bool) -> None:
    seqs, ts, cum, counted = sums.seqs, sums.ts, sums.cum, sums.counted
    total = cum[-1]
    for e in edges:
        if ts and e.ts < ts[-1]:
            sums.unsorted = len(ts)
        seqs.append(e.seq)
        ts.append(e.ts)
        if _counted(e, account, incoming):
            total += e.amount
            counted.append(1)
        else:
            counted.append(0)
        cum.append(total)


def _sync(sums: FlowSums, edges: deque[Edge], account: str, incoming: bool) -> FlowSums:
    """Bring ``sums`` up to the deque: drop what was evicted, add what arrived (each transfer once)."""
    seqs = sums.seqs
    if not edges:
        sums.base = len(seqs)
    elif sums.base < len(seqs) and seqs[sums.base] < edges[0].seq:  # deques are in arrival (seq) order
        sums.base = bisect_left(seqs, edges[0].seq, sums.base)
    if sums.base > _COMPACT and 2 * sums.base > len(seqs):  # rebuild from the live deque
        sums = FlowSums()
        _append(sums, list(edges), account, incoming)
        return sums
    last = seqs[-1] if seqs else -1
    new: list[Edge] = []
    for e in reversed(edges):
        if e.seq <= last:
            break
        new.append(e)
    new.reverse()
    _append(sums, new, account, incoming)
    return sums


def _period(state: AccountState, incoming: bool, horizon: float, until: float) -> tuple[FlowSums, int] | None:
    """The synced memo of one direction and the index of its first entry with ``ts >= horizon``; ``None`` when a
    scan of the period would not see exactly the entries from there on (see :func:`period_sum`)."""
    edges = state.incoming if incoming else state.outgoing
    memo = state.memo
    if memo is None:
        memo = state.memo = {}
    sums = memo.get(incoming)
    sums = memo[incoming] = _sync(sums if sums is not None else FlowSums(), edges, state.account, incoming)
    n = len(sums.seqs)
    base = sums.base
    if base >= n:
        return sums, n
    if sums.unsorted > base or sums.ts[-1] > until:
        return None
    return sums, bisect_left(sums.ts, horizon, base, n)


def _sum_from(sums: FlowSums, lo: int) -> tuple[float, float]:
    cum = sums.cum
    n = len(sums.seqs)
    return cum[n] - cum[lo], 8.0 * (n + 2) * _U * cum[n]


def period_sum(state: AccountState, incoming: bool, horizon: float, until: float) -> tuple[float, float] | None:
    """The counted amount of ``state``'s transfers in one direction with ``horizon <= ts <= until``, and a bound on
    its distance from any float sum of those transfers (base currency; see the module docstring).

    Returns:
        ``(amount, bound)``; ``None`` when the figure would not be the scan's (the deque is not in time order from
        the period on, or holds a transfer later than ``until``).
    """
    found = _period(state, incoming, horizon, until)
    return None if found is None else _sum_from(*found)


def ratio_below(state: AccountState, horizon: float, until: float, ratio: float) -> bool:
    """Whether the account's counted outflow within ``[horizon, until]`` is provably below ``ratio`` times its
    counted inflow there, so that any outflow/inflow test over a part of the period's outflow and the whole
    period's inflow fails (see the module docstring). ``False`` means "not proven" (the rule scans)."""
    inflow = period_sum(state, True, horizon, until)
    if inflow is None or inflow[0] <= inflow[1]:
        return False
    outflow = period_sum(state, False, horizon, until)
    if outflow is None:
        return False
    return (outflow[0] + outflow[1]) < ratio * (inflow[0] - inflow[1]) * (1.0 - 1e-12)


_FIRST_COUNTED_STEPS = 64
"""Entries :func:`pass_through_ruled_out` looks past for the period's first counted transfer before it scans."""


def pass_through_ruled_out(state: AccountState, horizon: float, until: float, amount: float, min_amount: float,
                           min_ratio: float, max_ratio: float) -> bool:
    """Whether rapid pass-through's tests provably fail for the account's newest payment out (``amount``, at
    ``until``): the counted inflow of ``[horizon, until]`` is empty or under ``min_amount``, or the counted outflow
    since that inflow's first transfer is under ``min_ratio`` or over ``max_ratio`` of it, or was at least
    ``min_ratio`` of it already before this payment (see
    :class:`~sectorflow_aml.typologies.rapid_pass_through.RapidPassThroughRule`). ``False`` means "not proven"."""
    found = _period(state, True, horizon, until)
    if found is None:
        return False
    sums, lo = found
    n = len(sums.seqs)
    counted = sums.counted
    first = lo
    stop = min(n, lo + _FIRST_COUNTED_STEPS)
    while first < stop and not counted[first]:
        first += 1
    if first == n:
        return True  # no counted inflow in the period: the rule has nothing to pass on
    if first == stop:
        return False
    inflow, in_bound = _sum_from(sums, first)  # = from lo: the entries between are not counted
    if inflow + in_bound < min_amount * (1.0 - 1e-12):
        return True
    found = _period(state, False, sums.ts[first], until)  # the outflow since the inflow's first transfer
    if found is None:
        return False
    outflow, out_bound = _sum_from(*found)
    low_in, high_in = inflow - in_bound, inflow + in_bound
    low_out, high_out = outflow - out_bound, outflow + out_bound
    slack = 1e-12 * (high_out + high_in + amount)
    return (high_out < min_ratio * low_in - slack            # passes on too little
            or low_out > max_ratio * high_in + slack         # pays out more than came in (older funds)
            or low_out - amount > min_ratio * high_in + slack)  # had passed it on before this payment


def memo_state_dict(window: TransactionWindow) -> dict[str, dict[str, list]]:
    """The prefix sums every account keeps (``AccountState.memo``) as JSON values: ``{account: {"in" | "out":
    [seqs, ts, counted as a "0"/"1" string, cum, base, unsorted]}}``, accounts in the window's order. They are
    written, not rebuilt, because ``cum`` depends on when the memo was last rebuilt (``_COMPACT``)."""
    out: dict[str, dict[str, list]] = {}
    for account, state in window.accounts.items():
        memo = state.memo
        if not memo:
            continue
        out[account] = {("in" if incoming else "out"): [s.seqs, s.ts, s.counted.decode("ascii", "replace")
                                                         .translate(_TO_TEXT), s.cum, s.base, s.unsorted]
                        for incoming, s in memo.items()}
    return out


def load_memo_state(window: TransactionWindow, state: dict[str, dict[str, list]]) -> None:
    """Put back what :func:`memo_state_dict` wrote (after the window's own ``load_state_dict``).

    Raises:
        ConfigError: an account the window does not hold, or a damaged entry.
    """
    try:
        for account, sides in state.items():
            memo: dict = {}
            for side, (seqs, ts, counted, cum, base, unsorted) in sides.items():
                s = FlowSums()
                s.seqs, s.ts, s.cum, s.base, s.unsorted = list(seqs), list(ts), list(cum), base, unsorted
                s.counted = bytearray(counted.translate(_FROM_TEXT).encode("ascii"))
                memo[side == "in"] = s
            window.accounts[account].memo = memo
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"The flow-sum state is damaged ({type(exc).__name__}: {exc}): reset the state.") from exc


_TO_TEXT = {0: "0", 1: "1"}
_FROM_TEXT = {ord("0"): "\x00", ord("1"): "\x01"}
