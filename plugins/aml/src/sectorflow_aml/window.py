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
from typing import TYPE_CHECKING, Any

from sectorflow import ConfigError

from .state import TransactionTable, dec_key, enc_float, enc_key

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

    # --- state export / import (sectorflow_aml.state) ----------------------------------------------------------------

    def state_dict(self, txns: TransactionTable) -> dict[str, Any]:
        """The window's state as JSON values (see :mod:`sectorflow_aml.state`): edges in arrival order (sequence
        number, time, base-currency amount, transaction row in ``txns``), ``ids`` as edge indices in dict order,
        every account (times, counts, float sums as they are, counterparty dicts in insertion order), the cooldowns
        in insertion order with their pruning counters, and the clock. The accounts' deques are not written: they
        are exactly the window's edges of that account, in arrival order (``add`` appends to both and ``_evict``
        pops both), and are rebuilt from ``edges``. ``AccountState.memo`` is written by its owner
        (:func:`sectorflow_aml.typologies.flow_sums.memo_state_dict`)."""
        index = {id(e): i for i, e in enumerate(self.edges)}
        accounts = []
        for a in self.accounts.values():
            accounts.append([a.account, a.first_seen, a.last_active, a.prev_active, a.lifetime_count, a.resumed_at,
                             a.idle_seconds, a.in_sum, a.out_sum, a.self_sum, list(a.senders),
                             list(a.senders.values()), list(a.receivers), list(a.receivers.values())])
        return {
            "lookback": self.lookback, "dormancy": self.dormancy, "now": enc_float(self.now), "seq": self._seq,
            "edges": [[e.seq, e.ts, e.amount, txns.index(e.txn)] for e in self.edges],
            "ids": [index[id(e)] for e in self.ids.values()],
            "accounts": accounts,
            "fired": [[enc_key(k), t] for k, t in self._fired.items()],
            "max_cooldown": self._max_cooldown, "prune_at": self._prune_at,
        }

    def load_state_dict(self, state: dict[str, Any], txns: list[Transaction]) -> None:
        """Replace this window's state by ``state`` (from :meth:`state_dict`; ``txns`` the decoded table).

        Raises:
            ConfigError: another lookback or dormancy period, or a damaged state.
        """
        if state.get("lookback") != self.lookback or state.get("dormancy") != self.dormancy:
            raise ConfigError(f"The state's window keeps {state.get('lookback', 0) / DAY:g} days (dormancy "
                              f"{state.get('dormancy', 0) / DAY:g}), this one {self.lookback / DAY:g} days (dormancy "
                              f"{self.dormancy / DAY:g}): run with the options the state was made with, or reset it.")
        try:
            self.reset()
            self.now = float(state["now"])
            self._seq = state["seq"]
            edges = self.edges
            for seq, ts, amount, t in state["edges"]:
                txn = txns[t]
                edges.append(Edge(seq, ts, txn.sender_account, txn.receiver_account, amount, txn))
            accounts = self.accounts
            for (account, first_seen, last_active, prev_active, lifetime, resumed, idle, in_sum, out_sum, self_sum,
                 senders, sender_counts, receivers, receiver_counts) in state["accounts"]:
                a = accounts[account] = AccountState(account, first_seen)
                a.last_active, a.prev_active, a.lifetime_count = last_active, prev_active, lifetime
                a.resumed_at, a.idle_seconds = resumed, idle
                a.in_sum, a.out_sum, a.self_sum = in_sum, out_sum, self_sum
                a.senders = dict(zip(senders, sender_counts))
                a.receivers = dict(zip(receivers, receiver_counts))
            for e in edges:
                accounts[e.src].outgoing.append(e)
                accounts[e.dst].incoming.append(e)
            self.active = sum(1 for a in accounts.values() if a.incoming or a.outgoing)
            self.ids = {edges[i].txn.transaction_id: edges[i] for i in state["ids"]}
            self._fired = {dec_key(k): t for k, t in state["fired"]}
            self._max_cooldown = state["max_cooldown"]
            self._prune_at = state["prune_at"]
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self.reset()
            raise ConfigError(f"The window state is damaged ({type(exc).__name__}: {exc}): export it again or reset "
                              "the state (sectorflow aml state reset).") from exc
