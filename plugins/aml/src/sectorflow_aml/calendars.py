"""Business days and report due dates for China and the United States.

Holidays come from the ``holidays`` package: ``holidays.China`` includes the weekend days that are made working days
(调休), ``holidays.US`` the federal holidays (the Federal Reserve's bank holidays follow them closely but not
exactly; pass your own calendar if it matters). Due dates:

- China large-value report: within 5 working days of the transaction (PBOC Order 2016 No. 3; UNVERIFIED, see
  ``/work/shared/notes/domain-facts.md`` section 1).
- China suspicious report: at most 5 working days after the institution's internal procedure confirms it (Art. 15;
  UNVERIFIED).
- US CTR: "within 15 days following the day on which the reportable transaction occurred" (31 CFR 1010.306(a)(1),
  read in an unofficial copy of the regulation, FDIC/FRRS): counted from the calendar day of the transaction, not
  from the business day it is aggregated on (a Saturday deposit is due 15 days after that Saturday).
- US SAR: within 30 calendar days after initial detection (31 CFR 1020.320(b)(3); UNVERIFIED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import holidays

CN_LARGE_VALUE_WORKING_DAYS = 5
CN_SUSPICIOUS_WORKING_DAYS = 5
US_CTR_DAYS = 15
US_SAR_DAYS = 30


@dataclass
class BusinessCalendar:
    """Working days of one country (ISO 3166 alpha-2 ``country`` known to ``holidays``: ``CN``, ``US``, ...)."""

    country: str
    _calendar: Any = field(default=None, repr=False)
    _cache: dict[date, bool] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._calendar = holidays.country_holidays(self.country)

    def is_working_day(self, day: date) -> bool:
        """Monday to Friday and not a holiday, or a weekend day officially made a working day (China 调休)."""
        known = self._cache.get(day)
        if known is None:
            known = self._cache[day] = bool(self._calendar.is_working_day(day))
        return known

    def roll_forward(self, day: date) -> date:
        """``day`` if it is a working day, else the next working day."""
        while not self.is_working_day(day):
            day += timedelta(days=1)
        return day

    def add_working_days(self, day: date, n: int) -> date:
        """The ``n``-th working day after ``day`` (``day`` itself not counted)."""
        count = 0
        while count < n:
            day += timedelta(days=1)
            if self.is_working_day(day):
                count += 1
        return day


@lru_cache(maxsize=8)
def calendar_for(country: str) -> BusinessCalendar:
    """A shared :class:`BusinessCalendar` per country (building one loads the holiday rules)."""
    return BusinessCalendar(country)


def large_value_due(jurisdiction: str, calendar: BusinessCalendar, business_date: date,
                    transaction_day: date | None = None) -> date:
    """Due date of a CN large-value report or a US CTR.

    CN: 5 working days after ``business_date`` (the local day). US: 15 calendar days after ``transaction_day``, the
    local calendar day on which the reportable transaction occurred (31 CFR 1010.306(a)(1)); for an aggregate of
    several transactions pass the earliest one's day (the earliest deadline any of them can carry). Without
    ``transaction_day`` the US count starts at ``business_date``.
    """
    if jurisdiction == "CN":
        return calendar.add_working_days(business_date, CN_LARGE_VALUE_WORKING_DAYS)
    return (transaction_day or business_date) + timedelta(days=US_CTR_DAYS)


def suspicious_due(jurisdiction: str, calendar: BusinessCalendar, start: date) -> date:
    """Due date of a suspicious report counted from ``start`` (CN: confirmation date; US: detection date)."""
    if jurisdiction == "CN":
        return calendar.add_working_days(start, CN_SUSPICIOUS_WORKING_DAYS)
    return start + timedelta(days=US_SAR_DAYS)


def business_day(timestamp: datetime, zone: tzinfo, calendar: BusinessCalendar | None = None,
                 cutoff: time | None = None) -> tuple[date, date]:
    """(local calendar day, business day) of an aware ``timestamp``.

    The local day is the date in ``zone``. Without ``calendar`` the business day is the local day (China's 当日).
    With ``calendar`` (the US CTR rule, 31 CFR 1010.313): a time at or after the local ``cutoff`` moves to the next
    day, and a day that is not a working day rolls forward to the next working day. The report engine and the
    structuring rule both count "the same day" with this function.
    """
    local = timestamp.astimezone(zone)
    day = local.date()
    if calendar is None:
        return day, day
    after_cutoff = cutoff is not None and local.time() >= cutoff
    return day, calendar.roll_forward(day + timedelta(days=1) if after_cutoff else day)


class BusinessDays:
    """:func:`business_day` of UTC timestamps, with the time-zone look-up done once per 15-minute UTC bucket.

    Args:
        zone: the zone of the local day.
        calendar: as in :func:`business_day` (``None``: the business day is the local day, ``cutoff`` unused).
        cutoff: as in :func:`business_day`.

    When the zone's offset is the same at both ends of a bucket and no local midnight falls inside it, every instant
    of the bucket has the same local day, and, when the cutoff does not fall inside it either, the same business day;
    other buckets (and an aware ``cutoff``) take :func:`business_day` for each timestamp. The result is
    :func:`business_day`'s exactly.
    """

    BUCKET_S = 900

    def __init__(self, zone: tzinfo, calendar: BusinessCalendar | None = None, cutoff: time | None = None) -> None:
        self.zone, self.calendar, self.cutoff = zone, calendar, cutoff
        self._cutoff_s = None if cutoff is None or calendar is None else \
            cutoff.hour * 3600 + cutoff.minute * 60 + cutoff.second + cutoff.microsecond / 1e6
        self._cached = cutoff is None or cutoff.tzinfo is None
        self._bucket: tuple[int, date, date] | None = None  # (bucket, local day, business day) of the last one

    def __call__(self, timestamp: datetime) -> tuple[date, date]:
        """(local calendar day, business day) of the aware ``timestamp``."""
        bucket = int(timestamp.timestamp() // self.BUCKET_S)
        cached = self._bucket
        if cached is not None and cached[0] == bucket:
            return cached[1], cached[2]
        if self._cached:
            start = datetime.fromtimestamp(bucket * self.BUCKET_S, self.zone)
            end = datetime.fromtimestamp((bucket + 1) * self.BUCKET_S, self.zone)
            second_of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
            if start.utcoffset() == end.utcoffset() and second_of_day + self.BUCKET_S <= 86_400:
                at = self._cutoff_s  # the bucket's local times are [second_of_day, second_of_day + BUCKET_S)
                after_cutoff = at is not None and at <= second_of_day
                if at is None or after_cutoff or at >= second_of_day + self.BUCKET_S:
                    day = start.date()
                    business_date = day if self.calendar is None else \
                        self.calendar.roll_forward(day + timedelta(days=1) if after_cutoff else day)
                    self._bucket = (bucket, day, business_date)
                    return day, business_date
        return business_day(timestamp, self.zone, self.calendar, self.cutoff)


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


class DayNumber:
    """Business-day number of UTC epoch seconds: days since 1970-01-01 of :func:`business_day`'s business day.

    Args:
        timezone: IANA zone of the day (``"UTC"``: the UTC day).
        calendar: ISO 3166 country whose working days apply (weekends and holidays roll forward, see
            :func:`business_day`); ``None``: every calendar day is a day of its own.
        cutoff: local ``"HH:MM"`` after which a time counts on the next day (only with ``calendar``).

    Raises:
        ValueError: an unknown zone or country, a badly formed cutoff, or a cutoff without a calendar.

    Results are memoised per UTC minute (zone offsets, midnights and ``"HH:MM"`` cut-offs all fall on whole minutes).
    """

    def __init__(self, timezone: str = "UTC", calendar: str | None = None, cutoff: str | None = None) -> None:
        try:
            self.zone = ZoneInfo(timezone)
        except Exception as exc:  # ZoneInfoNotFoundError, ValueError, TypeError
            raise ValueError(f"timezone={timezone!r} is not an IANA time zone such as 'Asia/Shanghai'") from exc
        try:
            self.calendar = calendar_for(calendar) if calendar is not None else None
        except (NotImplementedError, KeyError, AttributeError) as exc:
            raise ValueError(f"calendar={calendar!r} is not a country code known to the holidays package") from exc
        if cutoff is not None and self.calendar is None:
            raise ValueError("cutoff needs a business-day calendar (the US CTR rule); China uses the calendar day")
        try:
            self.cutoff = time.fromisoformat(cutoff) if cutoff is not None else None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cutoff must be a local time 'HH:MM', not {cutoff!r}") from exc
        self._utc = timezone == "UTC" and self.calendar is None
        self._memo: dict[int, int] = {}

    def __call__(self, ts: float) -> int:
        """Day number of ``ts`` (UTC epoch seconds)."""
        if self._utc:
            return int(ts // 86_400)
        minute = int(ts // 60)
        known = self._memo.get(minute)
        if known is None:
            if len(self._memo) > 1 << 16:
                self._memo.clear()
            when = datetime.fromtimestamp(minute * 60, UTC)
            known = self._memo[minute] = business_day(when, self.zone, self.calendar, self.cutoff)[1].toordinal() \
                - _EPOCH_ORDINAL
        return known
