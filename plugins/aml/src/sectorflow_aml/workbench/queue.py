"""The queue: a period's cases with their decision status, filtered and sorted for the analyst.

Measured by ``benchmarks/aml_workbench.py`` (10,000 cases: filter, sort and render the page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..cases import Case
from .decisions import CaseStatus

SORTS = ("score", "rank", "amount", "transactions", "account", "status")
_EMPTY = CaseStatus()


@dataclass(frozen=True)
class QueueRow:
    """One line of the queue: the case and its status (``new`` when nobody decided yet)."""

    case: Case
    status: CaseStatus

    @property
    def amount(self) -> float:
        """Money moved in the period (received plus paid, base currency)."""
        return self.case.amount_in + self.case.amount_out


def queue_rows(cases: Sequence[Case], statuses: Mapping[str, CaseStatus], *, period: str | None,
               status: str | None = None, typology: str | None = None, text: str | None = None,
               sort: str = "score", descending: bool = True, within_only: bool = False) -> list[QueueRow]:
    """The cases of ``period`` (every period when ``None``) that pass the filters, sorted.

    Args:
        status: only cases in this status (see :data:`~.decisions.STATUSES`).
        typology: only cases with this typology among their hits.
        text: only cases whose account or case id contains it (case-insensitive).
        sort: one of :data:`SORTS` (an unknown one sorts by score); ties by rank.
        descending: highest first.
        within_only: only cases within the alert budget.
    """
    needle = text.lower() if text else None
    rows = []
    for c in cases:
        if period is not None and c.period != period:
            continue
        if within_only and not c.within_budget:
            continue
        if typology is not None and typology not in c.typologies:
            continue
        if needle is not None and needle not in c.account.lower() and needle not in c.case_id:
            continue
        st = statuses.get(c.case_id, _EMPTY)
        if status is not None and st.status != status:
            continue
        rows.append(QueueRow(c, st))
    key = {"rank": lambda r: -r.case.rank, "amount": lambda r: r.amount,
           "transactions": lambda r: r.case.transactions, "account": lambda r: r.case.account,
           "status": lambda r: r.status.status}.get(sort, lambda r: r.case.score)
    rows.sort(key=lambda r: r.case.rank)  # stable sorts: ties keep rank order
    rows.sort(key=key, reverse=descending)
    return rows
