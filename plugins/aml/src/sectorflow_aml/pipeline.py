"""The ``aml`` pipeline: sliding window -> typology rules + learned scorer -> risk, alerts and report drafts.

For each transaction, in arrival order (:meth:`AMLPipeline.preprocess`):

1. ``window.add(txn)`` (:mod:`sectorflow_aml.window`);
2. every enabled typology rule's ``check(window, edge)`` (:mod:`sectorflow_aml.typologies`);
3. the per-transaction scorer's feature row (:mod:`sectorflow_aml.scorer`), only with ``transaction_model=True``
   or without an account model (``account_model=False``, a bundle that has none): it is not window-exact; cash (``cash_deposit``,
   ``cash_withdrawal``, whether booked on the customer's account alone or against a cash or walk-in account) and
   self-transfers (sender = receiver) update the features' state but are not scored: the model learned transfers
   between two accounts (AMLSim has no cash and 14 self-transfers in 120,000); on a self-transfer every graph
   feature is out of that range (its own receiver, its own last incoming amount), and a bank's shared cash account
   would look like a hub, so a score would be an extrapolation. The rules and the report engine cover cash
   (``model_score`` is ``None``);
4. ``ReportEngine.observe(txn)`` for large-value / currency transaction report drafts (:mod:`sectorflow_aml.reports`).
5. the account model's snapshots (:mod:`sectorflow_aml.account_features`), when the bundle holds an account model:
   the sender's and the receiver's raw window aggregates after the transaction (cash and self-transfers included:
   they are the account's own events). :meth:`forward` turns a batch of them into feature rows in numpy
   (``feature_matrix``) and scores them in one LightGBM call (:mod:`sectorflow_aml.account_scorer`); the result's
   ``account_scores`` maps each of the two accounts to its calibrated risk, and ``model_score`` is the higher of
   the two (by default: the account model gives the model part of ``risk_score``, window-exact; docs/aml.md).

:meth:`forward` scores a batch of feature rows with the Paddle predictor; :meth:`postprocess` combines rule alerts
and the model score into ``risk_score``, the ``flagged`` and ``alert`` flags, typologies, reasons (en and zh, from
both), alerts (a model alert when the model alone crosses its threshold) and report drafts (suspicious transaction
report drafts for alerts scoring at least ``str_threshold``; a ``model_risk`` alert alone drafts none unless
``model_str=True``).

Then, still in arrival order, the case book (:mod:`sectorflow_aml.cases`, ``self.case_book``) takes each
transaction with its alerts (and the account model's ``account_scores`` when a result carries them): one case per
account and review period with one score and its rank under the alert budget; the result's ``cases`` lists the
updates it made (options ``case_period``, ``alert_budget``, ``case_min_model_score``, ``case_mandatory``).

Risk: ``rule_risk = 1 - prod(1 - alert.score)`` over the rule alerts completed by the transaction; the model score
``m`` is rescaled piecewise-linearly so that the bundle's decision threshold ``t`` lands on ``alert_threshold``
(``t``: the account model's threshold of best validation F1, or the per-transaction scorer's; ``m < t``:
``m / t * a``; else ``a + (m - t) / (1 - t) * (1 - a)``); ``risk = 1 - (1 - rule_risk)(1 - model_risk)``.
``flagged`` is ``risk >= alert_threshold`` (the evidence: a rule or the model fired); ``alert`` is true only for a
transaction of a case within the alert budget at that update (:func:`_in_budget`; docs/aml.md, "alert and flagged").

State (window, scorer features, report aggregates, alert cooldowns, open cases) is kept across calls, so feeding
transactions one at a time, in chunks or in one batch gives the same results; :meth:`reset_state` forgets it. The
runtime keeps it per tenant (``TaskSpec.stateful``): each tenant's pipeline is a :meth:`AMLPipeline.spawn` of the
loaded one (shared model, rules and report configuration, its own state), and one tenant's calls run one at a time.
"""

from __future__ import annotations

import copy
import gc
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from sectorflow import ConfigError, Pipeline, gc_frozen

from .account_features import feature_matrix
from .cases import OPTIONS as CASE_OPTIONS
from .cases import CaseBook
from .fx import MissingRateError
from .reports import ReportEngine, read_account_file
from .schema import (INPUT_TIMEZONE_HELP, Alert, CaseUpdate, Reason, ReportDraft, Transaction,
                     TransactionAssessment, transactions_digest)
from .pipeline_state import load_pipeline_state, pipeline_state_dict, refuse_duplicates
from .state import decode_transactions, transaction_row
from .suspicious import suspicious_report
from .typologies import RULES, build_rules
from .typologies.base import alert_id
from .window import TransactionWindow

log = logging.getLogger("sectorflow_aml")

DEFAULT_LOOKBACK_DAYS = 30.0
"""Lookback when no model bundle fixes it (the shipped bundle was trained at 30 days)."""

OPTIONS: dict[str, str] = {
    "lookback_days": "days of transaction history the window keeps (default: the model bundle's, else 30); a "
                     "value other than the bundle's needs model=False",
    "rules": "typology settings: {name: False | True | {param: value}}, names: " + ", ".join(RULES),
    "model": "use the learned risk scorer (default True when a bundle is loaded)",
    "account_model": "compute account_scores with the bundle's account model (default True when the bundle has one); "
                     "with it, model_score and risk_score come from the account model (window-exact); False falls "
                     "back to the per-transaction scorer (not window-exact: it reads account age and lifetime counts)",
    "transaction_model": "also run the per-transaction scorer (bundle model.json) and take model_score from it, as "
                         "before bundle 3 (default False when the account model is on; it is not window-exact)",
    "alert_threshold": "risk score at or above which a transaction is flagged (a rule or model hit; default 0.5)",
    "str_threshold": "alert score at or above which a suspicious transaction report draft is made (default 0.75)",
    "model_str": "let a model_risk alert alone draft a suspicious transaction report (default False: the shipped "
                 "model learned from a simulator and generated banks, so report drafts come from the typology rules; "
                 "set True for a model trained on the bank's own labelled data)",
    "exempt_accounts": "accounts reviewed as legitimate hubs (merchants, payroll, the bank's own cash or settlement "
                       "accounts): a list, {account: reason}, or a file of 'account[,reason]' lines; the hub "
                       "typologies (fan_in, fan_out, gather_scatter, rapid_pass_through, and scatter_gather at either "
                       "end) raise no alert on them; report drafts, the other typologies and the model are unaffected",
    "input_timezone": INPUT_TIMEZONE_HELP,
    "on_duplicate": "a transaction whose id is already in the window (a client's retry after a timeout): 'skip' "
                    "(default: its result carries the reason input.duplicate_id and nothing is counted) or 'refuse' "
                    "(the whole call fails with an InvalidInputError naming the ids, before any state changes); ids "
                    "are remembered while their transaction is in the window (lookback_days of transaction time)",
    **ReportEngine.OPTIONS,
    **CASE_OPTIONS,
}
"""The options ``Taskflow("aml", **options)`` accepts."""


