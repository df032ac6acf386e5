"""Cycle (round-tripping): funds that go around a closed loop of accounts and come back to where they started.

Source: FFIEC BSA/AML Manual App. F ("funds ... sent from bank A to bank B and back to A", round-tripping); IBM
AMLSim's ``cycle`` alert pattern (Suzumura and Kanezashi, 2021) plants such loops of 3 to 10 accounts.

A cycle is a **time-ordered chain of transfers that returns to its first account**: ``v -> a -> ... -> u -> v``,
each hop made after the one before it (later in time, or at the same time and later in arrival order), each hop
passing on between ``amount_ratio`` and ``max_gain`` times the amount of the hop before it (fees and a launderer's
skim allowed, unrelated amounts not), the money coming back (the closing transfer ``u -> v``) at least
``min_amount``, all within ``days`` (default: the window). A closed loop in the window's graph is not enough: on a
benign background of small random transfers among a few hundred people over a month, every account lay on such a
loop (loops of unrelated amounts, days apart, in any time order), and the rule alerted on all of them (issue 21).
The alert fires on the transfer that closes the chain and lists the chain's transfers, one per hop.

Real round-tripping moves one sum around (FFIEC App. F: funds "sent from bank A to bank B and back to A"), so time
order follows from causality and the amount is kept less fees. The simulators each miss one half: AMLSim's planted
cycles keep the amount exactly but their hops are not time-ordered; AMLGentex's are time-ordered but each hop's amount
is drawn anew (hops of 961, 546, 871, 943 SEK in one pattern). With the defaults the rule finds neither (measured in
docs/aml-rules.md); ``ordered=False`` gives AMLSim's semantics back, ``amount_ratio=None`` AMLGentex's, and both off
the old closed-loop test.

Cash deposits and withdrawals are no hops of a loop: one side of a cash transaction is the customer's own account, a
walk-in id or the bank's till (a shared ``CASH`` account in many exports), not an account the money went through, so
``A -> CASH`` (A withdraws), ``CASH -> B`` (B deposits), ``B -> A`` is no round trip. A cash transaction closes no
loop, and a loop whose search meets a hop made only of cash transactions raises no alert (before 30 Nov 2026 a
bank export booking cash against one till account gave over a thousand such cycle alerts, each with a suspicious
report draft, in 3,775 transactions: a fresh-user check).

Parameters:
    min_length, max_length: accounts in the loop (``min_length=2`` also reports two-account round trips ``A -> B ->
        A``, which ordinary repayments produce; the default 3 leaves them out).
    ordered: each hop after the one before it, the closing transfer last (default ``True``).
    amount_ratio: least share of the previous hop's amount each hop passes on (default 0.85: a fee or skim of up to
        15 % a hop, the project's choice; FFIEC App. F gives no number); ``None``: any amounts.
    max_gain: most each hop may exceed the previous one (default 1.02: rounding, an exchange rate); with
        ``amount_ratio`` only.
    min_amount: least amount of the closing transfer, in the window's base currency (default 1,000: the project's
        choice, below the smallest sum worth an analyst's round-tripping case; 0 checks nothing).
    days: the chain's span, first hop to closing transfer, in days (default ``None``: the window's lookback).
    max_visits: search budget per transaction (accounts reached on each side); a denser window may miss loops.
    max_degree: accounts with more distinct counterparties than this in the window (merchants, payroll hubs) are not
        passed through (they can still close or open a loop); bounds the cost per transaction.
    min_txns_per_hop: transfers each pair of the loop must have in the window (1 = any). With 2 the rule looks for
        loops whose every hop was split into several transfers, as in AMLSim's planted cycles, where each member
        sends several equal transfers on one day; it also prunes the search.
    score: the alert's score.

Search: first the closed-loop search below over the window's account graph (cheap, and it rules out most
transfers, which close no loop at all); where it finds a loop and ``ordered`` or ``amount_ratio`` is set, a
depth-first search backwards from ``u`` over transfers (not accounts): each step takes an incoming transfer of the
current account that is earlier than the step after it and within the amount band of it, so the band and the time
order prune at every step; at most ``max_visits`` transfers are examined per closing transfer, and accounts with more
than ``max_degree`` senders are not passed through. The first chain found is reported.

The closed-loop search is a bidirectional breadth-first search through the window: backwards from the closing edge's sender,
forwards from its receiver, level by level over distinct counterparties; it reports the first simple loop through
the new edge that it meets (a shortest one in most cases). Cost: about ``d ** ((max_length - 1) / 2)`` per side for
window degree ``d``; the default ``max_length=5`` covers AMLSim's planted loops (mostly five accounts). With the
defaults, whether the two sides can meet at all is first asked with one set test per account in C, so the many
searches that meet nothing walk no counterparty map entry by entry (the same loops are found); when the receiver pays
more accounts than there are accounts that could close a loop back to the sender (a settlement hub paying thousands
of customers), the search starts from those few accounts instead, so a transfer into such a hub walks none of its
receivers. No search runs for a transfer whose sender received nothing in the window or whose receiver paid no one.
One alert per set of accounts per lookback.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from ..schema import Alert, Channel
from ..window import Edge, TransactionWindow
from .base import Rule, fmt_amount, fraction, positive


@dataclass(frozen=True)
class CycleParams:
    """Parameters of :class:`CycleRule`."""

    min_length: int = 3
    max_length: int = 5
    ordered: bool = True
    amount_ratio: float | None = 0.85
    max_gain: float = 1.02
    min_amount: float = 1000.0
    days: float | None = None
    max_visits: int = 2000
    max_degree: int = 50
    min_txns_per_hop: int = 1
    score: float = 0.8

    def __post_init__(self) -> None:
        if not isinstance(self.min_length, int) or not 2 <= self.min_length <= self.max_length:
            raise ValueError(f"min_length={self.min_length!r} must be an integer from 2 to max_length")
        if not isinstance(self.max_length, int) or not 2 <= self.max_length <= 12:
            raise ValueError(f"max_length={self.max_length!r} must be an integer from 2 to 12")
        if self.amount_ratio is not None:
            fraction("amount_ratio", self.amount_ratio)
            positive("amount_ratio", self.amount_ratio)
        positive("max_gain", self.max_gain)
        if self.max_gain < 1:
            raise ValueError(f"max_gain={self.max_gain!r} must be at least 1")
        positive("min_amount", self.min_amount, allow_zero=True)
        if self.days is not None:
            positive("days", self.days)
        positive("max_visits", self.max_visits)
        positive("max_degree", self.max_degree)
        positive("min_txns_per_hop", self.min_txns_per_hop)
        fraction("score", self.score)


_CASH = frozenset((Channel.cash_deposit, Channel.cash_withdrawal))
"""Channels that are no hop of a loop (see the module docstring)."""

_EAGER_BACK1 = 8
"""Up to this many senders of the closing edge's sender, :meth:`CycleRule._find_short_any` builds the two-hop map
backwards at once; above it (collection hubs), entry by entry on demand."""


_HUB_RECEIVERS = 64
"""Above this many receivers of the closing edge's receiver (a settlement hub), and more of them than accounts that
could close a loop, :meth:`CycleRule._find_short_any` starts its four- and five-account stage from the latter
(:meth:`CycleRule._from_targets`); below it, walking the receivers costs less than the set operations."""


class CycleRule(Rule):
    """A closed loop of transfers through the window (see the module docstring)."""

    name = "cycle"
    source = "FFIEC BSA/AML Manual App. F (round-tripping); AMLSim cycle pattern"
    Params = CycleParams

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` closes a loop."""
        # the cheapest tests first: most transactions end at a sender that received nothing in the window or at a
        # receiver that paid no one (no loop can pass through them), before the channel is looked at
        accounts = window.accounts
        u = edge.src
        su = accounts[u]
        if not su.senders:
            return []
        v = edge.dst
        sv = accounts[v]
        if not sv.receivers or u == v or edge.txn.channel in _CASH:
            return []
        p = self.params
        if su.receivers[v] < p.min_txns_per_hop or edge.amount < p.min_amount:
            return []
        if p.max_length > 5:
            path = self._find(accounts, u, v)
        elif p.min_txns_per_hop == 1:  # _find_short without its dispatch call
            path = self._find_short_any(accounts, u, v)
        else:
            path = self._find_short_counted(accounts, u, v)
        if path is None:
            return []
        if p.ordered or p.amount_ratio is not None:
            hops = self._chain(window, edge)
            if hops is None:
                return []
            path = [u, *(e.src for e in hops[:-1])]  # [u, v, ...]: the closing sender first, as before
        else:
            hops = self._edges(window, path, edge)
        if hops is None:
            return []
        if not window.cooldown(("cycle", frozenset(path)), edge.ts, window.lookback):
            return []
        loop = " -> ".join([*path, path[0]])
        total = sum(e.amount for e in hops)
        return [self.alert(hops, p.score,
                           f"closed loop of {len(path)} accounts: {loop} ({len(hops)} transfers, "
                           f"{fmt_amount(total)} in total"
                           + (f"; {fmt_amount(hops[0].amount)} out, {fmt_amount(edge.amount)} back, in time order"
                              if p.ordered and p.amount_ratio is not None else "") + ")",
                           f"资金闭环（{len(path)} 个账户）：{loop}（{len(hops)} 笔，合计 {fmt_amount(total)}）",
                           accounts=path, trigger=edge)]

    def _chain(self, window: TransactionWindow, closing: Edge) -> list[Edge] | None:
        """The transfers of a chain ``v -> ... -> u`` that ``closing`` (``u -> v``) closes, oldest first and ending
        with ``closing``, meeting ``ordered``, ``amount_ratio`` / ``max_gain`` and ``days`` (see the module docstring);
        ``None`` when none is found within ``max_visits`` examined transfers."""
        p = self.params
        accounts = window.accounts
        u, v = closing.src, closing.dst
        lookback = window.lookback if p.days is None else min(window.lookback, p.days * 86_400.0)
        horizon = closing.ts - lookback
        lo, hi = p.min_length - 1, p.max_length - 1  # transfers from v to u
        ratio, gain, ordered, max_degree = p.amount_ratio, p.max_gain, p.ordered, p.max_degree
        budget = p.max_visits
        on_path = {u}

        def back(node: str, after: Edge, depth: int) -> list[Edge] | None:
            """Transfers ``v -> ... -> node`` (oldest first) that come before ``after`` (``node``'s next hop)."""
            nonlocal budget
            for e in islice(reversed(accounts[node].incoming), budget):  # reads at most what the budget has left
                budget -= 1
                if e.ts < horizon:
                    break
                if ordered and (e.ts > after.ts or e.ts == after.ts and e.seq >= after.seq):
                    continue  # not before its next hop (in time, then in arrival order)
                if ratio is not None and not ratio * e.amount <= after.amount <= gain * e.amount:
                    continue
                s = e.src
                if s == node or e.txn.channel in _CASH:
                    continue
                if s == v:
                    if depth >= lo:
                        return [e]
                    continue
                if s in on_path or depth >= hi or len(accounts[s].senders) > max_degree:
                    continue
                on_path.add(s)
                found = back(s, e, depth + 1)
                on_path.discard(s)
                if found is not None:
                    found.append(e)
                    return found
                if budget <= 0:
                    return None
            return None

        chain = back(u, closing, 1)
        if chain is None:
            return None
        chain.append(closing)
        return chain

    def _find_short(self, accounts: dict, u: str, v: str) -> list[str] | None:
        """:meth:`_find` specialised to loops of at most 5 accounts (the default): the same two hops back from
        ``u`` and two forward from ``v``, without the general search's bookkeeping."""
        if self.params.min_txns_per_hop == 1:
            return self._find_short_any(accounts, u, v)
        return self._find_short_counted(accounts, u, v)

    def _find_short_counted(self, accounts: dict, u: str, v: str) -> list[str] | None:
        """:meth:`_find_short` with the ``min_txns_per_hop`` count test on every hop: two hops back from ``u`` into a
        map (``y -> x`` for ``y -> x -> u``), then two forward from ``v`` probing it."""
        p = self.params
        m, lo, hi, max_degree = p.min_txns_per_hop, p.min_length, p.max_length, p.max_degree
        back1 = accounts[u].senders  # x -> u
        if lo <= 2 and back1.get(v, 0) >= m:
            return [u, v]
        fwd1 = accounts[v].receivers  # v -> a
        if lo <= 3 <= hi:
            for a, count in fwd1.items():
                if count >= m and a != u and a != v and back1.get(a, 0) >= m:
                    return [u, v, a]
        if hi < 4:
            return None
        back2: dict[str, str] = {}  # y -> x for y -> x -> u
        if hi >= 5:
            for x, count in back1.items():
                if count < m or x == u or x == v:
                    continue
                senders = accounts[x].senders
                if len(senders) > max_degree:
                    continue
                for y, c in senders.items():
                    if c >= m and y != u and y != x and y not in back2:
                        back2[y] = x
        for a, count in fwd1.items():
            if count < m or a == u or a == v:
                continue
            receivers = accounts[a].receivers
            if len(receivers) > max_degree:
                continue
            for b, c in receivers.items():
                if c < m or b == u or b == v or b == a:
                    continue
                if lo <= 4 and back1.get(b, 0) >= m:
                    return [u, v, a, b]
                x = back2.get(b)
                if x is not None and x != a and x != v:
                    return [u, v, a, b, x]
        return None

    def _find_short_any(self, accounts: dict, u: str, v: str) -> list[str] | None:
        """:meth:`_find_short` for ``min_txns_per_hop=1`` (the default), where every count test passes: the same
        answer (the same loop, found in the same search order) with less work per transaction.

        - Each membership stage first asks whether any candidate can match at all with one set test in C
          (``dict.keys().isdisjoint``); only an account whose counterparties meet the other side is walked entry by
          entry, in the search order, to pick the same first loop. Most searches meet nothing and walk no entry.
        - Up to ``_EAGER_BACK1`` senders of ``u``, the accounts two hops back from ``u`` go into one set in C (a
          superset of the two-hop map's keys); the map itself (:meth:`_back2`: which sender of ``u`` each reaches it
          through) is built only when some account two hops forward from ``v`` is in that set.
        - Above it (``u`` a collection hub), each account ``b`` two hops forward from ``v`` gets its map entry on
          demand (:meth:`_via`), as before.
        - When ``v`` pays more than ``_HUB_RECEIVERS`` accounts, and more than there are accounts that could close
          a loop (``v`` a settlement hub), the accounts worth walking are found from the latter's senders (:meth:`_from_targets`).
        """
        p = self.params
        lo, hi, max_degree = p.min_length, p.max_length, p.max_degree
        back1 = accounts[u].senders  # x -> u
        if lo <= 2 and v in back1:
            return [u, v]
        fwd1 = accounts[v].receivers  # v -> a
        if lo <= 3 <= hi and not fwd1.keys().isdisjoint(back1.keys()):
            common = fwd1.keys() & back1.keys()  # in C, over the smaller map
            common.discard(u)
            common.discard(v)
            if len(common) == 1:
                return [u, v, common.pop()]
            if common:  # the first of them in the order of fwd1
                return [u, v, next(a for a in fwd1 if a in common)]
        if hi < 4:
            return None
        four, five = lo <= 4, hi >= 5
        if five and len(back1) > _EAGER_BACK1:
            return self._find_hub(accounts, back1, fwd1, u, v, four, max_degree)
        # every account b that could close a loop from v -> a -> b: u's senders (four-account loops) and their
        # senders (five); a superset of what the walk below accepts
        if five:
            targets = set(back1) if four else set()
            for x in back1:
                if x != u and x != v:
                    senders = accounts[x].senders
                    if len(senders) <= max_degree:
                        targets.update(senders)
            targets.discard(u)  # no b is u or v
            targets.discard(v)
            if not targets:
                return None
        else:
            targets = back1.keys()
        if len(fwd1) > _HUB_RECEIVERS and len(targets) < len(fwd1):  # v a hub: start from the smaller side
            return self._from_targets(accounts, back1, fwd1, targets, u, v, four, five, max_degree)
        via: dict[str, str] | None = None
        for a in fwd1:
            if a == u or a == v:
                continue
            receivers = accounts[a].receivers
            if len(receivers) > max_degree or receivers.keys().isdisjoint(targets):
                continue
            if via is None:
                via = self._back2(accounts, back1, u, v, max_degree) if five else {}
            for b in receivers:
                if b == u or b == v or b == a:
                    continue
                if four and b in back1:
                    return [u, v, a, b]
                x = via.get(b)
                if x is not None and x != a:
                    return [u, v, a, b, x]
        return None

    def _from_targets(self, accounts: dict, back1: dict, fwd1: dict, targets, u: str, v: str, four: bool,
                      five: bool, max_degree: int) -> list[str] | None:
        """The four- and five-account stage of :meth:`_find_short_any` when ``v`` pays more accounts than there are
        ``targets`` (the accounts ``b`` that could close a loop ``v -> a -> b``): the accounts ``a`` worth walking
        are those that pay a target, found from the targets' senders (a set intersection in C with ``v``'s
        receivers each) instead of one test per receiver of ``v``. Each such ``a`` is walked as in
        :meth:`_find_short_any`; of those that close a loop, the first in the order of ``fwd1`` gives the answer,
        so it is the same loop."""
        fkeys = fwd1.keys()
        cands: set[str] = set()
        for t in targets:
            if t != u and t != v:
                cands.update(accounts[t].senders.keys() & fkeys)
        cands.discard(u)
        cands.discard(v)
        if not cands:
            return None
        via: dict[str, str] | None = None
        hits: dict[str, list[str]] = {}
        for a in cands:
            receivers = accounts[a].receivers
            if len(receivers) > max_degree:
                continue
            if via is None:
                via = self._back2(accounts, back1, u, v, max_degree) if five else {}
            for b in receivers:
                if b == u or b == v or b == a:
                    continue
                if four and b in back1:
                    hits[a] = [u, v, a, b]
                    break
                x = via.get(b)
                if x is not None and x != a:
                    hits[a] = [u, v, a, b, x]
                    break
        if len(hits) <= 1:
            return next(iter(hits.values()), None)
        return hits[next(a for a in fwd1 if a in hits)]

    @staticmethod
    def _back2(accounts: dict, back1: dict, u: str, v: str, max_degree: int) -> dict[str, str]:
        """The two-hop map backwards from ``u``: ``y -> x`` for ``y -> x -> u``, with ``x`` the first sender of ``u``
        (in the order of ``back1``) that ``y`` pays, ``x`` not ``u`` or ``v`` and with at most ``max_degree``
        senders, ``y`` not ``u`` or ``x``."""
        via: dict[str, str] = {}
        for x in back1:
            if x == u or x == v:
                continue
            senders = accounts[x].senders
            if len(senders) > max_degree:
                continue
            for y in senders:
                if y != u and y != x and y not in via:
                    via[y] = x
        return via

    def _find_hub(self, accounts: dict, back1: dict, fwd1: dict, u: str, v: str, four: bool,
                  max_degree: int) -> list[str] | None:
        """The four- and five-account stage of :meth:`_find_short_any` when ``u`` has more than ``_EAGER_BACK1``
        senders: the two-hop map backwards from ``u`` would hold all senders of all senders of ``u`` (hundreds of
        accounts for a collection hub), so each account ``b`` two hops forward from ``v`` gets its entry on demand
        (:meth:`_via`, remembered for the rest of the search)."""
        back1_keys = back1.keys()
        via: dict[str, str | None] = {}
        for a in fwd1:
            if a == u or a == v:
                continue
            receivers = accounts[a].receivers
            if len(receivers) > max_degree:
                continue
            for b in receivers:
                if b == u or b == v or b == a:
                    continue
                if four and b in back1:
                    return [u, v, a, b]
                if b in via:
                    x = via[b]
                else:
                    out = accounts[b].receivers
                    x = via[b] = (None if out.keys().isdisjoint(back1_keys)
                                  else self._via(accounts, back1, u, v, b, max_degree))
                if x is not None and x != a:
                    return [u, v, a, b, x]
        return None

    @staticmethod
    def _via(accounts: dict, back1: dict, u: str, v: str, b: str, max_degree: int) -> str | None:
        """The entry of :meth:`_find_short`'s ``back2`` map for ``b``: the first sender ``x`` of ``u`` (in the order of
        ``back1``) that ``b`` pays, with ``x`` not ``u``, ``v`` or ``b`` and at most ``max_degree`` senders; ``None`` if
        there is none. The candidates are the intersection of ``b``'s receivers with ``u``'s senders (a set operation
        in C over the smaller of the two)."""
        found = accounts[b].receivers.keys() & back1.keys()
        if not found:
            return None
        found.discard(u)
        found.discard(v)
        found.discard(b)
        found = {x for x in found if len(accounts[x].senders) <= max_degree}
        if len(found) <= 1:
            return next(iter(found), None)
        return next(x for x in back1 if x in found)

    def _find(self, accounts: dict, u: str, v: str) -> list[str] | None:
        """Accounts ``[u, v, ..., x]`` of a short simple path ``v -> ... -> u`` (so ``u -> v`` closes the loop)."""
        p = self.params
        max_edges = p.max_length - 1  # edges on the path v ~> u
        hb = max_edges // 2
        hf = max_edges - hb
        max_degree = p.max_degree
        m = p.min_txns_per_hop
        budget = p.max_visits
        # backwards from u, level by level: node -> (distance to u, next node towards u)
        back: dict[str, tuple[int, str | None]] = {u: (0, None)}
        frontier = [u]
        for depth in range(1, hb + 1):
            nxt: list[str] = []
            for node in frontier:
                senders = accounts[node].senders
                if node != u and len(senders) > max_degree:
                    continue
                for prev, count in senders.items():
                    if count >= m and prev not in back:
                        back[prev] = (depth, node)
                        nxt.append(prev)
            budget -= len(nxt)
            if budget <= 0 or not nxt:
                break
            frontier = nxt
        # forwards from v, level by level, checking each new account against the backward set
        fwd: dict[str, tuple[int, str | None]] = {v: (0, None)}
        lo, hi = p.min_length, p.max_length
        hit = back.get(v)
        if hit is not None and lo <= hit[0] + 1 <= hi:
            path = self._join(fwd, back, v, u)
            if path is not None:
                return path
        frontier = [v]
        budget = p.max_visits
        for depth in range(1, hf + 1):
            nxt = []
            for node in frontier:
                receivers = accounts[node].receivers
                if node != v and len(receivers) > max_degree:
                    continue
                for child, count in receivers.items():
                    if count < m or child in fwd:
                        continue
                    fwd[child] = (depth, node)
                    nxt.append(child)
                    hit = back.get(child)
                    if hit is not None and lo <= depth + hit[0] + 1 <= hi:
                        path = self._join(fwd, back, child, u)
                        if path is not None:
                            return path
            budget -= len(nxt)
            if budget <= 0 or not nxt:
                break
            frontier = nxt
        return None

    @staticmethod
    def _join(fwd: dict, back: dict, meet: str, u: str) -> list[str] | None:
        """Loop accounts ``[u, v, ..., x]`` from the forward path ``v ~> meet`` and the backward path ``meet ~> u``,
        or ``None`` when the two halves share an account (not a simple loop)."""
        walk: list[str] = []
        node: str | None = meet
        while node is not None:
            walk.append(node)
            node = fwd[node][1]
        walk.reverse()  # v ... meet
        node = back[meet][1]
        while node is not None:
            walk.append(node)
            node = back[node][1]
        path = [u, *walk[:-1]]  # walk ends with u
        return path if len(set(path)) == len(path) else None

    def _edges(self, window: TransactionWindow, path: list[str], closing: Edge) -> list[Edge] | None:
        """The loop's edges in loop order, ending with ``closing`` (``u -> v``): for each other hop the window edges
        that meet ``ordered`` and ``amount_ratio`` and are no cash deposit or withdrawal (the latest one sets the time
        bound of the hop before it when ``ordered``); ``None`` when some hop has fewer than ``min_txns_per_hop``."""
        p = self.params
        # hops in loop order starting after the closing edge: v -> ... -> u, then u -> v (closing)
        order = path[1:] + [path[0]]  # v, ..., u
        lo = hi = None
        if p.amount_ratio is not None:
            lo, hi = closing.amount * p.amount_ratio, closing.amount / p.amount_ratio
        picked: list[Edge] = []
        bound = closing.ts
        for i in range(len(order) - 2, -1, -1):  # walk backwards from the hop that ends at u
            a, b = order[i], order[i + 1]
            found: list[Edge] = []
            for e in reversed(window.accounts[a].outgoing):
                if e.dst != b or e.seq > closing.seq or e.txn.channel in _CASH:
                    continue
                if p.ordered and e.ts > bound:
                    continue
                if lo is not None and not lo <= e.amount <= hi:
                    continue
                found.append(e)
            if len(found) < p.min_txns_per_hop or not found:
                return None
            picked.extend(found)
            if p.ordered:
                bound = found[0].ts
        picked.reverse()
        picked.extend(e for e in reversed(window.accounts[closing.src].outgoing)
                      if e.dst == closing.dst and e.seq < closing.seq and (lo is None or lo <= e.amount <= hi)
                      and not (p.ordered and e.ts > closing.ts) and e.txn.channel not in _CASH)
        picked.sort(key=lambda e: e.seq)
        picked.append(closing)
        return picked
