"""The workbench's pages under ``/ui/``: sign-in, queue, case, decisions, report drafts, audit.

Every page needs a session (:mod:`.sessions`); every view and every decision is recorded with the user as actor:
views and refusals as access decisions (``host.record_access``, channel ``web``), decisions as ``case.disposed`` and
``report.*`` records of the audit log (:func:`sectorflow.compliance.record_case_disposition`,
:func:`~sectorflow.compliance.record_report_draft`). A user sees only the cases of their key's tenant. Templates
escape every value (Jinja2 autoescape); the graph's data goes into the page as JSON through ``tojson``.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from pydantic import ValidationError

from sectorflow import ConfigError, SectorflowError, open_state_store

from .data import Catalogue, Source, TenantData
from .decisions import DecisionBook, DecisionError, FourEyesError, STATUSES
from .queue import queue_rows
from .sessions import COOKIE, ROLE_SCOPES, Session, Sessions, roles_of

if TYPE_CHECKING:  # pragma: no cover
    from sectorflow.serving import WebHost

PREFIX = "/ui"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; "
                               "base-uri 'none'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store"}
"""Headers of every page: scripts only from this server (no inline script runs, whatever a page holds), no
framing, no caching of case data."""
PRE_COOKIE = "sf_workbench_login"
"""The sign-in form's CSRF token (double-submit: cookie and form field must match), before any session exists."""
PER_PAGE = 100
"""Queue rows per page (filter and sort run over every case of the period first)."""
HERE = Path(__file__).resolve().parent
_DISPOSITION = {"close_true_positive": "closed_true_positive", "close_false_positive": "closed_false_positive",
                "escalate": "escalated", "approve": "reported"}


class Workbench:
    """The workbench's state: host, catalogue of tenants' data, decision books, sessions, templates."""

    def __init__(self, host: WebHost) -> None:
        settings = host.settings("aml")
        self.host = host
        try:
            sources = [Source.model_validate(s) for s in settings.get("sources", [])]
        except ValidationError as exc:
            raise ConfigError(f"[web.aml] sources: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']} (each source "
                              f"names tenant, results, transactions and optionally format, input_timezone).") from None
        self.catalogue = Catalogue(sources)
        self.jurisdiction = settings.get("jurisdiction", "CN")
        if self.jurisdiction not in ("CN", "US"):
            raise ConfigError(f"[web.aml] jurisdiction = {self.jurisdiction!r}: give CN or US (the due dates of "
                              f"suspicious-transaction reports).")
        self.store = open_state_store(settings.get("state_store") or host.state_store)
        self.books: dict[str, DecisionBook] = {}
        self.sessions = Sessions()
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals.update(prefix=PREFIX, statuses=STATUSES)

    def book(self, tenant: str) -> DecisionBook:
        if tenant not in self.books:
            self.books[tenant] = DecisionBook(self.store, tenant)
        return self.books[tenant]

    # --- access ---------------------------------------------------------------------------------------------

    def record(self, request: Request, session: Session | None, what: str, allowed: bool, reason: str) -> None:
        self.host.record_access(actor=session.user if session else None, tenant=session.tenant if session else None,
                                resource="aml.workbench", action=f"{request.method} {what}", allowed=allowed,
                                reason=reason, source=request.client.host if request.client else "unknown",
                                request_id=request_id(request), roles=session.scopes if session else ())

    def session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    def page(self, request: Request, name: str, session: Session | None, code: int = 200, **values: Any
             ) -> HTMLResponse:
        out = self.templates.TemplateResponse(request, name, {"session": session, **values}, status_code=code)
        out.headers.update(SECURITY_HEADERS)
        return out

    def refuse(self, request: Request, session: Session | None, status: int, message: str) -> HTMLResponse:
        self.record(request, session, request.url.path, False, message)
        return self.page(request, "error.html", session, code=status, message=message)


