"""The alerts, report drafts and cases of a results file of ``sectorflow run aml``, and the transactions behind an
alert, read back from its input file and checked against what the run recorded (the library of ``sectorflow aml
alerts|reports|explain``, :mod:`.cli`).

``iter_alerts(results)`` / ``iter_reports(results)`` read a results file; ``checked_alert(alert_id, results, source,
fmt)`` returns the alert, its transactions from ``source`` and a note; ``explain_alert`` / ``explain_case`` draw one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sectorflow import ConfigError, InvalidInputError, open_text

from .cases import find_case
from .explain import case_alert, draw_alert
from .loaders import READER_FACTORIES, READERS, guess_format
from .schema import Alert, ReportDraft, Transaction, input_context, transactions_digest

log = logging.getLogger("sectorflow_aml")

_AML_FIELDS = frozenset({"risk_score", "alerts", "reports", "cases", "account_scores"})
"""Fields of which an AML result (``TransactionAssessment``) holds at least one, beside its ``transaction_id``."""


def require_aml_results(results: str | Path) -> int:
    """Check that ``results`` is a ``sectorflow run aml`` results file before it is listed; returns its number of
    results (non-empty lines).

    Raises:
        ConfigError: the file is missing. InvalidInputError: it is empty (nothing was run, or the run failed), or its
            first result is not an AML result (another task's results, or not results at all): the message says
            what it found and which command writes AML results.
    """
    count = 0
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if count == 0:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInputError(f"{results}, line {line_no}: not JSON ({exc}); give the JSON lines "
                                            "that `sectorflow run aml FILE --output RESULTS` wrote.") from exc
                task = (record.get("meta") or {}).get("task") if isinstance(record, dict) else None
                if not isinstance(record, dict) or "transaction_id" not in record or task not in (None, "aml") \
                        or not _AML_FIELDS.intersection(record):
                    found = f"results of task {task!r}" if task else "not an AML result"
                    raise InvalidInputError(f"{results}, line {line_no}: {found}; give the JSON lines that "
                                            "`sectorflow run aml FILE --output RESULTS` wrote.",
                                            details=[{"row": line_no, "field": None, "reason": found}])
            count += 1
    if not count:
        raise InvalidInputError(f"{results} holds no results: run `sectorflow run aml FILE --output {results}` "
                                "first (an empty file is what a run that read no rows, or failed, leaves).")
    return count


def _alert_lines(results: str | Path) -> Iterator[tuple[dict[str, Any], list[Alert]]]:
    """Each non-empty line of a results file as ``(record, its alerts)``.

    Raises:
        ConfigError: the file is missing. InvalidInputError: a line that is not a result object (names the line).
    """
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                alerts = [Alert.model_validate(a) for a in record.get("alerts", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "alerts", "reason": str(exc)}]) from exc
            yield record, alerts


def iter_alerts(results: str | Path) -> Iterator[Alert]:
    """Every alert in a ``sectorflow run aml`` results file (JSON lines of ``TransactionAssessment``).

    Raises:
        ConfigError: the file is missing. InvalidInputError: a line that is not a result object (names the line).
    """
    for _, alerts in _alert_lines(results):
        yield from alerts


def iter_reports(results: str | Path) -> Iterator[ReportDraft]:
    """Every report draft in a ``sectorflow run aml`` results file (same errors as :func:`iter_alerts`)."""
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                drafts = [ReportDraft.model_validate(r) for r in json.loads(line).get("reports", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "reports", "reason": str(exc)}]) from exc
            yield from drafts


def _locate_alert(results: str | Path, alert_id: str) -> tuple[Alert, str | None]:
    """The alert and the ``transaction_id`` of the result it is on (the transaction that completed it)."""
    known: list[str] = []
    for record, alerts in _alert_lines(results):
        for alert in alerts:
            if alert.alert_id == alert_id:
                trigger = record.get("transaction_id")
                return alert, trigger if isinstance(trigger, str) else None
            known.append(alert.alert_id)
    sample = ", ".join(known[:5]) or "none"
    raise ConfigError(f"No alert {alert_id!r} in {results} ({len(known)} alerts; e.g. {sample}). "
                      f"List them with `sectorflow aml alerts --results {results}`.")


def recorded_transactions(results: str | Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    """What ``results`` records about the transactions ``ids``: the rows of its report drafts' ``transactions``.

    A result line carries no amounts of its own; suspicious-report drafts (alerts scoring at least
    ``str_threshold``) list every transaction of their alert with time, accounts, amount, currency, channel and
    countries, and large-value / CTR drafts list theirs with time, the customer's account and the counterparty,
    amount, currency, channel and countries. Returns ``{transaction_id: row}`` (the
    first row seen per id; a suspicious draft's row, which names the accounts, is preferred).

    Raises:
        InvalidInputError: a line that is not a result object (names the line).
    """
    found: dict[str, dict[str, Any]] = {}
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip() or '"reports":[]' in line:  # most results carry no draft (a quote inside a JSON
                continue  # string is escaped, so this text is only ever the top-level empty list)
            try:
                drafts = [ReportDraft.model_validate(r) for r in json.loads(line).get("reports", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "reports", "reason": str(exc)}]) from exc
            for draft in drafts:
                rows = draft.elements.get("transactions")
                for row in rows if isinstance(rows, list) else []:
                    tid = row.get("transaction_id") if isinstance(row, dict) else None
                    if tid in ids and (tid not in found
                                       or "sender_account" in row and "sender_account" not in found[tid]):
                        found[tid] = row
    return found


def load_alert_transactions(source: str | Path, fmt: str | None, ids: set[str], *,
                            mapping: Mapping[str, str] | None = None,
                            defaults: Mapping[str, Any] | None = None,
                            input_timezone: str | None = None) -> list[Transaction]:
    """The transactions of ``source`` whose ids are in ``ids`` (other rows are not validated).

    ``mapping`` (``{transaction_field: source_column}``) and ``defaults`` (``{transaction_field: value}``) read the
    file as ``sectorflow run aml --column FIELD=COLUMN --default FIELD=VALUE`` did (csv, jsonl, parquet);
    ``input_timezone`` reads timestamps without a UTC offset as the run's ``-O input_timezone=ZONE`` did.

    Raises:
        ConfigError: unknown format; ``mapping``/``defaults`` for a fixed-column format or naming a field that
            ``Transaction`` lacks.
    """
    context = input_context({"input_timezone": input_timezone})
    fmt = fmt or guess_format(source)
    if fmt not in READERS:
        raise ConfigError(f"Unknown format {fmt!r}; use one of {', '.join(sorted(READERS))}.")
    reader = READERS[fmt]
    if (mapping or defaults) and fmt not in READER_FACTORIES:
        raise ConfigError(f"Format {fmt!r} has fixed columns: it takes no --column/--default. Formats that do: "
                          f"{', '.join(sorted(READER_FACTORIES))}.")
    if fmt in READER_FACTORIES:  # told the zone, so its note on timestamps without an offset names it
        reader = READER_FACTORIES[fmt](mapping=dict(mapping) if mapping else None,
                                       defaults=dict(defaults) if defaults else None, context=context)
    found = []
    for _, record in reader(source):
        if isinstance(record, Transaction):  # a typed reader's row, already checked
            if record.transaction_id in ids:
                found.append(record)
        elif isinstance(record, dict) and record.get("transaction_id") in ids:
            found.append(Transaction.model_validate(record, context=context))
    return found


def explain_alert(alert_id: str, results: str | Path, source: str | Path, png: str | Path,
                  fmt: str | None = None, mapping: Mapping[str, str] | None = None,
                  defaults: Mapping[str, Any] | None = None, input_timezone: str | None = None,
                  history: Sequence[str | Path] = (), timezone: str | None = None) -> Path:
    """Python equivalent of ``sectorflow aml explain``: find the alert, read its transactions, check them against the
    results (:func:`check_input_matches`), draw the PNG. What the results could not confirm is logged as a warning
    and written under the picture. ``mapping``, ``defaults`` and ``input_timezone`` are the run's ``--column`` /
    ``--default`` / ``-O input_timezone`` (see :func:`load_alert_transactions`); ``history`` the run's
    ``--history`` files (an alert of a daily run can hold transactions of earlier files). ``timezone``: the zone of
    the times drawn (default ``input_timezone``, else UTC).

    Raises:
        ConfigError: no such alert, unknown format, a bad mapping. InvalidInputError: ``source`` is not the input of
            ``results``.
    """
    alert, transactions, note = checked_alert(alert_id, results, source, fmt, mapping=mapping, defaults=defaults,
                                              input_timezone=input_timezone, history=history)
    if note:
        log.warning("%s", note)
    return draw_alert(alert, transactions, png, note=note, timezone=timezone or input_timezone)


def explain_case(case_id: str, results: str | Path, source: str | Path, png: str | Path, fmt: str | None = None,
                 mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
                 input_timezone: str | None = None, history: Sequence[str | Path] = (),
                 timezone: str | None = None) -> Path:
    """Draw the case ``case_id`` of ``results`` (:func:`sectorflow_aml.cases.find_case`): its transactions read from
    ``history`` and ``source`` as the run read them, the case's account in red, its alerts' reasons in the title. Each
    of the case's alerts is checked against the input as :func:`checked_alert` checks one.

    Raises:
        ConfigError: no such case. InvalidInputError: ``source`` is not the input of ``results``.
    """
    case = find_case(results, case_id)
    alerts = []
    for alert_id in case.alert_ids:
        alert, _, note = checked_alert(alert_id, results, source, fmt, mapping=mapping, defaults=defaults,
                                       input_timezone=input_timezone, history=history)
        alerts.append(alert)
    ids = set(case.transaction_ids)
    found: dict[str, Transaction] = {}
    for path in [*history, source]:
        for txn in load_alert_transactions(path, fmt, ids, mapping=mapping, defaults=defaults,
                                           input_timezone=input_timezone):
            found.setdefault(txn.transaction_id, txn)
    if not found:
        raise InvalidInputError(f"None of case {case_id}'s {len(ids)} transactions is in {source}: pass the input "
                                f"(and --format, --history) that `sectorflow run aml` read.")
    note = None if not case.alert_ids else f"{len(case.alert_ids)} alert(s) of the case checked against the input."
    return draw_alert(case_alert(case, alerts), found.values(), png, note=note, timezone=timezone or input_timezone)


def checked_alert(alert_id: str, results: str | Path, source: str | Path, fmt: str | None = None, *,
                  mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
                  input_timezone: str | None = None,
                  history: Sequence[str | Path] = ()) -> tuple[Alert, list[Transaction], str | None]:
    """The alert, its transactions read from ``history`` (the run's ``--history`` files, oldest first) and ``source``
    and checked against ``results``, and a note naming what the results could not confirm (``None`` when every drawn
    amount and time was compared). As in the run, the first row of a repeated id counts.

    Raises:
        ConfigError: no such alert, unknown format. InvalidInputError: ``source`` is not the input of ``results``.
    """
    alert, trigger_id = _locate_alert(results, alert_id)
    ids = set(alert.transaction_ids) | ({trigger_id} if trigger_id else set())
    found: dict[str, Transaction] = {}
    # a reused id: the run counted the first row only
    for path in [*history, source]:
        for txn in load_alert_transactions(path, fmt, ids, mapping=mapping, defaults=defaults,
                                           input_timezone=input_timezone):
            found.setdefault(txn.transaction_id, txn)
    trigger = found.get(trigger_id) if trigger_id else None
    wanted = set(alert.transaction_ids)
    transactions = [t for tid, t in found.items() if tid in wanted]
    recorded = recorded_transactions(results, set(alert.transaction_ids))
    named = f"{source} (with {len(history)} --history file{'s' if len(history) > 1 else ''})" if history else source
    try:
        unchecked = check_input_matches(alert, transactions, named, recorded=recorded, trigger=trigger)
    except InvalidInputError as exc:
        missing = exc.details.get("missing") if isinstance(exc.details, dict) else None
        if missing and not history:  # a daily run's alert reaches back into the files it was given as history
            raise InvalidInputError(f"{exc.message} If the run had --history files, pass them to explain with "
                                    f"--history too (oldest first).", details=exc.details) from None
        raise
    note = None
    if alert.transactions_sha256 is not None:  # results since the digest: every drawn field is compared at once
        if transactions_digest(found[tid] for tid in alert.transaction_ids) != alert.transactions_sha256:
            raise InvalidInputError(
                f"{named} is not the input that produced alert {alert.alert_id}: {_digest_mismatch(alert, recorded)} "
                f"(the alert's transactions_sha256 does not match). Pass the same --input (and --format, --column, "
                f"--default, --input-timezone) that `sectorflow run aml` read, unedited.",
                details={"alert_id": alert.alert_id, "transactions_sha256": alert.transactions_sha256,
                         "not_recorded": [t for t in alert.transaction_ids if t not in recorded][:20]})
        unchecked = []
    if unchecked:
        note = (f"Amounts of {len(unchecked)} of the alert's {len(alert.transaction_ids)} transfers were not checked "
                f"against {Path(str(results)).name}: it records amounts only in report drafts (ids, accounts and the "
                f"completing transfer's time were checked).")
    return alert, transactions, note


def _digest_mismatch(alert: Alert, recorded: dict[str, dict[str, Any]]) -> str:
    """Which of ``alert``'s transactions can have changed, when their digest differs but every one that the results
    record (``recorded``, already compared field by field by :func:`check_input_matches`) matches: the others."""
    n = len(alert.transaction_ids)
    others = [tid for tid in alert.transaction_ids if tid not in recorded]
    fields = "time, accounts, amount, currency, channel or a country"
    if not others:
        return (f"the results' report drafts record all {n} of its transactions and they match, but their digest "
                f"does not (results written by another sectorflow version, or read with other options?)")
    if len(others) == 1:
        rest = f"; the other {n - 1} match what the results' report drafts record" if n > 1 else ""
        return f"its transaction {others[0]} differs from what the run read ({fields}){rest}"
    if len(others) == n:
        return (f"one or more of the alert's {n} transactions differ from what the run read ({fields}); the results "
                f"record no values of them to tell which")
    shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
    return (f"one or more of the {len(others)} of its {n} transactions that the results do not record ({shown}) "
            f"differ from what the run read ({fields}); the other {n - len(others)} match the report drafts' rows")


def _differences(txn: Transaction, row: dict[str, Any]) -> list[str]:
    """Where ``txn`` (read from the input) differs from ``row`` (a report draft's record of it)."""
    out = []
    try:
        if "amount" in row and Decimal(str(row["amount"])) != txn.amount:
            out.append(f"amount {txn.amount} there, {row['amount']} in the results")
    except (InvalidOperation, TypeError):
        out.append(f"amount {txn.amount} there, {row['amount']!r} in the results")
    if "currency" in row and row["currency"] != txn.currency:
        out.append(f"currency {txn.currency} there, {row['currency']} in the results")
    if "time" in row:
        try:
            same = datetime.fromisoformat(str(row["time"])) == txn.timestamp
        except (TypeError, ValueError):
            same = False
        if not same:
            out.append(f"time {txn.timestamp.isoformat()} there, {row['time']} in the results")
    for side in ("sender_account", "receiver_account"):
        if side in row and row[side] != getattr(txn, side):
            out.append(f"{side} {getattr(txn, side)} there, {row[side]} in the results")
    if row.get("direction") in ("in", "out"):  # a large-value / CTR row: the customer's account and the other side
        own, other = ((txn.receiver_account, txn.sender_account) if row["direction"] == "in"
                      else (txn.sender_account, txn.receiver_account))
        for key, value in (("account", own), ("counterparty_account", other)):
            if key in row and row[key] != value:
                out.append(f"{key} {value} there, {row[key]} in the results")
    channel = getattr(txn.channel, "value", txn.channel)
    if "channel" in row and row["channel"] != channel:
        out.append(f"channel {channel} there, {row['channel']} in the results")
    for key in ("sender_country", "receiver_country"):
        if key in row and row[key] != getattr(txn, key):
            out.append(f"{key} {getattr(txn, key)} there, {row[key]} in the results")
    return out


def check_input_matches(alert: Alert, transactions: list[Transaction], source: str | Path, *,
                        recorded: dict[str, dict[str, Any]] | None = None,
                        trigger: Transaction | None = None) -> list[str]:
    """Refuse to draw from an input file that is not the one the results came from.

    Transaction ids alone do not prove it (the AMLSim reader numbers rows, so every AMLSim file has the same ids),
    nor do accounts (an edited amount keeps both). Checked: every transaction of the alert is in the file and
    involves one of the alert's accounts; each one the results record (``recorded``, from
    :func:`recorded_transactions`: the transactions of report drafts) has the recorded time, accounts, amount,
    currency, channel and countries; ``trigger`` (the input's transaction whose result carries the alert) has the alert's ``time`` (to the
    millisecond).

    Returns:
        The ids of the alert's transactions whose amount could not be compared (the results record none for them).

    Raises:
        InvalidInputError: ids missing from the file, transactions between accounts the alert does not name, or a
            transaction whose time, accounts, amount, currency, channel or countries differ from the results (names
            the first few).
    """
    recorded = recorded or {}
    found = {t.transaction_id for t in transactions}
    missing = [tid for tid in alert.transaction_ids if tid not in found]
    accounts = set(alert.accounts)
    foreign = [t.transaction_id for t in transactions
               if t.sender_account not in accounts and t.receiver_account not in accounts]
    changed = {t.transaction_id: diff for t in transactions if t.transaction_id in recorded
               for diff in [_differences(t, recorded[t.transaction_id])] if diff}
    if trigger is not None and abs((trigger.timestamp - alert.time).total_seconds()) >= 1e-3:
        changed.setdefault(trigger.transaction_id, []).append(
            f"time {trigger.timestamp.isoformat()} there, but the alert it completed is timed "
            f"{alert.time.isoformat()} in the results")
    if missing or foreign or changed:
        if missing:
            what = (f"{len(missing)} of the alert's {len(alert.transaction_ids)} transactions "
                    f"{'is' if len(missing) == 1 else 'are'} not in it")
        elif foreign:
            what = f"transactions {', '.join(foreign[:5])} there involve none of the alert's accounts"
        else:
            what = "; ".join(f"{tid} has {', '.join(diffs)}" for tid, diffs in list(changed.items())[:3])
            if len(changed) > 3:
                what += f"; {len(changed) - 3} more transactions differ"
        raise InvalidInputError(f"{source} is not the input that produced alert {alert.alert_id}: {what}. Pass the "
                                f"same --input (and --format, --column, --default, --input-timezone) that "
                                f"`sectorflow run aml` read, unedited.",
                                details={"missing": missing[:20], "foreign": foreign[:20],
                                         "changed": {k: v for k, v in list(changed.items())[:20]}})
    return [tid for tid in alert.transaction_ids if tid not in recorded]
