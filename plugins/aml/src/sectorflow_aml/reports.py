"""Draft regulatory reports: China large-value (大额交易报告) and suspicious (可疑交易报告) reports, US CTRs.

:class:`ReportEngine` watches every transaction and returns a draft the moment a customer's single or same-day total
in one direction first meets a threshold (:mod:`sectorflow_aml.thresholds`):

- China (PBOC Order 2016 No. 3, Art. 5): cash, corporate transfers, individual domestic and cross-border transfers;
  RMB and foreign-currency (USD-equivalent) totals are kept apart; in and out are never netted.
- United States (31 CFR 1010.311, 1010.313): currency (cash) only, more than USD 10,000 per person per business day,
  cash-in and cash-out summed separately; a transaction on a weekend or holiday counts on the next business day.

One draft per customer, business day, direction and rule, first returned by :meth:`ReportEngine.observe` on the
transaction whose arrival meets the threshold (single or same-day cumulative). Later transactions of the same key on
that day do not produce a second draft: they are added to the open draft (same ``report_id``; keep the latest
snapshot per id), which :meth:`ReportEngine.open_reports` returns up to date. A later transaction that meets the
threshold on its own, or joins a cash aggregate, carries the updated snapshot on its own result while the aggregate
holds at most :data:`JOIN_UPDATES_MAX` transactions, and past that a reference to the report (same ``report_id``,
``transaction_ids`` its own id alone, the report's total so far, ``elements["snapshot"] == "reference"``, a full
snapshot has ``"full"``): a settlement hub's 3,000 transfers of 600,000 CNY a day would otherwise repeat a draft of up
to 3,000 ids on each (quadratic output: 833 MB of results for one day). Any other later transaction (a busy corporate
account's hundreds of small transfers after its 2,000,000 CNY) joins silently, for the same reason; the
first transaction of a later business day then closes the day: its result carries the final snapshot of every
aggregate of earlier days that gained transactions no result has shown in full (``elements["day_closed"]`` is
``True``). A
large-value report covers one transaction or the customer's same-day total (PBOC Order 2016 No. 3, Art. 5) and is
filed within 5 working days of the transaction (UNVERIFIED: secondary sources, ``../shared/notes/domain-facts.md``
section 1), so a cumulative report's content is final only once the day is over, and waiting for the day's end loses
no time. The customer is the
account (or the customer id from ``customers=``): cash deposits count for the receiving account, cash withdrawals for
the sending account, transfers for both sides (only the sides held at ``institution`` when it is set).

Report elements: the PBOC data standard's field list (报告要素) was NOT found in the stored sources, so the drafts
carry plainly named fields (institution, customer, account, counterparty, amount, currency, time, channel,
countries, transaction id) and ``elements["field_list_verified"] = False``.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from datetime import time as dt_time
from decimal import Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from sectorflow import ConfigError

from .accounts import account_map, parse_report_zone, read_account_file  # noqa: F401 (re-exported)
from .calendars import BusinessDays, business_day, calendar_for, large_value_due
from .fx import FxRates, FxTable, MissingRateError, ensure_rates, to_minor_unit
from .report_state import _Open, load_report_state, report_state_dict
from .schema import Channel, ReportDraft, Transaction
from .state import TransactionTable
from .thresholds import HOME_CURRENCY, Threshold, thresholds_for

log = logging.getLogger("sectorflow_aml")

DEFAULT_TIMEZONE = {"CN": "Asia/Shanghai", "US": "America/New_York"}
FIELD_LIST_NOTE = ("PBOC data-standard field list not verified; elements use plain names. Check against the "
                   "reporting format your supervisor publishes before filing.")
Direction = Literal["in", "out"]
CUSTOMER_TYPES = ("individual", "corporate")
_RATE_CACHE_MAX = 4096
"""Most (currency, total currency, local day) rates :meth:`ReportEngine._convert` keeps before starting over."""


_Entry = tuple[Threshold, int, "str | None", Decimal, bool, bool]
"""A threshold as :meth:`ReportEngine.observe` checks it on one leg: (threshold, slot of the leg's direction and the
threshold's rule and currency class, currency to convert the amount into or ``None`` when the transaction is in it,
amount, inclusive, cash rule)."""
_Plan = tuple[tuple[int, "Direction", tuple[_Entry, ...]], ...]
"""(side index, direction, thresholds) per leg of a transaction that some threshold covers."""


_CASH_RULES = frozenset({"cash", "ctr_cash"})
_seq_of = attrgetter("seq")
JOIN_UPDATES_MAX = 200
"""Most transactions of an aggregate for which a later one that is cash or meets the threshold on its own carries the
whole updated draft; past it such a transaction carries a reference (``elements["snapshot"] == "reference"``; see
``observe``)."""


class ReportEngine:
    """Stateful large-value / CTR report detector. Not thread-safe: one engine per transaction stream.

    Args:
        jurisdiction: ``"CN"`` (PBOC large-value reports) or ``"US"`` (currency transaction reports).
        thresholds: ``None`` for the defaults, a list of :class:`~sectorflow_aml.thresholds.Threshold`, or a dict of
            amount overrides (see :func:`~sectorflow_aml.thresholds.thresholds_for`).
        fx: rates for foreign-currency amounts (:class:`~sectorflow_aml.fx.FxRates` or tables); ``None`` allows
            only transactions already in the threshold's currency and raises
            :class:`~sectorflow_aml.fx.MissingRateError` for others.
        institution: the reporting institution's bank id; when set, only transaction sides whose bank is this id
            (or unknown) are its customers.
        timezone: IANA zone that defines the business day (default ``Asia/Shanghai`` for CN, ``America/New_York``
            for US); transaction times are UTC.
        customers: ``{account: customer_id}`` so that accounts of one person aggregate together (default: the
            account is the customer).
        customer_types: ``{account: "individual" | "corporate"}``, overriding ``Transaction.customer_type`` (which
            is applied to both sides). Unknown types count as individual, the lower China transfer thresholds.
        home_country: ISO 3166 country of the institution (default the jurisdiction); a transfer whose known
            sender or receiver country differs is cross-border.
        retention_days: days of aggregates kept before the latest business day seen (older ones are dropped; a
            transaction of a dropped day starts a new aggregate with its own ``report_id``, and a warning is logged).
        cutoff: US only: local ``"HH:MM"`` after which a transaction counts on the next business day (night
            deposits, 31 CFR 1010.313(b)); ``None`` (default): the calendar day, weekends and holidays rolled forward.

    Raises:
        ConfigError: unknown jurisdiction, bad thresholds or an unknown time zone.
    """

    def __init__(self, jurisdiction: Literal["CN", "US"] = "CN",
                 thresholds: Iterable[Threshold] | dict[str, object] | None = None,
                 fx: FxRates | FxTable | Iterable[FxTable] | None = None, *, institution: str | None = None,
                 timezone: str | None = None, customers: Mapping[str, str] | None = None,
                 customer_types: Mapping[str, str] | None = None, home_country: str | None = None,
                 retention_days: int = 7, cutoff: str | None = None) -> None:
        self.thresholds = thresholds_for(jurisdiction, thresholds)
        self.jurisdiction = jurisdiction
        self.fx = ensure_rates(fx)
        if institution is not None and (not isinstance(institution, str) or not institution.strip()):
            raise ConfigError(f"institution={institution!r}: give the reporting institution's bank id as text, as the "
                              f"transactions' sender_bank / receiver_bank write it (e.g. 'ICBC-BJ-001').")
        self.institution = institution
        try:
            self.timezone = ZoneInfo(timezone or DEFAULT_TIMEZONE[jurisdiction])
        except Exception as exc:  # ZoneInfoNotFoundError, ValueError
            raise ConfigError(f"Unknown time zone {timezone!r}; use an IANA name such as 'Asia/Shanghai'.") from exc
        self.customers = account_map("customers", customers, "{'ACC1': 'PERSON1', 'ACC2': 'PERSON1'}")
        self.customer_types = account_map("customer_types", customer_types, "{'ACC1': 'corporate'}")
        bad = {a: t for a, t in self.customer_types.items() if t not in CUSTOMER_TYPES}
        if bad:
            raise ConfigError(f"customer_types: {bad} — each type must be one of {', '.join(CUSTOMER_TYPES)}.")
        self.home_country = home_country or jurisdiction
        self.home_currency = HOME_CURRENCY[jurisdiction]
        self.calendar = calendar_for(self.home_country if self.home_country in ("CN", "US") else jurisdiction)
        self.retention_days = retention_days
        if cutoff is not None and jurisdiction != "US":
            raise ConfigError(f"cutoff={cutoff!r} applies to US business days only (31 CFR 1010.313); China counts "
                              "the calendar day (当日): drop it or use jurisdiction='US'.")
        try:
            self.cutoff = dt_time.fromisoformat(cutoff) if cutoff else None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"cutoff must be a local time 'HH:MM', e.g. '18:00', not {cutoff!r}.") from exc
        self._table: dict[tuple[str, str], list[Threshold]] = {}
        for t in self.thresholds:  # (rule, currency scope) -> thresholds to check
            for scope in (("domestic", "foreign") if t.applies_to == "any" else (t.applies_to,)):
                self._table.setdefault((t.rule, scope), []).append(t)
        self._new_stream()

    def _new_stream(self) -> None:
        """Set up the state of one transaction stream (and the caches worked out from it), empty; everything set
        in ``__init__`` before this call is configuration, which :meth:`spawn` shares."""
        # business day -> per slot (a (direction, rule, applies_to) in ``_slots``) {customer: aggregate}; an aggregate
        # of one transaction that has not met its threshold (most of them) is only its row (transaction, account,
        # amount, seq, threshold)
        self._states: dict[date, list[dict[str, _Open | tuple[Any, ...]]]] = {}
        self._slots: dict[tuple[str, str, str], int] = {}
        self._latest: date | None = None
        self._seq = 0  # aggregates opened (open_reports lists them in that order)
        self._business_days = BusinessDays(self.timezone, self.calendar if self.jurisdiction == "US" else None,
                                           self.cutoff)
        # the previous transaction's (time, local day, business day, that day's aggregates, late, newer); dropped
        # whenever the latest business day changes, so late / newer stay right for the same instant
        self._at: tuple[Any, ...] | None = None
        self._plans: dict[tuple[Any, ...], _Plan] = {}  # (channel, customer type, countries, currency) -> plan
        self._entries: dict[tuple[str, str, str], tuple[_Entry, ...]] = {}  # (rule, currency, direction) -> entries
        self._rates: dict[tuple[str, str, date], Decimal] = {}  # (currency, total currency, local day) -> rate
        self._rates_of: tuple[Any, Any, int] | None = None  # (fx, fx.tables, len(fx.tables)) the rates came from
        # fired aggregates (customer, slot, business day) that gained a transaction no returned snapshot holds (joined
        # silently), in order
        self._unshown: dict[tuple[str, int, date], None] = {}
        self._dropped_warned: set[date] = set()  # business days a late transaction arrived for after their pruning

    OPTIONS = {
        "jurisdiction": "CN (PBOC large-value reports, default) or US (currency transaction reports)",
        "thresholds": "threshold amount overrides, e.g. {\"cash:domestic\": \"50000\"}",
        "fx_rates": "FX rate table: a CSV path (as_of,base,quote,rate) or {\"as_of\": \"2024-01-02\", "
                    "\"USD/CNY\": \"7.10\", ...}",
        "institution": "reporting institution's bank id (only its sides of transfers are its customers)",
        "report_timezone": "IANA time zone of the business day (default Asia/Shanghai for CN, America/New_York "
                           "for US)",
        "customers": "{account: customer_id} or a file of 'account,customer_id' lines: accounts of one person "
                     "aggregate together for the large-value / CTR totals (31 CFR 1010.313; PBOC Order 2016 No. 3 "
                     "Art. 5 per customer) and the structuring rule",
        "customer_types": "{account: \"individual\" | \"corporate\"} or a file of 'account,type' lines, "
                          "overriding the transactions' customer_type (picks China's corporate or individual "
                          "transfer row)",
        "cutoff": "US only: local \"HH:MM\" after which a cash transaction counts on the next business day (night "
                  "deposits, 31 CFR 1010.313(b)); default none",
    }
    """Task options :meth:`from_options` understands (for ``Taskflow("aml", **options)`` / ``--option``)."""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ReportEngine:
        """An engine from task options (keys in :attr:`OPTIONS`; other keys are ignored).

        Raises:
            ConfigError: a bad value (names the option).
        """
        fx: FxRates | None = None
        raw = options.get("fx_rates")
        if isinstance(raw, (str, Path)):
            fx = FxRates.from_csv(raw)
        elif isinstance(raw, Mapping):
            rates = dict(raw)
            try:
                as_of = date.fromisoformat(str(rates.pop("as_of")))
            except (KeyError, ValueError) as exc:
                raise ConfigError("fx_rates needs an ISO date under 'as_of', e.g. {'as_of': '2024-01-02', "
                                  "'USD/CNY': '7.10'}.") from exc
            fx = FxRates.from_mapping(rates, as_of=as_of, source="fx_rates option")
        elif isinstance(raw, FxRates):
            fx = raw
        elif raw is not None:
            raise ConfigError(f"fx_rates must be a CSV path or a mapping, not {type(raw).__name__}.")
        return cls(options.get("jurisdiction", "CN"), options.get("thresholds"), fx,
                   institution=options.get("institution"), timezone=options.get("report_timezone"),
                   customers=options.get("customers"), customer_types=options.get("customer_types"),
                   cutoff=options.get("cutoff"))

    @property
    def day_rule(self) -> dict[str, str | None]:
        """How this engine counts "the same day", as :class:`~sectorflow_aml.calendars.DayNumber` arguments
        (``timezone``, ``calendar``: the country whose working days roll weekends and holidays forward, US only;
        ``cutoff``): the pipeline hands them to the structuring rule so that both count one day alike."""
        us = self.jurisdiction == "US"
        return {"timezone": str(self.timezone), "calendar": self.calendar.country if us else None,
                "cutoff": self.cutoff.strftime("%H:%M") if us and self.cutoff else None}

    def spawn(self) -> ReportEngine:
        """An engine of another transaction stream (another tenant's): this engine's configuration (jurisdiction,
        thresholds, FX rates, institution, time zone, customers, customer types, home country, calendar, retention,
        cut-off), shared rather than read again, with no aggregates, report ids or caches of this one's stream. Safe
        while this engine observes transactions in another thread (it reads configuration only)."""
        other = copy.copy(self)
        other._new_stream()
        return other

    def reset(self) -> None:
        """Forget every aggregate (start a new stream)."""
        self._states.clear()
        self._unshown.clear()
        self._latest = None
        self._at = None
        self._dropped_warned.clear()

    def state_dict(self, txns: TransactionTable) -> dict[str, Any]:
        """The engine's state as JSON values (see :mod:`sectorflow_aml.state`): the slots in index order, the
        latest business day, the aggregate counter, each retained business day's aggregates per slot in insertion
        order (a one-row aggregate as ``["row", txn, account, amount, seq, threshold]``, an open one as ``["open",
        threshold, customer, direction, business day, total, [[txn, account, amount], ...], fired, seq, first
        day]``; transactions as rows of ``txns``, thresholds as indices of :attr:`thresholds`, amounts as Decimal
        text), the unshown aggregates in order and the days already warned about. Caches (plans, rates, the last
        instant's days) are rebuilt on use."""
        return report_state_dict(self, txns)

    def load_state_dict(self, state: dict[str, Any], txns: list[Transaction]) -> None:
        """Replace the engine's state by ``state`` (from :meth:`state_dict`; ``txns`` the decoded table).

        Raises:
            ConfigError: the state was made with another jurisdiction or other thresholds, or is damaged.
        """
        load_report_state(self, state, txns)

    def observe(self, txn: Transaction) -> list[ReportDraft]:
        """Add one transaction; return the drafts it triggers or updates (usually none): the draft of an aggregate
        that has just met its threshold; for a later transaction of an aggregate that already fired, when that
        transaction meets the threshold on its own or the aggregate is cash (large-value cash, CTR), the same draft
        updated to include it (same ``report_id``; keep the latest full snapshot per id) while the aggregate holds at
        most :data:`JOIN_UPDATES_MAX` transactions, and past that a reference (same ``report_id``, ``transaction_ids``
        ``[txn's id]``, ``total_amount`` the report's total so far, ``elements["snapshot"] == "reference"``,
        ``elements["transaction_count"]``); and, when ``txn`` is the first transaction of a later business day than
        any seen, the final snapshot of each earlier day's aggregate that gained transactions since its last returned
        full snapshot (listed first, ``elements["day_closed"]`` ``True``). Cash aggregates are usually a handful of
        deposits a day, so every one reaches the results at once; a hub's hundreds of large transfers or cash deposits,
        or a busy corporate account's small transfers, would repeat a growing draft on each (quadratic output), so
        past the cap (small transfers: at once) the whole list reaches the results when the day closes (and
        :meth:`open_reports` at any time). The decisions depend only on the order of arrival, so one batch, chunks
        and one transaction at a time return the same drafts.

        Raises:
            MissingRateError: a foreign-currency amount with no rate in ``fx``.
        """
        fields = txn.__dict__  # the model's field values (pydantic): subscripts cost less than its attribute lookups
        at = self._at
        if at is None or at[0] != fields["timestamp"]:  # the same instant as the previous transaction: the same days
            at = self._enter(fields["timestamp"])
        _, day, business_date, states, late, newer = at
        drafts: list[ReportDraft] = []
        unshown = self._unshown
        if unshown and newer:
            drafts.extend(self._close_days(business_date))
        currency = fields["currency"]
        if self.institution is None and not self.customers and not self.customer_types:
            # the sides and rules depend only on these, so each combination's plan is worked out once
            plan_key = (fields["channel"], fields["customer_type"], fields["sender_country"], fields["receiver_country"],
                        currency)
            plan = self._plans.get(plan_key)
            if plan is None:
                plan = self._plans[plan_key] = self._plan(self._legs(txn), currency)
            accounts = customers = (fields["sender_account"], fields["receiver_account"])
        else:
            legs = self._legs(txn)
            plan = self._plan(legs, currency, by_leg=True)
            accounts = [account for _, account, _, _ in legs]
            customers = [customer for customer, _, _, _ in legs]
        txn_amount = fields["amount"]
        for side, direction, entries in plan:
            account = accounts[side]
            customer = customers[side]
            for threshold, slot, quote, limit, inclusive, cash in entries:
                amount = txn_amount if quote is None else self._convert(txn_amount, currency, quote, day)
                aggregates = states[slot]
                state = aggregates.get(customer)
                if state is None:  # a new aggregate: usually one row below its threshold, kept as that row
                    if late:
                        self._warn_dropped(txn, business_date)
                    seq = self._seq = self._seq + 1
                    if amount >= limit if inclusive else amount > limit:  # met()
                        state = aggregates[customer] = _Open(threshold, customer, direction, business_date, amount,
                                                             [(txn, account, amount)], True, seq)
                        drafts.append(self._draft(state))
                    else:
                        aggregates[customer] = (txn, account, amount, seq, threshold)
                    continue
                if state.__class__ is tuple:  # its second transaction
                    state = aggregates[customer] = self._opened(state, customer, direction, business_date)
                total = state.total = state.total + amount
                state.rows.append((txn, account, amount))
                if not state.fired:
                    if total >= limit if inclusive else total > limit:  # met()
                        state.fired = True
                        drafts.append(self._draft(state))
                elif cash or (amount >= limit if inclusive else amount > limit):
                    if len(state.rows) <= JOIN_UPDATES_MAX:
                        # joins a fired aggregate: its result carries the open draft, updated (same report_id)
                        drafts.append(self._draft(state))
                        if unshown:
                            unshown.pop((customer, slot, business_date), None)
                    else:  # past the cap: a reference to the report; the day's close carries the final draft
                        drafts.append(self._reference(state, txn, account, amount))
                        unshown[customer, slot, business_date] = None
                else:  # joins silently: the first transaction of a later business day carries the final draft
                    unshown[customer, slot, business_date] = None
        if newer:
            self._latest = business_date
            self._at = None  # late / newer of this instant change
            self._prune()
        return drafts

    def check_rates(self, txns: Iterable[Transaction]) -> None:
        """Raise, before any state changes, the :class:`~sectorflow_aml.fx.MissingRateError` that :meth:`observe`
        would raise part-way through ``txns``: a transaction whose amount a report total needs in another currency
        (a EUR cash deposit in China: the USD-equivalent total) on a local day no rate table covers (a table dated
        after the transaction). The message names the transaction, its local day and the total's currency.
        Transactions in a currency every threshold of their scope is stated in need no rate and are not looked at.
        """
        home = self.home_currency
        if all(t.currency == home for t in self.thresholds if t.applies_to != "foreign"):
            txns = [t for t in txns if t.currency != home]
        checked: set[tuple[str, str, date]] = set()
        simple = self.institution is None and not self.customers and not self.customer_types
        for txn in txns:
            currency = txn.currency
            if simple:  # observe's plan of the transaction's kind
                plan_key = (txn.channel, txn.customer_type, txn.sender_country, txn.receiver_country, currency)
                plan = self._plans.get(plan_key)
                if plan is None:
                    plan = self._plans[plan_key] = self._plan(self._legs(txn), currency)
            else:
                plan = self._plan(self._legs(txn), currency)
            for _, _, entries in plan:
                for threshold, _, quote, _, _, _ in entries:
                    if quote is None:
                        continue
                    day = self._dates(txn.timestamp)[0] if self.cutoff is None or self.cutoff.tzinfo is None \
                        else business_day(txn.timestamp, self.timezone)[0]  # the local day
                    key = (currency, threshold.currency, day)
                    if key in checked:
                        continue
                    try:
                        self.fx.rate(currency, threshold.currency, day)
                    except MissingRateError as exc:
                        raise MissingRateError(
                            f"Transaction {txn.transaction_id} of {day.isoformat()} ({self.timezone}) is in "
                            f"{currency} and its {threshold.rule} report total is in {threshold.currency}: {exc} "
                            f"Give a table dated on or before that day (Taskflow('aml', fx_rates=...), sectorflow run "
                            f"-O fx_rates=...).",
                            details={**(exc.details if isinstance(exc.details, dict) else {}),
                                     "transaction_id": txn.transaction_id, "date": day.isoformat()}) from exc
                    checked.add(key)

    def _warn_dropped(self, txn: Transaction, business_date: date) -> None:
        """Log once per business day that ``txn`` arrived after that day's aggregates were dropped."""
        if business_date in self._dropped_warned:
            return
        self._dropped_warned.add(business_date)
        log.warning("Transaction %s of business day %s arrived more than retention_days=%d days after it, when the "
                    "day's report aggregates had been dropped: its same-day total starts again from it (a report of "
                    "the day's earlier transactions keeps its own report_id). Sort the input by time "
                    "(ReportEngine(retention_days=...) keeps days longer).", txn.transaction_id, business_date.isoformat(), self.retention_days)

    def open_reports(self) -> list[ReportDraft]:
        """Up-to-date drafts of every fired aggregate still retained (later same-day transactions included)."""
        fired = [state for slots in self._states.values() for states in slots for state in states.values()
                 if state.__class__ is _Open and state.fired]
        fired.sort(key=_seq_of)  # the order they opened
        return [self._draft(state) for state in fired]

    def _close_days(self, business_date: date) -> list[ReportDraft]:
        """Final snapshots of the aggregates of days before ``business_date`` that joined transactions silently (in
        the order they first did), forgotten as shown; those of ``business_date`` itself stay (a late transaction of
        an earlier day can arrive after its own day's later ones)."""
        out: list[ReportDraft] = []
        unshown = self._unshown
        days = self._states
        directions = {slot: direction for (direction, _, _), slot in self._slots.items()}
        for key in list(unshown):  # (customer, slot, business day)
            customer, slot, day = key
            if day < business_date:
                del unshown[key]
                slots = days.get(day)
                state = slots[slot].get(customer) if slots is not None else None
                if state is not None:
                    if state.__class__ is tuple:  # reopened after its day was dropped (retention_days)
                        state = self._opened(state, customer, directions[slot], day)
                    out.append(self._draft(state, day_closed=True))
        return out

    # -- internals -------------------------------------------------------------------------------------------------

    def _enter(self, timestamp: datetime) -> tuple[Any, ...]:
        """The days of a transaction at ``timestamp`` (another instant than the previous one), as :meth:`observe`
        reads them: (timestamp, local day, business day, that business day's aggregates, late: the day's aggregates
        were dropped (:meth:`_prune`), newer: no transaction of this or a later business day was seen)."""
        day, business_date = self._dates(timestamp)
        previous = self._at
        if previous is not None and previous[2] is business_date and previous[1] is day:  # same bucket as before
            at = self._at = (timestamp, day, business_date, previous[3], previous[4], previous[5])
            return at
        states = self._states.get(business_date)
        if states is None:
            states = self._states[business_date] = [{} for _ in self._slots]
        latest = self._latest
        late = latest is not None and business_date.toordinal() < latest.toordinal() - self.retention_days
        at = self._at = (timestamp, day, business_date, states, late, latest is None or business_date > latest)
        return at

    def _dates(self, timestamp: datetime) -> tuple[date, date]:
        """(local calendar day, business day) of a UTC ``timestamp``: :func:`~sectorflow_aml.calendars.business_day`,
        looked up once per 15-minute UTC bucket (:class:`~sectorflow_aml.calendars.BusinessDays`)."""
        return self._business_days(timestamp)

    def _plan(self, legs: list[tuple[str, str, Direction, str]], currency: str, by_leg: bool = False) -> _Plan:
        """The legs of a transaction in ``currency`` that some threshold covers, each with its thresholds; the side
        index is the leg's position in ``legs`` (``by_leg``) or 0 for the sender's side ("out") and 1 for the
        receiver's ("in")."""
        plan = []
        for i, (_, _, direction, rule) in enumerate(legs):
            entries = self._entries.get((rule, currency, direction))
            if entries is None:
                scope = "domestic" if currency == self.home_currency else "foreign"
                entries = self._entries[rule, currency, direction] = tuple(
                    (t, self._slot(direction, t.rule, t.applies_to), None if t.currency == currency else t.currency,
                     t.amount, t.inclusive, t.rule in _CASH_RULES) for t in self._table.get((rule, scope), ()))
            if entries:
                plan.append((i if by_leg else 0 if direction == "out" else 1, direction, entries))
        return tuple(plan)

    def _slot(self, direction: Direction, rule: str, applies_to: str) -> int:
        """The index of the aggregates of (``direction``, ``rule``, ``applies_to``) in each business day's list (a
        new one is added to every day kept)."""
        slot = self._slots.get((direction, rule, applies_to))
        if slot is None:
            slot = self._slots[direction, rule, applies_to] = len(self._slots)
            for states in self._states.values():
                states.append({})
        return slot

    def _convert(self, amount: Decimal, base: str, quote: str, day: date) -> Decimal:
        """``self.fx.convert(amount, base, quote, day)`` (``base`` is not ``quote``), the rate looked up once per
        (pair, local day) while ``fx`` and its list of tables stay the same (a table's ``rates`` changed in place
        after a conversion of that pair and day are not seen: give a new table instead)."""
        fx = self.fx
        source = (fx, fx.tables, len(fx.tables))
        rates = self._rates
        if self._rates_of != source or len(rates) >= _RATE_CACHE_MAX:
            rates.clear()
            self._rates_of = source
        key = (base, quote, day)
        rate = rates.get(key)
        if rate is None:
            rate = rates[key] = fx.rate(base, quote, day)
        return to_minor_unit(amount * rate, quote)

    def _opened(self, row: tuple[Any, ...], customer: str, direction: Direction, business_date: date) -> _Open:
        """The aggregate of one row ``(transaction, account, amount, seq, threshold)`` (see ``_states``)."""
        txn, account, amount, seq, threshold = row
        return _Open(threshold, customer, direction, business_date, amount, [(txn, account, amount)], False, seq)

    def _legs(self, txn: Transaction) -> list[tuple[str, str, Direction, str]]:
        """(customer, account, direction, rule) for each side of ``txn`` that is a customer of the institution."""
        channel = txn.channel
        sides: tuple[tuple[str, Direction, str | None], ...]
        if channel is Channel.cash_deposit:
            sides, cash = ((txn.receiver_account, "in", txn.receiver_bank),), True
        elif channel is Channel.cash_withdrawal:
            sides, cash = ((txn.sender_account, "out", txn.sender_bank),), True
        elif self.jurisdiction == "US":
            return []  # a CTR covers currency (cash) only
        else:
            sides = ((txn.sender_account, "out", txn.sender_bank), (txn.receiver_account, "in", txn.receiver_bank))
            cash = False
        legs = []
        cross_border: bool | None = None
        institution = self.institution
        us = self.jurisdiction == "US"
        customers = self.customers
        customer_types = self.customer_types
        for account, direction, bank in sides:
            if institution is not None and bank is not None and bank != institution:
                continue
            if us:
                rule = "ctr_cash"
            elif cash:
                rule = "cash"
            elif (customer_types.get(account, txn.customer_type) if customer_types else txn.customer_type) \
                    == "corporate":
                rule = "corporate_transfer"
            else:
                if cross_border is None:
                    home, s, r = self.home_country, txn.sender_country, txn.receiver_country
                    cross_border = (s is not None and s != home) or (r is not None and r != home)
                rule = "individual_cross_border_transfer" if cross_border else "individual_domestic_transfer"
            legs.append((customers.get(account, account) if customers else account, account, direction, rule))
        return legs

    def _row(self, txn: Transaction, account: str, direction: Direction, amount: Decimal, currency: str,
             ) -> dict[str, Any]:
        local = txn.timestamp.astimezone(self.timezone)
        counterparty = txn.sender_account if direction == "in" else txn.receiver_account
        counterparty_bank = txn.sender_bank if direction == "in" else txn.receiver_bank
        row: dict[str, Any] = {
            "transaction_id": txn.transaction_id, "time": txn.timestamp.isoformat(), "local_time": local.isoformat(),
            "account": account, "bank": txn.receiver_bank if direction == "in" else txn.sender_bank,
            "counterparty_account": counterparty, "counterparty_bank": counterparty_bank,
            "direction": direction, "amount": str(txn.amount), "currency": txn.currency,
            f"amount_{currency.lower()}": str(amount), "channel": txn.channel.value,
            "sender_country": txn.sender_country, "receiver_country": txn.receiver_country,
            "customer_type": self.customer_types.get(account, txn.customer_type),
        }
        if txn.currency != currency:
            rate = self.fx.rate(txn.currency, currency, local.date())
            row["fx_rate"] = f"{txn.currency}/{currency}={rate}"
        return row

    def _prune(self) -> None:
        assert self._latest is not None
        cutoff = self._latest.toordinal() - self.retention_days
        days = self._states
        for day in [d for d in days if d.toordinal() < cutoff]:
            del days[day]  # the day's aggregates go with it: one step per day, not one per aggregate

    def _draft(self, state: _Open, day_closed: bool | None = None) -> ReportDraft:
        """The draft of ``state`` as it stands; ``day_closed``: a transaction of a later business day has arrived
        (default: whether one has been seen before this call)."""
        t = state.threshold
        if day_closed is None:
            day_closed = self._latest is not None and state.business_date < self._latest
        rows = [self._row(txn, account, state.direction, amount, t.currency) for txn, account, amount in state.rows]
        kind = "ctr" if self.jurisdiction == "US" else "large_value"
        # the local calendar day of the earliest transaction: a US CTR is due 15 days after the day the reportable
        # transaction occurred (31 CFR 1010.306(a)(1)), which for a weekend deposit precedes its business day
        first_day = state.first_day = min(date.fromisoformat(r["local_time"][:10]) for r in rows)
        elements: dict[str, Any] = {
            "report_type": "Currency Transaction Report (FinCEN CTR)" if kind == "ctr"
            else "大额交易报告 (large-value transaction report)",
            "institution": self.institution,
            "customer": state.customer,
            "accounts": sorted({r["account"] for r in rows}),
            "customer_type": rows[0]["customer_type"],
            "direction": state.direction,
            "direction_zh": "收" if state.direction == "in" else "付",
            "rule": t.rule,
            "threshold": f"{t.sense} {t.amount} {t.currency}",
            "threshold_verified": t.verified,
            "aggregation": "single" if len(state.rows) == 1 else "cumulative",
            "business_date": state.business_date.isoformat(),
            "day_closed": day_closed,
            "timezone": str(self.timezone),
            "snapshot": "full",
            "transactions": rows,
            "field_list_verified": False,
            "field_list_note": FIELD_LIST_NOTE,
        }
        return ReportDraft(
            report_id=self._report_id(state), kind=kind, jurisdiction=self.jurisdiction, regulation=t.regulation, customer_account=state.customer,
            transaction_ids=[r["transaction_id"] for r in rows],
            total_amount=to_minor_unit(state.total, t.currency),
            currency=t.currency, business_date=state.business_date.isoformat(), elements=elements,
            due_by=large_value_due(self.jurisdiction, self.calendar, state.business_date, first_day).isoformat())

    def _report_id(self, state: _Open) -> str:
        """``LVTR-`` or ``CTR-`` and 16 hex digits of SHA-256 over the aggregate's key and its first transaction's id
        (which tells apart two aggregates of one key: the day's own, and one that a transaction arriving after the day
        was dropped (retention_days) starts); one stream gives the same ids."""
        t = state.threshold
        kind = "ctr" if self.jurisdiction == "US" else "large_value"
        key = f"{kind}|{self.jurisdiction}|{state.customer}|{state.direction}|{t.rule}|{t.applies_to}|" \
              f"{state.business_date.isoformat()}|{state.rows[0][0].transaction_id}"
        return f"{'CTR' if kind == 'ctr' else 'LVTR'}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    def _reference(self, state: _Open, txn: Transaction, account: str, amount: Decimal) -> ReportDraft:
        """A compact reference to ``state``'s report for ``txn``, which has just joined it past
        :data:`JOIN_UPDATES_MAX` transactions: same ``report_id``, ``transaction_ids`` ``[txn's id]``,
        ``total_amount`` the aggregate's total so far (threshold currency), ``elements["snapshot"] == "reference"``
        with ``transaction_count`` (transactions in the report so far) and ``transactions`` (``txn``'s row alone).
        Its size does not grow with the report; the whole list is in the day's closing draft and
        :meth:`open_reports`."""
        t = state.threshold
        row = self._row(txn, account, state.direction, amount, t.currency)
        local_day = date.fromisoformat(row["local_time"][:10])
        first_day = state.first_day = local_day if state.first_day is None else min(state.first_day, local_day)
        kind = "ctr" if self.jurisdiction == "US" else "large_value"
        elements: dict[str, Any] = {
            "report_type": "Currency Transaction Report (FinCEN CTR)" if kind == "ctr"
            else "大额交易报告 (large-value transaction report)",
            "snapshot": "reference",
            "institution": self.institution,
            "customer": state.customer,
            "direction": state.direction,
            "rule": t.rule,
            "threshold": f"{t.sense} {t.amount} {t.currency}",
            "aggregation": "cumulative",
            "business_date": state.business_date.isoformat(),
            "day_closed": self._latest is not None and state.business_date < self._latest,
            "timezone": str(self.timezone),
            "transaction_count": len(state.rows),
            "transactions": [row],
            "note": f"joined report past {JOIN_UPDATES_MAX} transactions: the whole list is in this report's draft "
                    f"with day_closed true (first result of a later business day) and ReportEngine.open_reports()",
            "field_list_verified": False,
        }
        return ReportDraft(
            report_id=self._report_id(state), kind=kind, jurisdiction=self.jurisdiction, regulation=t.regulation,
            customer_account=state.customer, transaction_ids=[txn.transaction_id],
            total_amount=to_minor_unit(state.total, t.currency), currency=t.currency,
            business_date=state.business_date.isoformat(), elements=elements,
            due_by=large_value_due(self.jurisdiction, self.calendar, state.business_date, first_day).isoformat())
