"""Authentication and scope checks for routes, with every access decision recorded.

Decisions go to logger ``sectorflow.serving.access`` and to the ``sectorflow_access_decision`` hook through
:func:`record_access_decision`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from fastapi import Request

from .. import AccessDecision, host
from .auth import CONFLICTING, ApiKey, presented_secret

log = logging.getLogger("sectorflow.serving.access")
SECURITY_SCHEMES = {
    "bearerAuth": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API key>"},
    "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The API key."},
}
"""The two ways to present a key, as OpenAPI security schemes (either one is enough)."""
OPEN_PATHS = ("/healthz", "/readyz")
ANONYMOUS = "anonymous"
"""The ``actor`` of a decision on a request without a (known) key."""


class AccessDenied(Exception):
    """No key or an unknown key (401), or a key without the needed scope (403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decision(key: ApiKey | None, scope: str, allowed: bool, reason: str, source: str, request_id: str, route: str,
             channel: str = "http") -> AccessDecision:
    """The :class:`~sectorflow.AccessDecision` of ``key`` (``None``: no key, or an unknown one) asking for ``scope``
    (``task:NAME``, ``admin``, ...; the decision's ``resource`` is the task name for ``task:`` scopes) on ``route``."""
    return AccessDecision(actor=key.id if key else ANONYMOUS, tenant=key.tenant if key else None,
                          resource=scope[5:] if scope.startswith("task:") else scope, action=route, allowed=allowed,
                          reason=reason, source=source, request_id=request_id, roles=tuple(key.roles) if key else (),
                          channel=channel)


def record_access_decision(decision: AccessDecision, scope: str | None = None) -> None:
    """Record an access decision: to logger ``sectorflow.serving.access`` (``scope``: the scope asked for, as the log
    line names it; default the decision's resource), and to every implementation of the
    ``sectorflow_access_decision`` hook (the audit log implements it). Serving does not
    import the audit log (the core's one-way dependency rule); an observer that raises fails the request, as for
    task events."""
    log.log(logging.DEBUG if decision.allowed else logging.INFO, "access %s actor=%s scope=%s source=%s request=%s %s",
            "allow" if decision.allowed else "deny", None if decision.actor == ANONYMOUS else decision.actor,
            decision.resource if scope is None else scope, decision.source, decision.request_id, decision.reason)
    host.get_plugin_manager().hook.sectorflow_access_decision(decision=decision)


def observers_block(hook_name: str) -> bool:
    """Whether an implementation of hook ``hook_name`` declares that it may block (:func:`sectorflow.may_block`)."""
    return host.hook_may_block(host.get_plugin_manager(), hook_name)


async def off_the_loop(executor: Executor | None, hook_name: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` (which calls hook ``hook_name``) in ``executor`` and await it when an implementation of that
    hook may block, else right here; its exceptions propagate either way (a regulated record fails the request)."""
    if executor is not None and observers_block(hook_name):
        return await asyncio.get_running_loop().run_in_executor(executor, call)
    return call()


async def record_access_decision_async(decision: AccessDecision, executor: Executor | None,
                                       scope: str | None = None) -> None:
    """:func:`record_access_decision`, off the event loop when an observer may block (the audit log)."""
    await off_the_loop(executor, "sectorflow_access_decision", lambda: record_access_decision(decision, scope))


def check_key(keys: Any, secret: str | None, scope: str, names: str = "Authorization and X-API-Key"
              ) -> tuple[ApiKey | None, bool, str]:
    """``(key or None, allowed, reason)`` for the presented ``secret`` (:func:`~.auth.presented_secret`) asking for
    ``scope`` (``""``: only authenticate) in the key store ``keys``; ``names`` words two conflicting keys."""
    key = keys.authenticate(secret)
    allowed = key is not None and (not scope or key.allows(scope))
    reason = ("ok" if allowed else "no API key" if not secret else
              f"two different API keys ({names})" if secret == CONFLICTING else
              "unknown API key" if key is None else f"key lacks scope {scope!r}")
    return key, allowed, reason


async def authorize(state: Any, secret: str | None, scope: str, source: str, rid: str, action: str, *,
                    channel: str = "http", names: str = "Authorization and X-API-Key",
                    send: str = "'Authorization: Bearer <key>' or 'X-API-Key'") -> ApiKey:
    """The one access check of every protocol (the FastAPI dependency :func:`require`, the task fast path, gRPC):
    the key of ``secret`` checked for ``scope``, the decision recorded (:func:`record_access_decision_async`, off
    the event loop when an observer may block), the key returned.

    Raises:
        AccessDenied: 401 (no key, an unknown one, two different ones; the message says to ``send`` one), 403 (a
            key without ``scope``).
        SectorflowError: from an observer of the decision (the audit log's ``AuditWriteError``, 503).
    """
    key, allowed, reason = check_key(state.keys, secret, scope, names)
    asked = scope or "authenticated"
    await record_access_decision_async(decision(key, asked, allowed, reason, source, rid, action, channel),
                                       state.observer_executor, asked)
    if key is None:
        how = "one of them" if secret == CONFLICTING and channel == "http" else send
        raise AccessDenied(401, f"{reason[0].upper()}{reason[1:]}: send {how}.")
    if not allowed:
        raise AccessDenied(403, f"API key {key.id!r} lacks the scope {scope!r}.")
    return key


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def request_id(request: Request) -> str:
    """The request's id, set by :class:`~sectorflow.serving.handlers.ServingMiddleware` (a new one if absent)."""
    existing = getattr(request.state, "request_id", None)
    if not existing:
        existing = request.state.request_id = uuid.uuid4().hex
    return existing


def require(scope: str):  # noqa: ANN201 - a FastAPI dependency
    """A dependency that authenticates the caller and checks ``scope``; returns the :class:`ApiKey`.

    An empty ``scope`` only authenticates. Raises :class:`AccessDenied` (401/403); records every decision.
    """

    async def dependency(request: Request) -> ApiKey:
        # Headers are read here rather than through FastAPI's security classes: two fewer sub-dependencies to
        # resolve per request. The OpenAPI document declares both schemes (see SECURITY_SCHEMES).
        state = request.app.state.sectorflow
        secret = presented_secret(request.headers.get("authorization"), request.headers.get("x-api-key"))
        route = request.scope.get("route")
        key = await authorize(state, secret, scope, client_address(request), request_id(request),
                              f"{request.method} {getattr(route, 'path', 'unmatched')}")
        request.state.api_key = key
        return key

    dependency.sectorflow_scope = scope  # type: ignore[attr-defined] # found by handlers.authenticate_first
    return dependency
