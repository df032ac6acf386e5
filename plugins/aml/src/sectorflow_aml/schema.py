"""Input and output models of the ``aml`` task.

One input item is a :class:`Transaction`; one result is a :class:`TransactionAssessment`. Alerts and report drafts
appear on the result of the transaction that completed them (the one whose arrival made the pattern or the
threshold true), so that batch and one-at-a-time streaming give the same alerts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

import sectorflow
from sectorflow import ConfigError, TaskResult

from .fx import is_iso4217


class Channel(str, Enum):
    """How the money moved. ``cash_*`` channels count towards cash (currency) transaction reporting."""

    cash_deposit = "cash_deposit"
    cash_withdrawal = "cash_withdrawal"
    transfer = "transfer"
    wire = "wire"
    card = "card"
    cheque = "cheque"
    ach = "ach"
    mobile = "mobile"
    other = "other"

    @property
    def is_cash(self) -> bool:
        return self in (Channel.cash_deposit, Channel.cash_withdrawal)


EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc)

MAX_FUTURE_ENV = "SECTORFLOW_AML_MAX_FUTURE_DAYS"
"""Environment variable: how many days ahead of the wall clock (UTC) a timestamp may lie (default
:data:`MAX_FUTURE_DAYS`; ``off`` turns the check off, e.g. to replay a generator's synthetic future dates). Read when
``sectorflow_aml`` is imported (and by :func:`reload_max_future_days`), so it applies to ``sectorflow run``,
``sectorflow serve`` and Python calls alike."""

MAX_FUTURE_DAYS = 1.0
"""Default of :data:`MAX_FUTURE_ENV`: one day covers every time zone's 'today' and clock skew."""

_future: dict[str, Any] = {}
"""``days`` (float or None: no limit), ``error`` (a bad variable's message) and ``floor``: a limit computed earlier
(the clock only moves on, so a timestamp below it is below the current limit and the clock need not be read)."""


def reload_max_future_days() -> float | None:
    """Read :data:`MAX_FUTURE_ENV` again (after changing it in a running process); returns the days (None: off)."""
    raw = (sectorflow.settings().aml_max_future_days or "").strip().lower()
    days: float | None = MAX_FUTURE_DAYS
    error = None
    if raw in ("off", "none"):
        days = None
    elif raw:
        try:
            days = float(raw)
        except ValueError:
            days = -1.0
        if not 0 <= days < 1e6:
            error = (f"{MAX_FUTURE_ENV}={raw!r}: give a number of days >= 0 (default {MAX_FUTURE_DAYS:g}) or "
                     "'off'.")
    _future.update(days=days, error=error, floor=EARLIEST if error else LATEST if days is None else
                   datetime.now(timezone.utc) + timedelta(days=days))
    return days


def max_future_days() -> float | None:
    """Days a timestamp may lie ahead of the wall clock (:data:`MAX_FUTURE_ENV`); ``None``: no limit.

    Raises:
        ConfigError: the variable is neither a number of days >= 0 nor ``off``.
    """
    if _future["error"]:
        raise ConfigError(_future["error"])
    return _future["days"]


def latest_timestamp() -> datetime:
    """The first UTC time a transaction's timestamp may not reach: the wall clock plus :func:`max_future_days`, at
    most :data:`LATEST`. A transaction from the future (a typo's 2099) would otherwise enter the per-account window
    and make every real later transaction of its accounts ``input.out_of_order`` until the state is reset.

    Raises:
        ConfigError: from :func:`max_future_days`.
    """
    days = max_future_days()
    if days is None:
        return LATEST
    latest = min(LATEST, datetime.now(timezone.utc) + timedelta(days=days))
    _future["floor"] = latest
    return latest


reload_max_future_days()


_FIXED_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d\d):?(\d\d)$", re.IGNORECASE)


