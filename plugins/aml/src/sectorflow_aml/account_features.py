"""Account-level features for the account risk model: what the sliding window holds about one account at time t.

:class:`AccountFeatureExtractor` keeps, per account, the account's own events of the last ``lookback`` seconds (a
deque evicted lazily, when the account is next touched, against the window's clock ``window.now - lookback``: the
same horizon as :class:`~sectorflow_aml.window.TransactionWindow`) and running aggregates over them, so that every
update is O(1) amortised. :meth:`AccountFeatureExtractor.rows` gives, right after ``window.add(txn)``, one float row of
``len(ACCOUNT_FEATURES)`` values for the transaction's sender and one for its receiver (one when they are the same
account: a cash deposit or withdrawal booked on the account alone). The serving path splits that in two:
:meth:`AccountFeatureExtractor.snapshots` (per transaction: the state update and a tuple of the raw integer
aggregates) and :func:`feature_matrix` (per batch, numpy: the same 38 values, bit for bit, as float32).

**Window-exact.** No feature reads more history than the window: no account age, no lifetime count, no time since
an event before the window. The only look-back past an in-window event is the in-to-out delay, at most
:data:`FORWARD_SECONDS` (one day) before an outgoing transfer, so a run given ``lookback + 1 day`` of history
(``sectorflow run aml --history``) computes exactly the features, and the scores, of a run that saw the whole past
(a test checks this).

**Scale-free.** Amounts enter only as differences of log amounts (the account's amounts relative to its own other
amounts or to the window's transfer amounts of all accounts), standard deviations of log amounts, shares and ratios:
multiplying every amount by one factor (another currency unit, another bank's customers) leaves every feature
unchanged, except the two near-equal shares, which count amounts falling in the same 5 % log-amount bin (scaling
moves the bin edges, so a pair near an edge can change bins; a test bounds how often).

Events: ``tin`` / ``tout`` are transfers between two accounts received / sent; ``cin`` / ``cout`` are cash
deposits / withdrawals (``cash_*`` channels) and self-transfers. Counterparties are accounts of transfers.

Sources of the features' ideas: FATF "Money Laundering and Terrorist Financing Indicators" (rapid movement, funnel
accounts, pass-through); FinCEN FIN-2014-A005 (funnel accounts); the AMLGentex paper's account features (Östman et
al. 2025, arXiv:2506.13989: in/out degree, sums, counts, spans per window).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from .schema import Channel

if TYPE_CHECKING:  # pragma: no cover
    from .window import Edge, TransactionWindow

ACCOUNT_FEATURES: tuple[str, ...] = (
    # counts and distinct counterparties per direction
    "n_tin", "n_tout", "n_cin", "n_cout", "deg_in", "deg_out",
    "deg_in_per_tin", "deg_out_per_tout", "one_off_in_share", "one_off_out_share", "reciprocal_share",
    # amounts (scale-free)
    "log_tin_vs_cout", "log_tout_vs_tin", "log_tout_vs_cout", "log_cin_vs_tin", "log_tin_vs_peers",
    "log_tout_vs_peers", "std_log_tin", "std_log_tout", "near_equal_in", "near_equal_out",
    # flows
    "pass_through", "transfer_out_share", "transfer_in_share", "residual_share", "tout_count_share",
    # time
    "active_days", "transfer_days", "transfer_span_days", "burst_max_day", "burst_today", "tout_today",
    "tin_today", "fast_forward_share", "equal_forward_share",
    # the counterparty of the latest transaction (two hops)
    "cp_deg_in", "cp_deg_out", "cp_pass_through",
)
"""Names of the account feature row's entries, in order (the bundle records them; a mismatch is refused)."""

N_ACCOUNT_FEATURES = len(ACCOUNT_FEATURES)

