"""Structuring (smurfing): amounts kept just under a reporting threshold, alone, cumulated, or spread over senders.

Source of the definition: 31 CFR 1010.100(xx) — structuring is conducting transactions "in any amount, at one or
more financial institutions, on one or more days", for the purpose of evading the currency transaction report; 31 CFR
1010.314 and 31 USC 5324(a) prohibit it (FFIEC BSA/AML Manual, App. G). The fan-in variant is FinCEN's "funnel
account" (FIN-2014-A005): one account receiving many deposits below the threshold from several people.

Thresholds (the reporting levels that structuring avoids), per currency of the transaction:

- CN (default): PBOC Order 2016 No. 3, Art. 5 — cash at or above RMB 50,000 or USD 10,000 equivalent, single or
  same-day cumulative, inclusive (以上（含）): ``thresholds={"CNY": 50000, "USD": 10000}, inclusive=True``.
- US: 31 CFR 1010.311 — currency transactions of *more than* USD 10,000, with same-business-day aggregation under
  1010.313: ``thresholds={"USD": 10000}, inclusive=False``.

A transaction is *just under* the threshold ``T`` when it is not reportable on its own (``< T`` when inclusive,
``<= T`` when not) and at least ``band_low * T``. The regulations give no numeric band; ``band_low=0.8`` (USD 8,000 to
10,000 for the CTR) is a configurable heuristic, not a regulatory figure. Transactions in currencies without a
threshold are not checked.

Variants (``Alert.variant``):

- ``cumulative``: one customer makes at least ``min_count`` just-under transactions within ``cumulative_days``
  days (1 = the same day; the day as defined below), in one direction (cash in and cash out are summed separately, as in
  1010.313), whose total reaches the threshold. Cash only by default (``cumulative_cash_only=True``): both thresholds
  are cash thresholds (PBOC Art. 5's 50,000 is for cash; transfers report at other levels, RMB 500,000 or 2,000,000;
  the CTR is for currency), so two transfers of 45,000 and 42,000 on one day are not structuring (a fresh-user
  check got a "just under the 50,000 reporting threshold" alert for them). With ``False``, other payments are summed
  separately from cash; the customer is the receiving account of a cash deposit and the sending account of
  everything else. With ``customers`` (``{account: customer_id}``; ``Taskflow("aml", customers=...)`` passes the
  report engine's, so both aggregate alike, as 1010.313 aggregates "by or on behalf of any person") the accounts of
  one customer count together: 30,000 deposited to each of a person's two accounts on one day is one cumulative.
- ``fan_in``: at least ``fan_in_min_senders`` distinct accounts each send just-under amounts to one account within
  ``fan_in_days`` days (FinCEN funnel account). Cash withdrawals do not count: their receiver is the customer's own
  account, a walk-in id or the bank's till account, not a funnel (three customers each withdrawing 45,000 CNY at a
  branch that books cash against one ``CASH`` account made ``CASH`` the "funnel" of an alert with a suspicious report
  draft, even with ``CASH`` in ``exempt_accounts``: a fresh-user check). Deposits at distinct tills (or by distinct
  walk-in ids) count as distinct senders: a funnel account receives cash deposits made in several places
  (FIN-2014-A005), and the till is what an export tells of the place; the generic ``fan_in`` rule counts them alike.
  A deposit booked on the funnel's own account (sender = receiver) names no place and no sender: it is not counted
  (before 30 Nov 2026 it made the funnel one of its own three senders).
- ``single``: one just-under transaction alone (off by default: alone it is weak evidence).
- ``split``: one account pays the same account at least ``split_min_count`` times on one day, in any
  amount — 1010.100(xx)'s "in any amount ... on one or more days" without reference to a threshold. Off by default
  (``split_min_count=None``): ordinary payments repeat too. In AMLSim's sample runs, same-day repeated transfers
  between one pair occur only inside planted laundering patterns, so this variant finds them there.

The day (``timezone``, ``calendar``, ``cutoff``): "the same day" is the one the reporting rule aggregates on, so a
cumulative just under the threshold is judged on the day a cumulative report would be: the local date in
``timezone`` (PBOC Art. 5's 当日), and with ``calendar`` the business day of 31 CFR 1010.313 (weekend and holiday
days, and times after the local ``cutoff``, roll forward to the next working day of that country's calendar;
:func:`sectorflow_aml.calendars.business_day`). Alone the rule counts UTC days; ``Taskflow("aml")`` passes the report
engine's day (Asia/Shanghai for CN, America/New_York business days for US, or ``report_timezone`` / ``cutoff``), so
the two cannot disagree.

Each alert's ``accounts`` begin with its subject, the customer a suspicious report names: the depositing or paying
customer for ``cumulative`` and ``single``, the receiving account (the funnel) for ``fan_in``, the payer for
``split``. The cash side of a cash transaction (the sender of a ``cash_deposit``, the receiver of a
``cash_withdrawal``: a walk-in id, the bank's till or cash account, or the customer's own account) is never listed:
it is no party, as in the report engine, which counts a deposit for the receiving account only. A suspicious report
draft's ``subject_accounts`` are the alert's ``accounts``, so before 30 Nov 2026 a draft of two same-day deposits
named ``WALKIN`` (or the bank's ``CASH`` account) as a subject next to the customer. The cash ids stay in the
alert's transactions (and the draft's transaction list), where they say how the cash came in. Non-cash
counterparties (the payees of a ``cumulative`` of payments, the senders of transfers into a funnel) are listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from ..calendars import DayNumber
from ..schema import Alert
from ..window import DAY, Edge, TransactionWindow
from .base import Rule, fmt_amount, fraction, positive


@dataclass(frozen=True)
class StructuringParams:
    """Parameters of :class:`StructuringRule` (see the module docstring for their sources)."""

    thresholds: dict[str, float] = field(default_factory=lambda: {"CNY": 50_000.0, "USD": 10_000.0})
    inclusive: bool = True
    band_low: float = 0.8
    cumulative_days: int = 1
    min_count: int = 2
    fan_in_days: float = 7.0
    fan_in_min_senders: int = 3
    channels: tuple[str, ...] | None = None
    cumulative_cash_only: bool = True
    single: bool = False
    split_min_count: int | None = None
    score: float = 0.7
    fan_in_score: float = 0.8
    timezone: str = "UTC"
    calendar: str | None = None
    cutoff: str | None = None
    customers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.thresholds, dict) or not self.thresholds:
            raise ValueError("thresholds must be a non-empty {currency: amount} mapping")
        for currency, value in self.thresholds.items():
            positive(f"thresholds[{currency!r}]", value)
        fraction("band_low", self.band_low)
        positive("cumulative_days", self.cumulative_days)
        positive("fan_in_days", self.fan_in_days)
        positive("min_count", self.min_count)
        positive("fan_in_min_senders", self.fan_in_min_senders)
        if self.split_min_count is not None:
            positive("split_min_count", self.split_min_count)
        fraction("score", self.score)
        fraction("fan_in_score", self.fan_in_score)
        object.__setattr__(self, "thresholds", {k.upper(): float(v) for k, v in self.thresholds.items()})
        if self.channels is not None:
            object.__setattr__(self, "channels", tuple(self.channels))
        if self.customers is not None:
            if not isinstance(self.customers, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) and k and v for k, v in self.customers.items()):
                raise ValueError("customers must be a {account: customer_id} mapping of non-empty strings")
            object.__setattr__(self, "customers", dict(self.customers) or None)
        DayNumber(self.timezone, self.calendar, self.cutoff)  # ValueError on a bad zone, country or cutoff


_WHAT = {"cash_deposit": ("cash deposits", "现金存入"), "cash_withdrawal": ("cash withdrawals", "现金支取"),
         "other": ("payments", "转出/支付")}


def _under(threshold: float, currency: str, inclusive: bool) -> tuple[str, str]:
    """How a just-under amount relates to the threshold, in English and Chinese (the sense of the rule text)."""
    level = f"{fmt_amount(threshold)} {currency}"
    if inclusive:  # reportable at or above: 49,999.99 is just under, 50,000.00 is reportable
        return (f"just under the {level} reporting threshold (reportable at or above it)",
                f"略低于 {level} 的报告标准（达到或超过即须报告）")
    return (f"at or just under the {level} reporting threshold (reportable above it)",  # 10,000.00 itself counts
            f"等于或略低于 {level} 的报告标准（超过才须报告）")


def _parties(edge: Edge) -> tuple[str, ...]:
    """The accounts of ``edge`` that are parties to it: the receiver of a cash deposit, the sender of a cash
    withdrawal (the other side is a walk-in id, a till or the account itself), both sides of anything else."""
    value = edge.txn.channel.value
    if value == "cash_deposit":
        return (edge.dst,)
    if value == "cash_withdrawal":
        return (edge.src,)
    return (edge.src, edge.dst)


def _kind(txn: object) -> str:
    """Aggregation class of a transaction: cash in, cash out and other payments are summed separately."""
    value = txn.channel.value  # type: ignore[attr-defined]
    return value if value in ("cash_deposit", "cash_withdrawal") else "other"


class StructuringRule(Rule):
    """Structuring just under a reporting threshold: ``cumulative``, ``fan_in`` and (optional) ``single``."""

    name = "structuring"
    source = "31 CFR 1010.100(xx), 1010.311, 1010.313, 1010.314; FinCEN FIN-2014-A005; PBOC Order 2016 No. 3 Art. 5"
    Params = StructuringParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        p = self.params
        self._bands = {c: (t * p.band_low, t) for c, t in p.thresholds.items()}
        # the same bounds as exact Decimals: comparing a Decimal amount with them gives what comparing with the
        # floats gives (Python compares Decimal and float exactly), without a float conversion per comparison
        self._decimal_bands = {c: (Decimal(lo), Decimal(hi)) for c, (lo, hi) in self._bands.items()}
        self._channels = None if p.channels is None else frozenset(p.channels)
        self._day = DayNumber(p.timezone, p.calendar, p.cutoff)
        self._holdings: dict[str, tuple[str, ...]] = {}  # customer id -> its accounts, in first-mapped order
        for account, customer in (p.customers or {}).items():
            self._holdings[customer] = (*self._holdings.get(customer, ()), account)

    def _just_under(self, edge: Edge) -> bool:
        band = self._decimal_bands.get(edge.txn.currency)
        if band is None:
            return False
        amount = edge.txn.amount
        if amount < band[0]:
            return False
        return amount < band[1] if self.params.inclusive else amount <= band[1]

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """Alerts completed by ``edge``: at most one per variant."""
        txn = edge.txn
        if self._channels is not None and txn.channel.value not in self._channels:
            return []
        out: list[Alert] = []
        if self.params.split_min_count is not None:
            alert = self._split(window, edge)
            if alert is not None:
                out.append(alert)
        band = self._bands.get(txn.currency)
        if band is None or not self._just_under(edge):
            return out
        p = self.params
        under = _under(band[1], txn.currency, p.inclusive)
        if p.single:
            customer = edge.dst if _kind(txn) == "cash_deposit" else edge.src
            out.append(self.alert([edge], p.score * 0.6,
                                  f"{fmt_amount(float(txn.amount))} {txn.currency}: {under[0]}",
                                  f"金额 {fmt_amount(float(txn.amount))} {txn.currency}，{under[1]}",
                                  accounts=dict.fromkeys([customer, *_parties(edge)]), trigger=edge,
                                  variant="single"))
        if not p.cumulative_cash_only or txn.channel.is_cash:
            alert = self._cumulative(window, edge, band[1], under)
            if alert is not None:
                out.append(alert)
        alert = self._fan_in(window, edge, under)
        if alert is not None:
            out.append(alert)
        return out

    def _split(self, window: TransactionWindow, edge: Edge) -> Alert | None:
        p = self.params
        state = window.accounts[edge.src]
        if state.receivers.get(edge.dst, 0) < p.split_min_count:  # type: ignore[operator]
            return None
        day_of = self._day
        day = day_of(edge.ts)
        same: list[Edge] = []
        for other in reversed(state.outgoing):
            other_day = day_of(other.ts)
            if other_day < day:
                break
            if other.dst == edge.dst and other_day == day and other.seq <= edge.seq:
                same.append(other)
        if len(same) != p.split_min_count:  # fire on the transfer that reaches the count, once
            return None
        same.reverse()
        total = sum(e.amount for e in same)
        alert = self.alert(same, p.score,
                           f"{edge.src} paid {edge.dst} {len(same)} times on one day (total {fmt_amount(total)})",
                           f"{edge.src} 同一天内向 {edge.dst} 分 {len(same)} 笔转账（合计 {fmt_amount(total)}）",
                           accounts=[edge.src, edge.dst], trigger=edge, variant="split")
        return alert

    def _cumulative(self, window: TransactionWindow, edge: Edge, threshold: float, under: tuple[str, str],
                    ) -> Alert | None:
        p = self.params
        txn = edge.txn
        kind = _kind(txn)
        deposit = kind == "cash_deposit"
        account = edge.dst if deposit else edge.src
        customer = p.customers.get(account, account) if p.customers else account
        accounts = self._holdings.get(customer, (account,)) if p.customers else (account,)
        day_of = self._day
        today = day_of(edge.ts)
        cooldown_key = ("structuring.cumulative", customer, txn.currency, kind)
        if window.cooling(cooldown_key, today * DAY, p.cumulative_days * DAY):
            return None  # already alerted for these days: skip the scan (a busy account's deposits made it quadratic)
        first_day = today - (p.cumulative_days - 1)
        picked: list[Edge] = []
        total = 0.0
        for holder in accounts:
            state = window.get(holder)
            if state is None:
                continue
            for other in reversed(state.incoming if deposit else state.outgoing):
                day = day_of(other.ts)
                if day < first_day:
                    if other.ts <= edge.ts:
                        break
                    continue
                if day > today or other.txn.currency != txn.currency or _kind(other.txn) != kind:
                    continue
                if not self._just_under(other):
                    continue
                picked.append(other)
                total += float(other.txn.amount)
        if len(picked) < p.min_count or total < threshold:
            return None
        if not window.cooldown(cooldown_key, today * DAY, p.cumulative_days * DAY):
            return None
        picked.sort(key=lambda e: e.seq)
        what_en, what_zh = _WHAT[kind]
        span_en = "on one day" if p.cumulative_days == 1 else f"within {p.cumulative_days} days"
        span_zh = "同一天内" if p.cumulative_days == 1 else f"{p.cumulative_days} 天内"
        used = list(dict.fromkeys([account, *(e.dst if deposit else e.src for e in picked)]))
        if len(used) == 1:
            by_en, by_zh = f"by account {account}", f"账户 {account} "
        else:
            by_en = f"by customer {customer} (accounts {', '.join(used)})"
            by_zh = f"客户 {customer}（账户 {'、'.join(used)}）"
        others = (a for e in picked for a in _parties(e) if a not in used)  # payees of payments; no cash side
        alert = self.alert(picked, p.score,
                           f"{len(picked)} {what_en} {by_en} {span_en}, each {under[0]}, totalling "
                           f"{fmt_amount(total)} {txn.currency}",
                           f"{by_zh}{span_zh}有 {len(picked)} 笔{what_zh}，每笔均{under[1]}，合计 "
                           f"{fmt_amount(total)} {txn.currency}", accounts=dict.fromkeys([*used, *others]),
                           trigger=edge, variant="cumulative")
        return alert

    def _fan_in(self, window: TransactionWindow, edge: Edge, under: tuple[str, str]) -> Alert | None:
        p = self.params
        if _kind(edge.txn) == "cash_withdrawal":  # paid out to a till or walk-in id, not into a funnel account
            return None
        state = window.get(edge.dst)
        if state is None or len(state.senders) < p.fan_in_min_senders:
            return None
        if window.cooling(("structuring.fan_in", edge.dst), edge.ts, p.fan_in_days * DAY):
            return None  # already alerted: skip the scan of the receiver's incoming transfers
        horizon = edge.ts - p.fan_in_days * DAY
        currency = edge.txn.currency
        by_sender: dict[str, list[Edge]] = {}
        for other in reversed(state.incoming):
            if other.ts < horizon:
                break
            if (other.txn.currency == currency and other.ts <= edge.ts and other.src != edge.dst
                    and self._just_under(other) and _kind(other.txn) != "cash_withdrawal"):
                by_sender.setdefault(other.src, []).append(other)
        if len(by_sender) < p.fan_in_min_senders or edge.src not in by_sender:
            return None
        if not window.cooldown(("structuring.fan_in", edge.dst), edge.ts, p.fan_in_days * DAY):
            return None
        picked = sorted((e for group in by_sender.values() for e in group), key=lambda e: e.seq)
        total = sum(float(e.txn.amount) for e in picked)
        # senders of transfers, not the walk-in or till ids cash deposits are booked against (still counted above:
        # deposits at several tills or by several walk-in depositors are what a funnel account receives)
        parties = [a for a in sorted(by_sender, key=lambda a: by_sender[a][-1].seq)
                   if a != edge.dst and any(not e.txn.channel.is_cash for e in by_sender[a])]
        alert = self.alert(picked, p.fan_in_score,  # the funnel account is the subject
                           f"{len(by_sender)} accounts each sent {edge.dst} amounts {under[0]}, within "
                           f"{p.fan_in_days:g} days, totalling {fmt_amount(total)} {currency}",
                           f"{len(by_sender)} 个账户在 {p.fan_in_days:g} 天内分别向 {edge.dst} 转入资金，每笔均"
                           f"{under[1]}，合计 {fmt_amount(total)} {currency}",
                           accounts=[edge.dst, *parties], trigger=edge, variant="fan_in")
        return alert