def str_due(st: Any, jurisdiction: str) -> str:
    """The due date of a case's suspicious-transaction report draft: CN, 5 working days after the suspicion is
    confirmed (the approval is the confirmation; ``sectorflow_aml.calendars.suspicious_due``, UNVERIFIED as there);
    US, 30 days after detection (the escalation). Before a CN approval: the rule, not a date."""
    from datetime import date as day_of

    from ..calendars import calendar_for, suspicious_due

    action = "approve" if jurisdiction == "CN" else "escalate"
    start = next((d.at for d in reversed(st.history) if d.action == action), None)
    if start is None:
        return "5 working days after approval"
    return suspicious_due(jurisdiction, calendar_for(jurisdiction), day_of.fromisoformat(start[:10])).isoformat()


def request_id(request: Request) -> str:
    rid = getattr(request.state, "request_id", None)
    if not rid:
        rid = request.state.request_id = uuid.uuid4().hex
    return rid


def _source(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def mount(app: FastAPI, host: WebHost) -> Workbench:
    """Add the workbench's routes and static files to ``app`` under :data:`PREFIX`; returns its state."""
    wb = Workbench(host)
    if host.settings("aml").get("preload", True):  # read the tenants' data now, not at the first user's page
        threading.Thread(target=wb.catalogue.preload, name="aml-workbench-preload", daemon=True).start()
    app.mount(f"{PREFIX}/static", StaticFiles(directory=str(HERE / "static")), name="workbench-static")
    app.include_router(router(wb))
    app.state.aml_workbench = wb
    return wb


def router(wb: Workbench) -> APIRouter:  # noqa: C901 - one closure per page
    r = APIRouter(prefix=PREFIX, include_in_schema=False)

    def need(request: Request, role: str | None = None) -> tuple[Session | None, Response | None, TenantData | None]:
        s = wb.session(request)
        if s is None:
            return None, RedirectResponse(f"{PREFIX}/login", status_code=303), None
        if role is not None and not s.can(role) and not (role == "reviewer" and (s.can("analyst") or
                                                                               s.can("approver"))):
            need_scope = ROLE_SCOPES.get(role, "role:analyst or role:approver")
            return s, wb.refuse(request, s, 403, f"{s.user} lacks the {role} role (scope {need_scope})."), None
        data = None
        if role in ("reviewer", "analyst", "approver"):
            try:
                data = wb.catalogue.get(s.tenant)
            except SectorflowError as exc:
                return s, wb.refuse(request, s, 503, str(exc)), None
            if data is None:
                return s, wb.refuse(request, s, 404, f"No cases are configured for tenant {s.tenant!r} "
                                                     f"([web.aml] sources)."), None
        return s, None, data

    def login_page(request: Request, code: int = 200, message: str | None = None) -> HTMLResponse:
        token = secrets.token_urlsafe(32)
        out = wb.page(request, "login.html", None, code=code, message=message, login_csrf=token)
        out.set_cookie(PRE_COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https",
                       path=f"{PREFIX}/login", max_age=3600)
        return out

    @r.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> HTMLResponse:
        return login_page(request)

    @r.post("/login")
    def login(request: Request, key: str = Form(""), csrf: str = Form("")) -> Response:
        pre = request.cookies.get(PRE_COOKIE, "")
        if not pre or not hmac.compare_digest(pre.encode(), csrf.encode()):
            wb.record(request, None, "/ui/login", False, "sign-in form without its CSRF token")
            return login_page(request, 403, "The sign-in form expired: sign in again.")
        user = wb.host.authenticate(key.strip() or None)
        if user is None:
            wb.record(request, None, "/ui/login", False, "unknown API key" if key.strip() else "no API key")
            return login_page(request, 401, "That key is not known to this server.")
        roles = roles_of(user.scopes)
        s = Session(user=user.id, tenant=user.tenant or "default", roles=roles, scopes=tuple(sorted(user.scopes)))
        wb.record(request, s, "/ui/login", True, f"signed in; roles {', '.join(roles) or 'none'}")
        sid = wb.sessions.start(s)
        out = RedirectResponse(f"{PREFIX}/", status_code=303)
        out.delete_cookie(PRE_COOKIE, path=f"{PREFIX}/login")
        out.set_cookie(COOKIE, sid, httponly=True, samesite="strict", secure=request.url.scheme == "https",
                       path=PREFIX, max_age=8 * 3600)
        return out

    @r.post("/logout")
    def logout(request: Request, csrf: str = Form("")) -> Response:
        s = wb.session(request)
        if s is not None and s.csrf_ok(csrf):
            wb.sessions.end(request.cookies.get(COOKIE))
            wb.record(request, s, "/ui/logout", True, "signed out")
        out = RedirectResponse(f"{PREFIX}/login", status_code=303)
        out.delete_cookie(COOKIE, path=PREFIX)
        return out

    @r.get("/", response_class=HTMLResponse)
    def queue(request: Request, period: str | None = None, status: str | None = None,
                    typology: str | None = None, q: str | None = None, sort: str = "score", order: str = "desc",
                    within: str = "all", page: int = Query(1, ge=1), per_page: int = Query(PER_PAGE, ge=1, le=1000)
                    ) -> Response:
        s, refused, data = need(request, "reviewer")
        if refused is not None:
            return refused
        assert s is not None and data is not None
        period = period if period in data.periods else (data.periods[-1] if data.periods else None)
        rows = queue_rows(data.cases, wb.book(s.tenant).statuses(), period=period, status=status or None,
                          typology=typology or None, text=q or None, sort=sort, descending=order != "asc",
                          within_only=within == "budget")
        typologies = sorted({t for c in data.cases if c.period == period for t in c.typologies})
        pages = max(1, -(-len(rows) // per_page))
        page = min(page, pages)
        shown = rows[(page - 1) * per_page: page * per_page]
        wb.record(request, s, "/ui/", True, f"queue {period}: {len(rows)} cases, page {page}")
        query = {k: v for k, v in {"period": period, "status": status, "typology": typology, "q": q, "sort": sort,
                                   "order": order, "within": within, "per_page": per_page}.items() if v}
        return wb.page(request, "queue.html", s, rows=shown, total=len(rows), page=page, pages=pages,
                       first=(page - 1) * per_page + 1, query=query, periods=data.periods, period=period,
                       status=status, typology=typology, q=q or "", sort=sort, order=order, within=within,
                       typologies=typologies)

    @r.get("/cases/{case_id}", response_class=HTMLResponse)
    def case_page(request: Request, case_id: str) -> Response:
        s, refused, data = need(request, "reviewer")
        if refused is not None:
            return refused
        assert s is not None and data is not None
        case = data.by_id.get(case_id)
        if case is None:
            return wb.refuse(request, s, 404, f"No case {case_id!r} for tenant {s.tenant!r}.")
        st = wb.book(s.tenant).status(case_id)
        txns = data.case_transactions(case)
        wb.record(request, s, f"/ui/cases/{case_id}", True, f"view case {case_id}")
        return wb.page(request, "case.html", s, case=case, st=st, txns=txns, graph=data.graph(case),
                       evidence=data.evidence(case), model=data.model_evidence(case), meta=data.meta,
                       contrib=data.contributions(case),
                       reports=data.case_reports(case), risk=data.risk)

    @r.get("/cases/{case_id}/expand")
    def expand(request: Request, case_id: str, account: str = Query(..., max_length=256)) -> Response:
        s, refused, data = need(request, "reviewer")
        if refused is not None:
            return JSONResponse({"error": "sign in first" if s is None else "refused"},
                                status_code=401 if s is None else refused.status_code)
        assert s is not None and data is not None
        case = data.by_id.get(case_id)
        if case is None:
            return JSONResponse({"error": "no such case"}, status_code=404)
        wb.record(request, s, f"/ui/cases/{case_id}/expand", True, f"expand account {account} of case {case_id}")
        return JSONResponse(data.expand(case, account))

    @r.post("/cases/{case_id}/decide")
    def decide(request: Request, case_id: str, action: str = Form(...), reason: str = Form(""),
                     csrf: str = Form("")) -> Response:
        role = "approver" if action == "approve" else "analyst"
        s, refused, data = need(request, role)
        if refused is not None:
            return refused
        assert s is not None and data is not None
        if not s.csrf_ok(csrf):
            return wb.refuse(request, s, 403, "The form's CSRF token is missing or wrong: reload the page.")
        case = data.by_id.get(case_id)
        if case is None:
            return wb.refuse(request, s, 404, f"No case {case_id!r} for tenant {s.tenant!r}.")

        def audit(d: Any) -> None:  # inside the store transaction: no decision without its audit record
            from sectorflow.compliance import record_access, record_case_disposition, record_report_draft

            if action == "assign":
                record_access(actor=s.user, tenant=s.tenant, resource="aml.workbench", allowed=True,
                              action=f"POST /ui/cases/{case_id}/decide", reason=f"take case {case_id}",
                              source=_source(request), request_id=request_id(request), roles=list(s.scopes),
                              channel="web")
                return
            record_case_disposition(case_id=case_id, disposition=_DISPOSITION[action], actor=s.user, tenant=s.tenant,
                                    source=_source(request), reason=d.reason, alert_ids=case.alert_ids,
                                    request_id=request_id(request), channel="web")
            if action in ("escalate", "approve"):
                record_report_draft(report_id=f"str-{case_id}", action="drafted" if action == "escalate" else
                                    "approved", actor=s.user, report_kind="suspicious", tenant=s.tenant,
                                    source=_source(request), reason=d.reason, request_id=request_id(request),
                                    channel="web")

        try:
            wb.book(s.tenant).decide(case_id, case.account, case.period, action, s.user, reason, on_commit=audit)
        except FourEyesError as exc:
            return wb.refuse(request, s, 403, str(exc))
        except DecisionError as exc:
            return wb.refuse(request, s, 422, str(exc))
        except SectorflowError as exc:  # the audit record could not be written: nothing was stored
            return wb.refuse(request, s, 503, f"The decision was not recorded, so it was not taken: {exc}")
        return RedirectResponse(f"{PREFIX}/cases/{case_id}", status_code=303)

    @r.get("/reports", response_class=HTMLResponse)
    def reports(request: Request) -> Response:
        s, refused, data = need(request, "reviewer")
        if refused is not None:
            return refused
        assert s is not None and data is not None
        statuses = wb.book(s.tenant).statuses()
        strs = [(data.by_id[cid], st, str_due(st, wb.jurisdiction)) for cid, st in statuses.items()
                if st.status in ("escalated", "str_approved") and cid in data.by_id]
        wb.record(request, s, "/ui/reports", True, f"report drafts: {len(data.reports)} + {len(strs)} STR")
        return wb.page(request, "reports.html", s, drafts=data.reports, strs=strs)

    @r.get("/audit", response_class=HTMLResponse)
    def audit_page(request: Request, case: str | None = Query(None, max_length=64)) -> Response:
        s, refused, _ = need(request, "audit_admin")
        if refused is not None:
            return refused
        assert s is not None
        from .audit_view import audit_summary

        try:
            summary = audit_summary(s.user, set(s.scopes), s.tenant, case)
        except PermissionError as exc:  # AuditAccessDenied: an audit admin who is an operator too (admin scope)
            return wb.refuse(request, s, 403, str(exc))
        except SectorflowError as exc:
            return wb.refuse(request, s, 503, str(exc))
        wb.record(request, s, "/ui/audit", True, "audit page")
        return wb.page(request, "audit.html", s, summary=summary, case=case)

    return r
