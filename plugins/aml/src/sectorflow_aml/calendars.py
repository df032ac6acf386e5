"""Business days and report due dates for China and the United States.

Holidays come from the ``holidays`` package: ``holidays.China`` includes the weekend days that are made working days
(调休), ``holidays.US`` the federal holidays (the Federal Reserve's bank holidays follow them closely but not
exactly; pass your own calendar if it matters). Due dates:

- China large-value report: within 5 working days of the transaction (PBOC Order 2016 No. 3; UNVERIFIED, see
  ``/work/shared/notes/domain-facts.md`` section 1).
- China suspicious report: at most 5 working days after the institution's internal procedure confirms it (Art. 15;
  UNVERIFIED).
- US CTR: within 15 days after the transaction (31 CFR 1010.306(a)(1); UNVERIFIED).
- US SAR: within 30 calendar days after initial detection (31 CFR 1020.320(b)(3); UNVERIFIED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import date, timedelta
from typing import Any

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


def large_value_due(jurisdiction: str, calendar: BusinessCalendar, business_date: date) -> date:
    """Due date of a CN large-value report or a US CTR for transactions of ``business_date``."""
    if jurisdiction == "CN":
        return calendar.add_working_days(business_date, CN_LARGE_VALUE_WORKING_DAYS)
    return business_date + timedelta(days=US_CTR_DAYS)


def suspicious_due(jurisdiction: str, calendar: BusinessCalendar, start: date) -> date:
    """Due date of a suspicious report counted from ``start`` (CN: confirmation date; US: detection date)."""
    if jurisdiction == "CN":
        return calendar.add_working_days(start, CN_SUSPICIOUS_WORKING_DAYS)
    return start + timedelta(days=US_SAR_DAYS)