DAY = 86_400.0
FORWARD_SECONDS = DAY
"""How far before an outgoing transfer an incoming one counts as forwarded (the in-to-out delay feature)."""
BIN = 0.05
"""Width of the log-amount bins whose concentration gives the near-equal-amount shares (about 5 %)."""
RATIO_CAP = 10.0
LOG_UNIT = float(1 << 24)
"""Log amounts are summed as integers in units of 2^-24 (exact sums: see ``_Account``)."""
BIN_UNITS = BIN * LOG_UNIT
EQUAL_UNITS = round(0.1 * LOG_UNIT)
"""An outgoing transfer within 10 % (in log amount) of an incoming one of the previous day counts as forwarded."""

# event kinds
TIN, TOUT, CIN, COUT = 0, 1, 2, 3
_DEPOSIT = Channel.cash_deposit
_WITHDRAWAL = Channel.cash_withdrawal


class _Account:
    """Windowed aggregates of one account (see the module docstring)."""

    __slots__ = ("bins_in", "bins_out", "day", "day_in", "day_out", "days", "equal", "events", "fast", "last_in",
                 "n", "ones_in", "ones_out", "receivers", "recip", "senders", "sq", "sq_in", "sq_out", "sum",
                 "sumlog", "tdays", "tmax", "transfers")

    def __init__(self) -> None:
        self.events: deque[tuple] = deque()   # (ts, kind, amount, logamount, counterparty, day, bin, extra)
        self.transfers: deque[float] = deque()  # times of transfers (span)
        self.n = [0, 0, 0, 0]
        self.sum = [0, 0, 0, 0]     # integer sums (amounts in 1e-4 units, log amounts in 2^-24 units): exact, so the
        self.sumlog = [0, 0, 0, 0]  # state after evictions does not depend on what was added before (window-exact)
        self.sq = [0, 0, 0, 0]
        self.senders: dict[str, int] = {}
        self.receivers: dict[str, int] = {}
        self.ones_in = 0
        self.ones_out = 0
        self.recip = 0
        self.bins_in: dict[int, int] = {}
        self.bins_out: dict[int, int] = {}
        self.sq_in = 0  # sum of squared bin counts
        self.sq_out = 0
        self.days: dict[int, int] = {}
        self.tdays: dict[int, int] = {}
        self.tmax = -1  # max(tdays.values()) (0 when empty), kept as transfers arrive; -1: to be recounted
        self.day = -1  # the day of day_in / day_out: transfers in and out on the account's latest day
        self.day_in = 0
        self.day_out = 0
        self.last_in: deque[tuple[float, float]] = deque()  # recent incoming transfers (ts, logamount), <= 1 day
        self.fast = 0
        self.equal = 0


def _dec(d: dict, key: object) -> int:
    """Decrement ``d[key]`` (deleting at 0); returns the new count."""
    n = d[key] - 1
    if n:
        d[key] = n
    else:
        del d[key]
    return n


def _add_in(a: _Account, ts: float, amount: int, lg: int, cp: str, day: int, b: int) -> None:
    """A transfer ``a`` received from ``cp`` (log-amount bin ``b``): the state update of one event, O(1)."""
    a.transfers.append(ts)
    tdays = a.tdays
    c = tdays[day] = tdays.get(day, 0) + 1
    if 0 <= a.tmax < c:
        a.tmax = c
    if day != a.day:
        a.day, a.day_in, a.day_out = day, 1, 0
    else:
        a.day_in += 1
    senders = a.senders
    c = senders.get(cp, 0)
    senders[cp] = c + 1
    if c == 0:
        a.ones_in += 1
        if cp in a.receivers:
            a.recip += 1
    elif c == 1:
        a.ones_in -= 1
    bins = a.bins_in
    c = bins.get(b, 0)
    bins[b] = c + 1
    a.sq_in += 2 * c + 1
    a.last_in.append((ts, lg))
    a.n[TIN] += 1
    a.sum[TIN] += amount
    a.sumlog[TIN] += lg
    a.sq[TIN] += lg * lg
    days = a.days
    days[day] = days.get(day, 0) + 1
    a.events.append((ts, TIN, amount, lg, cp, day, b, 0))


