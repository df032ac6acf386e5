"""Per-key and per-tenant rate limits, counted in input items, on the ``limits`` library.

``limits`` has no token-bucket strategy; its moving window (a sliding log) gives the same guarantee a bucket of
capacity N refilled at N per period gives over any window of one period (never more than N items), and allows a
burst of N. A request of ``k`` items costs ``k``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


@dataclass(frozen=True)
class Verdict:
    """Result of one rate-limit check: allowed, or refused with seconds to wait and the limit that refused."""

    allowed: bool
    retry_after_s: int = 0
    limit: str | None = None
    too_large: bool = False


class RateLimits:
    """Moving-window limits per key id and per tenant, in process memory."""

    def __init__(self, tenant_limits: dict[str, str] | None = None) -> None:
        self._storage = MemoryStorage()
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._parsed: dict[str, RateLimitItem] = {}
        self._tenant_limits = dict(tenant_limits or {})

    def _item(self, text: str) -> RateLimitItem:
        if text not in self._parsed:
            self._parsed[text] = parse(text)
        return self._parsed[text]

    def hit(self, key_id: str, key_limit: str | None, tenant: str | None, cost: int) -> Verdict:
        """Take ``cost`` items from the key's window and then the tenant's; refuse if either is exhausted.

        A request larger than a whole window is refused with ``too_large=True`` (it could never pass).
        """
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
