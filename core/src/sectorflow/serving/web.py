"""Web pages of plugins: the :class:`WebHost` handed to the ``sectorflow_register_web`` hook, and :func:`web_app`.

The server stays domain-agnostic: a plugin (the AML workbench) gets the FastAPI app and this host, and through the
host the server's API keys (sign-in), its access-decision record (the audit log) and its own settings section. A
page's user is the key's id, its tenant the key's tenant, its roles the key's scopes (``role:NAME``, ``audit``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from .. import AccessDecision, ConfigError, __version__, host as core_host
from .access import ANONYMOUS, record_access_decision
from .auth import KeyStore
from .config import ServeConfig, load_config


@dataclass(frozen=True)
class WebUser:
    """A signed-in user of a web page: the key's ``id`` (the actor in audit records), ``tenant`` (``None``: the
    default tenant) and ``scopes``."""

    id: str
    tenant: str | None
    scopes: frozenset[str]

    def has(self, scope: str) -> bool:
        """Whether the user holds ``scope`` (``task:*`` covers every ``task:NAME``)."""
        return scope in self.scopes or (scope.startswith("task:") and "task:*" in self.scopes)


class WebHost:
    """What a web plugin may use of the server (see the module docstring).

    Args:
        config: the server configuration.
        keys: its key store (a new one from ``config.keys`` when omitted).
    """

    def __init__(self, config: ServeConfig, keys: KeyStore | None = None) -> None:
        self.config = config
        self._keys = keys if keys is not None else KeyStore(config.keys)

    @property
    def state_store(self) -> str | None:
        """The server's state store (``[server] state_store``: a SQLite path or ``postgresql://`` URL), ``None``
        when unset (a plugin then uses the default store, ``$SECTORFLOW_HOME/state.sqlite``)."""
        return self.config.server.state_store

    def settings(self, name: str) -> dict[str, Any]:
        """The plugin's section ``[web.NAME]`` of the server configuration (``{}`` when absent)."""
        return dict(self.config.web.get(name, {}))

    def authenticate(self, secret: str | None) -> WebUser | None:
        """The user whose API key is ``secret``, or ``None`` (constant-time comparison of digests)."""
        key = self._keys.authenticate(secret)
        return None if key is None else WebUser(key.id, key.tenant, key.scopes)

    def record_access(self, *, actor: str | None, tenant: str | None, resource: str, action: str, allowed: bool,
                      reason: str, source: str, request_id: str, roles: tuple[str, ...] = ()) -> None:
        """Record an access decision (a sign-in, a page view, a refused action) as the server records its own: to
        logger ``sectorflow.serving.access`` and the ``sectorflow_access_decision`` hook (the audit log). Raises
        what an observer raises (a regulated log that cannot write)."""
        named = resource[5:] if resource.startswith("task:") else resource
        record_access_decision(AccessDecision(
            actor=actor or ANONYMOUS, tenant=tenant, resource=named, action=action, allowed=allowed, reason=reason,
            source=source, request_id=request_id, roles=tuple(roles), channel="web"), resource)


def register_web(app: FastAPI, host: WebHost) -> None:
    """Call every ``sectorflow_register_web`` implementation with ``app`` and ``host``."""
    core_host.get_plugin_manager().hook.sectorflow_register_web(app=app, host=host)


def web_app(config: ServeConfig | str | None = None) -> FastAPI:
    """An app with the plugins' web pages alone (no task routes, no models loaded) and ``/healthz``.

    Args:
        config: a :class:`ServeConfig` or the path of a server configuration file (TOML/JSON).

    Raises:
        ConfigError: a bad configuration, or no plugin registered a web page.
    """
    if not isinstance(config, ServeConfig):
        config = load_config(config)
    app = FastAPI(title="sectorflow web", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    limit = config.server.max_body_bytes

    @app.middleware("http")
    async def bounded_bodies(request: Request, call_next: Any) -> Response:
        """A declared body over ``[server] max_body_bytes`` is refused (413) unread, as ``sectorflow serve`` does."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return JSONResponse({"error": "RequestTooLarge", "message": f"The body has {declared} bytes; the limit "
                                 f"is {limit} ([server] max_body_bytes)."}, status_code=413)
        return await call_next(request)

    before = len(app.routes)
    register_web(app, WebHost(config))
    if len(app.routes) == before:
        raise ConfigError("No installed plugin adds web pages (hook sectorflow_register_web): install one, such as "
                          "sectorflow-aml for the AML workbench.")
    return app
