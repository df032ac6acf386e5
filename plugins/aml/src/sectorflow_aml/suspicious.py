"""Suspicious transaction report drafts (CN 可疑交易报告, PBOC Order 2016 No. 3 Arts. 11-15; US SAR outline).

:func:`suspicious_report` turns an alert and its transactions into a :class:`~sectorflow_aml.schema.ReportDraft` of
kind ``"suspicious"``; the pipeline drafts one for every alert scoring at least ``str_threshold``. Dates are local
days in the report's time zone, as in the large-value drafts of :mod:`sectorflow_aml.reports`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import date, tzinfo
from decimal import Decimal
from typing import Any, Literal

from sectorflow import ConfigError

from .calendars import CN_SUSPICIOUS_WORKING_DAYS, US_SAR_DAYS, calendar_for, suspicious_due
from .fx import FxRates, FxTable, MissingRateError, ensure_rates, to_minor_unit
from .reports import DEFAULT_TIMEZONE, FIELD_LIST_NOTE, account_map, parse_report_zone
from .schema import Alert, ReportDraft, Transaction
from .thresholds import HOME_CURRENCY


def suspicious_report(alert: Alert, transactions: Iterable[Transaction], jurisdiction: Literal["CN", "US"] = "CN",
                      *, fx: FxRates | FxTable | Iterable[FxTable] | None = None, institution: str | None = None,
                      confirmed_on: date | None = None, timezone: str | tzinfo | None = None,
                      customers: Mapping[str, str] | None = None) -> ReportDraft:
    """Draft a suspicious transaction report (CN 可疑交易报告, PBOC Order 2016 No. 3 Arts. 11-15) for ``alert``.

    The report's customer (``customer_account``) is the alert's subject, its first account (each rule lists its
    subject first: the hub of a fan-in, the funnel of a structuring fan-in, the depositing customer of a cumulative
    structuring), or that account's customer id in ``customers`` (``{account: customer_id}``, as the large-value
    and CTR drafts name the customer); ``elements["subject_accounts"]`` lists all of them in the alert's order.

    Dates are local dates in ``timezone`` (an IANA name or tzinfo; default ``Asia/Shanghai`` for CN,
    ``America/New_York`` for US, as :class:`ReportEngine`; the pipeline passes its ``report_timezone``): the
    detection day (``business_date``, the deadline's start) is the local day of ``alert.time``, and each foreign
    amount is converted at the rate of its transaction's local day, as the large-value drafts do. Each listed
    transaction carries its UTC and local time, and its amount in the home currency with the rate used.

    ``transactions`` may hold more than the alert's; those it names are taken, and ids not supplied are listed in
    ``elements["transactions_not_supplied"]``. The total is in the home currency (CNY or USD), converting with
    ``fx`` where needed. The due date counts 5 working days from ``confirmed_on`` (the date the internal procedure
    confirmed the suspicion, Art. 15; UNVERIFIED); without it ``due_by`` is ``None`` (the deadline cannot be known before
    a person confirms), and ``elements`` state the rule (``due_rule``) and the date it gives if the suspicion is
    confirmed on the detection day (``due_if_confirmed_on_detection``), which ``sectorflow aml reports`` shows. With ``jurisdiction="US"`` the
    draft is a minimal SAR outline (31 CFR 1020.320, due 30 days after detection; UNVERIFIED), dated from the alert.
    Analyst fields (suspicion description, measures taken) are left ``None`` to be written by a person.

    Raises:
        ConfigError: unknown jurisdiction or time zone. MissingRateError: a foreign-currency transaction without a
            rate.
    """
    if jurisdiction not in HOME_CURRENCY:
        raise ConfigError(f"jurisdiction must be CN or US, not {jurisdiction!r}.")
    home = HOME_CURRENCY[jurisdiction]
    zone = parse_report_zone(timezone or DEFAULT_TIMEZONE[jurisdiction])
    rates = ensure_rates(fx)
    wanted = set(alert.transaction_ids)
    chosen = sorted((t for t in transactions if t.transaction_id in wanted), key=lambda t: t.timestamp)
    rows: list[dict[str, Any]] = []
    for t in chosen:
        local = t.timestamp.astimezone(zone)
        try:
            rates.rate(t.currency, home, local.date())
        except MissingRateError as exc:
            raise MissingRateError(
                f"Suspicious report draft of alert {alert.alert_id}: transaction {t.transaction_id} of "
                f"{local.date().isoformat()} ({zone}) is in {t.currency} and the draft's total is in {home}: {exc}",
                details={**(exc.details if isinstance(exc.details, dict) else {}), "alert_id": alert.alert_id,
                         "transaction_id": t.transaction_id}) from exc
        row: dict[str, Any] = {
            "transaction_id": t.transaction_id, "time": t.timestamp.isoformat(), "local_time": local.isoformat(),
            "sender_account": t.sender_account, "receiver_account": t.receiver_account, "sender_bank": t.sender_bank,
            "receiver_bank": t.receiver_bank, "amount": str(t.amount), "currency": t.currency,
            f"amount_{home.lower()}": str(rates.convert(t.amount, t.currency, home, local.date())),
            "channel": t.channel.value, "sender_country": t.sender_country, "receiver_country": t.receiver_country}
        if t.currency != home:
            row["fx_rate"] = f"{t.currency}/{home}={rates.rate(t.currency, home, local.date())}"
        rows.append(row)
    total = to_minor_unit(sum((Decimal(r[f"amount_{home.lower()}"]) for r in rows), Decimal(0)), home)
    found = {t.transaction_id for t in chosen}
    calendar = calendar_for(jurisdiction)
    detected_local = alert.time.astimezone(zone)
    detected = detected_local.date()
    mapping = account_map("customers", customers, "{'ACC1': 'PERSON1', 'ACC2': 'PERSON1'}")
    subject = alert.accounts[0] if alert.accounts else ""
    customer = mapping.get(subject, subject)
    due = suspicious_due(jurisdiction, calendar, confirmed_on if jurisdiction == "CN" else detected) \
        if (confirmed_on or jurisdiction == "US") else None
    if jurisdiction == "CN":
        due_rule = (f"{CN_SUSPICIOUS_WORKING_DAYS} working days after the internal procedure confirms the suspicion "
                    "(PBOC Order 2016 No. 3 Art. 15; read in secondary sources, unverified)")
        due_earliest = suspicious_due(jurisdiction, calendar, detected).isoformat()
    else:
        due_rule = f"{US_SAR_DAYS} calendar days after initial detection (31 CFR 1020.320(b)(3); unverified)"
        due_earliest = due.isoformat() if due else None
    elements: dict[str, Any] = {
        "report_type": "可疑交易报告 (suspicious transaction report)" if jurisdiction == "CN"
        else "Suspicious Activity Report outline (not a FinCEN SAR form)",
        "institution": institution,
        "customer": customer,
        "subject_accounts": list(alert.accounts),
        "typology": alert.typology,
        "variant": getattr(alert, "variant", None),
        "alert_id": alert.alert_id,
        "score": alert.score,
        "detected_by": alert.fired_by,
        "detected_at": alert.time.isoformat(),
        "detected_at_local": detected_local.isoformat(),
        "timezone": str(zone),
        "indicators": [{"code": r.code, "en": r.en, "zh": r.zh, "source": r.source} for r in alert.reasons],
        "transactions": rows,
        "transactions_not_supplied": sorted(wanted - found),
        "suspicion_description": None,
        "measures_taken": None,
        "confirmed_on": confirmed_on.isoformat() if confirmed_on else None,
        "due_rule": due_rule,
        "due_if_confirmed_on_detection": due_earliest,
        "field_list_verified": False,
        "field_list_note": FIELD_LIST_NOTE,
    }
    key = f"suspicious|{jurisdiction}|{alert.alert_id}"
    return ReportDraft(
        report_id=f"STR-{hashlib.sha256(key.encode()).hexdigest()[:16]}", kind="suspicious",
        jurisdiction=jurisdiction,
        regulation="PBOC Order 2016 No. 3, Arts. 11-15" if jurisdiction == "CN" else "31 CFR 1020.320",
        customer_account=customer, transaction_ids=list(alert.transaction_ids),
        total_amount=total, currency=home, business_date=detected.isoformat(), elements=elements,
        due_by=due.isoformat() if due else None)
