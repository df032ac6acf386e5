"""Run an app under uvicorn the way ``sectorflow serve`` does (also used by ``benchmarks/serve_load.py``).

uvicorn's own proxy-headers middleware parses the client's address with :mod:`ipaddress` on every request to check
it against ``forwarded_allow_ips``, whether or not the request carries any ``X-Forwarded-*`` header; at 200
concurrent clients that was about a tenth of the event loop's time (py-spy). :class:`ProxyHeaders` consults it
only when such a header is present, which gives the same scope in every case.
"""

from __future__ import annotations

from typing import Any

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto")


class ProxyHeaders(ProxyHeadersMiddleware):
    """uvicorn's ``ProxyHeadersMiddleware`` (``X-Forwarded-For``/``-Proto`` from ``trusted_hosts`` set the client
    address and scheme), skipped for requests that carry neither header."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan" and not any(name in _FORWARDED for name, _ in scope.get("headers") or ()):
            return await self.app(scope, receive, send)
        return await super().__call__(scope, receive, send)


def run_server(app: Any, *, host: str = "127.0.0.1", port: int = 8866, log_level: str = "info",
        forwarded_allow_ips: str = "127.0.0.1", access_log: bool = True) -> None:
    """Serve ``app`` with uvicorn (uvloop and httptools when installed, as the ``serve`` extra does) until
    SIGINT/SIGTERM. ``forwarded_allow_ips``: comma-separated proxies (or ``*``) whose forwarded headers are trusted
    for the client address that audit records name."""
    import uvicorn

    uvicorn.run(ProxyHeaders(app, forwarded_allow_ips), host=host, port=port, log_level=log_level,
                proxy_headers=False, access_log=access_log)