def parse_zone(text: Any) -> tzinfo:
    """A time zone from an IANA name (``"Asia/Shanghai"``, ``"America/New_York"``, ``"UTC"``) or a fixed UTC offset
    (``"+08:00"``, ``"-0500"``, ``"UTC+08:00"``; at most 23:59).

    Raises:
        ConfigError: anything else (the message gives examples).
    """
    if isinstance(text, str):
        name = text.strip()
        match = _FIXED_OFFSET.match(name)
        if match:
            sign, hours, minutes = match.groups()
            if int(hours) < 24 and int(minutes) < 60:
                delta = timedelta(hours=int(hours), minutes=int(minutes))
                return timezone(-delta if sign == "-" else delta)
        elif name and not name.startswith(("/", ".")):
            try:
                return ZoneInfo(name)
            except Exception:  # ZoneInfoNotFoundError, ValueError for malformed keys
                pass
    raise ConfigError(f"input_timezone={text!r}: give an IANA time zone such as 'Asia/Shanghai' or "
                      "'America/New_York', 'UTC', or a fixed offset such as '+08:00'.")


INPUT_TIMEZONE_HELP = ("time zone of timestamps written without a UTC offset (bank exports in local time): an IANA "
                       "name such as Asia/Shanghai or America/New_York, or an offset such as +08:00; default UTC, the "
                       "input schema's rule. Applies to records and file rows, not to Transaction objects already "
                       "made")


def input_context(options: Mapping[str, Any]) -> dict[str, Any]:
    """The validation context of raw ``aml`` input items (``TaskSpec.input_context``): ``{"input_timezone":
    tzinfo}`` when the ``input_timezone`` option is given, else ``{}`` (naive timestamps are UTC).

    Raises:
        ConfigError: ``input_timezone`` is not a time zone (see :func:`parse_zone`).
    """
    raw = options.get("input_timezone")
    return {} if raw is None else {"input_timezone": parse_zone(raw)}