def _add_out(a: _Account, ts: float, amount: int, lg: int, cp: str, day: int, b: int) -> None:
    """A transfer ``a`` sent to ``cp``; marks it forwarded (``extra`` bit 1) when a transfer came in within
    :data:`FORWARD_SECONDS`, and of an equal amount (bit 2) when one of the latest 16 of those is within
    :data:`EQUAL_UNITS`."""
    a.transfers.append(ts)
    tdays = a.tdays
    c = tdays[day] = tdays.get(day, 0) + 1
    if 0 <= a.tmax < c:
        a.tmax = c
    if day != a.day:
        a.day, a.day_in, a.day_out = day, 0, 1
    else:
        a.day_out += 1
    receivers = a.receivers
    c = receivers.get(cp, 0)
    receivers[cp] = c + 1
    if c == 0:
        a.ones_out += 1
        if cp in a.senders:
            a.recip += 1
    elif c == 1:
        a.ones_out -= 1
    bins = a.bins_out
    c = bins.get(b, 0)
    bins[b] = c + 1
    a.sq_out += 2 * c + 1
    extra = 0
    last_in = a.last_in
    if last_in:
        since = ts - FORWARD_SECONDS
        while last_in and last_in[0][0] < since:
            last_in.popleft()
        if last_in:
            extra = 1
            a.fast += 1
            for i in range(1, min(16, len(last_in)) + 1):
                if abs(lg - last_in[-i][1]) < EQUAL_UNITS:
                    extra = 3
                    a.equal += 1
                    break
    a.n[TOUT] += 1
    a.sum[TOUT] += amount
    a.sumlog[TOUT] += lg
    a.sq[TOUT] += lg * lg
    days = a.days
    days[day] = days.get(day, 0) + 1
    a.events.append((ts, TOUT, amount, lg, cp, day, b, extra))


def _add_cash(a: _Account, ts: float, kind: int, amount: int, lg: int, day: int, b: int) -> None:
    """A cash event (``CIN`` or ``COUT``: no counterparty, no transfer aggregates)."""
    a.n[kind] += 1
    a.sum[kind] += amount
    a.sumlog[kind] += lg
    a.sq[kind] += lg * lg
    days = a.days
    days[day] = days.get(day, 0) + 1
    a.events.append((ts, kind, amount, lg, None, day, b, 0))


