"""Sliding-window transaction graph: per-account incoming and outgoing edges within a lookback window.

API (other modules — typology rules, the feature extractor — read the window through these names only)::

    w = TransactionWindow(lookback_days=30.0, rate=None, dormancy_days=180.0)
                             # rate(currency) -> factor to the base currency
    e = w.add(txn)           # Transaction -> Edge; evicts edges older than (clock - lookback) first, then inserts
    w.now                    # float: window clock = latest timestamp seen (POSIX seconds, UTC)
    w.lookback               # float: lookback in seconds
    a = w.get(account_id)    # AccountState | None
    a.incoming / a.outgoing  # collections.deque[Edge], oldest first, only edges inside the window
    a.senders / a.receivers  # dict[counterparty_id, int]: distinct counterparties in the window -> edge count
    a.in_sum / a.out_sum     # float: total amount in / out inside the window (base currency)
    a.self_sum               # float: the part of both that is self-transfers (sender = receiver, e.g. cash
                             #   deposits and withdrawals recorded on one account)
    a.prev_active            # float | None: time of this account's previous transaction before the current one
                             #   (kept for ever, not evicted: dormant-account rules look past the window)
    a.last_active, a.first_seen, a.lifetime_count
    a.memo                   # dict | None: data a rule derives from the deques and keeps with the account (prefix
                             #   sums of a busy account: typologies.flow_sums); nothing else reads or writes it
    a.resumed_at, a.idle_seconds   # start and preceding idle time of the latest reactivation: the first transaction
                             #   after at least `dormancy_days` without any (None / 0.0 if never dormant)
    w.edges                  # deque[Edge]: every edge in the window, in arrival order
    w.active                 # int: accounts with at least one edge in the window (the peers of the hub rules)
    w.ids                    # dict[transaction_id, Edge]: the latest edge of each id in the window
    w.cooldown(key, ts, seconds) -> bool   # True (and arms the key) if `key` has not fired within `seconds`
    w.cooling(key, ts, seconds) -> bool    # True while `key` fired within `seconds` (peek, arms nothing)
    w.rate_of(currency)      # float: the cached factor to the base currency (raises what `rate` raises)
    w.reset()                # forget everything
    len(w)                   # number of edges in the window

``Edge`` (``__slots__``): ``seq`` (int, arrival order from 0), ``ts`` (float, POSIX seconds UTC), ``src``, ``dst``
(account ids), ``amount`` (float, in base currency via ``rate``), ``txn`` (the original
:class:`~sectorflow_aml.schema.Transaction`).

Semantics:

- Time is the transaction's own ``timestamp``, never wall-clock time, so a replay gives the same state.
- The clock is the largest timestamp seen. An edge stays while ``edge.ts >= now - lookback`` (inclusive).
  Eviction follows arrival order: input is expected in (roughly) time order. A late transaction (timestamp behind
  the clock) is kept until every earlier-arrived edge has expired; it never moves the clock backwards.
- Everything is incremental: ``add`` costs O(1) amortised plus the number of edges it evicts, so feeding
  transactions one at a time or in batches gives exactly the same state.
- Not thread-safe: one window belongs to one pipeline, and the runtime serialises calls on stateful tasks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from sectorflow import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .schema import Transaction

DAY = 86_400.0
"""Seconds in a day."""


class Edge:
    """One transaction as an edge ``src -> dst`` of the window graph (see the module docstring)."""

    __slots__ = ("amount", "dst", "seq", "src", "ts", "txn")

    def __init__(self, seq: int, ts: float, src: str, dst: str, amount: float, txn: Transaction) -> None:
        self.seq = seq
        self.ts = ts
        self.src = src
        self.dst = dst
        self.amount = amount
        self.txn = txn

    @property
    def transaction_id(self) -> str:
        return self.txn.transaction_id

    def __repr__(self) -> str:
        return f"Edge({self.src}->{self.dst} {self.amount:.2f} @ {self.ts:.0f} #{self.seq})"


class AccountState:
    """Windowed state of one account (see the module docstring for the fields)."""

    __slots__ = (
        "account",
        "first_seen",
        "idle_seconds",
        "in_sum",
        "incoming",
        "last_active",
        "lifetime_count",
        "memo",
        "out_sum",
        "outgoing",
        "prev_active",
        "receivers",
        "resumed_at",
        "self_sum",
        "senders",
    )

    def __init__(self, account: str, ts: float) -> None:
        self.account = account
        self.incoming: deque[Edge] = deque()
        self.outgoing: deque[Edge] = deque()
        self.senders: dict[str, int] = {}
        self.receivers: dict[str, int] = {}
        self.in_sum = 0.0
        self.out_sum = 0.0
        self.self_sum = 0.0
        self.first_seen = ts
        self.last_active = ts
        self.prev_active: float | None = None
        self.lifetime_count = 0
        self.resumed_at: float | None = None
        self.idle_seconds = 0.0
        self.memo: dict | None = None

    @property
    def in_degree(self) -> int:
        """Distinct senders inside the window."""
        return len(self.senders)

    @property
    def out_degree(self) -> int:
        """Distinct receivers inside the window."""
        return len(self.receivers)

    def __repr__(self) -> str:
        return (f"AccountState({self.account!r}, in={len(self.incoming)}/{self.in_sum:.2f}, "
                f"out={len(self.outgoing)}/{self.out_sum:.2f})")


class TransactionWindow:
    """The sliding-window transaction graph, keyed by account id.

    Args:
        lookback_days: how far back edges are kept, in days (> 0; fractions allowed).
        rate: ``rate(currency) -> float``, the factor that turns an amount in ``currency`` into the base currency
            used for sums and ratios. ``None``: amounts are taken as they are (single-currency data).
        dormancy_days: an account idle for at least this many days is dormant; its next transaction sets
            ``resumed_at`` and ``idle_seconds``.

    Raises:
        ConfigError: a non-positive lookback.
    """

    def __init__(self, lookback_days: float = 30.0, rate: Callable[[str], float] | None = None,
                 dormancy_days: float = 180.0) -> None:
        for name, value in (("lookback_days", lookback_days), ("dormancy_days", dormancy_days)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{name}={value!r}: give a positive number of days.")
        self.lookback = float(lookback_days) * DAY
        self.dormancy = float(dormancy_days) * DAY
        self._rate = rate
        self._rates: dict[str, float] = {}
        self.reset()

    def reset(self) -> None:
        """Forget every edge, account and cooldown."""
        self.accounts: dict[str, AccountState] = {}
        self.edges: deque[Edge] = deque()
        self.ids: dict[str, Edge] = {}
        self.now = float("-inf")
        self._seq = 0
        self._fired: dict[object, float] = {}
        self._max_cooldown = 0.0
        self._prune_at = 1024
        self._stamp: object = None
        self._stamp_ts = 0.0
        self.active = 0

    def __len__(self) -> int:
        return len(self.edges)

    def get(self, account: str) -> AccountState | None:
        """The account's state, or ``None`` if it has never been seen."""
        return self.accounts.get(account)

    def rate_of(self, currency: str) -> float:
        """The factor from ``currency`` to the base currency (cached); raises what ``rate`` raises."""
        return self._factor(currency)

    def _factor(self, currency: str) -> float:
        factor = self._rates.get(currency)
        if factor is None:
            factor = float(self._rate(currency)) if self._rate is not None else 1.0
            self._rates[currency] = factor
        return factor

    def _evict(self, horizon: float) -> None:
        edges = self.edges
        accounts = self.accounts
        ids = self.ids
        while edges and edges[0].ts < horizon:
            e = edges.popleft()
            tid = e.txn.transaction_id
            if ids.get(tid) is e:
                del ids[tid]
            s = accounts[e.src]
            d = accounts[e.dst]
            s.outgoing.popleft()
            s.out_sum -= e.amount
            n = s.receivers[e.dst] - 1
            if n:
                s.receivers[e.dst] = n
            else:
                del s.receivers[e.dst]
            d.incoming.popleft()
            d.in_sum -= e.amount
            n = d.senders[e.src] - 1
            if n:
                d.senders[e.src] = n
            else:
                del d.senders[e.src]
            if s is d:
                s.self_sum -= e.amount
            if not s.outgoing and not s.incoming:
                s.in_sum = s.out_sum = s.self_sum = 0.0  # drop accumulated float error
                self.active -= 1
            if d is not s and not d.outgoing and not d.incoming:
                d.in_sum = d.out_sum = d.self_sum = 0.0
                self.active -= 1

    def add(self, txn: Transaction) -> Edge:
        """Evict expired edges, then insert ``txn`` as an edge and update both accounts.

        Returns:
            The new :class:`Edge`. ``prev_active`` of sender and receiver then holds their previous activity time.
        """
        stamp = txn.timestamp
        if stamp is self._stamp:  # the same datetime object as the previous transaction's (typed readers share them)
            ts = self._stamp_ts
        else:
            ts = stamp.timestamp()
            self._stamp = stamp
            self._stamp_ts = ts
        if ts > self.now:
            self.now = ts
            self._evict(ts - self.lookback)
        src = txn.sender_account
        dst = txn.receiver_account
        currency = txn.currency
        factor = self._rates.get(currency)
        if factor is None:
            factor = self._factor(currency)
        amount = float(txn.amount) * factor
        edge = Edge(self._seq, ts, src, dst, amount, txn)
        self._seq += 1
        self.edges.append(edge)
        self.ids[txn.transaction_id] = edge
        accounts = self.accounts
        s = accounts.get(src)
        if s is None:
            s = accounts[src] = AccountState(src, ts)
        d = accounts.get(dst)
        if d is None:
            d = accounts[dst] = AccountState(dst, ts)
        if not s.outgoing and not s.incoming:
            self.active += 1
        if d is not s and not d.outgoing and not d.incoming:
            self.active += 1
        s.outgoing.append(edge)
        s.out_sum += amount
        s.receivers[dst] = s.receivers.get(dst, 0) + 1
        d.incoming.append(edge)
        d.in_sum += amount
        d.senders[src] = d.senders.get(src, 0) + 1
        if s is d:
            s.self_sum += amount
        dormancy = self.dormancy
        if s.lifetime_count:
            last = s.last_active
            s.prev_active = last
            if ts - last >= dormancy:
                s.resumed_at = ts
                s.idle_seconds = ts - last
            if ts > last:
                s.last_active = ts
        s.lifetime_count += 1
        if d is not s:
            if d.lifetime_count:
                last = d.last_active
                d.prev_active = last
                if ts - last >= dormancy:
                    d.resumed_at = ts
                    d.idle_seconds = ts - last
                if ts > last:
                    d.last_active = ts
            d.lifetime_count += 1
        return edge

    def cooling(self, key: object, ts: float, seconds: float) -> bool:
        """``True`` while ``key`` is within ``seconds`` of its last firing (a peek: nothing is armed)."""
        last = self._fired.get(key)
        return last is not None and ts - last < seconds

    def cooldown(self, key: object, ts: float, seconds: float) -> bool:
        """Return ``True`` and arm ``key`` if it has not fired in the last ``seconds`` before ``ts``.

        Rules use it so that a pattern that stays true (a fan-in with a sixth, seventh ... sender) raises one alert
        per account per cooldown instead of one per transaction. Keys whose cooldown has run out are dropped from
        time to time (amortised O(1)), so memory follows the number of recent alerts. The state resets with
        :meth:`reset`.
        """
        fired = self._fired
        last = fired.get(key)
        if last is not None and ts - last < seconds:
            return False
        fired[key] = ts
        self._max_cooldown = max(self._max_cooldown, seconds)
        if len(fired) > self._prune_at:
            horizon = self.now - self._max_cooldown
            for old in [k for k, t in fired.items() if t < horizon]:
                del fired[old]
            self._prune_at = max(1024, 2 * len(fired))
        return True