EXEMPT_SUBJECTS: dict[str, tuple[int, ...]] = {
    "fan_in": (0,), "fan_out": (0,), "gather_scatter": (0,), "rapid_pass_through": (0,), "scatter_gather": (0, -1)}
"""Hub typologies the ``exempt_accounts`` option applies to, and where their alerts name the hub in ``accounts``
(each rule lists its subject first; scatter-gather's ends are the payer and the final receiver)."""


def _exempt_accounts(options: dict[str, Any]) -> dict[str, str]:
    """``exempt_accounts`` as ``{account: reason}`` (a list gives reason "exempt"; a path names a text file of
    ``account[,reason]`` lines, read by :func:`~sectorflow_aml.reports.read_account_file`).

    Raises:
        ConfigError: not a list, mapping or readable file of non-empty account ids.
    """
    raw = options.get("exempt_accounts")
    if raw is None:
        return {}
    if isinstance(raw, (str, Path)):
        raw = read_account_file(raw, "exempt_accounts", default="exempt")
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, (list, tuple, set, frozenset)):
        pairs = [(account, "exempt") for account in raw]
    else:
        raise ConfigError(f"exempt_accounts={raw!r}: give a list of account ids, or {{account: reason}}.")
    bad = [a for a, r in pairs if not isinstance(a, str) or not a or not isinstance(r, str)]
    if bad:
        raise ConfigError(f"exempt_accounts: {bad[:3]!r} are not account ids (non-empty strings, reasons strings).")
    return dict(pairs)


def _exempting(check: Any, typology: str, exempt: dict[str, str]) -> Any:
    """``check`` without the alerts whose hub is exempt (see :data:`EXEMPT_SUBJECTS`)."""
    where = EXEMPT_SUBJECTS.get(typology)
    if not exempt or where is None:
        return check

    def checked(window: TransactionWindow, edge: Any) -> list[Alert]:
        hits = check(window, edge)
        if hits:
            hits = [a for a in hits if not any(a.accounts[i] in exempt for i in where)]
        return hits

    return checked


def _fraction(options: dict[str, Any], name: str, default: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"{name}={value!r}: give a number from 0 to 1.")
    return float(value)


_FIELDS_SET = frozenset(TransactionAssessment.model_fields)
_NO_ALERTS: list[Alert] = []
"""The alerts of a transaction that completed none (most): one shared list, never mutated and never handed out."""
def _in_budget(txn: Transaction, cases: Sequence[CaseUpdate]) -> bool:
    """``TransactionAssessment.alert``: whether ``txn`` belongs to one of the ``cases`` it updated (its sender's or
    receiver's case, or one its alerts added it to) that is within the alert budget at this update; a counterparty's
    case that only got new graph evidence does not count."""
    for case in cases:
        if case.within_budget and (case.account == txn.sender_account or case.account == txn.receiver_account
                                   or txn.transaction_id in case.transaction_ids):
            return True
    return False


_new = object.__new__
_set = object.__setattr__


