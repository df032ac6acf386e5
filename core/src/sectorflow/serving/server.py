"""Run an app under uvicorn the way ``sectorflow serve`` does (also used by ``benchmarks/serve_load.py``).

uvicorn's own proxy-headers middleware parses the client's address with :mod:`ipaddress` on every request to check
it against ``forwarded_allow_ips``, whether or not the request carries any ``X-Forwarded-*`` header; at 200
concurrent clients that was about a tenth of the event loop's time (py-spy). :class:`ProxyHeaders` consults it
only when such a header is present, which gives the same scope in every case.
"""

from __future__ import annotations

import signal
import threading
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

    exit_on_sigterm()
    uvicorn.run(ProxyHeaders(app, forwarded_allow_ips), host=host, port=port, log_level=log_level,
                proxy_headers=False, access_log=access_log)


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def exit_on_sigterm() -> None:
    """Make SIGTERM end the process as a normal exit (status 143) rather than by the signal's default action.

    After its graceful shutdown, uvicorn restores the handler it found and raises the signal again. With the default
    action (or Paddle's C++ handler, which ``sectorflow serve`` overrides), the process then died without running
    :mod:`atexit` handlers, and the audit log signs its last checkpoint at exit: every graceful stop left the records
    since the last checkpoint unsigned (a fresh-user check: 19 records after three requests and a SIGTERM). Only in
    the main thread (where signal handlers live)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_exit)
