"""The AML workbench's pages, decisions and labels over its routes (FastAPI TestClient; the browser test is
test_workbench_e2e.py): sign-in and cookie flags, CSRF, roles, tenants, four eyes, escaping, the labels file, the
state store (SQLite, and PostgreSQL with SECTORFLOW_TEST_POSTGRES_DSN)."""

from __future__ import annotations

import csv
import json
import os
import re
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sectorflow import Taskflow, open_state_store
from sectorflow.serving import ServeConfig, create_app, hash_key, web_app
from sectorflow_aml.cases import read_cases
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.workbench.decisions import LABEL_HEADER, DecisionBook, DecisionError, FourEyesError

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
DSN = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
KEYS = {"ana": ("bank-1", ["role:analyst"]), "appr": ("bank-1", ["role:approver"]),
        "both": ("bank-1", ["role:analyst", "role:approver"]), "aud": ("bank-1", ["audit"]),
        "other": ("bank-2", ["role:analyst"]), "nobody": ("bank-1", ["task:aml"]),
        "audop": ("bank-1", ["audit", "admin"])}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The AMLSim slice run through Taskflow("aml") (its cases on every result), as `sectorflow run aml` writes."""
    out = tmp_path_factory.mktemp("wb") / "results.jsonl"
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    with out.open("w", encoding="utf-8") as handle:
        for r in Taskflow("aml")(txns):
            handle.write(r.model_dump_json() + "\n")
    return out


def config(results: Path, state: str, bank2_results: Path | None = None) -> ServeConfig:
    sources = [{"tenant": "bank-1", "results": str(results), "transactions": str(SAMPLE), "format": "amlsim"}]
    if bank2_results is not None:
        sources.append({"tenant": "bank-2", "results": str(bank2_results), "transactions": str(SAMPLE),
                        "format": "amlsim"})
    return ServeConfig.model_validate({
        "keys": [{"id": k, "sha256": hash_key(f"secret-{k}"), "tenant": t, "scopes": s} for k, (t, s) in KEYS.items()],
        "web": {"aml": {"state_store": state, "sources": sources}}})


def login_token(client: TestClient) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/login").text)[1]


def signed_in(app, user: str) -> tuple[TestClient, str]:
    client = TestClient(app)
    r = client.post("/ui/login", data={"key": f"secret-{user}", "csrf": login_token(client)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = client.get("/ui/")
    m = re.search(r'name="csrf" value="([^"]+)"', page.text)
    return client, m.group(1) if m else ""


@pytest.fixture()
def app(results, tmp_path):
    return web_app(config(results, str(tmp_path / "state.sqlite")))


def test_sign_in_sets_a_strict_http_only_cookie_and_an_unknown_key_is_refused(app):
    client = TestClient(app)
    assert client.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
    bad = client.post("/ui/login", data={"key": "sf_wrong", "csrf": login_token(client)}, follow_redirects=False)
    assert bad.status_code == 401 and "not known" in bad.text and "sf_workbench=" not in bad.headers["set-cookie"]
    forged = TestClient(app).post("/ui/login", data={"key": "secret-ana", "csrf": "x"}, follow_redirects=False)
    assert forged.status_code == 403 and "sf_workbench=" not in forged.headers.get("set-cookie", "")
    ok = client.post("/ui/login", data={"key": "secret-ana", "csrf": login_token(client)}, follow_redirects=False)
    cookie = next(c for c in ok.headers.get_list("set-cookie") if c.startswith("sf_workbench="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "secret-ana" not in cookie
    page = client.get("/ui/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


def test_queue_ranks_the_periods_cases_and_filters_them(app, results):
    client, _ = signed_in(app, "ana")
    cases = [c for c in read_cases(results, everything=True) if c.period == "2017-02"]
    page = client.get("/ui/", params={"period": "2017-02"}).text
    listed = re.findall(r'data-case="([^"]+)"', page)
    assert listed == [c.case_id for c in sorted(cases, key=lambda c: c.rank)]  # by score = by rank
    assert f"{len(cases)} cases" in page
    ranked = [c.case_id for c in sorted(cases, key=lambda c: c.rank)]
    second = client.get("/ui/", params={"period": "2017-02", "per_page": 10, "page": 2}).text
    assert re.findall(r'data-case="([^"]+)"', second) == ranked[10:20] and "page 2 of 8" in second
    assert 'id="next" href="/ui/?period=2017-02&amp;sort=score&amp;order=desc&amp;within=all&amp;per_page=10&amp;page=3"' \
        in second
    typed = [c for c in cases if "model_risk" in c.typologies]
    page = client.get("/ui/", params={"period": "2017-02", "typology": "model_risk", "sort": "amount",
                                      "order": "asc"}).text
    listed = re.findall(r'data-case="([^"]+)"', page)
    assert sorted(listed) == sorted(c.case_id for c in typed) and len(listed) >= 1
    amounts = [next(c.amount_in + c.amount_out for c in typed if c.case_id == cid) for cid in listed]
    assert amounts == sorted(amounts)


def test_case_page_carries_the_graph_evidence_and_transactions(app, results):
    client, _ = signed_in(app, "ana")
    case = max((c for c in read_cases(results, everything=True) if c.alert_ids), key=lambda c: c.transactions)
    page = client.get(f"/ui/cases/{case.case_id}").text
    graph = json.loads(re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', page, re.S)[1])
    ids = {n["id"] for n in graph["nodes"]}
    assert case.account in ids and {n["role"] for n in graph["nodes"] if n["id"] == case.account} == {"subject"}
    assert len(graph["edges"]) == min(len(case.transaction_ids), 400)
    assert any(e["path"] for e in graph["edges"])  # the typology's transfers are marked
    assert page.count("<tr><td>20") == len(graph["edges"])  # the transactions table
    assert 'lang="zh"' in page and "/ui/static/cytoscape.min.js" in page and "cdn" not in page.lower()
    assert f"Counterparties in {case.period}: {case.counterparties_in_period};" in page  # case-level graph evidence
    more = client.get(f"/ui/cases/{case.case_id}/expand", params={"account": case.account}).json()
    assert all(case.account in (e["source"], e["target"]) for e in more["edges"])
    assert not {e["id"] for e in more["edges"]} & set(case.transaction_ids)
    assert client.get("/ui/static/cytoscape.LICENSE").text.startswith("Copyright (c) 2016-2026, The Cytoscape")


def test_decisions_need_the_csrf_token_and_the_role_and_reasons_are_escaped(app, results):
    cid = read_cases(results)[0].case_id
    client, csrf = signed_in(app, "ana")
    forged = client.post(f"/ui/cases/{cid}/decide", data={"action": "close_false_positive", "reason": "x"})
    assert forged.status_code == 403 and "CSRF" in forged.text
    done = client.post(f"/ui/cases/{cid}/decide", data={"action": "close_false_positive", "csrf": csrf,
                                                        "reason": "<script>alert('x')</script> salary"})
    assert done.status_code == 200 and "closed false positive" in done.text
    assert "<script>alert('x')" not in done.text and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in done.text
    assert client.post(f"/ui/cases/{cid}/decide", data={"action": "close_true_positive", "csrf": csrf,
                                                        "reason": "a\u202eb"}).status_code == 422  # bidi refused
    approver, token = signed_in(app, "appr")
    refused = approver.post(f"/ui/cases/{cid}/decide", data={"action": "escalate", "reason": "r", "csrf": token})
    assert refused.status_code == 403 and "analyst role" in refused.text
    nobody, _ = signed_in(app, "nobody")
    assert nobody.get("/ui/").status_code == 403


def test_four_eyes_the_maker_never_approves_their_own_escalation(app, results):
    cid = read_cases(results)[1].case_id
    both, csrf = signed_in(app, "both")
    assert both.post(f"/ui/cases/{cid}/decide", data={"action": "approve", "csrf": csrf}).status_code == 422
    both.post(f"/ui/cases/{cid}/decide", data={"action": "escalate", "reason": "layering", "csrf": csrf})
    own = both.post(f"/ui/cases/{cid}/decide", data={"action": "approve", "csrf": csrf})
    assert own.status_code == 403 and "four eyes" in own.text
    approver, token = signed_in(app, "appr")
    assert "escalated" in approver.get(f"/ui/cases/{cid}").text
    ok = approver.post(f"/ui/cases/{cid}/decide", data={"action": "approve", "csrf": token, "reason": "agreed"})
    assert ok.status_code == 200 and "str approved" in ok.text
    page = approver.get("/ui/reports").text
    assert f"str-{cid}" in page and "approved" in page
    from datetime import datetime, timezone

    from sectorflow_aml.calendars import calendar_for, suspicious_due

    today = datetime.now(timezone.utc).date()
    assert suspicious_due("CN", calendar_for("CN"), today).isoformat() in page  # 5 working days after approval


def test_a_decision_whose_audit_record_fails_is_not_stored(app, results, monkeypatch):
    import sectorflow.compliance
    from sectorflow.compliance import AuditWriteError

    def broken(**kwargs):
        raise AuditWriteError("the audit store is read-only")

    monkeypatch.setattr(sectorflow.compliance, "record_case_disposition", broken)
    cid = read_cases(results)[2].case_id
    client, csrf = signed_in(app, "ana")
    r = client.post(f"/ui/cases/{cid}/decide", data={"action": "close_false_positive", "reason": "r", "csrf": csrf})
    assert r.status_code == 503 and "not recorded" in r.text and "read-only" in r.text
    assert app.state.aml_workbench.book("bank-1").status(cid).status == "new"


def test_one_tenant_never_sees_another_tenants_cases(results, tmp_path):
    other = tmp_path / "bank2.jsonl"
    other.write_text("", encoding="utf-8")  # bank-2 has no cases yet
    app = web_app(config(results, str(tmp_path / "s.sqlite"), bank2_results=other))
    cid = read_cases(results)[0].case_id
    client, _ = signed_in(app, "other")
    assert "0 cases" in client.get("/ui/").text
    assert client.get(f"/ui/cases/{cid}").status_code == 404
    assert client.get(f"/ui/cases/{cid}/expand", params={"account": "x"}).status_code == 404


def test_audit_page_is_for_audit_admins_and_shows_the_records(app, results):
    cid = read_cases(results)[0].case_id
    client, csrf = signed_in(app, "ana")
    client.get(f"/ui/cases/{cid}")
    client.post(f"/ui/cases/{cid}/decide", data={"action": "close_true_positive", "reason": "confirmed", "csrf": csrf})
    assert client.get("/ui/audit").status_code == 403
    auditor, _ = signed_in(app, "aud")
    page = auditor.get("/ui/audit", params={"case": cid}).text
    assert "Verify: intact" in page and "Last checkpoint" in page
    assert "case.disposed" in page and "closed_true_positive" in page and "<td>ana</td>" in page
    assert f"GET /ui/cases/{cid}" in page  # the view, with the user as actor
    operator, _ = signed_in(app, "audop")  # separation of duties: an operator (admin) is never the audit admin
    refused = operator.get("/ui/audit")
    assert refused.status_code == 403 and "separation of duties" in refused.text


def test_a_bad_source_is_a_config_error_at_start(tmp_path):
    from sectorflow import ConfigError

    cfg = ServeConfig.model_validate({"web": {"aml": {"state_store": str(tmp_path / "s.sqlite"),
                                                      "sources": [{"tenant": "b", "results": "r.jsonl"}]}}})
    with pytest.raises(ConfigError, match="transactions"):
        web_app(cfg)


def test_the_server_mounts_the_workbench_under_ui_and_keeps_it_out_of_the_api_schema(results, tmp_path):
    cfg = config(results, str(tmp_path / "s.sqlite")).model_copy(update={"serve": ["aml"]})
    app = create_app(cfg)
    client = TestClient(app)  # no lifespan: models are not loaded, pages need none
    assert client.get("/ui/login").status_code == 200
    assert not [p for p in client.get("/openapi.json").json()["paths"] if p.startswith("/ui")]
    cid = read_cases(results)[0].case_id
    analyst, csrf = signed_in(app, "ana")  # forms pass the server's middleware (body limit, request ids)
    done = analyst.post(f"/ui/cases/{cid}/decide", data={"action": "assign", "csrf": csrf})
    assert done.status_code == 200 and "in review" in done.text and "assignee ana" in done.text


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = open_state_store(tmp_path / "state.sqlite")
        yield s
        s.close()
        return
    if not DSN:
        pytest.skip("SECTORFLOW_TEST_POSTGRES_DSN is not set (bash scripts/start_postgres.sh)")
    from sectorflow.state_store_pg import PostgresStateStore

    schema = f"sf_wb_test_{uuid.uuid4().hex[:12]}"
    s = PostgresStateStore(DSN, schema=schema)
    yield s
    s._execute(f"DROP SCHEMA {schema} CASCADE")
    s.close()


def test_decisions_survive_a_restart_and_export_as_labels(store, tmp_path, cli_main):
    book = DecisionBook(store, "bank-1")
    book.decide("c1", "A1", "2017-02", "close_false_positive", "ana", "salary")
    book.decide("c2", "A2", "2017-02", "escalate", "ana", "fan-in, then out within a day")
    with pytest.raises(FourEyesError):
        book.decide("c2", "A2", "2017-02", "approve", "ana")
    book.decide("c2", "A2", "2017-02", "approve", "appr")
    book.decide("c3", "A3", "2017-03", "assign", "ana")  # taken, not decided: no label
    with pytest.raises(DecisionError):
        book.decide("c2", "A2", "2017-02", "close_false_positive", "ana", "changed my mind")
    DecisionBook(store, "bank-2").decide("c9", "B9", "2017-02", "close_true_positive", "x", "other bank")
    again = DecisionBook(store, "bank-1")  # a new process's view of the same store
    assert {k: v.status for k, v in again.statuses().items()} == {
        "c1": "closed_false_positive", "c2": "str_approved", "c3": "in_review"}
    rows = again.labels()
    assert [(r["case_id"], r["disposition"], r["decided_by"], r["reason"]) for r in rows] == [
        ("c1", "false_positive", "ana", "salary"), ("c2", "str_approved", "appr", "fan-in, then out within a day")]
    if not store.url.startswith("postgres"):  # the command on the same store (a PostgreSQL URL works alike)
        out = tmp_path / "labels.csv"
        assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1",
                         "--state", store.url]) == 0
        with out.open(newline="", encoding="utf-8") as handle:
            assert handle.readline().strip() == ",".join(LABEL_HEADER)
            handle.seek(0)
            got = list(csv.DictReader(handle))
        assert [(r["case_id"], r["account_id"], r["period"], r["disposition"]) for r in got] == [
            ("c1", "A1", "2017-02", "false_positive"), ("c2", "A2", "2017-02", "str_approved")]
        from sectorflow_aml.labels import read_labels  # what `sectorflow aml train --labels` reads

        assert read_labels(out).label == {"A1": 0, "A2": 1}


@pytest.mark.parametrize("damage", ["truncated_gz", "cut_line"])
def test_a_damaged_results_file_is_a_clear_503_and_a_preload_warning_not_a_500(results, tmp_path, caplog, damage):
    """Fresh-user report (3 Dec 2026): a truncated .gz results file gave HTTP 500 (the preload thread died of an
    EOFError). `sectorflow.open_text` now raises InvalidInputError for it: the preload logs one warning naming the
    file, and the tenant's pages answer 503 (its data cannot be shown; the request itself is fine) with that message."""
    import gzip
    import logging

    from sectorflow_aml.workbench.data import Catalogue, Source

    data = results.read_bytes()
    if damage == "truncated_gz":
        packed = gzip.compress(data)
        bad = tmp_path / "results.jsonl.gz"
        bad.write_bytes(packed[: len(packed) // 2])
        said = f"Input file {bad} is truncated (the gzip file ends early"
    else:
        bad = tmp_path / "results.jsonl"
        bad.write_bytes(data[: len(data) // 2])
        said = f"{bad}, line "
    source = {"tenant": "bank-1", "results": str(bad), "transactions": str(SAMPLE), "format": "amlsim"}
    with caplog.at_level(logging.WARNING, logger="sectorflow_aml.workbench"):
        Catalogue([Source.model_validate(source)]).preload()  # what the preload thread runs at start
    assert [r.getMessage() for r in caplog.records if said in r.getMessage()], caplog.text
    cfg = ServeConfig.model_validate({
        "keys": [{"id": "ana", "sha256": hash_key("secret-ana"), "tenant": "bank-1", "scopes": ["role:analyst"]}],
        "web": {"aml": {"state_store": str(tmp_path / "state.sqlite"), "preload": False, "sources": [source]}}})
    client = TestClient(web_app(cfg), raise_server_exceptions=False)
    client.post("/ui/login", data={"key": "secret-ana", "csrf": login_token(client)}, follow_redirects=False)
    for page in ("/ui/", "/ui/cases/case-2017-01-000000000000"):
        answer = client.get(page)
        assert answer.status_code == 503, answer.text
        assert said in answer.text.replace("&#39;", "'")
