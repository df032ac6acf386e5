"""``create_app(config)``: every registered task as a typed FastAPI route, with health, readiness and metrics.

Run it with ``sectorflow serve --config FILE`` or under any ASGI server::

    uvicorn --factory sectorflow.serving:app_from_env   # reads SECTORFLOW_SERVE_CONFIG
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import socket
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline

from .. import ConfigError, __version__, host, settings
from .access import OPEN_PATHS, SECURITY_SCHEMES, require
from .admin_state import state_router
from .auth import SCOPE_METRICS, ApiKey, KeyStore
from .config import ServeConfig, load_config
from .fastpath import TaskFastPath
from .handlers import ServingMiddleware, install_error_handlers
from .metrics import CONTENT_TYPE, ServerMetrics
from .ratelimit import RateLimits
from .reload import admin_router
from .routes_tasks import ERRORS, task_router
from .routes_v2 import V2_OPEN_PATHS, v2_router
from .state import ServerState
from .web import WebHost, register_web

log = logging.getLogger("sectorflow.serving")
CONFIG_ENV = "SECTORFLOW_SERVE_CONFIG"


def _served_specs(config: ServeConfig) -> dict[str, Any]:
    registered = host.registered_tasks()
    if not config.serve:
        return dict(sorted(registered.items()))
    specs = {}
    for name in config.serve:
        spec = host.get_task(name)  # UnknownTaskError lists the known tasks
        specs[spec.name] = spec
    return specs


def _check_task_scopes(config: ServeConfig, specs: dict[str, Any]) -> None:
    """Refuse a key scope ``task:NAME`` that names no registered task (or alias): a typo such as ``task:amll`` gave a
    key that was refused (403) on every call, and nothing said so until a client tried. A registered task that this
    server does not serve is accepted (one key file may serve several servers).

    Raises:
        ConfigError: naming the key, the scope, the closest task and the registered tasks.
    """
    registered = {**host.registered_tasks(), **specs}
    names = {alias: name for name, spec in registered.items() for alias in (name, *spec.aliases)}
    for key in config.keys:
        for scope in key.scopes:
            task = scope[5:] if scope.startswith("task:") and scope != "task:*" else None
            if task is not None and task not in names:
                close = difflib.get_close_matches(task, list(names), n=1, cutoff=0.5)
                hint = f" Did you mean 'task:{close[0]}'?" if close else ""
                raise ConfigError(f"API key {key.id!r} has scope {scope!r}, but no task is called {task!r}.{hint} "
                                  f"Tasks: {', '.join(sorted(registered))}.")


def shared_state_keys(config: ServeConfig, specs: dict[str, Any]) -> dict[str, list[str]]:
    """Stateful served tasks that two or more keys without a ``tenant`` may call: ``{task: [key ids]}``. Such keys
    share the default tenant's state (docs/serving.md, "State of stateful tasks"): if they belong to different banks,
    one bank's transactions reach the other's results. Keys of one tenant sharing state is what ``tenant`` says."""
    shared: dict[str, list[str]] = {}
    for name, spec in specs.items():
        if not spec.stateful:
            continue
        ids = [key.id for key in config.keys if key.tenant is None
               and (f"task:{name}" in key.scopes or "task:*" in key.scopes
                    or any(f"task:{alias}" in key.scopes for alias in spec.aliases))]
        if len(ids) >= 2:
            shared[name] = ids
    return shared


def shared_state_warning(task: str, ids: list[str]) -> str:
    """The start-up warning for :func:`shared_state_keys`'s ``task`` and its tenant-less key ``ids``: names the task,
    each key by its id (never its secret or hash) and what to set, e.g. ``stateful task 'aml': API keys
    'teller-app', 'loader' have no tenant, so they share one state, the default tenant's ...``."""
    named = ", ".join(repr(i) for i in ids)
    entries = ", ".join(f"id = {json.dumps(i)}" for i in ids)
    return (f"stateful task {task!r}: API keys {named} have no tenant, so they share one state, the default "
            f"tenant's (windows, same-day totals, cases); if they are different institutions, set tenant = \"...\" "
            f"in each of their [[keys]] entries ({entries}), or make keys with `sectorflow serve-key ID --tenant T`")


