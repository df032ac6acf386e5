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
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from .. import host
from .auth import CONFLICTING, ApiKey, presented_secret

log = logging.getLogger("sectorflow.serving.access")
SECURITY_SCHEMES = {
    "bearerAuth": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API key>"},
    "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The API key."},
}
"""The two ways to present a key, as OpenAPI security schemes (either one is enough)."""
OPEN_PATHS = ("/healthz", "/readyz")


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
    roles: tuple[str, ...] = ()
    channel: str = "http"


def record_access_decision(decision: AccessDecision) -> None:
    """Record an access decision: to logger ``sectorflow.serving.access``, and to every implementation of the
    ``sectorflow_access_decision`` hook (the audit log implements it). Serving does not
    import the audit log (the core's one-way dependency rule); an observer that raises fails the request, as for
    task events."""
    log.log(logging.DEBUG if decision.allowed else logging.INFO, "access %s actor=%s scope=%s source=%s request=%s %s",
            "allow" if decision.allowed else "deny", decision.actor, decision.scope, decision.source,
            decision.request_id, decision.reason)
    resource = decision.scope[5:] if decision.scope.startswith("task:") else decision.scope
    host.get_plugin_manager().hook.sectorflow_access_decision(
        actor=decision.actor or "anonymous", tenant=decision.tenant, resource=resource, action=decision.route,
        allowed=decision.allowed, reason=decision.reason, source=decision.source, request_id=decision.request_id,
        roles=list(decision.roles), channel=decision.channel)


BLOCKING = "sectorflow_blocking"
"""Attribute a hook implementation may carry to say that it may block (disk or network I/O: the audit log's
fsynced append): ``True``, or a callable answering it now (e.g. only while the audit log is on). The server then
runs that hook in its observer thread and awaits it, instead of running it on the event loop."""


def observers_block(hook_name: str) -> bool:
    """Whether an implementation of hook ``hook_name`` declares that it may block (see :data:`BLOCKING`)."""
    for impl in getattr(host.get_plugin_manager().hook, hook_name).get_hookimpls():
        flag = getattr(impl.function, BLOCKING, False)
        if flag() if callable(flag) else flag:
            return True
    return False


async def off_the_loop(executor: Executor | None, hook_name: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` (which calls hook ``hook_name``) in ``executor`` and await it when an implementation of that
    hook may block, else right here; its exceptions propagate either way (a regulated record fails the request)."""
    if executor is not None and observers_block(hook_name):
        return await asyncio.get_running_loop().run_in_executor(executor, call)
    return call()


async def record_access_decision_async(decision: AccessDecision, executor: Executor | None) -> None:
    """:func:`record_access_decision`, off the event loop when an observer may block (the audit log)."""
    await off_the_loop(executor, "sectorflow_access_decision", lambda: record_access_decision(decision))


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
        key = state.keys.authenticate(secret)
        allowed = key is not None and (not scope or key.allows(scope))
        reason = ("ok" if allowed else "no API key" if not secret else
                  "two different API keys (Authorization and X-API-Key)" if secret == CONFLICTING else
                  "unknown API key" if key is None else f"key lacks scope {scope!r}")
        route = request.scope.get("route")
        await record_access_decision_async(AccessDecision(
            actor=key.id if key else None, tenant=key.tenant if key else None, scope=scope or "authenticated",
            allowed=allowed, reason=reason, source=client_address(request), request_id=request_id(request),
            route=f"{request.method} {getattr(route, 'path', 'unmatched')}",
            roles=key.roles if key else ()), state.observer_executor)
        if key is None:
            how = "one of them" if secret == CONFLICTING else "'Authorization: Bearer <key>' or 'X-API-Key'"
            raise AccessDenied(401, f"{reason[0].upper()}{reason[1:]}: send {how}.")
        if not allowed:
            raise AccessDenied(403, f"API key {key.id!r} lacks the scope {scope!r}.")
        request.state.api_key = key
        return key

    dependency.sectorflow_scope = scope  # type: ignore[attr-defined] # found by handlers.authenticate_first
    return dependency
