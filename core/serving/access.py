"""Authentication and scope checks for routes, with every access decision recorded.

Decisions go to logger ``sectorflow.serving.access`` and, when the compliance package offers one, to its
access-decision recorder (:func:`record_access_decision` is the single seam for that).
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .auth import ApiKey, presented_secret

log = logging.getLogger("sectorflow.serving.access")
_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key.")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class AccessDenied(Exception):
    """No key or an unknown key (401), or a key without the needed scope (403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class AccessDecision:
    """One allow/deny decision: who (key id or ``None``), what (scope), from where, and why."""

    actor: str | None
    tenant: str | None
    scope: str
    allowed: bool
    reason: str
    source: str
    request_id: str
    route: str


def record_access_decision(decision: AccessDecision) -> None:
    """Record an access decision: to the log, and to ``sectorflow.compliance.record_access_decision`` if the
    compliance package provides it (it is called with the decision's fields as keyword arguments)."""
    log.log(logging.DEBUG if decision.allowed else logging.INFO, "access %s actor=%s scope=%s source=%s request=%s %s",
            "allow" if decision.allowed else "deny", decision.actor, decision.scope, decision.source,
            decision.request_id, decision.reason)
    recorder = _compliance_recorder()
    if recorder is not None:
        recorder(**decision.__dict__)


def _compliance_recorder() -> Any:
    try:
        from .. import compliance  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(compliance, "record_access_decision", None)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def request_id(request: Request) -> str:
    """The caller's ``X-Request-ID`` if well-formed, else a new one (kept on ``request.state``)."""
    existing = getattr(request.state, "request_id", None)
    if existing:
        return existing
    given = request.headers.get("x-request-id", "")
    rid = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    request.state.request_id = rid
    return rid


def require(scope: str):  # noqa: ANN201 - a FastAPI dependency
    """A dependency that authenticates the caller and checks ``scope``; returns the :class:`ApiKey`.

    An empty ``scope`` only authenticates. Raises :class:`AccessDenied` (401/403); records every decision.
    """

    async def dependency(request: Request,
                         bearer: HTTPAuthorizationCredentials | None = Depends(_bearer),
                         api_key: str | None = Depends(_api_key)) -> ApiKey:
        state = request.app.state.sectorflow
        secret = presented_secret(f"Bearer {bearer.credentials}" if bearer else None, api_key)
        key = state.keys.authenticate(secret)
        allowed = key is not None and (not scope or key.allows(scope))
        reason = ("ok" if allowed else "no API key" if not secret else "unknown API key" if key is None
                  else f"key lacks scope {scope!r}")
        route = request.scope.get("route")
        record_access_decision(AccessDecision(
            actor=key.id if key else None, tenant=key.tenant if key else None, scope=scope or "authenticated",
            allowed=allowed, reason=reason, source=client_address(request), request_id=request_id(request),
            route=getattr(route, "path", request.url.path)))
        if key is None:
            raise AccessDenied(401, f"{reason.capitalize()}: send 'Authorization: Bearer <key>' or 'X-API-Key'.")
        if not allowed:
            raise AccessDenied(403, f"API key {key.id!r} lacks the scope {scope!r}.")
        return key

    return dependency
