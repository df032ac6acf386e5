"""Analysts' decisions on cases, kept in the state store, with the four-eyes rule for suspicious-transaction reports.

Every decision is one journal row of task :data:`TASK` and the user's tenant in the state store
(:func:`sectorflow.open_state_store`: SQLite by default, PostgreSQL for a ``postgresql://`` URL), appended in one
store transaction and never rewritten: the case's status is the replay of its rows, so a restart (or a second
server process on the same store) sees exactly the decisions made.

Statuses (:data:`STATUSES`): ``new`` (no decision), ``in_review`` (an analyst took the case), ``closed_true_positive``
and ``closed_false_positive`` (closed with a reason), ``escalated`` (the analyst asks for a suspicious-transaction
report, STR), ``str_approved`` (a second person with the approver role approved the STR draft). The maker of an
escalation can never approve it (:class:`FourEyesError`), and only an escalated case can be approved.

Labels (:meth:`DecisionBook.labels`, ``sectorflow aml dispositions export``): the latest disposition of each decided
case, as ``case_id,account_id,period,disposition,reason,decided_by,decided_at`` with ``disposition`` one of
:data:`LABEL_DISPOSITIONS` (the labels format that ``sectorflow aml train --labels`` reads).
"""

from __future__ import annotations

import csv
import gzip
import os
import threading
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sectorflow import InvalidInputError, StateStore

TASK = "aml.dispositions"
"""The state store's task name for the decisions (apart from the pipeline's own ``aml`` state)."""
STATUSES = ("new", "in_review", "closed_true_positive", "closed_false_positive", "escalated", "str_approved")
ACTIONS = ("assign", "close_true_positive", "close_false_positive", "escalate", "approve")
LABEL_DISPOSITIONS = ("true_positive", "false_positive", "escalated", "str_approved")
LABEL_HEADER = ("case_id", "account_id", "period", "disposition", "reason", "decided_by", "decided_at")
MAX_REASON = 2000
_STATUS_OF = {"assign": "in_review", "close_true_positive": "closed_true_positive",
              "close_false_positive": "closed_false_positive", "escalate": "escalated", "approve": "str_approved"}
_LABEL_OF = {"closed_true_positive": "true_positive", "closed_false_positive": "false_positive",
             "escalated": "escalated", "str_approved": "str_approved"}


class DecisionError(InvalidInputError):
    """A decision that cannot be taken: unknown action, missing or too long reason, a case in the wrong status."""


class FourEyesError(DecisionError):
    """The approver is the maker of the escalation (four eyes: a second person must approve)."""


@dataclass(frozen=True)
class Decision:
    """One journal row: ``action`` on ``case_id`` (account, period) by ``actor`` at ``at`` (UTC) with ``reason``."""

    case_id: str
    account_id: str
    period: str
    action: str
    actor: str
    at: str
    reason: str = ""

    def row(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "account_id": self.account_id, "period": self.period, "action": self.action,
                "actor": self.actor, "at": self.at, "reason": self.reason}


@dataclass
class CaseStatus:
    """A case's status after its decisions: ``status`` (:data:`STATUSES`), ``assignee``, the maker of the
    escalation (``escalated_by``), the approver, and every decision in order (``history``)."""

    status: str = "new"
    assignee: str | None = None
    escalated_by: str | None = None
    approved_by: str | None = None
    history: tuple[Decision, ...] = ()

    def apply(self, d: Decision) -> None:
        self.status = _STATUS_OF[d.action]
        if d.action == "assign" or self.assignee is None:
            self.assignee = d.actor
        if d.action == "escalate":
            self.escalated_by = d.actor
        if d.action == "approve":
            self.approved_by = d.actor
        self.history = (*self.history, d)


