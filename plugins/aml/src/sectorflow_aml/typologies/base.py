"""Shared parts of the typology rules: the :class:`Rule` base class, parameter handling and alert construction.

A rule is a small object with documented parameters (a frozen dataclass ``Params`` on the class) and one method,
``check(window, edge) -> list[Alert]``, called once per transaction right after ``window.add(txn)`` returned
``edge``. A rule raises an alert on the transaction that completes its pattern; it keeps no state of its own (all
state lives in the :class:`~sectorflow_aml.window.TransactionWindow`, including alert cooldowns), so a replay of the
same transactions, in one batch or one at a time, gives the same alerts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, ClassVar

from sectorflow import ConfigError

from ..schema import Alert, Channel, Reason, transactions_digest
from ..window import DAY, Edge, TransactionWindow
from .history import amount_similarity, fifo_flows, first_edge_ts, is_burst, own_baseline, through_share
from .peers import above_peers, most_within


def alert_id(typology: str, transaction_ids: Iterable[str]) -> str:
    """Stable alert id: ``<typology>-<first 16 hex of SHA-256 of the sorted, '|'-joined transaction ids>``."""
    digest = hashlib.sha256("|".join(sorted(transaction_ids)).encode()).hexdigest()[:16]
    return f"{typology}-{digest}"


def fmt_amount(value: float) -> str:
    """``1234.5 -> '1,234.50'``: amounts in reasons."""
    return f"{value:,.2f}"


class Rule:
    """Base class of a typology rule.

    Subclasses set ``name`` (the typology), ``source`` (where the definition comes from), a frozen dataclass
    ``Params`` with defaults, and implement :meth:`check`.

    Args:
        **params: overrides of fields of ``Params``.

    Raises:
        ConfigError: an unknown parameter or a value of the wrong type/sign.
    """

    name: ClassVar[str] = ""
    source: ClassVar[str] = ""
    Params: ClassVar[type]

    def __init__(self, **params: Any) -> None:
        fields = {f.name for f in dataclasses.fields(self.Params)}
        unknown = sorted(set(params) - fields)
        if unknown:
            raise ConfigError(f"Rule {self.name!r} has no parameter(s) {unknown}; its parameters are: "
                              f"{', '.join(sorted(fields))}.")
        try:
            self.params = self.Params(**params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Rule {self.name!r}: {exc}") from exc
        self.module = type(self).__module__

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:  # pragma: no cover - abstract
        """Alerts completed by ``edge`` (usually none)."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """State the rule keeps across transactions itself, as JSON values (see :mod:`sectorflow_aml.state`).
        Default: ``{}`` (the shipped rules keep theirs in the window: edges and ``cooldown`` keys; their own
        attributes are caches derived from the parameters). A rule that keeps more overrides this and
        :meth:`load_state_dict`."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`state_dict` wrote. Default: nothing (``state`` is ``{}``)."""

    def describe(self) -> dict[str, Any]:
        """The rule's name, source and parameter values (JSON-ready), for audit and docs."""
        return {"typology": self.name, "source": self.source, "module": self.module,
                "params": {k: (dict(v) if isinstance(v, Mapping) else v)
                           for k, v in dataclasses.asdict(self.params).items()}}

    def alert(self, edges: Iterable[Edge], score: float, en: str, zh: str, *, accounts: Iterable[str] | None = None,
              trigger: Edge, variant: str | None = None, evidence: Mapping[str, float] | None = None) -> Alert:
        """Build the :class:`Alert` for ``edges`` (the transactions involved), raised by ``trigger``.

        ``accounts`` start with the alert's subject (the customer a suspicious report names: see
        :func:`sectorflow_aml.suspicious.suspicious_report`); they default to every sender and receiver of ``edges`` in
        first-seen order, right only when the first sender is the subject. Each account is listed once (its first
        mention).
        """
        edges = list(edges)
        ids = list(dict.fromkeys(e.txn.transaction_id for e in edges))
        # each account once, first mention kept: a counterparty that both paid the subject and was paid by it was
        # listed twice by pass-through and gather-scatter alerts (["C1032", "SETTLE", "SETTLE"]), and in STR drafts
        if accounts is None:
            accounts = (a for e in edges for a in (e.src, e.dst))
        accounts = dict.fromkeys(accounts)
        reason = Reason(code=f"typology.{self.name}", en=en, zh=zh, source=self.module)
        first = {}
        for e in edges:
            first.setdefault(e.txn.transaction_id, e.txn)
        return Alert(alert_id=alert_id(self.name, ids), typology=self.name, accounts=list(accounts),
                     transaction_ids=ids, score=round(min(1.0, max(0.0, score)), 4), reasons=[reason],
                     fired_by=self.module, variant=variant, evidence=dict(evidence or {}),
                     time=datetime.fromtimestamp(trigger.ts, tz=timezone.utc),
                     transactions_sha256=transactions_digest(first[tid] for tid in ids))


def positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    """Raise ``ValueError`` (turned into ConfigError by :class:`Rule`) unless ``value`` is a positive number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}={value!r} must be a {'non-negative' if allow_zero else 'positive'} number")


def fraction(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``0 <= value <= 1``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ValueError(f"{name}={value!r} must be a number from 0 to 1")


CASH_CHANNELS = frozenset((Channel.cash_deposit, Channel.cash_withdrawal))
"""Channels with a cash side: the sender of a cash deposit and the receiver of a cash withdrawal are the till, cash
or walk-in account the bank books the cash against (or the customer's own account), not an account money went
through."""

CASH_SIDE_IN = Channel.cash_withdrawal
"""An account's incoming edge of this channel has the account as its cash side (a withdrawal booked against it)."""

CASH_SIDE_OUT = Channel.cash_deposit
"""An account's outgoing edge of this channel has the account as its cash side (a deposit booked against it)."""


def hub_is_cash_side(edge: Edge, incoming: bool) -> bool:
    """Whether the hub end of ``edge`` is its cash side: the receiver of a cash withdrawal (``incoming``: the edge is
    in the receiver's incoming deque) or the sender of a cash deposit (outgoing). Such an edge is no inflow or outflow
    of a hub: a bank's ``CASH`` or ``TILL-001`` account takes every customer's withdrawals and pays out every deposit,
    which is no fan-in, fan-out, gather-scatter or pass-through of the till."""
    return edge.txn.channel == (CASH_SIDE_IN if incoming else CASH_SIDE_OUT)


def non_cash_counterparties(groups: Mapping[str, list[Edge]]) -> list[str]:
    """The counterparties of ``groups`` (counterparty -> its edges with the hub) with at least one edge that is not a
    cash deposit or withdrawal, in ``groups`` order: the accounts an alert lists after its hub. A counterparty
    reached only by cash is the cash side (a till or walk-in id): it counts as a place the cash was paid in or out,
    but it is no party, as in the structuring rule and the report engine."""
    return [k for k, group in groups.items() if any(e.txn.channel not in CASH_CHANNELS for e in group)]


def recent_by_counterparty(edges: Iterable[Edge], horizon: float, until: float, incoming: bool,
                           ) -> dict[str, list[Edge]]:
    """Group the edges of one account's ``incoming`` (or outgoing) deque with ``horizon <= ts <= until`` by
    counterparty (sender for incoming, receiver for outgoing), newest first. ``edges`` must be the deque itself
    (oldest first); the scan stops at the first edge older than ``horizon``. Edges whose account end is their cash
    side (:func:`hub_is_cash_side`) are left out."""
    out: dict[str, list[Edge]] = {}
    skip = CASH_SIDE_IN if incoming else CASH_SIDE_OUT
    for e in reversed(edges):  # type: ignore[call-overload]
        if e.ts < horizon:
            break
        if e.ts <= until and e.txn.channel != skip:
            out.setdefault(e.src if incoming else e.dst, []).append(e)
    return out


def enough_counterparties(edges: Iterable[Edge], horizon: float, until: float, incoming: bool, per: int,
                          need: int, exclude: str) -> bool:
    """Whether at least ``need`` distinct counterparties (other than ``exclude``) have ``per`` or more edges with
    ``horizon <= ts <= until`` in one account's deque, edges whose account end is their cash side left out (as in
    :func:`recent_by_counterparty`); stops scanning as soon as the answer is known (the cheap first pass before
    :func:`recent_by_counterparty` builds the alert)."""
    counts: dict[str, int] = {}
    qualified = 0
    skip = CASH_SIDE_IN if incoming else CASH_SIDE_OUT
    for e in reversed(edges):  # type: ignore[call-overload]
        if e.ts < horizon:
            break
        if e.ts > until or e.txn.channel == skip:
            continue
        other = e.src if incoming else e.dst
        if other == exclude:
            continue
        n = counts.get(other, 0) + 1
        counts[other] = n
        if n == per:
            qualified += 1
            if qualified >= need:
                return True
    return False


def peer_mean(window: TransactionWindow, period: float) -> float:
    """The peers' level: transfers one account receives (or sends: the same mean) in ``period`` seconds, on average
    over the window's active accounts (:attr:`~sectorflow_aml.window.TransactionWindow.active`): ``len(edges) /
    active``, scaled to ``period`` over the time the window covers (the lookback, or less at the start of the data).
    A hub rule's counterparty count is judged against it: among a few hundred people paying each other at random,
    ten distinct senders in a week is what the busiest tenth get, not a funnel."""
    edges = window.edges
    if not edges or window.active <= 0:
        return 0.0
    span = max(period, min(window.lookback, window.now - edges[0].ts))
    return len(edges) / window.active * (period / span)


PEER_MIN_ACCOUNTS = 50
"""Fewer active accounts than this in the window are no peer group: the peer test is skipped (a test window of a
dozen accounts, a bank's first hour)."""


def poisson_tail(k: int, mean: float) -> float:
    """``P(X >= k)`` for ``X`` Poisson with ``mean``: how often an account with the peers' rate gets ``k`` or more."""
    if k <= 0:
        return 1.0
    if mean <= 0:
        return 0.0
    if k > mean + 40.0 * math.sqrt(mean) + 40.0:
        return 0.0  # far beyond double precision's reach of the sum below
    term = math.exp(-mean)
    below = term
    for i in range(1, k):
        term *= mean / i
        below += term
    return max(0.0, 1.0 - below)


def new_share(state_counts: Mapping[str, int], groups: Mapping[str, list[Edge]]) -> float:
    """The account's own history: the share of ``groups``' counterparties (counterparty -> its transfers with the
    account within the period) that had no transfer with it earlier in the window (their window count,
    ``state_counts``, is the period's). A customer's usual payers or payees recur; a funnel's or a mule's are new."""
    if not groups:
        return 0.0
    new = sum(1 for k, group in groups.items() if state_counts.get(k, 0) <= len(group))
    return new / len(groups)


def hub_judged(window: TransactionWindow, state_counts: Mapping[str, int], counted: Mapping[str, list[Edge]],
               period: float, peer_alpha: float, min_new_share: float) -> bool:
    """Whether ``counted`` counterparties (of one hub side, within ``period``) stand out from the peers and from the
    hub's own history.

    Peers: an account receiving (or paying) at the peers' rate (:func:`peer_mean`) would reach as many distinct
    counterparties with probability at most ``peer_alpha`` (:func:`poisson_tail`; skipped below
    :data:`PEER_MIN_ACCOUNTS` active accounts, or with ``peer_alpha`` 1). Own history: at least ``min_new_share`` of
    them are new (:func:`new_share`)."""
    if peer_alpha < 1 and window.active >= PEER_MIN_ACCOUNTS and \
            poisson_tail(len(counted), peer_mean(window, period)) > peer_alpha:
        return False
    return min_new_share <= 0 or new_share(state_counts, counted) >= min_new_share


RECHECK_SECONDS = 3600.0
"""A busy hub (at least :data:`RECHECK_BUSY` transfers on the judged side in the window) that failed
:func:`hub_judged` is judged again after this long at the earliest, not on its next transfer: every payment into a
spending sink that thousands of customers pay (their counterparties recur, so it never passes) rescanned its week
of transfers (AMLGentex's external sink: quadratic). Its alert, if the pattern comes to hold, comes up to an hour
later. The same in any cut of the stream (the window keeps the hold, as it keeps cooldowns)."""

RECHECK_BUSY = 128


def judged_busy(window: TransactionWindow, key: object, side_len: int, ts: float, passed: bool) -> None:
    """After :func:`hub_judged` said ``passed`` for a hub whose judged side holds ``side_len`` transfers: hold a
    failed busy hub for :data:`RECHECK_SECONDS` (``key`` names the rule and hub)."""
    if not passed and side_len >= RECHECK_BUSY:
        window.cooldown(key, ts, RECHECK_SECONDS)


def rule_period(window: TransactionWindow, days: float | None) -> float:
    """A rule's look-back in seconds: ``days`` capped at the window's lookback (the whole lookback when ``None``)."""
    return window.lookback if days is None else min(days * DAY, window.lookback)


@dataclasses.dataclass(frozen=True)
class HubTests:
    """The own-history and money-path tests of a hub rule (:mod:`.history`): ``burst_ratio`` (counted
    counterparties over the account's own mean per earlier period of the window; 0 off), ``min_through_share`` (share of the
    counted sum that went through, first in first out over the window (:func:`.history.fifo_flows`): a fan-in's
    collected money paid on by now, a fan-out's payments made of money that came in at most ``dwell_days`` before
    each; 0 off), ``max_stale_share`` (fan-out: the most of the counted payments that may be money the account had
    held longer than ``dwell_days``; 1 off), ``similar_ratio`` (the factor around the median within which an amount
    is similar), ``peer_quantile`` (where the account has no own level: its distinct counterparties on the counted
    side within a day must exceed this quantile of its peer group's and be at least ``peer_ratio`` times it,
    :func:`.peers.above_peers`; 1 off)."""

    burst_ratio: float = 0.0
    min_through_share: float = 0.0
    dwell_days: float = 0.0
    similar_ratio: float = 1.25
    max_stale_share: float = 1.0
    peer_quantile: float = 1.0
    peer_ratio: float = 1.0


def judge_history(window: TransactionWindow, state: Any, hub: str, incoming: bool, counted: Mapping[str, list[Edge]],
                  edges: list[Edge], total: float, period: float, tests: HubTests, now: float,
                  forward: bool = False) -> dict[str, float] | None:
    """The :class:`HubTests` of a hub whose counted counterparties already passed :func:`hub_judged`: ``None`` when
    one fails, else the evidence (``through_share``, ``own_baseline`` (-1: no history in the window),
    ``similar_share``, ``amount_cv``, ``peer_level`` and ``peer_group`` (the peer group's quantile and size; -1 and
    0 where the peer test did not apply); a fan-out also ``stale_share``).

    History decides where there is one, the money's path where there is none: with an own level on the counted side
    (:func:`.history.own_baseline` above 0) the count must be a burst against it (``burst_ratio``); without one (an
    account new in the window, or one that never had counterparties on that side before: a monthly payroll whose
    last run left a 30-day window) the money's path decides: a fan-out whose payments were mostly money it had held
    longer than ``dwell_days`` (first in first out: a payroll paid out of a month of client income) is none
    (``max_stale_share``); a fan-in must have paid on ``min_through_share`` of what it collected (off by default:
    see :mod:`.fan_in`). Money whose source the window does not show (before the window began) decides nothing.
    And without an own level the peers judge: the account must stand above its peer group (``peer_quantile``: a shop
    in its first weeks has as many distinct payers as the other busy accounts of its activity band; a funnel has
    more than everyday customers with as many transfers within a day). The hub's count is its distinct counterparties
    within the last day; ``forward`` (the hub's payment out completes a fan-in counted before: the funnel reading) the
    most of the counted ones within any day of the period. Skipped under :data:`PEER_MIN_ACCOUNTS` active
    accounts."""
    baseline = None
    if tests.burst_ratio > 0:
        baseline = own_baseline(state.incoming if incoming else state.outgoing, hub, incoming, now, period,
                                window.lookback, first_edge_ts(state.incoming, state.outgoing))
        if baseline and not is_burst(len(counted), baseline, tests.burst_ratio):
            return None
    peer_level, peer_size, day_count = -1, 0, -1
    if not baseline and tests.peer_quantile < 1 and window.active >= PEER_MIN_ACCOUNTS:
        burst = most_within([e for group in counted.values() for e in group], incoming) if forward else None
        above, day_count, peer_level, peer_size = above_peers(window, hub, incoming, tests.peer_quantile,
                                                              tests.peer_ratio, burst)
        if not above:
            return None
    spent, fresh, stale = fifo_flows(state.incoming, state.outgoing, hub, now, tests.dwell_days * DAY)
    mine = [e.seq for group in counted.values() for e in group]
    through = through_share(total, sum((spent if incoming else fresh).get(seq, 0.0) for seq in mine))
    stale_share = 0.0 if incoming else through_share(total, sum(stale.get(seq, 0.0) for seq in mine))
    if not baseline and (through < tests.min_through_share or (
            not incoming and tests.max_stale_share < 1 and stale_share >= tests.max_stale_share)):
        return None
    share, cv = amount_similarity([e.amount for group in counted.values() for e in group], tests.similar_ratio)
    evidence = {"through_share": round(through, 4), "own_baseline": -1.0 if baseline is None else round(baseline, 2),
                "similar_share": round(share, 4), "amount_cv": round(cv, 4), "day_counterparties": float(day_count),
                "peer_level": float(peer_level), "peer_group": float(peer_size)}
    if not incoming:
        evidence["stale_share"] = round(stale_share, 4)
    return evidence


def fan_counterparties(window: TransactionWindow, edge: Edge, *, typology: str, incoming: bool, days: float | None,
                       per: int, need: int, min_total: float, peer_alpha: float = 1.0,
                       min_new_share: float = 0.0, tests: HubTests | None = None, hub: str | None = None,
                       ) -> tuple[list[Edge], dict[str, list[Edge]], float, float, dict[str, float]] | None:
    """The shared test of fan-in (``incoming=True``: the receiver's distinct senders) and fan-out (the sender's
    distinct receivers), evaluated when ``edge`` arrives.

    The hub is ``edge.dst`` for fan-in and ``edge.src`` for fan-out. A counterparty counts when it has at least
    ``per`` transfers with the hub within the period; the pattern holds when at least ``need`` counterparties count,
    ``edge``'s own counterparty among them, and their transfers total at least ``min_total`` (base currency). At most
    one alert per hub per period (the window's cooldown, armed here).

    The cash side of a cash transaction is no hub: a cash withdrawal is no transfer into its receiver (the till a
    bank books it against) and a cash deposit none out of its sender, so such an ``edge`` completes nothing and such
    edges are not counted (:func:`hub_is_cash_side`). The other side is: deposits from distinct tills count as
    distinct senders of the customer's account, withdrawals at distinct tills as distinct receivers (see
    :mod:`.fan_in`).

    Returns:
        ``(edges, counted, total, period, evidence)``: the counted transfers (oldest first), counterparty -> its
        transfers, their total amount, the period in seconds and :func:`judge_history`'s evidence (``{}`` without
        ``tests``); ``None`` when the pattern does not hold or is cooling down.

    And the counted counterparties must stand out from the peers and the hub's own history (:func:`hub_judged`:
    ``peer_alpha``, ``min_new_share``; :func:`judge_history`: ``tests``).

    ``hub`` given: ``edge`` is the hub's transfer on the *other* side (a fan-in hub's payment out), which completes
    the through-flow of counterparties counted earlier; it need not be one of them.
    """
    forward = hub is not None
    if forward:
        if hub_is_cash_side(edge, not incoming):
            return None
        other = None
    else:
        if hub_is_cash_side(edge, incoming):
            return None
        hub, other = (edge.dst, edge.src) if incoming else (edge.src, edge.dst)
    state = window.get(hub)
    if state is None or len(state.senders if incoming else state.receivers) < need:
        return None
    period = rule_period(window, days)
    if window.cooling((typology, hub), edge.ts, period) or window.cooling((typology, hub, "judged"), edge.ts,
                                                                           RECHECK_SECONDS):
        return None
    side = state.incoming if incoming else state.outgoing
    if not enough_counterparties(side, edge.ts - period, edge.ts, incoming, per, need, hub):
        return None
    groups = recent_by_counterparty(side, edge.ts - period, edge.ts, incoming=incoming)
    if not forward:
        mine = groups.get(other)
        if mine is None or len(mine) < per:
            return None
    counted = {k: v for k, v in groups.items() if len(v) >= per and k != hub}
    if len(counted) < need:
        return None
    if not hub_judged(window, state.senders if incoming else state.receivers, counted, period, peer_alpha,
                      min_new_share):
        judged_busy(window, (typology, hub, "judged"), len(side), edge.ts, False)
        return None
    edges = sorted((e for group in counted.values() for e in group), key=lambda e: e.seq)
    total = sum(e.amount for e in edges)
    if total < min_total:
        return None
    if forward:
        edges.append(edge)  # the payment out that completed the through-flow, last (it is the newest)
    evidence: dict[str, float] = {}
    if tests is not None:
        found = judge_history(window, state, hub, incoming, counted, edges, total, period, tests, edge.ts, forward)
        if found is None:
            judged_busy(window, (typology, hub, "judged"), len(side), edge.ts, False)
            return None
        evidence = found
    if not window.cooldown((typology, hub), edge.ts, period):
        return None
    return edges, counted, total, period, evidence


class FanRule(Rule):
    """The shared ``check`` of fan-in (``incoming = True``: the receiver is the hub) and fan-out (the sender is),
    over :func:`fan_counterparties`. Subclasses give :meth:`thresholds` (their parameters are named for their side:
    ``min_senders`` / ``min_receivers``) and :meth:`reason_texts`; their ``Params`` have ``days``, ``min_total`` and
    ``score``. The alert lists the hub, then the counterparties of non-cash transfers
    (:func:`non_cash_counterparties`)."""

    incoming: ClassVar[bool]

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._per, self._need = self.thresholds()  # once: check runs on every transaction
        p = self.params
        stale = getattr(p, "max_stale_share", 1.0)
        self._tests = HubTests(p.burst_ratio, p.min_through_share, p.dwell_days, p.similar_ratio, stale,
                               p.peer_quantile, p.peer_ratio) if (
            p.burst_ratio > 0 or p.min_through_share > 0 or stale < 1 or p.peer_quantile < 1) else None
        self._kw = dict(typology=self.name, incoming=self.incoming, days=p.days, per=self._per, need=self._need,
                        min_total=p.min_total, peer_alpha=p.peer_alpha, min_new_share=p.min_new_share,
                        tests=self._tests)  # once (the parameters are frozen): check runs on every transaction

    def thresholds(self) -> tuple[int, int]:  # pragma: no cover - abstract
        """``(per, need)``: transfers each counted counterparty needs, and counterparties needed."""
        raise NotImplementedError

    def reason_texts(self, hub: str, counterparties: int, tills: int, transfers: int, total: str, days: float,
                     ) -> tuple[str, str]:  # pragma: no cover - abstract
        """The reason in English and Chinese: ``counterparties`` counted (``tills`` of them the cash side of cash
        transactions), ``transfers`` edges totalling ``total`` (formatted) within ``days``."""
        raise NotImplementedError

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """An alert when ``edge`` completes the fan-in of its receiver (fan-out of its sender)."""
        p = self.params
        kw = self._kw
        hub = edge.dst if self.incoming else edge.src
        found = fan_counterparties(window, edge, **kw)
        if found is None and self.incoming and p.min_through_share > 0 and edge.src != edge.dst:
            hub = edge.src  # the hub's payment out may complete the through-flow of a fan-in counted before
            found = fan_counterparties(window, edge, hub=hub, **kw)
        if found is None:
            return []
        edges, counted, total, period, evidence = found
        parties = non_cash_counterparties(counted)
        en, zh = self.reason_texts(hub, len(counted), len(counted) - len(parties), len(edges), fmt_amount(total),
                                   period / DAY)
        score = p.score
        if evidence:
            en_more, zh_more = history_reason(evidence, self.incoming, period / DAY, p.similar_ratio)
            en, zh = en + en_more, zh + zh_more
            if p.similar_score is not None and evidence["similar_share"] >= p.similar_share:
                score = p.similar_score
        return [self.alert(edges, score, en, zh, accounts=[hub, *parties], trigger=edge, evidence=evidence)]


def history_reason(evidence: Mapping[str, float], incoming: bool, days: float, ratio: float) -> tuple[str, str]:
    """The reason's addition in English and Chinese for :func:`judge_history`'s ``evidence``."""
    through = 100 * evidence["through_share"]
    base = evidence["own_baseline"]
    similar = 100 * evidence["similar_share"]
    if incoming:
        en = f"; {through:.0f} % of it paid on so far"
        zh = f"；其中 {through:.0f}% 已转出"
    else:
        stale = 100 * evidence.get("stale_share", 0.0)
        en = f"; {through:.0f} % of it money received shortly before, {stale:.0f} % money held longer"
        zh = f"；其中 {through:.0f}% 为此前不久转入的资金，{stale:.0f}% 为留存更久的资金"
    if base < 0:
        en += "; no earlier history in the window"
        zh += "；窗口内无更早的往来记录"
    else:
        en += f"; {base:.1f} distinct counterparties per earlier {days:g} days of the window on average"
        zh += f"；窗口内此前平均每 {days:g} 天 {base:.1f} 个不同对手方"
    level = evidence.get("peer_level", -1.0)
    if level >= 0:
        day = evidence.get("day_counterparties", 0.0)
        en += (f"; {day:.0f} of them within a day, against {level:.0f} at the high quantile of its peer group "
               f"(accounts with as many transfers in the window)")
        zh += f"；其中 {day:.0f} 个在一天之内，同类账户（窗口内交易笔数相近）的高分位数为 {level:.0f} 个"
    return en + f"; {similar:.0f} % of the amounts within a factor {ratio:g} of their median", \
        zh + f"；{similar:.0f}% 的金额在中位数的 {ratio:g} 倍范围内"
