"""Review periods as ``sectorflow aml cases --period`` takes them: a month ``2023-01``, an ISO week ``2023-W05`` or a
day ``2023-01-15`` (the forms :meth:`sectorflow_aml.cases.CaseBook.period_of` writes), checked before a results file is
read, and the message for a period in which the results have no case."""

from __future__ import annotations

import re
from datetime import date, datetime

from sectorflow import ConfigError


def period_kind(period: str) -> str:
    """``"month"``, ``"week"`` or ``"day"``: the kind of review period ``period`` names (``2023-01``, ``2023-W05``,
    ``2023-01-15``).

    Raises:
        ConfigError: anything else, or a date that does not exist (``2023-13``, ``2023-W54``, ``2023-02-30``).
    """
    text = period.strip() if isinstance(period, str) else ""
    try:
        if re.fullmatch(r"\d{4}-\d{2}", text):
            datetime.strptime(text, "%Y-%m")
            return "month"
        if re.fullmatch(r"\d{4}-W\d{2}", text):
            date.fromisocalendar(int(text[:4]), int(text[6:]), 1)
            return "week"
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            date.fromisoformat(text)
            return "day"
    except ValueError:
        raise ConfigError(f"--period {period!r} is no such date: give a month 2023-01 (01 to 12), an ISO week "
                          "2023-W05 (01 to 52 or 53) or a day 2023-01-15.") from None
    raise ConfigError(f"--period {period!r}: give a month 2023-01, an ISO week 2023-W05 or a day 2023-01-15, as "
                      "`sectorflow aml cases` lists them.")


def no_such_period(period: str, kind: str | None, seen: set[str]) -> str:
    """The message for a ``period`` in which results holding the periods ``seen`` have no case."""
    kinds = sorted({period_kind(p) for p in seen})
    listed = sorted(seen)
    shown = ", ".join(listed) if len(listed) <= 12 else f"{', '.join(listed[:6])}, ..., {', '.join(listed[-3:])}"
    if kind not in kinds:
        return (f"--period {period}: the results' cases are by {' and '.join(kinds)} (the run's case_period), not "
                f"by {kind}; their periods: {shown}.")
    return f"--period {period}: no case in that {kind}; the results' periods: {shown}."
