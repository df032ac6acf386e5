"""API keys: stored as SHA-256 digests, presented as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``.

Keys are 256-bit random tokens (:func:`generate_key`), so one SHA-256 is enough to make the stored digest useless
for logging in (the same reasoning as GitHub's and Stripe's token storage); a slow password hash would only slow
every request down.

Scopes:
    ``task:NAME`` call one task; ``task:*`` call every task; ``admin`` reload models; ``audit`` read and export
    audit records (the audit-admin scope, kept separate from ``admin``); ``metrics`` read ``/metrics``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from functools import cached_property

from .config import KeyConfig, Lane

KEY_PREFIX = "sf_"
SCOPE_ADMIN = "admin"
SCOPE_AUDIT = "audit"
SCOPE_METRICS = "metrics"


def generate_key() -> str:
    """A new random API key (``sf_`` + 43 URL-safe characters, 256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(secret: str) -> str:
    """Hex SHA-256 of an API key, as stored in the configuration."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """A configured key, without its secret."""

    id: str
    tenant: str | None
    scopes: frozenset[str]
    rate_limit: str | None
    lane: Lane

    @cached_property
    def roles(self) -> tuple[str, ...]:
        """The key's scopes, sorted (as access decisions name them)."""
        return tuple(sorted(self.scopes))

    def allows(self, scope: str) -> bool:
        """Whether the key holds ``scope`` (``task:*`` covers every ``task:NAME``)."""
        return scope in self.scopes or (scope.startswith("task:") and "task:*" in self.scopes)


class KeyStore:
    """Look keys up by the digest of the presented secret.

    A secret that matched a key is remembered (at most ``cache_size`` of them, the oldest forgotten first), so that
    a client's later requests skip the SHA-256 and the comparison with every stored digest. Only matches are
    remembered: an unknown secret is hashed and compared again on every request, and cannot fill the cache. The
    configured keys do not change while a store exists (a server reads them once), so a remembered match stays
    right.
    """

    def __init__(self, keys: list[KeyConfig], cache_size: int = 1024) -> None:
        self._by_digest = {k.sha256: ApiKey(k.id, k.tenant, frozenset(k.scopes), k.rate_limit, k.lane)
                           for k in keys}
        self._cache_size = cache_size
        self._verified: dict[str, ApiKey] = {}

    def __len__(self) -> int:
        return len(self._by_digest)

    def authenticate(self, secret: str | None) -> ApiKey | None:
        """The key whose digest matches ``secret``, or ``None``. Compares digests in constant time."""
        if not secret:
            return None
        found = self._verified.get(secret)
        if found is not None:
            return found
        digest = hash_key(secret)
        for stored, key in self._by_digest.items():
            if hmac.compare_digest(stored, digest):
                found = key
        if found is not None and self._cache_size > 0:
            if len(self._verified) >= self._cache_size:
                self._verified.pop(next(iter(self._verified)))
            self._verified[secret] = found
        return found


CONFLICTING = "\x00two different keys"
"""What :func:`presented_secret` returns for a request carrying two different keys: it matches no key."""


def presented_secret(authorization: str | None, x_api_key: str | None) -> str | None:
    """The secret from ``Authorization: Bearer ...`` or ``X-API-Key``; :data:`CONFLICTING` when both headers carry
    different keys (refused as unknown: X-API-Key used to win silently, so a client's header overrode the identity a
    proxy had put in ``Authorization``)."""
    bearer = None
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            bearer = value.strip()
    api_key = x_api_key.strip() if x_api_key else None
    if bearer and api_key and bearer != api_key:
        return CONFLICTING
    return api_key or bearer
