"""Cases: one per account and review period, ranked by one score, under an alert budget.

A rule hit is evidence, not a task for an analyst: banks review *cases* (an account over a review period, with every
typology hit, model score, counterparty, amount and transaction that concerns it) ranked by risk, and work down the
list as far as their staff allow (the *alert budget*). Rule systems that alert on every hit bury analysts under 85-95 %
false positives (industry figure quoted in the issue; not verified here).

:class:`CaseBook` (held by :class:`~sectorflow_aml.pipeline.AMLPipeline` as ``case_book``) is updated in arrival
order in ``postprocess``, so one-at-a-time and batch calls decide alike. Each result carries the updates it made
(``TransactionAssessment.cases``: a list of :class:`CaseUpdate`), so :func:`read_cases` (``sectorflow aml cases
--results FILE``) rebuilds the case list from a results file by taking each case's latest update: the score is never
computed a second time.

What a case holds (account ``A``, period ``P``):

- the transactions of ``A`` in ``P`` after the case opened (``A`` the sender or receiver; the cash side of a cash
  deposit or withdrawal, the till or walk-in id the bank books it against, is no party and gets no case), and the
  transactions of every alert whose *subject* is ``A`` (:data:`SUBJECTS`);
- the typologies and alert ids of those alerts, their scores (strongest per typology), the counterparties;
- ``model_score``: what the account-level model says of ``A`` within ``P``, from the result field
  ``account_scores`` (``{account: calibrated risk in [0, 1]}`` after each transaction, written by the account model;
  ``None`` while no such model runs), read one of two ways (option ``case_model_score``, :data:`MODEL_SCORES`):
  ``"max"``, the highest of ``A``'s scores within ``P`` (the default with a bundle trained on daily snapshots, as the
  shipped one), or ``"close"``, ``A``'s score after its **latest** transaction within ``P`` (the default with a
  bundle trained on month-end rows, ``sectorflow aml train --points month_end``): once ``P`` is over this is the
  **period-close score** (for a month, the month-close score, the row such a model is trained and calibrated on);
  while ``P`` is open it is the latest, so it can go down as well as up (docs/aml.md, "The case score: highest or
  month close");
- ``score`` = :func:`case_score` ``(model_score, evidence_score)``: the one place the two are combined;
- graph evidence (:mod:`sectorflow_aml.case_graph`): ``counterparty_score`` (the highest account-model score among
  ``A``'s counterparties in ``P``, floored to a tenth), ``risky_counterparties`` (those scoring at least 0.5) and
  ``counterparties_in_period``. When a counterparty's period score crosses a tenth, the open cases of its
  counterparties get an update (no transaction added), so the evidence is exact at every update.

When a case opens: an alert names ``A`` as its subject, or the account model scores ``A`` at least ``min_model_score``
(option ``case_min_model_score``, default 0.05, the project's choice: accounts below it would rank under every case
the budget can reach). Without the account model, only typology hits open cases (evidence-only score).

Calibration: ``evidence_score`` is a noisy-OR of the strongest alert score per typology, ``1 - prod(1 - s_t)``; the
rules' alert scores are the project's choices (docs/aml-rules.md), not probabilities, so the evidence-only score ranks
but is not calibrated (docs/aml-rules.md, "Cases", gives the precision per score band measured on AMLGentex dev_s101).
The account model's score is calibrated by its trainer (Platt scaling on held-out accounts' monthly maxima, see its
manifest), so with a model :func:`case_score` is that score, and the typology hits stay in the case as its evidence
(``typologies``, ``alert_ids``, ``evidence_score``) without moving its rank. Measured on AMLGentex dev_s303 (never
trained on; shipped bundle, 1 % budget, 160 cases in 4 months): ranking by the model score alone gives precision 1.00
within the budget, the noisy-OR ``1 - (1 - m)(1 - e)`` of model and evidence 0.58 (rule hits on look-alike normal
accounts pushed them to the top, many tied at 1.0).

Mandatory scenarios: structuring to evade the currency transaction report is a scenario a bank must report on its
own: 31 CFR 1010.314 prohibits it and 1010.100(xx) defines it (both V~ in ../shared/notes/domain-facts.md); the duty
to file a SAR on transactions "designed to evade" BSA requirements is 31 CFR 1020.320(a)(2)(ii) (U: not read here).
What it evades is a report of *currency* (cash) transactions (31 CFR 1010.311; PBOC Order 2016 No. 3 Art. 5's RMB
50,000 is for cash; transfers report at other levels), so a case is ``mandatory`` when a ``structuring`` alert (option
``case_mandatory``) **holds a cash transaction** (channel ``cash_deposit`` or ``cash_withdrawal``; the pipeline
tells the book which alerts do, :meth:`CaseBook.update` ``cash_alerts``). A structuring alert made of transfers
alone (the rule's funnel variant counts transfers just under the cash threshold too: client companies paying an
employer 40,000-50,000 CNY on a generated everyday bank) stays evidence in its case, ranked by the score like any
other. Mandatory cases rank before all others in their period and are within the budget whatever their rank: they
take the budget's first places, so a period holds ``max(budget size, mandatory cases)`` cases within it. Regulatory
report drafts (large-value, CTR, suspicious) stay on the results, unchanged.

Alert budget (option ``alert_budget``; :class:`AlertBudget`): a number of cases per period (``25``), a share of the
period's active accounts (``0.01``, the default: 1 %; ``"2%"``; rounded **down**, so never more than the share, but at
least one case in a period with an active account: under 100 active accounts that one case is more than 1 %), or a
score threshold (``"score>=0.7"``). Every update and case says which budget, its rank in the period (1 = first:
mandatory cases, then the highest score; ties by account id), the budget's size and whether it is within. A live update's rank is the rank when that transaction arrived; :func:`read_cases` and
:meth:`CaseBook.cases` re-rank the final scores with the same key.

Memory: the book keeps the open periods only: the latest period seen and the one before it (late transactions of the
previous period still join their case). When a transaction of a later period arrives, older periods are pruned: their
cases were emitted on the results already. A transaction of a pruned period updates no case (its result's ``cases``
is empty). The set of active accounts of each open period is kept (one id each); a case keeps at most
``MAX_CASE_TRANSACTIONS`` transaction ids (later ones are counted in ``transactions``, not listed).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from sectorflow import ConfigError, InvalidInputError, open_text

from .case_budget import AlertBudget  # re-exported: sectorflow_aml.cases.AlertBudget
from .case_graph import PeriodGraph
from .periods import no_such_period, period_kind
from .schema import Alert, CaseUpdate, Channel

PERIODS = ("month", "week", "day")
"""Review periods (option ``case_period``), in the bank's time zone (the report engine's ``report_timezone``)."""

SUBJECTS: dict[str, tuple[int, ...] | None] = {"cycle": None, "scatter_gather": (0, -1)}
"""Which of an alert's ``accounts`` are its subjects (get the evidence in their case): every account of a cycle
(``None``), both ends of a scatter-gather; the first account (the hub or the customer) of any other typology."""

DEFAULT_MANDATORY = ("structuring",)
"""Typologies whose cases are within the budget on their own (see the module docstring for the sources)."""

MAX_CASE_TRANSACTIONS = 2000
"""Transaction ids a case lists at most."""

DEFAULT_MIN_MODEL_SCORE = 0.05

OPTIONS: dict[str, str] = {
    "case_period": "review period of a case, in the report time zone: month (default), week or day",
    "alert_budget": "cases per period worth an analyst's review: a count (25), a share of the period's active "
                    "accounts (0.01, the default; or '1%'), or a score threshold ('score>=0.7')",
    "case_min_model_score": "account-model score at or above which a case opens without a typology hit (default 0.05)",
    "case_mandatory": "typologies whose cases are always within the budget (default ['structuring'])",
    "case_model_score": "how a case reads the account model's scores in its period: max (the highest; default with a "
                        "bundle trained on daily snapshots) or close (the latest, at the period's close its "
                        "period-close score; default with a bundle trained on month-end rows)",
}

MODEL_SCORES = ("max", "close")
"""Values of option ``case_model_score`` (the module docstring, ``model_score``)."""


def case_score(model_score: float | None, evidence_score: float) -> float:
    """The case's score in [0, 1] from the account model's score (``None`` when no account model runs) and the
    typology evidence (:func:`evidence_score`): the account model's calibrated score when there is one, else the
    evidence alone (see the module docstring, "Calibration"). The one place the two are combined."""
    if model_score is None:
        return evidence_score
    return model_score


def evidence_score(strongest: Mapping[str, float]) -> float:
    """Noisy-OR of the strongest alert score per typology (``{typology: score}``): ``1 - prod(1 - s)``; 0 when
    empty. Several hits of one typology count once (the strongest)."""
    keep = 1.0
    for s in strongest.values():
        keep *= 1.0 - s
    return 1.0 - keep


class Case(BaseModel):
    """A case (see the module docstring): what :func:`read_cases`, :meth:`CaseBook.cases` and ``sectorflow aml cases
    --json`` return."""

    case_id: str
    account: str
    period: str
    score: float = Field(ge=0, le=1)
    model_score: float | None = None
    evidence_score: float = Field(ge=0, le=1)
    rank: int = Field(ge=1, description="Rank in the period: mandatory cases first, then by final score (1 = first; "
                                        "ties by account id).")
    cases_in_period: int
    active_accounts: int
    budget: str
    budget_size: int | None = Field(description="Cases the budget allows in the period (None: a score threshold).")
    within_budget: bool
    mandatory: bool
    typologies: list[str]
    alert_ids: list[str]
    counterparties: list[str]
    transaction_ids: list[str]
    transactions: int
    amount_in: float
    amount_out: float
    updated_at: datetime
    counterparty_score: float | None = None
    risky_counterparties: int = 0
    counterparties_in_period: int = 0


def case_id(account: str, period: str) -> str:
    """``case-<period>-<first 12 hex of SHA-256 of 'account|period'>``: stable across runs."""
    return f"case-{period}-{hashlib.sha256(f'{account}|{period}'.encode()).hexdigest()[:12]}"


def subjects(alert: Alert) -> list[str]:
    """The accounts whose case gets ``alert`` (:data:`SUBJECTS`)."""
    where = SUBJECTS.get(alert.typology, (0,))
    if where is None:
        return list(alert.accounts)
    return list(dict.fromkeys(alert.accounts[i] for i in where if alert.accounts))


_UPDATE_FIELDS = frozenset(CaseUpdate.model_fields)
_new = object.__new__
_set = object.__setattr__


def _case_update(values: dict[str, Any]) -> CaseUpdate:
    """A :class:`CaseUpdate` of ``values`` (every field, already of its type), built as ``model_construct`` builds it
    without its per-call cost (about a fifth of a transaction's time when every transaction updates two cases)."""
    out = _new(CaseUpdate)
    _set(out, "__dict__", values)
    _set(out, "__pydantic_fields_set__", set(_UPDATE_FIELDS))
    _set(out, "__pydantic_extra__", None)
    _set(out, "__pydantic_private__", None)
    return out


class _Open:
    """A case of an open period (the book's own state)."""

    __slots__ = ("account", "alerts", "amount_in", "amount_out", "case_id", "counterparties", "key", "mandatory",
                 "model", "period", "score", "strongest", "tids", "transactions", "updated")

    def __init__(self, account: str, period: str) -> None:
        self.account, self.period, self.case_id = account, period, case_id(account, period)
        self.model: float | None = None
        self.strongest: dict[str, float] = {}
        self.alerts: dict[str, None] = {}
        self.counterparties: dict[str, None] = {}
        self.tids: dict[str, None] = {}
        self.transactions = 0
        self.amount_in = self.amount_out = 0.0
        self.mandatory = False
        self.score = 0.0
        self.key: tuple[bool, float, str] | None = None
        self.updated = 0.0

    def state(self) -> dict[str, Any]:
        return {"account": self.account, "period": self.period, "model": self.model, "strongest": self.strongest,
                "alerts": list(self.alerts), "counterparties": list(self.counterparties), "tids": list(self.tids),
                "transactions": self.transactions, "amount_in": self.amount_in, "amount_out": self.amount_out,
                "mandatory": self.mandatory, "updated": self.updated}


class CaseBook:
    """The open cases, updated in arrival order (see the module docstring).

    Args:
        zone: the bank's time zone (periods are calendar months, ISO weeks or days there).
        period: ``"month"``, ``"week"`` or ``"day"``.
        budget: an :class:`AlertBudget` or what :meth:`AlertBudget.parse` takes.
        min_model_score: account-model score that opens a case without a typology hit.
        mandatory: typologies whose cases are always within the budget.
        model_score: ``"max"`` or ``"close"`` (:data:`MODEL_SCORES`).

    Raises:
        ConfigError: an unknown period, budget or score.
    """

    def __init__(self, zone: tzinfo = timezone.utc, period: str = "month", budget: Any = None,
                 min_model_score: float = DEFAULT_MIN_MODEL_SCORE, mandatory: Iterable[str] = DEFAULT_MANDATORY,
                 model_score: str = "max") -> None:
        if period not in PERIODS:
            raise ConfigError(f"case_period={period!r}: give one of {', '.join(PERIODS)}.")
        if isinstance(min_model_score, bool) or not isinstance(min_model_score, (int, float)) \
                or not 0 <= min_model_score <= 1:
            raise ConfigError(f"case_min_model_score={min_model_score!r}: give a number from 0 to 1.")
        if isinstance(mandatory, str) or not all(isinstance(t, str) for t in mandatory):
            raise ConfigError(f"case_mandatory={mandatory!r}: give a list of typology names.")
        if model_score not in MODEL_SCORES:
            raise ConfigError(f"case_model_score={model_score!r}: give {' or '.join(MODEL_SCORES)}.")
        self.model_score = model_score
        self.model_close = model_score == "close"
        self.zone, self.period_kind = zone, period
        self.budget = AlertBudget.parse(budget)
        self.min_model_score = float(min_model_score)
        self.mandatory = frozenset(mandatory)
        self.reset()

    @classmethod
    def from_options(cls, options: Mapping[str, Any], zone: tzinfo, model_score: str = "max") -> CaseBook:
        """The book for the pipeline's options (:data:`OPTIONS`); ``model_score``: the default of
        ``case_model_score`` (the pipeline's: ``"close"`` for a bundle trained on month-end rows)."""
        return cls(zone, options.get("case_period", "month"), options.get("alert_budget"),
                   options.get("case_min_model_score", DEFAULT_MIN_MODEL_SCORE),
                   options.get("case_mandatory", DEFAULT_MANDATORY), options.get("case_model_score", model_score))

    def spawn(self) -> CaseBook:
        """An empty book with this one's settings (another tenant's: ``AMLPipeline.spawn``)."""
        return CaseBook(self.zone, self.period_kind, self.budget, self.min_model_score, sorted(self.mandatory),
                        self.model_score)

    def reset(self) -> None:
        """Forget every case and period."""
        self._open: dict[tuple[str, str], _Open] = {}
        self._ranks: dict[str, list[tuple[bool, float, str]]] = {}  # period -> sorted (not mandatory, -score, account)
        self._active: dict[str, set[str]] = {}
        self._graphs: dict[str, PeriodGraph] = {}
        self._bounds = (math.inf, -math.inf, "")  # the last period looked up: [start, end) POSIX seconds, label

    # --- periods ---------------------------------------------------------------------------------------------

    def period_of(self, when: datetime) -> str:
        """The period label of ``when`` (aware) in the book's zone."""
        ts = when.timestamp()
        start, end, label = self._bounds
        if start <= ts < end:
            return label
        local = when.astimezone(self.zone)
        if self.period_kind == "month":
            first = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0, fold=0)
            nxt = (first + timedelta(days=32)).replace(day=1)
            label = f"{local.year:04d}-{local.month:02d}"
        elif self.period_kind == "week":
            day = local.date() - timedelta(days=local.weekday())
            first = datetime(day.year, day.month, day.day, tzinfo=self.zone)
            nxt_day = day + timedelta(days=7)
            nxt = datetime(nxt_day.year, nxt_day.month, nxt_day.day, tzinfo=self.zone)
            iso = local.isocalendar()
            label = f"{iso[0]:04d}-W{iso[1]:02d}"
        else:
            d = local.date()
            first = datetime(d.year, d.month, d.day, tzinfo=self.zone)
            n = d + timedelta(days=1)
            nxt = datetime(n.year, n.month, n.day, tzinfo=self.zone)
            label = d.isoformat()
        self._bounds = (first.timestamp(), nxt.timestamp(), label)
        return label

    def _admit(self, period: str) -> bool:
        """Open ``period`` (pruning all but the one before it) unless it is older than the open ones."""
        if period in self._active:
            return True
        opened = sorted(self._active)
        if opened and period < opened[0]:
            return False
        self._active[period] = set()
        self._ranks[period] = []
        self._graphs[period] = PeriodGraph()
        for old in sorted(self._active)[:-2]:  # keep the latest two periods
            del self._active[old]
            del self._ranks[old]
            del self._graphs[old]
            for key in [k for k in self._open if k[0] == old]:
                del self._open[key]
        return period in self._active

    # --- updates ---------------------------------------------------------------------------------------------

    def update(self, txn: Any, amount: float, alerts: Iterable[Alert],
               account_scores: Mapping[str, float] | None = None,
               cash_alerts: Collection[str] | None = None) -> list[CaseUpdate]:
        """Update the cases one transaction touches; returns their :class:`CaseUpdate` entries (empty for most), in
        a new list each call (a result keeps it as its ``cases``).

        Args:
            txn: the :class:`~sectorflow_aml.schema.Transaction` (not a repeated id: those update nothing).
            amount: its amount in the window's base currency.
            alerts: the alerts it completed (typology and model alerts).
            account_scores: the account model's scores after it (``None`` without one).
            cash_alerts: ids of those alerts holding a cash transaction (what makes a structuring alert mandatory,
                see the module docstring); ``None``: judged by ``txn``'s own channel (the alert's last transaction).
        """
        period = self.period_of(txn.timestamp)
        if period not in self._active and not self._admit(period):
            return []
        channel = txn.channel
        src, dst = txn.sender_account, txn.receiver_account
        active = self._active[period]
        payer = channel != Channel.cash_deposit  # the sender of a cash deposit is the till or walk-in id
        payee = channel != Channel.cash_withdrawal
        if payer:
            active.add(src)
        if payee:
            active.add(dst)
        open_ = self._open
        graph = self._graphs[period]
        touched: list[str] = []
        if payer and payee and src != dst:
            linked = graph.links.get(src)
            if linked is None or dst not in linked:  # a pair already linked in the period changes nothing
                touched = graph.link(src, dst)
        if account_scores:
            best = graph.best
            for account, s in account_scores.items():
                old = best.get(account)
                if old is None or not s <= old:  # at or below the period's maximum: graph.score changes nothing
                    touched += graph.score(account, s)
        if touched:
            touched = [a for a in touched if (period, a) in open_]
        if not alerts and not account_scores and not touched and (not payer or (period, src) not in open_) \
                and (not payee or (period, dst) not in open_):
            return []  # most transactions: no evidence, no open case of either party
        parties: dict[str, tuple[str, bool]] = {}  # account -> (counterparty, received)
        if payer:
            parties[src] = (dst, False)
        if payee and dst not in parties:
            parties[dst] = (src, True)
        by_subject: dict[str, list[Alert]] = {}
        for alert in alerts:
            for account in subjects(alert):
                by_subject.setdefault(account, []).append(alert)
        out: list[CaseUpdate] = []
        ts = txn.timestamp.timestamp()
        for account in dict.fromkeys([*parties, *by_subject, *touched]):
            case = self._open.get((period, account))
            model = account_scores.get(account) if account_scores else None
            hits = by_subject.get(account, ())
            if case is None:
                if not hits and (model is None or model < self.min_model_score):
                    continue
                case = self._open[(period, account)] = _Open(account, period)
            added_t: list[str] = []
            added_a: list[str] = []
            added_c: list[str] = []
            party = parties.get(account)
            if party is not None:
                other, received = party
                case.transactions += 1
                if received:
                    case.amount_in += amount
                else:
                    case.amount_out += amount
                self._add(case.tids, txn.transaction_id, added_t, MAX_CASE_TRANSACTIONS)
                if other != account:
                    self._add(case.counterparties, other, added_c)
            for alert in hits:
                if alert.alert_id in case.alerts:
                    continue
                self._add(case.alerts, alert.alert_id, added_a)
                t = alert.typology
                case.strongest[t] = max(case.strongest.get(t, 0.0), alert.score)
                if t in self.mandatory and not case.mandatory:
                    case.mandatory = (alert.alert_id in cash_alerts if cash_alerts is not None
                                      else txn.channel.is_cash)
                for tid in alert.transaction_ids:
                    self._add(case.tids, tid, added_t, MAX_CASE_TRANSACTIONS)
                for other in alert.accounts:
                    if other != account:
                        self._add(case.counterparties, other, added_c)
            if model is not None:
                case.model = model if case.model is None or self.model_close else max(case.model, model)
            case.updated = ts
            ev = evidence_score(case.strongest)
            rank = self._rescore(case, ev)
            n_active = len(active)
            top, risky, n_links = graph.evidence(account)
            out.append(_case_update({
                "case_id": case.case_id, "account": account, "period": period, "score": round(case.score, 6),
                "model_score": None if case.model is None else round(case.model, 6), "evidence_score": round(ev, 6),
                "typologies": list(case.strongest), "mandatory": case.mandatory, "rank": rank,
                "active_accounts": n_active, "budget": self.budget.label(),
                "within_budget": self.budget.within(rank, case.score, n_active, case.mandatory),
                "transactions": case.transactions, "amount_in": round(case.amount_in, 4),
                "amount_out": round(case.amount_out, 4), "transaction_ids": added_t, "alert_ids": added_a,
                "counterparties": added_c, "updated_at": txn.timestamp, "counterparty_score": top,
                "risky_counterparties": risky, "counterparties_in_period": n_links}))
        return out

    @staticmethod
    def _add(seen: dict[str, None], value: str, added: list[str], cap: int | None = None) -> None:
        if value not in seen and (cap is None or len(seen) < cap):
            seen[value] = None
            added.append(value)

    def _rescore(self, case: _Open, evidence: float | None = None) -> int:
        """Recompute ``case.score`` (``evidence``: :func:`evidence_score` of the case, when the caller has it), move
        it in its period's ranking; returns its rank (1 = first). A case whose ranking key is unchanged (most
        updates: no new evidence, no new model score) stays where it is, and its rank is looked up (the same rank
        the move would give)."""
        ranks = self._ranks[case.period]
        case.score = case_score(case.model, evidence_score(case.strongest) if evidence is None else evidence)
        key = (not case.mandatory, -round(case.score, 6), case.account)
        if key == case.key:
            return bisect.bisect_left(ranks, key) + 1
        if case.key is not None:
            del ranks[bisect.bisect_left(ranks, case.key)]
        case.key = key
        i = bisect.bisect_left(ranks, key)
        ranks.insert(i, key)
        return i + 1

    # --- reading -----------------------------------------------------------------------------------------------

    def cases(self, period: str | None = None, everything: bool = False) -> list[Case]:
        """The open periods' cases (or ``period``'s), by period then rank; only those within the budget unless
        ``everything``."""
        out: list[Case] = []
        for p in sorted(self._ranks):
            if period is not None and p != period:
                continue
            n_active = len(self._active[p])
            ranked = self._ranks[p]
            for rank, (_, _, account) in enumerate(ranked, start=1):
                c = self._open[(p, account)]
                case = _case(c.case_id, account, p, c.score, c.model, evidence_score(c.strongest), rank, len(ranked),
                             n_active, self.budget, c.mandatory, list(c.strongest), list(c.alerts),
                             list(c.counterparties), list(c.tids), c.transactions, c.amount_in, c.amount_out,
                             datetime.fromtimestamp(c.updated, tz=timezone.utc), self._graphs[p].evidence(account))
                if everything or case.within_budget:
                    out.append(case)
        return out

    # --- persistence -------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The book as JSON-ready data (str/int/float/bool/None, lists, str-keyed dicts): settings, open periods
        with their active accounts, and every open case. :meth:`load_state_dict` restores it exactly."""
        return {"version": 1, "period": self.period_kind, "budget": self.budget.model_dump(),
                "min_model_score": self.min_model_score, "mandatory": sorted(self.mandatory),
                "model_score": self.model_score, "active": {p: sorted(a) for p, a in self._active.items()},
                "graphs": {p: g.state() for p, g in self._graphs.items()},
                "cases": [c.state() for c in self._open.values()]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` output (the book's zone is the pipeline's, not stored).

        Raises:
            ConfigError: not a case-book state of this version (a damaged state, as the other parts report it).
        """
        try:
            if state.get("version") != 1:
                raise ValueError(f"version {state.get('version')!r}, expected 1")
            self.period_kind = state["period"]
            self.budget = AlertBudget.parse(state["budget"])
            self.min_model_score = float(state["min_model_score"])
            self.mandatory = frozenset(state["mandatory"])
            model_score = state.get("model_score", "max")  # a state written before the option: the highest
            if model_score not in MODEL_SCORES:
                raise ValueError(f"model_score {model_score!r}")
            self.model_score, self.model_close = model_score, model_score == "close"
            self.reset()
            graphs = state.get("graphs", {})  # a state written before the graph evidence has none
            for p, accounts in state["active"].items():
                self._active[p] = set(accounts)
                self._ranks[p] = []
                self._graphs[p] = PeriodGraph.restore(graphs[p]) if p in graphs else PeriodGraph()
            for d in state["cases"]:
                c = _Open(d["account"], d["period"])
                c.model, c.strongest = d["model"], dict(d["strongest"])
                c.alerts, c.counterparties = dict.fromkeys(d["alerts"]), dict.fromkeys(d["counterparties"])
                c.tids, c.transactions = dict.fromkeys(d["tids"]), int(d["transactions"])
                c.amount_in, c.amount_out = float(d["amount_in"]), float(d["amount_out"])
                c.mandatory, c.updated = bool(d["mandatory"]), float(d["updated"])
                self._open[(c.period, c.account)] = c
                self._rescore(c)
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as exc:
            self.reset()
            raise ConfigError(f"The case-book state is damaged ({type(exc).__name__}: {exc}): export it again or reset "
                              "the state (sectorflow aml state reset).") from exc


