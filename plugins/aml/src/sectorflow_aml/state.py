"""Exact, JSON-only encoding of the AML pipeline's state (``AMLPipeline.state_dict`` / ``load_state_dict``).

Convention: every stateful AML object implements ``state_dict(txns) -> dict`` and ``load_state_dict(state, txns)``
itself (:class:`~sectorflow_aml.window.TransactionWindow`, :class:`~sectorflow_aml.reports.ReportEngine`,
:class:`~sectorflow_aml.features.FeatureExtractor`, a typology rule with state of its own); the pipeline assembles
them and owns the shared :class:`TransactionTable`, so that one :class:`~sectorflow_aml.schema.Transaction` that
sits in the window, in two accounts' deques and in a report aggregate is written once and referred to by index.

Values are only str, int, float, bool, None, lists and dicts with str keys (no pickle: a state file is a user
file): ``Decimal`` as its ``str`` (exponent kept: ``"10.50"``), a non-finite float (the window's clock before the
first transaction, "never" in the feature state) as ``"inf"`` / ``"-inf"`` (:func:`enc_float`; JSON has no
infinity), every other float as itself (JSON's ``repr`` round-trips a double exactly), dates as ISO text, tuple keys
(cooldowns) as lists with ``{"set": [...]}`` for a frozenset (:func:`enc_key`). Derived caches (FX factors, business
day buckets, report plans, a reader's shared timestamp objects) are not written: they are rebuilt on use and change
no result.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from typing import Any

from sectorflow import ConfigError

from .schema import Channel, Transaction

FORMAT = "sectorflow.aml.state"
"""The ``format`` field of an AML state dict."""
VERSION = 1
"""The state format's version; a state of another version is refused (:class:`~sectorflow.ConfigError`)."""

_FIELDS = ("transaction_id", "timestamp", "sender_account", "receiver_account", "amount", "currency", "channel",
           "sender_country", "receiver_country", "customer_type", "sender_bank", "receiver_bank")
"""A transaction's row in the table: these fields in this order (timestamp ISO 8601 UTC, amount ``str``)."""
_FIELDS_SET = frozenset(_FIELDS)
_new = object.__new__
_set = object.__setattr__


def enc_float(value: float | None) -> float | str | None:
    """A float for JSON: itself when finite, else ``"inf"``, ``"-inf"`` or ``"nan"``; ``None`` stays ``None``."""
    if value is None or math.isfinite(value):
        return value
    return str(value)


def dec_float(value: float | int | str | None) -> float | None:
    """The float :func:`enc_float` wrote (``None`` stays ``None``)."""
    return None if value is None else float(value)


def enc_key(key: Any) -> Any:
    """A cooldown key (a tuple of str / int / float / None / frozenset of str) as JSON (lists; ``{"set": sorted}``).

    Raises:
        ConfigError: a key part of another type (a rule's new key kind needs an encoding here).
    """
    if isinstance(key, tuple):
        return [enc_key(part) for part in key]
    if isinstance(key, frozenset):
        return {"set": sorted(enc_key(part) for part in key)}
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    raise ConfigError(f"Cannot write the state key part {key!r} ({type(key).__name__}): give the rule's cooldown keys "
                      "as tuples of text, numbers and frozensets.")


def dec_key(value: Any) -> Any:
    """The key :func:`enc_key` wrote."""
    if isinstance(value, list):
        return tuple(dec_key(part) for part in value)
    if isinstance(value, dict):
        return frozenset(dec_key(part) for part in value["set"])
    return value


class TransactionTable:
    """The transactions a state refers to, each written once; ``index(txn)`` gives its row number (by identity)."""

    __slots__ = ("_index", "rows")

    def __init__(self) -> None:
        self._index: dict[int, int] = {}
        self.rows: list[str] = []

    def index(self, txn: Transaction) -> int:
        """The row of ``txn`` in :attr:`rows` (added on first use)."""
        key = id(txn)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.rows)
            self.rows.append(transaction_row(txn))
        return i


_last_stamp: list[Any] = [None, ""]
"""The previous timestamp object and its ISO text (readers share one datetime among a day's transactions)."""
_NONE = "\x00"
"""A field that is ``None`` (no valid field value holds NUL or a tab: ids and banks refuse control characters,
the other fields are codes, numbers and ISO times)."""


def transaction_row(txn: Transaction) -> str:
    """``txn`` as one text row: the fields of ``_FIELDS`` in order, tab-separated, ``None`` as NUL, trailing
    ``None`` fields left out (timestamp ISO 8601 UTC, amount as its ``str``); :func:`decode_transactions` reads it."""
    d = txn.__dict__
    stamp = d["timestamp"]
    if stamp is not _last_stamp[0]:
        _last_stamp[0], _last_stamp[1] = stamp, stamp.isoformat()
    head = f"{d['transaction_id']}\t{_last_stamp[1]}\t{d['sender_account']}\t{d['receiver_account']}\t" \
           f"{d['amount']}\t{d['currency']}\t{d['channel'].value}"
    tail = (d["sender_country"], d["receiver_country"], d["customer_type"], d["sender_bank"], d["receiver_bank"])
    if tail == _NO_TAIL:
        return head
    tail_list = list(tail)
    while tail_list[-1] is None:
        tail_list.pop()
    return head + "\t" + "\t".join(_NONE if v is None else v for v in tail_list)