class AccountFeatureExtractor:
    """Incremental account features, one call per transaction in arrival order, after ``window.add(txn)``.

    Args:
        lookback_seconds: the window's lookback (must equal ``window.lookback``; checked on every call).
    """

    def __init__(self, lookback_seconds: float) -> None:
        self.lookback = float(lookback_seconds)
        self.reset()

    def reset(self) -> None:
        """Forget every account's state."""
        self._acc: dict[str, _Account] = {}
        self._peer: deque[tuple[float, float]] = deque()  # (ts, logamount) of every transfer in the window
        self._peer_sum = 0

    # --- state ---------------------------------------------------------------------------------------------------

    def _evict(self, a: _Account, horizon: float) -> None:
        events = a.events
        n, s, sl, sq = a.n, a.sum, a.sumlog, a.sq
        while events and events[0][0] < horizon:
            ts, kind, amount, lg, cp, day, b, extra = events.popleft()
            n[kind] -= 1
            s[kind] -= amount
            sl[kind] -= lg
            sq[kind] -= lg * lg
            _dec(a.days, day)
            if kind <= TOUT:
                a.transfers.popleft()
                if _dec(a.tdays, day) + 1 == a.tmax:  # the busiest day lost one: recount at the next snapshot
                    a.tmax = -1
                if kind == TIN:
                    left = _dec(a.senders, cp)
                    if left == 1:
                        a.ones_in += 1
                    elif left == 0:
                        a.ones_in -= 1
                        if cp in a.receivers:
                            a.recip -= 1
                    c = a.bins_in[b]
                    a.sq_in -= 2 * c - 1
                    _dec(a.bins_in, b)
                else:
                    left = _dec(a.receivers, cp)
                    if left == 1:
                        a.ones_out += 1
                    elif left == 0:
                        a.ones_out -= 1
                        if cp in a.senders:
                            a.recip -= 1
                    c = a.bins_out[b]
                    a.sq_out -= 2 * c - 1
                    _dec(a.bins_out, b)
                    if extra & 1:
                        a.fast -= 1
                    if extra & 2:
                        a.equal -= 1
        last_in = a.last_in
        while last_in and last_in[0][0] < horizon:
            last_in.popleft()

    def _add(self, a: _Account, ts: float, kind: int, amount: int, lg: int, cp: str | None, day: int) -> None:
        """Add one event of ``kind`` to ``a`` (the generic entry: :meth:`observe` calls the kind's own function)."""
        b = math.floor(lg / BIN_UNITS)
        if kind == TIN:
            _add_in(a, ts, amount, lg, cp, day, b)
        elif kind == TOUT:
            _add_out(a, ts, amount, lg, cp, day, b)
        else:
            _add_cash(a, ts, kind, amount, lg, day, b)

    def _get(self, account: str, horizon: float) -> _Account:
        a = self._acc.get(account)
        if a is None:
            a = self._acc[account] = _Account()
        elif (a.events and a.events[0][0] < horizon) or (a.last_in and a.last_in[0][0] < horizon):
            self._evict(a, horizon)
        return a

    def observe(self, edge: Edge, window: TransactionWindow) -> tuple[str, _Account, str, _Account]:
        """Add ``edge`` (the window's latest) to its accounts' state; returns ``(src, state, dst, state)``."""
        horizon = window.now - self.lookback
        ts = edge.ts
        x = edge.amount
        amount = round(x * 1e4)
        lg = round(math.log(x) * LOG_UNIT) if x > 0 else 0
        b = math.floor(lg / BIN_UNITS)
        day = int(ts // DAY)
        src, dst = edge.src, edge.dst
        acc = self._acc
        s = acc.get(src)
        if s is None:
            s = acc[src] = _Account()
        elif (s.events and s.events[0][0] < horizon) or (s.last_in and s.last_in[0][0] < horizon):
            self._evict(s, horizon)
        channel = edge.txn.channel
        if src == dst or channel is _DEPOSIT or channel is _WITHDRAWAL:
            # cash, or a self-transfer: an event of the account itself (withdrawal when the sender books it)
            cash_in = channel is _DEPOSIT or (src == dst and channel is not _WITHDRAWAL)
            if src == dst:
                _add_cash(s, ts, CIN if cash_in else COUT, amount, lg, day, b)
                return src, s, dst, s
            d = self._get(dst, horizon)
            if cash_in:  # a deposit from a walk-in or cash account: the receiver's cash in
                _add_cash(d, ts, CIN, amount, lg, day, b)
            else:
                _add_cash(s, ts, COUT, amount, lg, day, b)
            return src, s, dst, d
        d = acc.get(dst)
        if d is None:
            d = acc[dst] = _Account()
        elif (d.events and d.events[0][0] < horizon) or (d.last_in and d.last_in[0][0] < horizon):
            self._evict(d, horizon)
        _add_out(s, ts, amount, lg, dst, day, b)
        _add_in(d, ts, amount, lg, src, day, b)
        peer = self._peer
        peer.append((ts, lg))
        self._peer_sum += lg
        while peer[0][0] < horizon:
            self._peer_sum -= peer.popleft()[1]
        return src, s, dst, d

    # --- rows ----------------------------------------------------------------------------------------------------

    def _row(self, a: _Account, cp: _Account | None, today: int) -> list[float]:
        n_tin, n_tout, n_cin, n_cout = a.n
        t_in, t_out, c_in, c_out = a.sum
        l_tin, l_tout, l_cin, l_cout = a.sumlog
        deg_in = len(a.senders)
        deg_out = len(a.receivers)
        deg = deg_in + deg_out
        unit = LOG_UNIT
        m_tin = l_tin / n_tin / unit if n_tin else 0.0
        m_tout = l_tout / n_tout / unit if n_tout else 0.0
        m_cout = l_cout / n_cout / unit if n_cout else 0.0
        peer_n = len(self._peer)
        peer_mean = self._peer_sum / peer_n / unit if peer_n else 0.0
        inflow = t_in + c_in
        outflow = t_out + c_out
        transfers = a.transfers
        tdays = a.tdays
        if n_tin:
            f_in = (deg_in / n_tin, a.ones_in / deg_in, a.sq_in / (n_tin * n_tin),
                    math.sqrt(max(0, a.sq[TIN] * n_tin - l_tin * l_tin)) / n_tin / unit if n_tin > 1 else 0.0)
        else:
            f_in = (0.0, 0.0, 0.0, 0.0)
        if n_tout:
            f_out = (deg_out / n_tout, a.ones_out / deg_out, a.sq_out / (n_tout * n_tout),
                     math.sqrt(max(0, a.sq[TOUT] * n_tout - l_tout * l_tout)) / n_tout / unit if n_tout > 1 else 0.0,
                     a.fast / n_tout, a.equal / n_tout)
        else:
            f_out = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if cp is not None:
            cp_inflow = cp.sum[TIN] + cp.sum[CIN]
            cp_row = (len(cp.senders), len(cp.receivers),
                      min(RATIO_CAP, cp.sum[TOUT] / cp_inflow) if cp_inflow > 0 else RATIO_CAP)
        else:
            cp_row = (0, 0, 0.0)
        on_day = a.day == today
        return [
            n_tin, n_tout, n_cin, n_cout, deg_in, deg_out, f_in[0], f_out[0], f_in[1], f_out[1],
            a.recip / deg if deg else 0.0,
            m_tin - m_cout if n_tin and n_cout else 0.0,
            m_tout - m_tin if n_tout and n_tin else 0.0,
            m_tout - m_cout if n_tout and n_cout else 0.0,
            l_cin / n_cin / unit - m_tin if n_cin and n_tin else 0.0,
            m_tin - peer_mean if n_tin and peer_n else 0.0,
            m_tout - peer_mean if n_tout and peer_n else 0.0,
            f_in[3], f_out[3], f_in[2], f_out[2],
            min(RATIO_CAP, t_out / inflow) if inflow > 0 else (RATIO_CAP if t_out > 0 else 0.0),
            t_out / outflow if outflow > 0 else 0.0,
            t_in / inflow if inflow > 0 else 0.0,
            (inflow - outflow) / (inflow + outflow) if inflow + outflow > 0 else 0.0,
            n_tout / (n_tout + n_cout) if n_tout + n_cout else 0.0,
            len(a.days), len(tdays), (transfers[-1] - transfers[0]) / DAY if transfers else 0.0,
            max(tdays.values()) if tdays else 0, a.days.get(today, 0),
            a.day_out if on_day else 0, a.day_in if on_day else 0,
            f_out[4], f_out[5], cp_row[0], cp_row[1], cp_row[2],
        ]

    def _check(self, window: TransactionWindow) -> None:
        if window.lookback != self.lookback:
            from sectorflow import ConfigError

            raise ConfigError(f"The window's lookback ({window.lookback} s) differs from the account model's "
                              f"({self.lookback} s); use the lookback the bundle was trained with.")

    def rows(self, edge: Edge, window: TransactionWindow) -> list[tuple[str, list[float]]]:
        """Update the state with ``edge`` (call right after ``window.add``) and return ``[(account, row)]``: the
        sender's and the receiver's features after it (one entry when they are the same account).

        The per-row Python path (training replays use it); :meth:`snapshots` with :func:`feature_matrix` gives the
        same values as float32, bit for bit (a test checks it), for a whole batch at once."""
        self._check(window)
        src, s, dst, d = self.observe(edge, window)
        today = int(edge.ts // DAY)
        if s is d:
            return [(src, self._row(s, None, today))]
        channel = edge.txn.channel
        if channel is _DEPOSIT or channel is _WITHDRAWAL:
            return [(src, self._row(s, None, today)), (dst, self._row(d, None, today))]
        return [(src, self._row(s, d, today)), (dst, self._row(d, s, today))]

    # --- snapshots: the serving path -----------------------------------------------------------------------------

    def _snap(self, a: _Account, cp: _Account | None, today: int) -> tuple:
        n, s, sl, sq = a.n, a.sum, a.sumlog, a.sq
        n_tin, n_tout = n[TIN], n[TOUT]
        l_tin, l_tout = sl[TIN], sl[TOUT]
        tdays = a.tdays
        transfers = a.transfers
        on_day = a.day == today
        burst = a.tmax
        if burst < 0:
            burst = a.tmax = max(tdays.values()) if tdays else 0
        if cp is None:
            cp_part: tuple = (0, 0, 0, 0, 0)
        else:
            cs = cp.sum
            cp_part = (1, len(cp.senders), len(cp.receivers), cs[TOUT], cs[TIN] + cs[CIN])
        return (n_tin, n_tout, n[CIN], n[COUT], s[TIN], s[TOUT], s[CIN], s[COUT], l_tin, l_tout, sl[CIN], sl[COUT],
                float(sq[TIN] * n_tin - l_tin * l_tin), float(sq[TOUT] * n_tout - l_tout * l_tout),
                len(a.senders), len(a.receivers), a.ones_in, a.ones_out, a.recip, a.sq_in, a.sq_out, a.fast,
                a.equal, len(a.days), len(tdays), transfers[-1] - transfers[0] if transfers else 0.0,
                burst, a.days.get(today, 0), a.day_out if on_day else 0,
                a.day_in if on_day else 0, len(self._peer), self._peer_sum, *cp_part)

    def snapshots(self, edge: Edge, window: TransactionWindow) -> list[tuple[str, tuple]]:
        """:meth:`rows` without the arithmetic: update the state with ``edge`` and return ``[(account, snapshot)]``,
        each snapshot a tuple of :data:`N_SNAPSHOT` raw aggregates (counts, integer sums, the counterparty's);
        :func:`feature_matrix` turns a list of them into feature rows, for a whole batch in numpy."""
        if window.lookback != self.lookback:
            self._check(window)
        src, s, dst, d = self.observe(edge, window)
        today = int(edge.ts // DAY)
        snap = self._snap
        if s is d:
            return [(src, snap(s, None, today))]
        channel = edge.txn.channel
        if channel is _DEPOSIT or channel is _WITHDRAWAL:
            return [(src, snap(s, None, today)), (dst, snap(d, None, today))]
        return [(src, snap(s, d, today)), (dst, snap(d, s, today))]


N_SNAPSHOT = 37
"""Entries of one :meth:`AccountFeatureExtractor.snapshots` tuple."""


def _div(num: np.ndarray, den: np.ndarray, ok: np.ndarray, default: float = 0.0) -> np.ndarray:
    """``num / den`` where ``ok``, else ``default`` (no division by zero is evaluated)."""
    out = np.full(num.shape, default)
    np.divide(num, den, out=out, where=ok)
    return out


def feature_matrix(snapshots: list[tuple]) -> np.ndarray:
    """Feature rows of snapshots (from :meth:`AccountFeatureExtractor.snapshots`): float32 ``[n, 38]``, equal bit
    for bit to the rows :meth:`AccountFeatureExtractor.rows` computes one at a time (the same float64 operations in
    the same order, then the same float32 cast; integer sums stay exact in float64 below 2^53, that is below about
    9e11 currency units summed over an account's window)."""
    if not snapshots:
        return np.zeros((0, N_ACCOUNT_FEATURES), dtype=np.float32)
    # one flat pass over the tuples (np.array of a list of tuples first discovers the nesting: about a quarter slower)
    s = np.fromiter(itertools.chain.from_iterable(snapshots), dtype=np.float64,
                    count=len(snapshots) * N_SNAPSHOT).reshape(len(snapshots), N_SNAPSHOT)
    (n_tin, n_tout, n_cin, n_cout, t_in, t_out, c_in, c_out, l_tin, l_tout, l_cin, l_cout, v_in, v_out, deg_in,
     deg_out, ones_in, ones_out, recip, sq_in, sq_out, fast, equal, n_days, n_tdays, span, burst_max, burst_today,
     tout_today, tin_today, peer_n, peer_sum, has_cp, cp_deg_in, cp_deg_out, cp_tout, cp_inflow) = s.T
    unit = LOG_UNIT
    has_tin, has_tout, has_cin, has_cout = n_tin > 0, n_tout > 0, n_cin > 0, n_cout > 0
    m_tin = _div(l_tin, n_tin, has_tin) / unit
    m_tout = _div(l_tout, n_tout, has_tout) / unit
    m_cout = _div(l_cout, n_cout, has_cout) / unit
    m_cin = _div(l_cin, n_cin, has_cin) / unit
    has_peer = peer_n > 0
    peer_mean = _div(peer_sum, peer_n, has_peer) / unit
    inflow = t_in + c_in
    outflow = t_out + c_out
    deg = deg_in + deg_out
    zero = np.zeros(len(s))
    pass_through = np.where(inflow > 0, np.minimum(RATIO_CAP, _div(t_out, inflow, inflow > 0)),
                            np.where(t_out > 0, RATIO_CAP, 0.0))
    both = inflow + outflow
    x = np.stack([
        n_tin, n_tout, n_cin, n_cout, deg_in, deg_out,
        _div(deg_in, n_tin, has_tin), _div(deg_out, n_tout, has_tout),
        _div(ones_in, deg_in, has_tin), _div(ones_out, deg_out, has_tout),
        _div(recip, deg, deg > 0),
        np.where(has_tin & has_cout, m_tin - m_cout, zero),
        np.where(has_tout & has_tin, m_tout - m_tin, zero),
        np.where(has_tout & has_cout, m_tout - m_cout, zero),
        np.where(has_cin & has_tin, m_cin - m_tin, zero),
        np.where(has_tin & has_peer, m_tin - peer_mean, zero),
        np.where(has_tout & has_peer, m_tout - peer_mean, zero),
        _div(np.sqrt(np.maximum(0.0, v_in)), n_tin, n_tin > 1) / unit,
        _div(np.sqrt(np.maximum(0.0, v_out)), n_tout, n_tout > 1) / unit,
        _div(sq_in, n_tin * n_tin, has_tin), _div(sq_out, n_tout * n_tout, has_tout),
        pass_through,
        _div(t_out, outflow, outflow > 0), _div(t_in, inflow, inflow > 0),
        _div(inflow - outflow, both, both > 0),
        _div(n_tout, n_tout + n_cout, (n_tout + n_cout) > 0),
        n_days, n_tdays, span / DAY, burst_max, burst_today, tout_today, tin_today,
        _div(fast, n_tout, has_tout), _div(equal, n_tout, has_tout),
        cp_deg_in, cp_deg_out,
        np.where(has_cp > 0, np.where(cp_inflow > 0, np.minimum(RATIO_CAP, _div(cp_tout, cp_inflow, cp_inflow > 0)),
                                      RATIO_CAP), zero),
    ], axis=1)
    return x.astype(np.float32)