def _case(cid: str, account: str, period: str, score: float, model: float | None, evidence: float, rank: int,
          n_cases: int, n_active: int, budget: AlertBudget, mandatory: bool, typologies: list[str],
          alert_ids: list[str], counterparties: list[str], tids: list[str], transactions: int, amount_in: float,
          amount_out: float, updated: datetime, graph: tuple[float | None, int, int] = (None, 0, 0)) -> Case:
    return Case(case_id=cid, account=account, period=period, score=round(score, 6),
                model_score=None if model is None else round(model, 6), evidence_score=round(evidence, 6), rank=rank,
                cases_in_period=n_cases, active_accounts=n_active, budget=budget.label(),
                budget_size=budget.size(n_active), within_budget=budget.within(rank, score, n_active, mandatory),
                mandatory=mandatory, typologies=typologies, alert_ids=alert_ids, counterparties=counterparties,
                transaction_ids=tids, transactions=transactions, amount_in=round(amount_in, 4),
                amount_out=round(amount_out, 4), updated_at=updated, counterparty_score=graph[0],
                risky_counterparties=graph[1], counterparties_in_period=graph[2])


def _updates(results: str | Path) -> Iterator[CaseUpdate]:
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip() or '"cases":[]' in line:
                continue
            try:
                entries = [CaseUpdate.model_validate(c) for c in json.loads(line).get("cases", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "cases", "reason": str(exc)}]) from exc
            yield from entries


