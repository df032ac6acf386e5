"""The audit page's content: the audit log verified, its last checkpoint, and the workbench's records.

Reads the process's audit log (:func:`sectorflow.compliance.get_log`) as an audit admin
(:class:`sectorflow.compliance.AuditAdmin`, which records the read itself and refuses a user without the audit-admin
role or with the operator role too).
"""

from __future__ import annotations

from typing import Any

from sectorflow import ConfigError

MAX_RECORDS = 500
"""Workbench records listed at most (the latest)."""


def audit_summary(user: str, scopes: set[str], tenant: str, case_id: str | None = None) -> dict[str, Any]:
    """``{"verify": {...}, "last_checkpoint": ..., "records": [...]}``: the verify report (``ok``, ``size``,
    ``checkpoints``, ``problems``), the last checkpoint (size and time), and the workbench's records of ``tenant``
    (channel ``web``; those of ``case_id`` only, when given), latest last.

    Raises:
        ConfigError: the audit log is off. AuditAccessDenied: ``user`` is not an audit admin.
    """
    from sectorflow.compliance import AuditAdmin, get_log

    log = get_log()
    if log is None:
        raise ConfigError("The audit log is off (SECTORFLOW_AUDIT=off): nothing to show.")
    admin = AuditAdmin(log, user, roles=scopes, source="web")
    report = admin.verify(log.keys.trusted_keys())
    last = log.store.last_checkpoint()
    records = []
    for rec in admin.export():
        if rec.get("channel") != "web" or rec.get("tenant") != tenant:
            continue
        details = rec.get("details") or {}
        if case_id is not None and details.get("case_id") != case_id and case_id not in str(details.get("action", "")) \
                and f"str-{case_id}" != details.get("report_id"):
            continue
        records.append(rec)
    return {"verify": {"ok": report.ok, "size": report.size, "checkpoints": report.checkpoints,
                       "problems": list(report.problems)[:10], "unsigned_tail": report.unsigned_tail},
            "last_checkpoint": {"size": last.size, "time": last.time} if last else None,
            "records": records[-MAX_RECORDS:]}