_gc_promoted = 0
"""Objects :func:`_gc_paused` has moved to the oldest generation since the last full collection it ran."""
_gc_heap = 1_000_000
"""Tracked objects after that collection (at least a million): the next one runs once as many have been moved."""
_gc_lock = threading.Lock()
_gc_depth = 0
"""Stages inside :func:`_gc_paused` now (threads of different tenants' pipelines)."""
_gc_was_enabled = False
"""Whether the collector was on when the first of them entered."""
@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one stage's loop; on the way out, move the objects it made straight to
    the oldest generation, then re-enable the collector if it was on.

    The loops allocate many small long-lived objects (edges, account state, report rows). With the collector on,
    its collections rescan them (about half of a batch call); paused and simply re-enabled, the young generations
    still scan each of them twice (a fifth of a CLI run in 1,024-row calls). ``gc.freeze(); gc.unfreeze()`` moves
    every tracked object to the oldest generation in O(1) (CPython splices its lists), so young collections have
    nothing of ours to rescan. Nothing is exempt from collection: once the moved objects outnumber the heap left
    by the previous full collection, a full ``gc.collect()`` runs (so uncollected cyclic garbage, which these loops
    do not make, stays below the live heap); memory freed by reference counting is unaffected.

    A host that keeps objects frozen itself declares it (:func:`sectorflow.gc_frozen_by_host`; ``sectorflow serve``
    does while its models are loaded): the hand-over, whose ``gc.unfreeze()`` would unfreeze them too, is then
    skipped and the stage's objects are left to the collector as usual. Nothing probes the collector for it.

    Stages of different tenants' pipelines run at the same time in different threads (``Taskflow`` state per
    tenant), and the collector is one per process: the first stage to enter pauses it, the last to leave does the
    hand-over and turns it back on if it was on when the first entered (so no stage re-enables it under another
    that is still running, and it is never left off).
    """
    global _gc_promoted, _gc_heap, _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0:
                if not gc_frozen():  # a host that declared it froze objects itself (``sectorflow serve``'s loaded
                    # models, pages shared before a fork) keeps them frozen: then our objects are left to the collector
                    _gc_promoted += max(0, gc.get_count()[0])
                    gc.freeze()
                    gc.unfreeze()
                    if _gc_promoted > _gc_heap:
                        gc.collect()
                        gc.freeze()
                        _gc_heap = max(1_000_000, gc.get_freeze_count())
                        gc.unfreeze()
                        _gc_promoted = 0
                if _gc_was_enabled:
                    gc.enable()


def transaction_key(txn: Transaction, ids_by_row: bool = False) -> str:
    """:meth:`AMLPipeline.item_keys` of one transaction: ``id:<transaction_id>``, or, with ``ids_by_row``,
    ``tx:<UTC time>|<sender>|<receiver>|<amount>|<currency>``."""
    if ids_by_row:
        return (f"tx:{txn.timestamp.isoformat()}|{txn.sender_account}|{txn.receiver_account}|"
                f"{format(txn.amount.normalize(), 'f')}|{txn.currency}")
    return f"id:{txn.transaction_id}"


def _duplicate_note(txn: Transaction, first: Transaction) -> Reason:
    same = txn.model_dump(exclude={"transaction_id"}) == first.model_dump(exclude={"transaction_id"})
    if same:
        en = (f"duplicate of transaction {txn.transaction_id} already processed (same content): not counted again")
        zh = f"与已处理的交易 {txn.transaction_id} 重复（内容相同），不重复计入"
    else:
        en = (f"transaction id {txn.transaction_id} was already used by a different transaction ({first.amount} "
              f"{first.currency} {first.sender_account} -> {first.receiver_account} at "
              f"{first.timestamp.isoformat()}): not counted; check the source system")
        zh = (f"交易编号 {txn.transaction_id} 已被另一笔不同的交易使用（{first.amount} {first.currency}，"
              f"{first.sender_account} -> {first.receiver_account}）：未计入，请核对源系统")
    return Reason(code="input.duplicate_id", en=en, zh=zh, source=__name__)


def _late_note(ts: float, now: float, ahead: Transaction | None = None) -> Reason:
    """The note of a transaction behind the window's clock; ``ahead`` is the transaction that set the clock (named, so
    that when one row placed too early puts every later row behind, their notes all point at that row)."""
    hours = (now - ts) / 3600.0
    if ahead is None:
        return Reason(code="input.out_of_order",
                      en=f"arrived after a transaction although timed {hours:,.1f} h earlier than it (input out of "
                         f"time order): the window keeps it, but rules assume time order; sort the input by timestamp",
                      zh=f"在一笔交易之后到达，但时间比它早 {hours:,.1f} 小时（输入未按时间排序）：已计入窗口，但规则"
                         f"假定按时间顺序，请按时间排序后再提交", source=__name__)
    tid, when = ahead.transaction_id, ahead.timestamp.isoformat()
    return Reason(code="input.out_of_order",
                  en=f"arrived after transaction {tid} ({when}) although timed {hours:,.1f} h earlier than it "
                     f"(input out of time order): the window keeps it, but rules assume time order; sort the input "
                     f"by timestamp (if {tid} alone is out of place, move it or correct its time)",
                  zh=f"在交易 {tid}（{when}）之后到达，但时间比它早 {hours:,.1f} 小时（输入未按时间排序）：已计入窗口，"
                     f"但规则假定按时间顺序，请按时间排序后再提交（如果只有 {tid} 位置不对，请移动它或更正其时间）",
                  source=__name__)


_NO_CASH: frozenset[str] = frozenset()  # shared and never mutated


class _Item:
    """What :meth:`AMLPipeline.preprocess` hands on for one transaction."""

    __slots__ = ("account_rows", "account_scores", "alerts", "cash_alerts", "duplicate", "edge", "notes", "reports",
                 "row", "score", "txns")

    def __init__(self, row: list[float] | None, alerts: list[Alert], reports: list[ReportDraft], edge: Any,
                 txns: dict[str, Transaction] | None = None, notes: list[Reason] | None = None) -> None:
        self.notes = notes  # input warnings (duplicate id, out of time order) that go into the result's reasons
        self.duplicate = False  # a repeated transaction id: not in the window, not scored, not counted
        self.score: float | None = None
        self.row = row  # the per-transaction scorer's features; without it, (account, row) of a model-flagged account
        self.alerts = alerts
        self.reports = reports
        self.edge = edge
        self.txns = txns  # transactions of the alerts that will get an STR draft, read while still in the window
        self.account_rows: list[tuple[str, list[float]]] | None = None  # account model rows (sender, receiver)
        self.account_scores: dict[str, float] = {}
        self.cash_alerts: frozenset[str] | set[str] = _NO_CASH  # ids of its mandatory-typology alerts holding a cash transaction


class AMLPipeline(Pipeline[Transaction, TransactionAssessment]):
    """Typology rules and the learned scorer over a sliding transaction window (see the module docstring)."""

    def load(self) -> None:
        """Build the report engine, the rules, the scorer (if a bundle is loaded and ``model`` is on) and the window.

        Raises:
            ConfigError: a bad option (names it), or a ``lookback_days`` other than the bundle's with the model on.
            BundleError: the bundle is not a risk-scorer bundle.
        """
        opts = dict(self.options)
        self.reports_engine = ReportEngine.from_options(opts)
        self.jurisdiction = self.reports_engine.jurisdiction
        self.alert_threshold = _fraction(opts, "alert_threshold", 0.5)
        self.str_threshold = _fraction(opts, "str_threshold", 0.75)
        self.model_str = opts.get("model_str", False)
        if not isinstance(self.model_str, bool):
            raise ConfigError(f"model_str={self.model_str!r}: give True or False.")
        self.on_duplicate = opts.get("on_duplicate", "skip")
        if self.on_duplicate not in ("skip", "refuse"):
            raise ConfigError(f"on_duplicate={self.on_duplicate!r}: give 'skip' or 'refuse'.")
        use_model = opts.get("model", True)
        if not isinstance(use_model, bool):
            raise ConfigError(f"model={use_model!r}: give True or False.")
        self.scorer = None
        self.account_scorer = None
        self.account_threshold = 0.5
        lookback = opts.get("lookback_days")
        if lookback is not None and (isinstance(lookback, bool) or not isinstance(lookback, (int, float))
                                     or not 0 < lookback <= 3660):
            raise ConfigError(f"lookback_days={lookback!r}: give a number of days above 0 and at most 3660.")
        if self.bundle is not None and use_model:
            from .account_scorer import AccountScorer, has_account_model

            trained = None
            use_accounts = opts.get("account_model", True)
            if not isinstance(use_accounts, bool):
                raise ConfigError(f"account_model={use_accounts!r}: give True or False.")
            use_accounts = use_accounts and has_account_model(self.bundle)
            use_tx = opts.get("transaction_model", not use_accounts)
            if not isinstance(use_tx, bool):
                raise ConfigError(f"transaction_model={use_tx!r}: give True or False.")
            if use_tx and self.bundle.format not in ("lightgbm", "account-mlp"):  # these hold the account model alone
                from .scorer import RiskScorer  # imports Paddle only when that model is used

                self.scorer = RiskScorer(self.bundle, self.predictor_pool())
                trained = self.scorer.lookback_days
            if use_accounts:
                self.account_scorer = AccountScorer(self.bundle)
                if trained is not None and trained != self.account_scorer.lookback_days:
                    raise ConfigError(f"Bundle {self.bundle.name}: its transaction and account models were trained "
                                      "with different lookbacks.")
                trained = self.account_scorer.lookback_days
                threshold = self.account_scorer.threshold
                self.account_threshold = float(threshold) if threshold is not None else 0.5
            if trained is None and opts.get("account_model", True) is not False:
                raise ConfigError(f"Bundle {self.bundle.path} ({self.bundle.format}) holds no aml model.")
            if trained is not None and lookback is not None and float(lookback) != trained:
                raise ConfigError(f"lookback_days={lookback!r}, but the model bundle {self.bundle.name} was trained "
                                  f"with {trained:g} days; drop the option or pass model=False.")
            lookback = trained if trained is not None else lookback
        identity = self.model_identity()
        self.model_source = (f"{identity['model_name']}@{identity['model_version']}" if identity is not None
                             else None)
        self.lookback_days = float(lookback if lookback is not None else DEFAULT_LOOKBACK_DAYS)
        rules_opt = opts.get("rules")
        if rules_opt is not None and not isinstance(rules_opt, dict):
            raise ConfigError(f"rules={rules_opt!r}: give a dict {{typology: False | True | {{param: value}}}}.")
        self.rules = build_rules(rules_opt, self._rule_defaults())
        self.exempt_accounts = _exempt_accounts(opts)
        dormant = next((r for r in self.rules if r.name == "dormant_reactivation"), None)
        self._dormancy = dormant.params.dormant_days if dormant is not None else 180.0
        self._home = {"CN": "CNY", "US": "USD"}[self.jurisdiction]
        self.window = TransactionWindow(self.lookback_days, rate=self._rate, dormancy_days=self._dormancy)
        self._model_alerted: dict[tuple[str, str], float] = {}
        # a bundle trained on month-end rows is read at each period's close (sectorflow_aml.cases, "model_score")
        points = getattr(self.account_scorer, "training_points", "daily")
        self.case_book = CaseBook.from_options(opts, self.reports_engine.timezone,
                                               "close" if points == "month_end" else "max")

    def _rule_defaults(self) -> dict[str, dict[str, Any]]:
        """Structuring's thresholds, day and customers from the report engine (single source of truth): the
        jurisdiction's cash reporting thresholds, the engine's business day (time zone, US working-day calendar,
        cut-off) and its ``customers`` mapping, so that a same-day cumulative report and a same-day structuring alert
        count the same day and the same person's accounts."""
        structuring: dict[str, Any] = dict(self.reports_engine.day_rule)
        if self.reports_engine.customers:  # one person's accounts count together, as in the cumulative reports
            structuring["customers"] = dict(self.reports_engine.customers)
        cash = [t for t in self.reports_engine.thresholds if t.rule in ("cash", "ctr_cash")]
        if cash:
            structuring.update(thresholds={t.currency: float(t.amount) for t in cash},
                               inclusive=all(t.inclusive for t in cash))
        return {"structuring": structuring}

    def _rate(self, currency: str) -> float:
        """Factor from ``currency`` to the home currency (CNY or USD) for windowed sums: the latest rate in the
        ``fx_rates`` table. Raises MissingRateError when a foreign currency has no rate."""
        if currency == self._home:
            return 1.0
        tables = self.reports_engine.fx.tables
        try:
            return float(self.reports_engine.fx.rate(currency, self._home, tables[-1].as_of if tables else date.today()))
        except MissingRateError as exc:
            raise MissingRateError(
                f"A {currency} transaction needs a {currency}/{self._home} rate to enter the transaction window's "
                f"{self._home} sums; give the fx_rates option a CSV file (as_of,base,quote,rate) with the pair: "
                f"`sectorflow run aml ... -O fx_rates=FILE` on the command line, Taskflow('aml', fx_rates='FILE' or "
                f"{{'as_of': 'YYYY-MM-DD', '{currency}/{self._home}': 'RATE'}}) in Python. ({exc})",
                details={**(exc.details if isinstance(exc.details, dict) else {}), "option": "fx_rates"}) from exc

    def model_identity(self) -> dict[str, str | None] | None:
        """The models that produce the scores, for the results' ``meta`` and the audit trail
        (``{"model_name", "model_version", "bundle_sha256"}``), or ``None`` when no model runs.

        The account model alone (the default): its name and version from the manifest's ``account_model`` section
        (``aml-account-gbdt`` ``1.0.0`` in the shipped bundle), or the manifest's own for a bundle that holds it alone
        (``sectorflow aml train``). The per-transaction scorer (``transaction_model=True``, or a bundle without an
        account model): the manifest's name and version (``aml-risk-mlp`` ``2.1.0``); both: ``"A+B"`` for name and
        version, the transaction scorer first. ``bundle_sha256``: the SHA-256 of the bundle's ``manifest.json``,
        which lists the SHA-256 of every file of both models."""
        bundle = self.bundle
        if bundle is None or (self.scorer is None and self.account_scorer is None):
            return None
        names: list[tuple[str, str]] = []
        if self.scorer is not None:
            names.append((bundle.name, bundle.version))
        if self.account_scorer is not None:
            section = bundle.manifest.get("account_model")
            if isinstance(section, dict) and section.get("name"):
                names.append((str(section["name"]), str(section.get("version") or bundle.version)))
            else:
                names.append((bundle.name, bundle.version))
        return {"model_name": "+".join(n for n, _ in names), "model_version": "+".join(v for _, v in names),
                "bundle_sha256": bundle.sha256}

    def _check_rates(self, txns: Sequence[Transaction]) -> None:
        """Raise the :class:`MissingRateError` a transaction of ``txns`` would raise part-way through the call: its
        currency has no rate into the window's home currency, or a report total needs one on its local day."""
        for currency in {txn.currency for txn in txns}:
            try:
                self.window.rate_of(currency)
            except MissingRateError as exc:  # name the transaction and its day, not only the currency
                first = next(t for t in txns if t.currency == currency)
                day = first.timestamp.date().isoformat()
                raise MissingRateError(f"Transaction {first.transaction_id} of {day} (UTC) is in {currency}: {exc}",
                                       details={**(exc.details if isinstance(exc.details, dict) else {}),
                                                "transaction_id": first.transaction_id, "date": day}) from exc
        self.reports_engine.check_rates(txns)  # and the report totals' rates, on each transaction's local day

    def _lacking_rates(self, txns: Sequence[Transaction]) -> list[dict[str, Any]]:
        """``{"item", "field": "currency", "reason"}`` of each transaction of ``txns`` that fails :meth:`_check_rates`
        on its own."""
        return [{"item": i, "field": "currency", "reason": reason} for i, txn in enumerate(txns)
                for reason in [self._missing_rate(txn)] if reason is not None]

    def refusals(self, items: Sequence[Transaction]) -> list[dict[str, Any]]:
        """The transactions of ``items`` a call would refuse before changing any state: those without an FX rate
        (:meth:`_check_rates`; the rate tables are configuration, shared by every tenant's pipeline)."""
        try:
            self._check_rates(items)
        except MissingRateError:
            return self._lacking_rates(items)
        return []

    def _missing_rate(self, txn: Transaction) -> str | None:
        """Why ``txn`` fails :meth:`_check_rates` on its own, or ``None`` when it passes."""
        try:
            self._check_rates([txn])
        except MissingRateError as exc:
            return exc.message
        return None

    def spawn(self) -> AMLPipeline:
        """Another tenant's pipeline (``Taskflow`` state per tenant): it shares this one's model (the scorer's
        predictor pool, threshold and bundle), rules, exempt accounts, thresholds and the report engine's
        configuration (FX tables, customers, customer types, calendar: every option file stays read once, by
        :meth:`load`), and has its own empty window, report aggregates and report ids, alert cooldowns and scorer
        feature state (the per-transaction scorer's and the account model's) and open cases. Reads only configuration, so calls may run on this pipeline meanwhile."""
        other = copy.copy(self)  # the settings, shared; the state is replaced below
        other.reports_engine = self.reports_engine.spawn()
        other.scorer = self.scorer.spawn() if self.scorer is not None else None
        other.account_scorer = self.account_scorer.spawn() if self.account_scorer is not None else None
        other.window = TransactionWindow(self.lookback_days, rate=other._rate, dormancy_days=self._dormancy)
        other._model_alerted = {}
        other.case_book = self.case_book.spawn()
        other.__dict__.pop("_clock_edge", None)
        return other

    def reset_state(self) -> None:
        """Forget the window, the scorer's per-account state, report aggregates, alert cooldowns and open cases."""
        self.window.reset()
        self._model_alerted.clear()
        self._clock_edge = None
        self.reports_engine.reset()
        self.case_book.reset()
        if self.scorer is not None:
            self.scorer.reset()
        if self.account_scorer is not None:
            self.account_scorer.reset()

    def adopt_state(self, previous: Pipeline) -> None:
        """Keep the history across a model reload (``Taskflow.reload``): the transaction window, report aggregates,
        alert cooldowns, open cases and, when both pipelines use the learned scorer, its per-account feature state. Results after
        the reload then equal an uninterrupted run with the new model.

        Raises:
            ConfigError: the new bundle needs another window length, or the old pipeline ran without the model while
                the new one uses it (the scorer's feature history would be missing): restart with ``reset_state()``.
        """
        if not isinstance(previous, AMLPipeline):
            return
        if previous.lookback_days != self.lookback_days:
            raise ConfigError(f"The new model uses a {self.lookback_days:g}-day window, the running one "
                              f"{previous.lookback_days:g} days: the window cannot be carried over. Reload, then "
                              f"call reset_state() to start the new window empty.")
        if self.scorer is not None:
            if previous.scorer is None or previous.scorer.feature_names != self.scorer.feature_names:
                raise ConfigError("The running pipeline kept no feature history for this model (it ran without the "
                                  "learned scorer, or with other features); reload, then call reset_state().")
            self.scorer._extractor = previous.scorer._extractor
        if self.account_scorer is not None:
            if previous.account_scorer is None or previous.account_scorer.feature_names != \
                    self.account_scorer.feature_names:
                raise ConfigError("The running pipeline kept no account feature history for this model (it ran "
                                  "without an account model); reload, then call reset_state().")
            self.account_scorer.extractor = previous.account_scorer.extractor
        self.window = previous.window
        self.reports_engine = previous.reports_engine
        self._model_alerted = previous._model_alerted
        self.case_book = previous.case_book

    def state_dict(self) -> dict[str, Any]:
        """The pipeline's whole state as JSON values: a header (format, version, task, model, window length,
        features, jurisdiction), the shared transaction table and each stateful part's own ``state_dict``
        (:func:`sectorflow_aml.pipeline_state.pipeline_state_dict`). ``load_state_dict`` of a fresh pipeline with
        the same options then continues exactly (later results are byte-identical)."""
        with _gc_paused():  # tens of thousands of small lists: no collector passes over the window meanwhile
            return pipeline_state_dict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the pipeline's state by ``state`` (from :meth:`state_dict`).

        Raises:
            ConfigError: another format or version, task, window length, model features (model on / off, another
                bundle) or jurisdiction, or a damaged state; the pipeline is then left empty (``reset_state``).
        """
        with _gc_paused():
            load_pipeline_state(self, state)

    ITEM_KEY_TEXT = "transaction id, or time, accounts, amount and currency for the formats that number ids by row"
    """How :meth:`item_keys` identifies a transaction, for ``sectorflow run --state``'s messages."""

    def item_keys(self, items: Sequence[Transaction], ids_by_row: bool = False) -> list[str]:
        """What identifies each transaction across the files fed into one state (``sectorflow run --state`` runs
        none of a later file again, :mod:`sectorflow.cli_state`): its id for this tenant; with ``ids_by_row`` (the
        amlsim and amlworld formats number ids by row in each file: ``amlsim-12`` is another transaction in the
        next file) its time, accounts, amount and currency (as ``aml train`` compares files)."""
        return [transaction_key(txn, ids_by_row) for txn in items]

    def journal_rows(self, items: Sequence[Transaction]) -> list[Any]:
        """Each transaction as its JSON row (:func:`~sectorflow_aml.state.transaction_row`: 12 values, no pydantic
        dump), for the state store's journal."""
        return [transaction_row(txn) for txn in items]

    def journal_items(self, rows: list[Any]) -> list[Transaction]:
        """The transactions of journal rows (validated when they first arrived, so built without re-validation).

        Raises:
            ConfigError: a damaged row.
        """
        return decode_transactions(rows)

    # --- the three stages ----------------------------------------------------------------------------------------

    def preprocess(self, items: Sequence[Transaction]) -> list[_Item]:
        """Update the window and run the rules, the feature extractor and the report engine, in order."""
        window = self.window
        checks = [_exempting(rule.check, rule.name, self.exempt_accounts) for rule in self.rules]
        feature_row = self.scorer._extractor.row if self.scorer is not None else None
        account_rows = self.account_scorer.extractor.snapshots if self.account_scorer is not None else None
        observe = self.reports_engine.observe
        try:  # a missing FX rate fails the call before any state changes
            self._check_rates(items)
        except MissingRateError as exc:  # which of the call's transactions lack a rate: --on-error skip skips those
            bad = self._lacking_rates(items)
            raise MissingRateError(exc.message + (f" ({len(bad)} of the call's {len(items)} transactions lack a "
                                                  "rate.)" if len(items) > 1 else ""),
                                   details={**(exc.details if isinstance(exc.details, dict) else {}),
                                            "items": bad}) from exc
        if self.on_duplicate == "refuse":
            refuse_duplicates(items, window.ids, self.lookback_days)
        out: list[_Item] = []
        append = out.append
        ids = window.ids
        add = window.add
        duplicates = late = 0
        behind: dict[str, int] = {}  # late transactions per transaction that set the clock
        with _gc_paused():
            for txn in items:
                seen = ids.get(txn.transaction_id)
                if seen is not None:  # a retried upload or a reused id: never counted twice
                    duplicates += 1
                    item = _Item(None, _NO_ALERTS, [], seen, None, [_duplicate_note(txn, seen.txn)])
                    item.duplicate = True
                    append(item)
                    continue
                edge = add(txn)
                notes = None
                if edge.ts < window.now:
                    late += 1
                    ahead = self._clock_transaction()
                    if ahead is not None:
                        behind[ahead.transaction_id] = behind.get(ahead.transaction_id, 0) + 1
                    notes = [_late_note(edge.ts, window.now, ahead)]
                alerts = _NO_ALERTS  # shared and never mutated; a transaction with hits gets its own list
                for check in checks:
                    hits = check(window, edge)
                    if hits:
                        if alerts is _NO_ALERTS:
                            alerts = hits  # a new list made by the rule for this call
                        else:
                            alerts.extend(hits)
                row = feature_row(txn, window) if feature_row is not None else None
                if row is not None and (edge.src == edge.dst or txn.channel.is_cash):
                    row = None  # cash or a self-transfer: state updated, not scored (see the module docstring)
                # An STR draft lists its transactions: read them now, before later transactions of this call move
                # the window on (postprocess runs after the whole call's preprocess).
                txns = self._alert_transactions(alerts) if alerts else None
                item = _Item(row, alerts, observe(txn), edge, txns, notes)
                if alerts:  # as the STR's transactions: judged while the alert's transactions are in the window
                    item.cash_alerts = self._cash_alerts(alerts)
                if account_rows is not None:
                    item.account_rows = account_rows(edge, window)
                append(item)
        if duplicates:
            log.warning("%d transaction(s) repeat an id already in the %g-day window: not counted again (see the "
                        "reason 'input.duplicate_id' on their results).", duplicates, self.lookback_days)
        if late:
            log.warning("%d transaction(s) arrived after a later one (out of time order): kept, but the sliding-window "
                        "rules assume time order; sort the input by timestamp (reason 'input.out_of_order').", late)
            if behind:
                tid, count = max(behind.items(), key=lambda kv: kv[1])
                log.warning("%d of them arrived after transaction %s, the latest seen: if it alone is out of place, "
                            "move it or correct its time.", count, tid)
        return out

    def forward(self, batch: Sequence[_Item]) -> list[_Item]:
        """Score one batch: sets each item's ``score`` (left ``None`` when no model runs) and ``account_scores``.

        The account rows are computed here for the whole batch at once (:func:`~sectorflow_aml.account_features.
        feature_matrix` of the snapshots ``preprocess`` took), then scored in one LightGBM call; without the
        per-transaction scorer, ``score`` is the higher of the two accounts' rounded scores."""
        if self.scorer is not None:
            rows = [item.row for item in batch]
            if None in rows:  # a repeated id has no row
                scored = [item for item in batch if item.row is not None]
                rows = [item.row for item in scored]
            else:
                scored = batch
            for item, score in zip(scored, self.scorer.score_rows(rows).tolist()):
                item.score = score
        if self.account_scorer is not None:
            snaps = [snap for item in batch if item.account_rows for _, snap in item.account_rows]
            x = feature_matrix(snaps)
            scores = self.account_scorer.score_matrix(x).round(6).tolist()
            own = self.scorer is None  # model_score from the account model
            t = self.account_threshold
            j = 0
            for item in batch:
                pairs = item.account_rows
                if not pairs:
                    continue
                item.account_rows = None  # the snapshots are spent: free them before postprocess
                k = j  # the row of the riskier account (the sender's on a tie)
                if len(pairs) == 1:
                    item.account_scores = {pairs[0][0]: scores[j]}
                    j += 1
                else:
                    first, second = scores[j], scores[j + 1]
                    item.account_scores = {pairs[0][0]: first, pairs[1][0]: second}
                    if second > first:
                        k = j + 1
                    j += 2
                if own:
                    best = scores[k]
                    item.score = best
                    if best >= t:  # flagged by the model: keep that account and its row for the reasons
                        item.row = (pairs[k - j + len(pairs)][0], x[k].tolist())
        return list(batch)

    def postprocess(self, items: Sequence[Transaction], raw: Sequence[Any]) -> list[TransactionAssessment]:
        """Combine rule alerts and model scores into one :class:`TransactionAssessment` per transaction."""
        with _gc_paused():
            return self._assess(items, raw)

    def _assess(self, items: Sequence[Transaction], raw: Sequence[Any]) -> list[TransactionAssessment]:
        results: list[TransactionAssessment] = []
        a = self.alert_threshold
        t = self.scorer.threshold if self.scorer is not None else self.account_threshold
        construct = TransactionAssessment.model_construct
        new, setattr_, assessment, fields_set = _new, _set, TransactionAssessment, _FIELDS_SET
        append = results.append
        update_cases = self.case_book.update
        for txn, item in zip(items, raw):
            model_score = item.score
            model_risk = 0.0
            if model_score is not None:
                model_risk = model_score / t * a if model_score < t else a + (model_score - t) / (1.0 - t) * (1 - a)
                model_risk = min(1.0, max(0.0, model_risk))
            alerts = item.alerts
            if not alerts and model_risk < a and item.notes is None and not item.duplicate:
                # the common case, nothing to explain: an unflagged result built like model_construct does (every
                # field given, values already checked), without its per-call overhead
                scores = item.account_scores
                cases = update_cases(txn, item.edge.amount, _NO_ALERTS, scores)  # a new list, empty for most
                out = new(assessment)
                setattr_(out, "__dict__", {
                    "meta": None, "transaction_id": txn.transaction_id, "risk_score": round(model_risk, 6),
                    "model_score": None if model_score is None else round(model_score, 6),
                    "alert": _in_budget(txn, cases) if cases else False,
                    "flagged": False, "typologies": [], "reasons": [], "alerts": [], "reports": item.reports,
                    "account_scores": scores, "cases": cases})
                setattr_(out, "__pydantic_fields_set__", set(fields_set))
                setattr_(out, "__pydantic_extra__", None)
                setattr_(out, "__pydantic_private__", None)
                append(out)
                continue
            if item.duplicate:
                results.append(construct(  # a repeated id: not scored, not counted, only the note
                    meta=None, transaction_id=txn.transaction_id, risk_score=0.0, model_score=None, alert=False,
                    flagged=False, typologies=[], reasons=list(item.notes), alerts=[], reports=[], account_scores={},
                    cases=[]))
                continue
            rule_keep = 1.0
            for alert in alerts:
                rule_keep *= 1.0 - alert.score
            risk = 1.0 - rule_keep * (1.0 - model_risk)
            flagged = risk >= a
            reasons: list[Reason] = list(item.notes) if item.notes else []
            if flagged:
                alerts = list(alerts)
                for alert in item.alerts:
                    reasons.extend(alert.reasons)
                if model_score is not None:
                    model_reasons = self._model_reasons(model_score, item.row)
                    reasons.extend(model_reasons)
                    if model_risk >= a and self._model_alert_due(item):
                        alerts.append(self._model_alert(item, model_risk, model_reasons))
            reports = item.reports
            strs = [x for x in alerts if x.score >= self.str_threshold
                    and (self.model_str or x.typology != "model_risk")]
            if strs:
                reports = list(reports) + [self._str(alert, item) for alert in strs]
            if alerts is _NO_ALERTS:
                alerts = []
            out = construct(
                meta=None, transaction_id=txn.transaction_id, risk_score=round(risk, 6),
                model_score=None if model_score is None else round(model_score, 6), alert=False, flagged=flagged,
                typologies=list(dict.fromkeys(x.typology for x in alerts)), reasons=reasons, alerts=alerts,
                reports=reports, account_scores=item.account_scores, cases=[])
            cases = out.__dict__["cases"] = update_cases(txn, item.edge.amount, alerts, item.account_scores,
                                                         item.cash_alerts)
            if cases:
                out.__dict__["alert"] = _in_budget(txn, cases)
            results.append(out)
        return results

    # --- helpers -------------------------------------------------------------------------------------------------

    def _cash_alerts(self, alerts: Sequence[Alert]) -> set[str]:
        """Ids of the ``alerts`` of a mandatory typology that hold a cash transaction: what makes a structuring case
        mandatory (:mod:`sectorflow_aml.cases`, "Mandatory scenarios"). Read in ``preprocess``, right after the rules,
        from the alert accounts' windowed transactions (later transactions of the call may move the window on)."""
        mandatory = self.case_book.mandatory
        out: set[str] = set()
        for alert in alerts:
            if alert.typology not in mandatory:
                continue
            wanted = set(alert.transaction_ids)
            for account in alert.accounts:
                state = self.window.get(account)
                if state is not None and any(e.txn.transaction_id in wanted and e.txn.channel.is_cash
                                             for side in (state.incoming, state.outgoing) for e in side):
                    out.add(alert.alert_id)
                    break
        return out

    _clock_edge: Any = None
    """The window edge whose timestamp is the window's clock, as last found by :meth:`_clock_transaction`."""

    def _clock_transaction(self) -> Transaction | None:
        """A transaction at the window's clock (the latest timestamp seen; the last to arrive at that time).

        Found by a backward scan of the window's edges, only when a transaction arrives behind the clock and the clock
        has moved since the last scan; an edge at the clock is never evicted, so one is in the window."""
        window = self.window
        now = window.now
        cached = self._clock_edge
        if cached is not None and cached.ts == now and window.ids.get(cached.txn.transaction_id) is cached:
            return cached.txn
        found = next((e for e in reversed(window.edges) if e.ts == now), None)
        self._clock_edge = found
        return found.txn if found is not None else None

    def _model_reasons(self, score: float, row: Any) -> list[Reason]:
        source = f"model:{self.model_source}"
        if self.scorer is None:  # the account model's score: ``row`` is (account, its feature row) when flagged
            from .account_scorer import describe_account

            t = self.account_threshold
            account, features = row if row is not None else (None, None)
            who = f"account {account}" if account is not None else "an account of this transaction"
            who_zh = f"账户 {account}" if account is not None else "本交易的账户"
            reasons = [Reason(code="model.risk", en=f"{who}: account risk model score {score:.4f} over the last "
                              f"{self.lookback_days:g} days (flags at >= {t:.4f})",
                              zh=f"{who_zh}：近{self.lookback_days:g}天账户风险模型评分 {score:.4f}（≥ {t:.4f} 预警）",
                              source=source)]
            if features is not None:
                reasons.extend(Reason(code=code, en=en, zh=zh, source=source)
                               for code, en, zh in describe_account(features, self.lookback_days))
            return reasons
        reasons = [Reason(code="model.risk", en=f"learned risk model score {score:.4f} (flags at >= "
                                                f"{self.scorer.threshold:.4f})",
                          zh=f"风险模型评分 {score:.4f}（≥ {self.scorer.threshold:.4f} 预警）", source=source)]
        if row is not None:
            reasons.extend(Reason(code=code, en=en, zh=zh, source=source)
                           for code, en, zh in self.scorer.describe(row))
        return reasons

    def _model_alert_due(self, item: _Item) -> bool:
        """At most one ``model_risk`` alert (and so one suspicious-report draft) per sender/receiver pair per lookback
        window. The pair's later transactions keep their score, flag and reasons; they open no new alert, so an
        analyst's queue holds one entry per pair instead of one per transfer. Runs in arrival order in postprocess,
        so one-at-a-time and batch calls decide alike."""
        edge = item.edge
        key: Any = (edge.src, edge.dst)
        if self.scorer is None and item.row is not None:  # the account model: one alert per account and window
            key = (item.row[0], "")  # (account, ""): the state keeps (src, dst) pairs
        ts = edge.txn.timestamp.timestamp()
        horizon = self.lookback_days * 86400.0
        last = self._model_alerted.get(key)
        if last is not None and abs(ts - last) < horizon:
            return False
        self._model_alerted[key] = ts
        if len(self._model_alerted) > 200_000:  # bound memory: entries older than a window can no longer suppress
            self._model_alerted = {k: v for k, v in self._model_alerted.items() if ts - v < horizon}
        return True

    def _model_alert(self, item: _Item, risk: float, reasons: list[Reason]) -> Alert:
        edge = item.edge
        tid = edge.txn.transaction_id
        accounts = list(dict.fromkeys((edge.src, edge.dst)))
        if self.scorer is None and item.row is not None and item.row[0] in accounts:  # the flagged account first
            accounts.remove(item.row[0])
            accounts.insert(0, item.row[0])
        return Alert(alert_id=alert_id("model_risk", [tid]), typology="model_risk",
                     accounts=accounts, transaction_ids=[tid],
                     score=round(risk, 4), reasons=reasons, fired_by=f"model:{self.model_source}",
                     time=edge.txn.timestamp, transactions_sha256=transactions_digest([edge.txn]))

    def _alert_transactions(self, alerts: list[Alert]) -> dict[str, Transaction]:
        """The window's transactions of the alerts that score at least ``str_threshold``, by id."""
        wanted = {tid for alert in alerts if alert.score >= self.str_threshold for tid in alert.transaction_ids}
        txns: dict[str, Transaction] = {}
        if not wanted:
            return txns
        for account in {a for alert in alerts for a in alert.accounts}:
            state = self.window.get(account)
            if state is None:
                continue
            for side in (state.incoming, state.outgoing):
                for e in side:
                    tid = e.txn.transaction_id
                    if tid in wanted:
                        txns[tid] = e.txn
        return txns

    def _str(self, alert: Alert, item: _Item) -> ReportDraft:
        own = item.edge.txn
        txns = {own.transaction_id: own, **(item.txns or {})}
        txns = {tid: txns[tid] for tid in alert.transaction_ids if tid in txns}
        engine = self.reports_engine
        return suspicious_report(alert, txns.values(), self.jurisdiction, fx=engine.fx,
                                 institution=engine.institution, timezone=engine.timezone,
                                 customers=engine.customers)