def read_cases(results: str | Path, period: str | None = None, everything: bool = False,
               alert_budget: Any = None) -> list[Case]:
    """The cases of a ``sectorflow run aml`` results file: each case's latest update (score, typologies, sums), the
    lists of all its updates joined, re-ranked in its period by final score; by period, then rank.

    Args:
        results: JSON lines of ``TransactionAssessment`` (written with the ``cases`` field).
        period: only this period: ``"2023-01"`` (month), ``"2023-W05"`` (ISO week) or ``"2023-01-15"`` (day), of
            the kind the run's ``case_period`` made.
        everything: every case, not only those within the budget.
        alert_budget: re-rank under another budget (default: the run's, as its updates name it).

    Raises:
        ConfigError: the file is missing or the budget is bad; ``period`` is malformed (``2023-13``), or the results
            have cases but none in ``period`` (another kind of period, or a period they do not reach): the message
            names the results' periods. InvalidInputError: a line that is not a result.
    """
    kind = period_kind(period) if period is not None else None  # a malformed period: refused before the read
    latest: dict[str, CaseUpdate] = {}
    lists: dict[str, tuple[dict[str, None], dict[str, None], dict[str, None]]] = {}
    active: dict[str, int] = {}
    seen: set[str] = set()
    for u in _updates(results):
        if period is not None and u.period != period:
            seen.add(u.period)
            continue
        latest[u.case_id] = u
        t, a, c = lists.setdefault(u.case_id, ({}, {}, {}))
        t.update(dict.fromkeys(u.transaction_ids))
        a.update(dict.fromkeys(u.alert_ids))
        c.update(dict.fromkeys(u.counterparties))
        active[u.period] = max(active.get(u.period, 0), u.active_accounts)
    if period is not None and not latest and seen:
        raise ConfigError(no_such_period(period, kind, seen))
    by_period: dict[str, list[CaseUpdate]] = {}
    for u in latest.values():
        by_period.setdefault(u.period, []).append(u)
    out: list[Case] = []
    for p in sorted(by_period):
        ranked = sorted(by_period[p], key=lambda u: (not u.mandatory, -u.score, u.account))
        for rank, u in enumerate(ranked, start=1):
            budget = AlertBudget.parse(alert_budget if alert_budget is not None else _budget_of(u.budget))
            t, a, c = lists[u.case_id]
            case = _case(u.case_id, u.account, p, u.score, u.model_score, u.evidence_score, rank, len(ranked),
                         active[p], budget, u.mandatory, list(u.typologies), list(a), list(c), list(t),
                         u.transactions, u.amount_in, u.amount_out, u.updated_at,
                         (u.counterparty_score, u.risky_counterparties, u.counterparties_in_period))
            if everything or case.within_budget:
                out.append(case)
    return out


def _budget_of(label: str) -> AlertBudget:
    """The budget an update's label names (:meth:`AlertBudget.label`)."""
    kind, _, value = label.partition(":")
    if kind in ("count", "share"):
        return AlertBudget(kind=kind, value=float(value))  # type: ignore[arg-type]
    return AlertBudget.parse(label)


def find_case(results: str | Path, case_id_: str) -> Case:
    """The case ``case_id_`` of ``results`` (within the budget or not).

    Raises:
        ConfigError: no such case (names a few known ids).
    """
    cases = read_cases(results, everything=True)
    for case in cases:
        if case.case_id == case_id_:
            return case
    sample = ", ".join(c.case_id for c in cases[:5]) or "none"
    raise ConfigError(f"No case {case_id_!r} in {results} ({len(cases)} cases; e.g. {sample}). List them with "
                      f"`sectorflow aml cases --results {results} --all`.")
