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
snapshot per id), which :meth:`ReportEngine.open_reports` returns up to date. A later transaction carries the updated
snapshot on its own result when it meets the threshold on its own, or when the aggregate is cash and holds at most
:data:`JOIN_UPDATES_MAX` transactions. Any other later transaction (a busy corporate account's hundreds of transfers
after its 2,000,000 CNY) joins silently, since repeating a growing draft on each would make the output quadratic; the
first transaction of a later business day then closes the day: its result carries the final snapshot of every
aggregate of earlier days that gained transactions no result has shown (``elements["day_closed"]`` is ``True``). A
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

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from datetime import time as dt_time
from pathlib import Path
from decimal import Decimal
from typing import Any, Literal
from zoneinfo import ZoneInfo

from sectorflow import ConfigError

from .calendars import business_day, calendar_for, large_value_due
from .fx import FxRates, FxTable, MissingRateError, ensure_rates, to_minor_unit
from .schema import Channel, ReportDraft, Transaction
from .thresholds import HOME_CURRENCY, Threshold, thresholds_for

log = logging.getLogger("sectorflow_aml")

DEFAULT_TIMEZONE = {"CN": "Asia/Shanghai", "US": "America/New_York"}
FIELD_LIST_NOTE = ("PBOC data-standard field list not verified; elements use plain names. Check against the "
                   "reporting format your supervisor publishes before filing.")
Direction = Literal["in", "out"]
CUSTOMER_TYPES = ("individual", "corporate")
_BUCKET_S = 900
_ZERO = Decimal(0)
"""Seconds of the UTC buckets whose local day :meth:`ReportEngine._dates` caches."""


def read_account_file(path: str | Path, name: str, default: str | None = None) -> dict[str, str]:
    """``{account: value}`` from a text file of ``account,value`` lines, as the options ``customers``,
    ``customer_types`` and ``exempt_accounts`` take it (a bank's mapping of thousands of accounts does not fit on a
    command line): UTF-8 (a byte-order mark ignored), blank and ``#`` comment lines ignored, a first line
    ``account,...`` (or ``account_id``, ``acct``) taken as a header. ``default``: the value of a line with an account
    alone (``None``: such a line is an error).

    Raises:
        ConfigError: naming option ``name``: a missing file, or lines without an account (or without a value when
            there is no ``default``), by line number.
    """
    source = Path(path)
    if not source.is_file():
        raise ConfigError(f"{name}={str(path)!r}: no such file; give a file of 'account,value' lines (or the "
                          f"option's value itself: see the option's help).")
    out: dict[str, str] = {}
    bad: list[int] = []
    for line_no, line in enumerate(source.read_text(encoding="utf-8-sig").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        account, _, value = (part.strip() for part in line.partition(","))
        if line_no == 1 and account.lower() in ("account", "account_id", "acct"):
            continue  # a header
        value = value or default or ""
        if not account or not value:
            bad.append(line_no)
        out[account] = value
    if bad:
        raise ConfigError(f"{name}={str(path)!r}: line(s) {', '.join(map(str, bad[:10]))} are not "
                          f"'account,value'.")
    return out


def account_map(name: str, value: object, example: str) -> dict[str, str]:
    """``value`` as a ``{str: str}`` dict (``None``: empty); a ``str`` or ``Path`` is a file read by
    :func:`read_account_file`.

    Raises:
        ConfigError: naming option ``name``: not a mapping, a missing file, or a line without a value.
    """
    if value is None:
        return {}
    if isinstance(value, (str, Path)):
        value = read_account_file(value, name)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                 for k, v in value.items()):
        raise ConfigError(f"{name} must be a mapping of account ids to non-empty strings, e.g. {example}; got "
                          f"{type(value).__name__}.")
    return dict(value)


def parse_report_zone(name: str | tzinfo) -> tzinfo:
    """``name`` as a time zone (a tzinfo is taken as it is).

    Raises:
        ConfigError: not an IANA time zone name.
    """
    if isinstance(name, tzinfo):
        return name
    try:
        return ZoneInfo(name)
    except Exception as exc:  # ZoneInfoNotFoundError, ValueError, TypeError
        raise ConfigError(f"Unknown time zone {name!r}; use an IANA name such as 'Asia/Shanghai'.") from exc


@dataclass(slots=True)
class _Open:
    """State of one (customer, direction, rule, currency class, business day) aggregate."""

    threshold: Threshold
    customer: str
    direction: Direction
    business_date: date
    total: Decimal = Decimal(0)
    rows: list[tuple[Transaction, str, Decimal]] = field(default_factory=list)  # (transaction, account, amount)
    fired: bool = False


