"""Per-key and per-tenant rate limits, counted in input items, on the ``limits`` library.

``limits`` has no token-bucket strategy; its moving window (a sliding log) gives the same guarantee a bucket of
capacity N refilled at N per period gives over any window of one period (never more than N items), and allows a
burst of N. A request of ``k`` items costs ``k``.

Storage (``[server] rate_limit_storage``): ``memory://`` (the default) keeps windows in this process; a
``redis://host:port/db`` URI (``limits.storage.RedisStorage``, needs the ``redis`` package) keeps them in Redis, so
that replicas behind one address share every key's and tenant's window. With Redis, the check of both windows and
the taking of both are two round trips, not one transaction: requests that reach several replicas in the same
instant may pass together by at most their own items over a limit. Redis unreachable: the request is refused with
503 (``Overloaded``, reason ``rate_limit_storage``), never let through unlimited.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.errors import ConfigurationError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from .. import ConfigError
from .batching import Overloaded


@dataclass(frozen=True)
class Verdict:
    """Result of one rate-limit check: allowed, or refused with seconds to wait and the limit that refused."""

    allowed: bool
    retry_after_s: int = 0
    limit: str | None = None
    too_large: bool = False


class RateLimits:
    """Moving-window limits per key id and per tenant, in ``storage`` (a ``limits`` storage URI: ``memory://`` or
    ``redis://...``). Raises :class:`~sectorflow.errors.ConfigError` for a URI ``limits`` cannot use."""

    def __init__(self, tenant_limits: dict[str, str] | None = None, storage: str = "memory://") -> None:
        try:
            self._storage = storage_from_string(storage)
        except (ConfigurationError, ValueError) as exc:
            raise ConfigError(f"[server] rate_limit_storage = {storage!r}: {exc} (for redis:// install the "
                              f"'redis' package).") from exc
        self.storage_uri = storage
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._parsed: dict[str, RateLimitItem] = {}
        self._tenant_limits = dict(tenant_limits or {})

    def _item(self, text: str) -> RateLimitItem:
        if text not in self._parsed:
            self._parsed[text] = parse(text)
        return self._parsed[text]

    def hit(self, key_id: str, key_limit: str | None, tenant: str | None, cost: int) -> Verdict:
        """Take ``cost`` items from the key's window and then the tenant's; refuse if either is exhausted.

        A request larger than a whole window is refused with ``too_large=True`` (it could never pass). Raises
        :class:`~.batching.Overloaded` (503) when the storage (Redis) cannot be reached.
        """
        try:
            return self._hit(key_id, key_limit, tenant, cost)
        except Overloaded:
            raise
        except Exception as exc:  # redis.ConnectionError, TimeoutError, ...: the storage's own errors
            raise Overloaded("rate_limit_storage", f"The rate-limit storage cannot be reached "
                             f"({type(exc).__name__}: {exc}); retry shortly.", 5) from exc

    def _hit(self, key_id: str, key_limit: str | None, tenant: str | None, cost: int) -> Verdict:
        checks = []
        if key_limit:
            checks.append((self._item(key_limit), ("key", key_id), key_limit))
        tenant_limit = self._tenant_limits.get(tenant or "")
        if tenant_limit:
            checks.append((self._item(tenant_limit), ("tenant", tenant or ""), tenant_limit))
        for item, _ident, text in checks:
            if cost > item.amount:
                return Verdict(False, 0, text, too_large=True)
        for item, ident, text in checks:
            if not self._limiter.test(item, *ident, cost=cost):
                return Verdict(False, self._retry_after(item, ident), text)
        for item, ident, _ in checks:
            self._limiter.hit(item, *ident, cost=cost)
        return Verdict(True)

    def _retry_after(self, item: RateLimitItem, ident: tuple[str, str]) -> int:
        stats = self._limiter.get_window_stats(item, *ident)
        return max(1, math.ceil(stats.reset_time - time.time()))
