"""Sign-in sessions of the workbench: an API key in, a session cookie and a CSRF token out; roles from scopes.

A user signs in with their API key (checked by the server, :meth:`sectorflow.serving.WebHost.authenticate`); the
workbench keeps the session in memory (a restart signs everyone out) under a random 256-bit id sent as cookie
:data:`COOKIE` (``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS, ``Path=/ui``). Every form carries the
session's CSRF token (synchroniser-token pattern, OWASP CSRF Prevention Cheat Sheet), compared in constant time.

Roles (:func:`roles_of`): ``analyst`` (scope ``role:analyst``), ``approver`` (``role:approver``), ``audit_admin``
(the server's ``audit`` scope).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

COOKIE = "sf_workbench"
SESSION_TTL_S = 8 * 3600.0
"""A session ends 8 hours after sign-in (a working day)."""
ROLE_SCOPES = {"analyst": "role:analyst", "approver": "role:approver", "audit_admin": "audit"}


def roles_of(scopes: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The workbench roles a key's scopes grant (see the module docstring), sorted."""
    return tuple(sorted(role for role, scope in ROLE_SCOPES.items() if scope in scopes))


@dataclass
class Session:
    """A signed-in user: ``user`` (key id), ``tenant`` (``"default"`` for a key without one), ``roles``, ``csrf``."""

    user: str
    tenant: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    expires: float = field(default_factory=lambda: time.monotonic() + SESSION_TTL_S)

    def can(self, role: str) -> bool:
        return role in self.roles

    def csrf_ok(self, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf.encode(), str(token).encode())


class Sessions:
    """Sessions by id (in memory, bounded by expiry)."""

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def start(self, session: Session) -> str:
        sid = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            for old in [k for k, s in self._by_id.items() if s.expires <= now]:
                del self._by_id[old]
            self._by_id[sid] = session
        return sid

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            s = self._by_id.get(sid)
            if s is not None and s.expires <= time.monotonic():
                del self._by_id[sid]
                return None
            return s

    def end(self, sid: str | None) -> None:
        with self._lock:
            self._by_id.pop(sid or "", None)