_CASH_RULES = frozenset({"cash", "ctr_cash"})
JOIN_UPDATES_MAX = 200
"""Most transactions of a cash aggregate for which each later one carries the updated draft (see ``observe``)."""


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
        self._open: dict[tuple[str, str, str, str, date], _Open] = {}
        self._days: dict[date, list[tuple[str, str, str, str, date]]] = {}
        self._latest: date | None = None
        self._bucket: tuple[int, date, date] | None = None  # (15-minute UTC bucket, local day, business day)
        self._last_dates: tuple[datetime, date, date] | None = None  # the previous transaction's time and days
        self._leg_plans: dict[tuple[Any, ...], tuple[tuple[int, Direction, str], ...]] = {}
        # fired aggregates that gained a transaction no returned snapshot holds (joined silently), in order
        self._unshown: dict[tuple[str, str, str, str, date], None] = {}
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

    def reset(self) -> None:
        """Forget every aggregate (start a new stream)."""
        self._open.clear()
        self._days.clear()
        self._unshown.clear()
        self._latest = None
        self._last_dates = None
        self._dropped_warned.clear()

    def observe(self, txn: Transaction) -> list[ReportDraft]:
        """Add one transaction; return the drafts it triggers or updates (usually none): the draft of an aggregate
        that has just met its threshold; the same draft updated to include it (same ``report_id``; keep the latest per
        id) for a later transaction of an aggregate that already fired when that transaction meets the threshold on
        its own, or when the aggregate is cash (large-value cash, CTR) and holds at most :data:`JOIN_UPDATES_MAX`
        transactions; and, when ``txn`` is the first transaction of a later business day than any seen, the final
        snapshot of each earlier day's aggregate that gained transactions silently since its last returned snapshot
        (listed first, ``elements["day_closed"]`` ``True``). Cash aggregates are a handful of deposits a day, so every
        one reaches the results at once; a busy corporate account's transfer aggregate would repeat a growing draft
        on each of hundreds of transfers (quadratic output), so its later small transfers reach the results when the
        day closes (and :meth:`open_reports` at any time). The decisions depend only on the order of arrival, so
        one batch, chunks and one transaction at a time return the same drafts.

        Raises:
            MissingRateError: a foreign-currency amount with no rate in ``fx``.
        """
        timestamp = txn.timestamp
        last = self._last_dates
        if last is not None and last[0] == timestamp:  # same instant as the previous transaction: same days
            day, business_date = last[1], last[2]
        else:
            day, business_date = self._dates(timestamp)
            self._last_dates = (timestamp, day, business_date)
        drafts: list[ReportDraft] = []
        unshown = self._unshown
        if unshown and (self._latest is None or business_date > self._latest):
            drafts.extend(self._close_days(business_date))
        currency = txn.currency
        scope = "domestic" if currency == self.home_currency else "foreign"
        table = self._table
        opened = self._open
        for customer, account, direction, rule in self._legs(txn):
            thresholds = table.get((rule, scope))
            if not thresholds:
                continue
            for threshold in thresholds:
                amount = txn.amount if currency == threshold.currency else \
                    self.fx.convert(txn.amount, currency, threshold.currency, day)
                key = (customer, direction, threshold.rule, threshold.applies_to, business_date)
                state = opened.get(key)
                if state is None:
                    if self._latest is not None and \
                            business_date.toordinal() < self._latest.toordinal() - self.retention_days:
                        self._warn_dropped(txn, business_date)
                    state = opened[key] = _Open(threshold, customer, direction, business_date, _ZERO, [])
                    keys = self._days.get(business_date)
                    if keys is None:
                        keys = self._days[business_date] = []
                    keys.append(key)
                total = state.total = state.total + amount
                state.rows.append((txn, account, amount))
                if not state.fired:
                    if total >= threshold.amount if threshold.inclusive else total > threshold.amount:  # met()
                        state.fired = True
                        drafts.append(self._draft(state))
                elif (amount >= threshold.amount if threshold.inclusive else amount > threshold.amount) or (
                        threshold.rule in _CASH_RULES and len(state.rows) <= JOIN_UPDATES_MAX):
                    # joins a fired aggregate: its result carries the open draft, updated (same report_id)
                    drafts.append(self._draft(state))
                    if unshown:
                        unshown.pop(key, None)
                else:  # joins silently: the first transaction of a later business day carries the final draft
                    unshown[key] = None
        latest = self._latest
        if latest is None or business_date > latest:
            self._latest = business_date
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
        for txn in txns:
            currency = txn.currency
            scope = "domestic" if currency == home else "foreign"
            for _, _, _, rule in self._legs(txn):
                for threshold in self._table.get((rule, scope), ()):
                    if threshold.currency == currency:
                        continue
                    day = business_day(txn.timestamp, self.timezone)[0]
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
        return [self._draft(s) for s in self._open.values() if s.fired]

    def _close_days(self, business_date: date) -> list[ReportDraft]:
        """Final snapshots of the aggregates of days before ``business_date`` that joined transactions silently (in
        the order they first did), forgotten as shown; those of ``business_date`` itself stay (a late transaction of
        an earlier day can arrive after its own day's later ones)."""
        out: list[ReportDraft] = []
        unshown = self._unshown
        opened = self._open
        for key in list(unshown):
            if key[4] < business_date:
                del unshown[key]
                state = opened.get(key)
                if state is not None:
                    out.append(self._draft(state, day_closed=True))
        return out

    # -- internals -------------------------------------------------------------------------------------------------

    def _dates(self, timestamp: datetime) -> tuple[date, date]:
        """(local calendar day, business day) of a UTC ``timestamp``.

        Exactly ``timestamp.astimezone(timezone).date()`` and the business day derived from it, but the time-zone
        lookup is done once per 15-minute UTC bucket: when the zone's offset is the same at both ends of the bucket
        and no local midnight falls inside it, every instant of the bucket has the same local day. Buckets that
        straddle a local midnight or an offset change, and the US night-deposit ``cutoff``, take the direct path.
        """
        if self.cutoff is None:
            ts = timestamp.timestamp()
            bucket = int(ts // _BUCKET_S)
            cached = self._bucket
            if cached is not None and cached[0] == bucket:
                return cached[1], cached[2]
            start = datetime.fromtimestamp(bucket * _BUCKET_S, self.timezone)
            end = datetime.fromtimestamp(bucket * _BUCKET_S + _BUCKET_S, self.timezone)
            second_of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
            if start.utcoffset() == end.utcoffset() and second_of_day + _BUCKET_S <= 86_400:
                day = start.date()
                business_date = self.calendar.roll_forward(day) if self.jurisdiction == "US" else day
                self._bucket = (bucket, day, business_date)
                return day, business_date
        return business_day(timestamp, self.timezone, self.calendar if self.jurisdiction == "US" else None,
                            self.cutoff)

    def _legs(self, txn: Transaction) -> list[tuple[str, str, Direction, str]]:
        """(customer, account, direction, rule) for each side of ``txn`` that is a customer of the institution.

        Without ``institution``, ``customers`` and ``customer_types`` the sides and rules depend only on the
        channel, customer type and countries, so the plan for each such combination is worked out once."""
        if self.institution is None and not self.customers and not self.customer_types:
            plan_key = (txn.channel, txn.customer_type, txn.sender_country, txn.receiver_country)
            plan = self._leg_plans.get(plan_key)
            if plan is None:
                plan = self._leg_plans[plan_key] = tuple(  # "out" is the sender's side, "in" the receiver's
                    (0 if direction == "out" else 1, direction, rule) for _, _, direction, rule in self._legs_slow(txn))
            sides = (txn.sender_account, txn.receiver_account)
            return [(sides[i], sides[i], direction, rule) for i, direction, rule in plan]
        return self._legs_slow(txn)

    def _legs_slow(self, txn: Transaction) -> list[tuple[str, str, Direction, str]]:
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
        for day in [d for d in self._days if d.toordinal() < cutoff]:
            for key in self._days.pop(day):
                self._open.pop(key, None)

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
        first_day = min(date.fromisoformat(r["local_time"][:10]) for r in rows)
        # the aggregate's first transaction tells apart two aggregates of one key: the day's own, and one that a
        # transaction arriving after the day was dropped (retention_days) starts; one stream gives the same ids
        key = f"{kind}|{self.jurisdiction}|{state.customer}|{state.direction}|{t.rule}|{t.applies_to}|" \
              f"{state.business_date.isoformat()}|{rows[0]['transaction_id']}"
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
            "transactions": rows,
            "field_list_verified": False,
            "field_list_note": FIELD_LIST_NOTE,
        }
        return ReportDraft(
            report_id=f"{'CTR' if kind == 'ctr' else 'LVTR'}-{hashlib.sha256(key.encode()).hexdigest()[:16]}",
            kind=kind, jurisdiction=self.jurisdiction, regulation=t.regulation, customer_account=state.customer,
            transaction_ids=[r["transaction_id"] for r in rows],
            total_amount=to_minor_unit(state.total, t.currency),
            currency=t.currency, business_date=state.business_date.isoformat(), elements=elements,
            due_by=large_value_due(self.jurisdiction, self.calendar, state.business_date, first_day).isoformat())