def clean_reason(reason: str | None, required: bool) -> str:
    """The reason as stored: stripped; control and bidi characters refused (they would reorder what a reviewer
    reads), at most :data:`MAX_REASON` characters. Raises :class:`DecisionError`."""
    text = (reason or "").strip()
    if required and not text:
        raise DecisionError("Give a reason for this decision (what the review found).")
    if len(text) > MAX_REASON:
        raise DecisionError(f"The reason has {len(text)} characters; keep it under {MAX_REASON}.")
    bad = [c for c in text if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"]
    if bad:
        raise DecisionError(f"The reason holds control or bidi characters ({', '.join(f'U+{ord(c):04X}' for c in bad[:3])}"
                            f"); remove them.")
    return text


class DecisionBook:
    """The decisions of one tenant (see the module docstring).

    Args:
        store: the state store.
        tenant: the tenant (``"default"`` for keys without one).
    """

    def __init__(self, store: StateStore, tenant: str) -> None:
        self.store, self.tenant = store, tenant
        self._lock = threading.Lock()
        self._seq = -1
        self._status: dict[str, CaseStatus] = {}

    def statuses(self) -> dict[str, CaseStatus]:
        """``{case_id: CaseStatus}`` of every decided case (reloaded when another writer added rows)."""
        with self._lock:
            seq = self.store.last_seq(TASK, self.tenant)
            if seq != self._seq:
                _, _, journal = self.store.load(TASK, self.tenant)
                status: dict[str, CaseStatus] = {}
                for _, items in journal:
                    for row in items:
                        d = Decision(**row)
                        status.setdefault(d.case_id, CaseStatus()).apply(d)
                self._status, self._seq = status, seq
            return self._status

    def status(self, case_id: str) -> CaseStatus:
        return self.statuses().get(case_id, CaseStatus())

    def decide(self, case_id: str, account_id: str, period: str, action: str, actor: str, reason: str | None = None,
               now: datetime | None = None, on_commit: Callable[[Decision], None] | None = None) -> Decision:
        """Record ``action`` (:data:`ACTIONS`) by ``actor`` and return the decision. ``on_commit(decision)`` runs
        after the checks, inside the store transaction (the audit record): when it raises, nothing is stored.

        Raises:
            DecisionError: unknown action, a missing reason (closing and escalating need one), a closed case taken
                again, an approval of a case that is not escalated.
            FourEyesError: ``actor`` escalated the case and now approves it.
        """
        if action not in ACTIONS:
            raise DecisionError(f"Unknown action {action!r}; one of {', '.join(ACTIONS)}.")
        text = clean_reason(reason, required=action.startswith(("close", "escalate")))
        with self.store.transaction():  # the status check and the row in one writer's turn: no double approval
            self._seq = -1
            current = self.status(case_id)
            if action == "approve":
                if current.status != "escalated":
                    raise DecisionError(f"Case {case_id} is {current.status}: only an escalated case can be approved.")
                if current.escalated_by == actor:
                    raise FourEyesError(f"{actor} escalated case {case_id}: a second person with the approver role "
                                        f"must approve its suspicious-transaction report (four eyes).")
            elif current.status == "str_approved":
                raise DecisionError(f"Case {case_id}'s suspicious-transaction report is approved; it cannot change.")
            at = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds")
            d = Decision(case_id, account_id, period, action, actor, at, text)
            if on_commit is not None:
                on_commit(d)
            self.store.append(TASK, self.tenant, [d.row()])
        self._seq = -1
        return d

    def labels(self) -> list[dict[str, str]]:
        """One row per decided case (closed, escalated or approved; taken-only cases are left out), by period then
        case id: the columns of :data:`LABEL_HEADER`; the reason and time of the decision that set the status."""
        rows = []
        for cid, st in self.statuses().items():
            label = _LABEL_OF.get(st.status)
            if label is None:
                continue
            last = st.history[-1]
            reason = next((d.reason for d in reversed(st.history) if d.reason), "")
            rows.append({"case_id": cid, "account_id": last.account_id, "period": last.period, "disposition": label,
                         "reason": reason, "decided_by": last.actor, "decided_at": last.at})
        return sorted(rows, key=lambda r: (r["period"], r["case_id"]))


def write_labels(rows: Iterable[dict[str, str]], out: str | Path) -> int:
    """Write label rows as CSV (header :data:`LABEL_HEADER`, UTF-8; gzip-compressed when the name ends in ``.gz``,
    as ``read_labels`` reads such a name); returns the rows written. Written to a temporary file next to ``out`` and
    renamed into place, so a failure leaves ``out`` as it was."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    temp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        opened = gzip.open(temp, "wt", newline="", encoding="utf-8") if path.name.lower().endswith(".gz") \
            else temp.open("w", newline="", encoding="utf-8")
        with opened as handle:
            writer = csv.DictWriter(handle, fieldnames=LABEL_HEADER, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
                n += 1
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return n