_NO_TAIL = (None, None, None, None, None)


def decode_transactions(rows: list[str]) -> list[Transaction]:
    """The :class:`Transaction` of each row :class:`TransactionTable` wrote, built without re-validation (the values
    were validated when they first arrived; as :func:`~sectorflow_aml.schema.trusted_transaction`).

    Raises:
        ConfigError: a row of another shape (a damaged or foreign state).
    """
    out: list[Transaction] = []
    channels = {c.value: c for c in Channel}
    last_text, last_stamp = None, None
    try:
        for text in rows:
            row = text.split("\t")
            if len(row) < 12:
                row.extend([_NONE] * (12 - len(row)))
            (tid, ts, sender, receiver, amount, currency, channel, sc, rc, ct, sb, rb) = (
                None if v == _NONE else v for v in row)
            if ts != last_text:  # one datetime per distinct time, as the readers share them
                last_text, last_stamp = ts, datetime.fromisoformat(ts)
            txn = _new(Transaction)
            _set(txn, "__dict__", {
                "transaction_id": tid, "timestamp": last_stamp, "sender_account": sender,
                "receiver_account": receiver, "amount": Decimal(amount), "currency": currency,
                "channel": channels[channel], "sender_country": sc, "receiver_country": rc, "customer_type": ct,
                "sender_bank": sb, "receiver_bank": rb})
            _set(txn, "__pydantic_fields_set__", set(_FIELDS_SET))
            _set(txn, "__pydantic_extra__", None)
            _set(txn, "__pydantic_private__", None)
            out.append(txn)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ConfigError(f"The state's transaction table is damaged ({exc}): export it again or reset the state "
                          "(sectorflow aml state reset).") from exc
    return out


def state_header(pipeline: Any) -> dict[str, Any]:
    """The identity an AML state carries: format, version, task, model (``name@version`` or ``None`` with
    ``model=False``), bundle SHA-256, window length in days, feature names, jurisdiction."""
    scorer = pipeline.scorer
    return {"format": FORMAT, "version": VERSION, "task": pipeline.spec.name, "model": pipeline.model_source,
            # the bundle either model is read from (before 3 Dec 2026 null when only the account model ran: the
            # default since 1 Dec 2026)
            "bundle_sha256": pipeline.bundle.sha256 if pipeline.bundle is not None and (
                scorer is not None or getattr(pipeline, "account_scorer", None) is not None) else None,
            "lookback_days": pipeline.lookback_days,
            "features": list(scorer.feature_names) if scorer is not None else None,
            "account_features": (list(pipeline.account_scorer.feature_names)
                                 if getattr(pipeline, "account_scorer", None) is not None else None),
            "jurisdiction": pipeline.jurisdiction}


def check_header(pipeline: Any, state: Any) -> None:
    """Refuse a state ``pipeline`` cannot continue.

    Raises:
        ConfigError: not an AML state dict, another format version, task, window length, model features (the model
            on in one and off in the other, or another bundle's features) or jurisdiction; the message says what to
            change (the options the state was made with) or to reset the state.
    """
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ConfigError(f"Not an AML state (format {state.get('format') if isinstance(state, dict) else None!r}, "
                          f"expected {FORMAT!r}).")
    if state.get("version") != VERSION:
        raise ConfigError(f"AML state format version {state.get('version')!r}; this sectorflow-aml reads version "
                          f"{VERSION}. Reset the state (sectorflow aml state reset) and feed the history again.")
    mine = state_header(pipeline)
    fix = " Run with the options the state was made with, or reset the state (sectorflow aml state reset)."
    if state.get("task") != mine["task"]:
        raise ConfigError(f"The state belongs to task {state.get('task')!r}, not {mine['task']!r}." + fix)
    if state.get("lookback_days") != mine["lookback_days"]:
        raise ConfigError(f"The state was made with a {state.get('lookback_days')}-day window, this pipeline keeps "
                          f"{mine['lookback_days']:g} days." + fix)
    if state.get("features") != mine["features"]:
        made = "without the learned model (model=False)" if state.get("features") is None else \
            f"with the model {state.get('model')}"
        now = "without the model" if mine["features"] is None else f"with the model {mine['model']}"
        raise ConfigError(f"The state was made {made}; this pipeline runs {now}: the model's feature history "
                          "would be missing or different." + fix)
    if state.get("account_features") != mine["account_features"]:
        made = "without an account model (model=False or account_model=False)" \
            if state.get("account_features") is None else \
            f"with the account model of {state.get('model')}"
        now = "without one" if mine["account_features"] is None else f"with the account model of {mine['model']}"
        raise ConfigError(f"The state was made {made}; this pipeline runs {now}: the account feature history "
                          "would be missing or different." + fix)
    if state.get("jurisdiction") != mine["jurisdiction"]:
        raise ConfigError(f"The state was made for jurisdiction {state.get('jurisdiction')!r}, this pipeline "
                          f"reports for {mine['jurisdiction']!r}." + fix)