_UNPRINTABLE_ID = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters no id may hold (see ``Transaction._printable_id``)."""


def id_is_printable(value: str) -> bool:
    """Whether ``value`` holds none of the characters an id may not hold (``Transaction._printable_id``)."""
    return _UNPRINTABLE_ID.search(value) is None


class Transaction(BaseModel):
    """One transaction.

    ``timestamp``: ISO 8601; a naive time (no UTC offset) is taken as UTC, or as local time in the validation
    context's ``input_timezone`` (``Taskflow("aml", input_timezone="Asia/Shanghai")``, ``sectorflow run aml -O
    input_timezone=Asia/Shanghai``; see :func:`input_context`): a local time that a daylight-saving change skips or
    repeats takes the offset in force before the change (Python's ``fold=0``). It is stored in UTC and must lie in
    [1900-01-01, 2200-01-01) UTC and at most one day ahead of the wall clock (:func:`latest_timestamp`; the
    environment variable ``SECTORFLOW_AML_MAX_FUTURE_DAYS`` sets the days or ``off``).
    ``amount``: a positive decimal in ``currency`` (ISO 4217 alphabetic code), below 10^15 and with at most 4 decimal
    places (ISO 4217 minor units go to 4 places, e.g. CLF). Countries are ISO 3166-1 alpha-2. For cash deposits the
    sender may be the depositor's own account or a walk-in id; for cash withdrawals the receiver likewise.

    The bounds are checked when the item is validated, before the pipeline touches its per-account state, so an
    out-of-range value is a 422 / ``InvalidInputError`` for that row and never reaches the window.
    """

    model_config = ConfigDict(frozen=True, str_strip_whitespace=True)

    transaction_id: str = Field(min_length=1)
    timestamp: datetime
    sender_account: str = Field(min_length=1)
    receiver_account: str = Field(min_length=1)
    amount: Decimal = Field(gt=0, lt=Decimal("1e15"), decimal_places=4, allow_inf_nan=False,
                            description="Positive amount in `currency` units, below 10^15, at most 4 decimal places.")
    currency: str = Field(default="CNY", pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. CNY, USD.")
    channel: Channel = Channel.transfer
    sender_country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$")
    receiver_country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$")
    customer_type: Literal["individual", "corporate"] | None = None
    sender_bank: str | None = None
    receiver_bank: str | None = None

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime, info: ValidationInfo) -> datetime:
        try:
            if value.tzinfo is None:
                context = info.context
                zone = context.get("input_timezone") if context else None
                utc = value.replace(tzinfo=timezone.utc) if zone is None else value.replace(tzinfo=zone).astimezone(
                    timezone.utc)
            else:
                utc = value.astimezone(timezone.utc)
        except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+14:00 has no UTC equivalent
            raise ValueError(f"{value.isoformat()} cannot be converted to UTC") from exc
        if not EARLIEST <= utc < LATEST:
            raise ValueError(f"timestamp {utc.isoformat()} is outside [{EARLIEST.date()}, {LATEST.date()})")
        if utc >= _future["floor"] and utc >= (latest := latest_timestamp()):
            raise ValueError(f"timestamp {utc.isoformat()} lies in the future: more than {max_future_days():g} day(s) "
                             f"ahead of the clock (refused from {latest.replace(microsecond=0).isoformat()}; a "
                             f"typo? Set {MAX_FUTURE_ENV}=DAYS or off to allow it)")
        return utc

    @field_validator("transaction_id", "sender_account", "receiver_account", "sender_bank", "receiver_bank")
    @classmethod
    def _printable_id(cls, value: str | None) -> str | None:
        """Ids hold no control character (NUL, line breaks, C1) and no bidirectional-text control (U+202A-U+202E,
        U+2066-U+2069, U+200E/U+200F): such a character makes an id display as another one in alerts and report
        drafts (an override reverses what follows it; Unicode TR #9), and PostgreSQL text refuses NUL."""
        if value is not None:
            bad = _UNPRINTABLE_ID.search(value)
            if bad is not None:
                code = ord(bad.group())
                kind = "a control character" if code < 0xA0 else "a bidirectional-text control"
                raise ValueError(f"holds U+{code:04X} ({kind}) at position {bad.start()}: an id must be printable "
                                 "text; remove it from the source (a stray NUL or a copied direction mark)")
        return value

    @field_validator("sender_country", "receiver_country", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("currency", mode="before")
    @classmethod
    def _currency_code(cls, value: object) -> object:
        """Upper case; a text that is not three letters gets the ISO 4217 message, not the pattern's (a file's
        ``Bitcoin`` or ``RMB 元`` said only "String should match pattern '^[A-Z]{3}$'")."""
        if not isinstance(value, str):
            return value
        code = value.strip().upper()
        if not (len(code) == 3 and code.isascii() and code.isalpha()):
            raise ValueError(f"{value.strip()!r} is not an ISO 4217 currency code (three letters such as CNY, USD, "
                             "EUR; Bitcoin has none)")
        return code

    @field_validator("currency")
    @classmethod
    def _iso4217(cls, value: str) -> str:
        if not is_iso4217(value):
            usual = _USUAL_NAMES.get(value)
            hint = (f": {usual[1]} is {usual[0]} in ISO 4217; write {usual[0]} (e.g. sed 's/,{value},/,{usual[0]},/' "
                    "or fix the export)" if usual else "")
            raise ValueError(f"{value!r} is not an ISO 4217 currency code{hint}")
        return value

    @field_validator("amount", mode="before")
    @classmethod
    def _amount_text(cls, value: object) -> object:
        """A spreadsheet's formatted number (``1,000.50``) gets a message naming the thousands separator, not
        "Input should be a valid decimal"."""
        if isinstance(value, str) and _GROUPED.fullmatch(value.strip()):
            plain = value.strip().replace(",", "")
            raise ValueError(f"{value.strip()!r} has a thousands separator (','): write {plain} (export the column "
                             "as a plain number, without digit grouping)")
        return value


_USUAL_NAMES = {"RMB": ("CNY", "renminbi (RMB)"), "NTD": ("TWD", "the New Taiwan dollar (NTD)"),
                "YEN": ("JPY", "the yen"), "STG": ("GBP", "sterling (STG)"), "UKL": ("GBP", "sterling (UKL)")}
"""Three-letter names in use that are not ISO 4217 codes, with the code (``RMB`` is the renminbi, ``CNY``)."""
_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?")
"""A number with comma thousands separators (``1,000.50``, ``12,345,678``)."""


_TRUSTED_FIELDS = ("transaction_id", "timestamp", "sender_account", "receiver_account", "amount", "currency",
                   "channel")
_new = object.__new__
_set = object.__setattr__


def trusted_transaction(transaction_id: str, timestamp: datetime, sender_account: str, receiver_account: str,
                        amount: Decimal, currency: str, channel: Channel) -> Transaction:
    """A :class:`Transaction` from values the caller has already checked, without pydantic's per-row validation
    (about 10 times cheaper); for readers that check whole columns at once (the typed AMLSim reader).

    The caller guarantees what validation would: ids stripped and non-empty, ``timestamp`` in UTC with
    ``tzinfo=timezone.utc`` inside [1900, :func:`latest_timestamp`), ``amount`` a finite Decimal in (0, 10^15) with
    at most 4 places, ``currency`` a valid upper-case ISO 4217 code, ``channel`` a :class:`Channel`. The result equals
    ``Transaction.model_validate`` of the same record, fields set included (a test checks on AMLSim).
    """
    out = _new(Transaction)
    _set(out, "__dict__", {"transaction_id": transaction_id, "timestamp": timestamp, "sender_account": sender_account,
                           "receiver_account": receiver_account, "amount": amount, "currency": currency,
                           "channel": channel, "sender_country": None, "receiver_country": None,
                           "customer_type": None, "sender_bank": None, "receiver_bank": None})
    _set(out, "__pydantic_fields_set__", set(_TRUSTED_FIELDS))
    _set(out, "__pydantic_extra__", None)
    _set(out, "__pydantic_private__", None)
    return out


class Reason(BaseModel):
    """A short, human-readable reason in English and Chinese, with the rule or model that produced it."""

    code: str = Field(description="Machine code, e.g. 'typology.fan_in' or 'model.risk'.")
    en: str
    zh: str
    source: str = Field(description="Rule module or model bundle that fired, e.g. 'sectorflow_aml.typologies.fan_in'.")


class Alert(BaseModel):
    """A detected typology instance."""

    alert_id: str = Field(description="Stable id: typology + hash of the transactions involved.")
    typology: str = Field(description="structuring, fan_in, fan_out, cycle, scatter_gather, gather_scatter, "
                                      "rapid_pass_through, dormant_reactivation, high_risk_jurisdiction, or "
                                      "model_risk (the learned scorer alone)")
    accounts: list[str]
    transaction_ids: list[str]
    score: float = Field(ge=0, le=1)
    reasons: list[Reason]
    fired_by: str = Field(description="Rule module or model that raised the alert.")
    variant: str | None = Field(default=None, description="Variant of the typology, e.g. 'cumulative' or 'fan_in' "
                                                          "for structuring.")
    time: datetime = Field(description="Time of the transaction that completed the pattern (UTC).")
    evidence: dict[str, float] = Field(
        default_factory=dict, description="The figures a typology judged the pattern by, beyond its counts (issue 21: "
                                          "e.g. through_share, own_baseline, similar_share, amount_cv, new_share, "
                                          "dwell_hours; docs/aml-rules.md); empty for rules that keep none.")
    transactions_sha256: str | None = Field(
        default=None, description="SHA-256 of the alert's transactions as the pipeline read them (transactions_digest: "
                                  "id, UTC time, accounts, amount, currency, channel, countries), so `sectorflow aml "
                                  "explain` can prove the input it draws from is unedited; None in results written "
                                  "before it existed.")


def transactions_digest(transactions: Iterable[Transaction]) -> str:
    """Hex SHA-256 of one line per transaction, in the given order: ``id|UTC ISO time|sender|receiver|amount|
    currency|channel|sender country|receiver country`` (amount as a plain decimal without trailing zeros, so 9.90 and
    9.9 are the same value; an absent country as an empty field): what the rules read."""
    h = hashlib.sha256()
    for t in transactions:
        amount = format(t.amount.normalize(), "f")
        h.update(f"{t.transaction_id}|{t.timestamp.astimezone(timezone.utc).isoformat()}|{t.sender_account}|"
                 f"{t.receiver_account}|{amount}|{t.currency}|{getattr(t.channel, 'value', t.channel)}|"
                 f"{t.sender_country or ''}|"
                 f"{t.receiver_country or ''}\n".encode())
    return h.hexdigest()


class ReportDraft(BaseModel):
    """A draft regulatory report: large-value (大额交易报告), suspicious (可疑交易报告) or US CTR."""

    report_id: str
    kind: Literal["large_value", "suspicious", "ctr"]
    jurisdiction: Literal["CN", "US"]
    regulation: str = Field(description="Article the report is filed under, e.g. 'PBOC Order 2016 No. 3, Art. 5'.")
    customer_account: str
    transaction_ids: list[str]
    total_amount: Decimal
    currency: str
    business_date: str = Field(description="ISO date the transactions were aggregated on.")
    elements: dict[str, object] = Field(default_factory=dict, description="The report's data elements.")
    due_by: str | None = Field(default=None, description="ISO date the report is due.")


class CaseUpdate(BaseModel):
    """One case as a transaction left it (an entry of ``TransactionAssessment.cases``). Scalars are the case's state
    after the transaction; ``transaction_ids``, ``alert_ids`` and ``counterparties`` hold only what this update added
    (:func:`read_cases` joins them)."""

    case_id: str = Field(description="'case-<period>-<12 hex of SHA-256 of account|period>'.")
    account: str
    period: str = Field(description="'2023-01' (month), '2023-W05' (ISO week) or '2023-01-15' (day), bank time.")
    score: float = Field(ge=0, le=1, description="case_score(model_score, evidence_score).")
    model_score: float | None = Field(default=None, description=(
        "Highest account-model score in the period; with case_model_score='close' (a bundle trained on month-end "
        "rows) the score after the account's latest transaction in the period (at its close the period-close score; "
        "while the period is open it can go down)."))
    evidence_score: float = Field(ge=0, le=1)
    typologies: list[str] = Field(default_factory=list, description="Every typology of the case so far.")
    mandatory: bool = False
    rank: int = Field(ge=1, description="Rank in the period when this update was made (1 = highest).")
    active_accounts: int = Field(description="Accounts active in the period so far.")
    budget: str = Field(description="AlertBudget.label(), e.g. 'share:0.01'.")
    within_budget: bool
    transactions: int = Field(description="Transactions of the case so far.")
    amount_in: float = Field(description="Received in the period since the case opened (base currency).")
    amount_out: float = Field(description="Paid in the period since the case opened (base currency).")
    transaction_ids: list[str] = Field(default_factory=list, description="Added by this update.")
    alert_ids: list[str] = Field(default_factory=list, description="Added by this update.")
    counterparties: list[str] = Field(default_factory=list, description="Added by this update.")
    updated_at: datetime
    counterparty_score: float | None = Field(
        default=None, description="Highest account-model score of the account's counterparties in the period, floored "
                                  "to a tenth (sectorflow_aml.case_graph); None while none has a score.")
    risky_counterparties: int = Field(default=0, description="Counterparties in the period scoring at least 0.5.")
    counterparties_in_period: int = Field(default=0, description="Distinct counterparties (transfers) in the period.")


class TransactionAssessment(TaskResult):
    """The result for one transaction."""

    transaction_id: str
    risk_score: float = Field(ge=0, le=1, description="Combined rule and model risk in [0, 1].")
    model_score: float | None = Field(default=None, ge=0, le=1, description=(
        "The model's score alone: by default the higher of the sender's and the receiver's account-model scores after "
        "this transaction; with transaction_model=True (or no account model) the per-transaction scorer's."))
    alert: bool = Field(description=(
        "For the analyst: this transaction belongs to a case within the alert budget when it arrived (its sender's or "
        "receiver's case, or a case its alerts added it to, ranked at that moment: CaseUpdate.within_budget). The "
        "period's final list is `sectorflow aml cases` (sectorflow_aml.cases.read_cases): a case can fall out of the "
        "budget as the period goes on."))
    flagged: bool = Field(default=False, description=(
        "Evidence, not a task: risk_score reached alert_threshold (a typology rule or the model fired); rules fire on "
        "many legitimate look-alikes, so the alert budget keeps only the top cases (alert)."))
    typologies: list[str] = Field(default_factory=list)
    reasons: list[Reason] = Field(default_factory=list)
    alerts: list[Alert] = Field(default_factory=list, description="Alerts completed by this transaction.")
    reports: list[ReportDraft] = Field(default_factory=list, description="Report drafts triggered by it.")
    account_scores: dict[str, float] = Field(
        default_factory=dict, description="Calibrated account risk in [0, 1] of the sender and the receiver after this "
                                          "transaction (account id -> score; one entry when both are the same "
                                          "account), from the bundle's account model; empty without one. A case's "
                                          "model score is the max of its account's scores over the review period "
                                          "(with case_model_score='close': the latest, at the period's close its "
                                          "period-close score).")
    cases: list[CaseUpdate] = Field(default_factory=list, description="Cases this transaction updated (its sender's, "
                                    "receiver's, and its alerts' subjects'): sectorflow_aml.cases.")