def create_app(config: ServeConfig | str | Path | None = None) -> FastAPI:
    """A FastAPI app serving every task of ``config.serve`` (default: every registered task).

    Args:
        config: a :class:`ServeConfig`, a path to a TOML/JSON configuration file, or ``None`` for the defaults
            (then only keys from ``SECTORFLOW_SERVE_KEYS`` exist).

    Models load in the background after startup (``/readyz`` answers 503 until every task is loaded), unless
    ``server.load_in_background`` is false. Raises :class:`~sectorflow.errors.ConfigError` for a bad
    configuration and :class:`~sectorflow.errors.UnknownTaskError` for an unknown task in ``serve``.
    """
    if not isinstance(config, ServeConfig):
        config = load_config(config)
    specs = _served_specs(config)
    unknown = sorted(set(config.tasks) - set(specs))
    if unknown:
        raise ConfigError(f"[tasks.*] configures tasks that are not served: {unknown}; served: {sorted(specs)}.")
    _check_task_scopes(config, specs)
    metrics = ServerMetrics()
    metrics.replica.labels(config.server.replica or socket.gethostname()).set(1)
    host.get_plugin_manager().hook.sectorflow_register_metrics(registry=metrics.registry)
    state = ServerState(
        config=config, specs=specs, keys=KeyStore(config.keys),
        limits=RateLimits(config.tenants, config.server.rate_limit_storage), metrics=metrics,
        executor=ThreadPoolExecutor(config.server.threads, thread_name_prefix="sectorflow-infer"),
        reload_executor=ThreadPoolExecutor(1, thread_name_prefix="sectorflow-load"),
        observer_executor=ThreadPoolExecutor(1, thread_name_prefix="sectorflow-observers"))
    if not len(state.keys):
        log.warning("no API keys configured: every route but /healthz and /readyz will answer 401")
    for task, ids in shared_state_keys(config, specs).items():
        log.warning("%s", shared_state_warning(task, ids))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        grpc_server = None
        if config.server.grpc_listen:
            from .grpc_v2 import start_grpc  # grpcio only where gRPC is configured

            grpc_server = await start_grpc(state, config.server.grpc_listen)
        loader = asyncio.create_task(state.load_all())
        if not config.server.load_in_background:
            await loader
        try:
            yield
        finally:
            if grpc_server is not None:
                await grpc_server.stop(grace=5)
            loader.cancel()
            await asyncio.gather(loader, return_exceptions=True)
            await state.shutdown()

    # FastAPIOffline serves the Swagger UI and ReDoc assets from its own package: /docs renders with no network
    # (plain FastAPI loads them from a CDN, which an offline deployment cannot reach).
    app = FastAPIOffline(title="sectorflow", version=__version__, lifespan=lifespan,
                  description="Offline, auditable ML pipelines on PaddlePaddle. Every route but /healthz and /readyz "
                              "needs an API key (Authorization: Bearer KEY or X-API-Key).")
    app.state.sectorflow = state
    fast = TaskFastPath(state)  # learns the task routes below
    app.add_middleware(ServingMiddleware, metrics=metrics, max_body_bytes=config.server.max_body_bytes, fast=fast,
                       state=state)
    install_error_handlers(app)

    @app.get("/healthz", tags=["health"], operation_id="healthz", summary="The process is up")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], operation_id="readyz", summary="Every served model is loaded",
             responses={503: {"description": "Some models are loading or failed to load."}})
    async def readyz() -> JSONResponse:
        body = {"ready": state.ready, "tasks": {name: state.status(name) for name in specs}, "failed": state.failed}
        return JSONResponse(body, status_code=200 if state.ready else 503,
                            headers=None if state.ready else {"Retry-After": "5"})

    @app.get("/metrics", tags=["health"], operation_id="metrics", summary="Prometheus metrics (scope metrics)",
             response_class=Response, responses={401: ERRORS[401], 403: ERRORS[403],
                                                 200: {"content": {"text/plain": {}}}})
    async def metrics_route(request: Request, key: ApiKey = Depends(require(SCOPE_METRICS))) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    app.include_router(task_router(app, specs, config.server.max_items_per_request, fast))
    app.include_router(admin_router())
    app.include_router(state_router())
    app.include_router(v2_router(specs, config.server.max_items_per_request))
    register_web(app, WebHost(config, state.keys))  # plugins' web pages (the AML workbench under /ui/)
    _declare_security(app)
    return app


def _declare_security(app: FastAPI) -> None:
    """Add the key schemes to the OpenAPI document and mark every operation but health and readiness as needing
    one (the dependency reads the headers itself, so FastAPI would not know)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
            for path, operations in schema.get("paths", {}).items():
                if path not in OPEN_PATHS + V2_OPEN_PATHS:
                    for operation in operations.values():
                        operation["security"] = [{name: []} for name in SECURITY_SCHEMES]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def app_from_env() -> FastAPI:
    """App factory for ``uvicorn --factory``: the configuration file named by ``SECTORFLOW_SERVE_CONFIG``."""
    return create_app(settings().serve_config)
