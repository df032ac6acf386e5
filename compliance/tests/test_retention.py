"""Retention per record kind (issue 23, item 5): AML calls, case dispositions and report drafts stay in the live
store at least 5 years, other operation logs at least 6 months; ``archive`` moves each record when its own kind's
retention ends and keeps every proof; a shorter setting is refused unless allow_short_retention."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from sectorflow.compliance import (AuditConfigError, load_config, record_case_disposition, record_report_draft,
                                   verify_log)
from sectorflow.compliance import admin as admin_module
from sectorflow.compliance.admin import AuditAdmin, read_archive
from sectorflow.compliance.records import make_object, record_kind
from sectorflow.compliance.verify import verify_proof_document


def test_defaults_and_minimums_per_kind(tmp_path: Path) -> None:
    cfg = load_config({"SECTORFLOW_HOME": str(tmp_path)})
    assert {k: cfg.retention_for(k) for k in ("aml_call", "case_disposition", "report_draft", "operations")} == \
           {"aml_call": 1827, "case_disposition": 1827, "report_draft": 1827, "operations": 180}
    toml = tmp_path / "a.toml"
    toml.write_text("[audit.retention_by_kind]\naml_call = 365\n")
    with pytest.raises(AuditConfigError, match=r"aml_call=365 is under 1827 days \(five years"):
        load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml), "SECTORFLOW_HOME": str(tmp_path)})
    toml.write_text("[audit]\nallow_short_retention = true\n[audit.retention_by_kind]\naml_call = 365\n")
    assert load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml)}).retention_for("aml_call") == 365
    toml.write_text("[audit.retention_by_kind]\noperations = 90\n")
    with pytest.raises(AuditConfigError, match="six months"):
        load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml)})
    toml.write_text("[audit.retention_by_kind]\nchats = 9000\n")
    with pytest.raises(AuditConfigError, match="unknown kind"):
        load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml)})


def test_record_kinds() -> None:
    assert record_kind({"event": "task.call_finished", "object": {"task": "aml"}}) == "aml_call"
    assert record_kind({"event": "task.call_finished", "object": {"task": "ocr"}}) == "operations"
    assert record_kind({"event": "case.disposed", "object": {"task": "aml"}}) == "case_disposition"
    assert record_kind({"event": "report.submitted", "object": {}}) == "report_draft"
    assert record_kind({"event": "access.decision", "object": {"task": "aml"}}) == "operations"


def test_archive_moves_each_kind_when_its_own_retention_ends(audited: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    lg = audited()
    lg.append("task.call_finished", actor="analyst", obj=make_object(task="aml"))
    record_case_disposition(case_id="case-1", disposition="reported", actor="analyst", alert_ids=["a1"])
    record_report_draft(report_id="str-1", action="submitted", actor="analyst", report_kind="suspicious")
    lg.append("task.call_finished", actor="analyst", obj=make_object(task="plain"))
    with pytest.raises(ValueError, match="disposition"):
        record_case_disposition(case_id="c", disposition="maybe", actor="a")
    kinds = {r.seq: record_kind(json.loads(r.body)) for r in lg.store.iter_records()}
    assert sorted(set(kinds.values())) == ["aml_call", "case_disposition", "operations", "report_draft"]
    keep = {s for s, k in kinds.items() if k != "operations"}
    admin = AuditAdmin(lg, "auditor", roles={"audit_admin"})
    now = datetime.now(timezone.utc)
    monkeypatch.setattr(admin_module, "utc_now", lambda: now + timedelta(days=400))
    first = admin.archive_expired(tmp_path / "arch")
    assert first is not None
    live = {r.seq for r in lg.store.iter_records() if r.body is not None}
    assert keep <= live  # a year on: every AML call, disposition and report draft still live
    assert {s for s, k in kinds.items() if k == "operations"}.isdisjoint(live)
    _head, docs = read_archive(first)
    for doc in docs:  # each archived record comes with its proof
        verify_proof_document(doc, lg.keys.trusted_keys())
    assert {d["leaf_index"] for d in docs} == set(kinds) - keep
    monkeypatch.setattr(admin_module, "utc_now", lambda: now + timedelta(days=1826))
    assert {r.seq for r in lg.store.iter_records() if r.body is not None} >= keep
    admin.archive_expired(tmp_path / "arch")
    assert keep <= {r.seq for r in lg.store.iter_records() if r.body is not None}  # 5 years less a day: kept
    monkeypatch.setattr(admin_module, "utc_now", lambda: now + timedelta(days=1828))
    second = admin.archive_expired(tmp_path / "arch")
    assert second is not None and keep <= {d["leaf_index"] for d in read_archive(second)[1]}
    report = verify_log(lg.store, lg.keys.trusted_keys())
    assert report.ok, report.problems
    with gzip.open(second, "rt") as fh:
        assert "case-1" in fh.read()
