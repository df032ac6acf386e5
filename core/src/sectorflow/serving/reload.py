"""``POST /v1/admin/models/{task}/reload``: hot reload of a task's model bundle (scope ``admin``).

``Taskflow.reload`` loads the new bundle beside the old one and swaps both in one assignment once it is ready;
calls in flight finish on the old pipeline. A bundle that fails to load or fails its SHA-256 check leaves the old
one serving and the error is returned (4xx). The core emits ``model_loaded``/``model_load_failed`` and
``model_unloaded`` task events with the admin key as actor, which is how reloads reach the audit log.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fastapi import APIRouter, Depends, Request

from .. import BundleError, CallContext, ConfigError, SectorflowError, UnknownTaskError
from . import gcfreeze
from .access import AccessDenied, client_address, request_id, require
from .auth import SCOPE_ADMIN, ApiKey
from .routes_tasks import ERRORS
from .schemas import ReloadRequest, ReloadResponse


def check_bundle_root(task_path: str, roots: list[str]) -> None:
    """Refuse a ``task_path`` outside ``roots`` (when roots are configured).

    Raises:
        AccessDenied: 403 naming the allowed roots.
    """
    if not roots:
        return
    resolved = Path(task_path).resolve()
    if not any(resolved == Path(r).resolve() or Path(r).resolve() in resolved.parents for r in roots):
        raise AccessDenied(403, f"task_path {task_path!r} is outside the allowed bundle roots {roots}.")


def admin_router() -> APIRouter:
    """The admin routes."""
    router = APIRouter(prefix="/v1/admin", tags=["admin"])

    @router.post("/models/{task}/reload", response_model=ReloadResponse, operation_id="reload_model",
                 summary="Load a model bundle beside the current one and swap when ready",
                 responses={k: ERRORS[k] for k in (401, 403, 422)} | {
                     400: {"model": ERRORS[422]["model"], "description": "The bundle failed to load or its hash "
                                                                       "check (the old model keeps serving), or "
                                                                       "the task's model never loaded."},
                     404: {"model": ERRORS[422]["model"], "description": "Unknown task."}})
    async def reload_model(task: str, request: Request, body: ReloadRequest | None = None,
                           key: ApiKey = Depends(require(SCOPE_ADMIN))) -> ReloadResponse:
        state = request.app.state.sectorflow
        if task not in state.specs:
            raise UnknownTaskError(task, list(state.specs))
        taskflow = state.taskflows.get(task)
        if taskflow is None:
            raise ConfigError(f"Task {task!r} has no loaded model to replace ({state.status(task)}); fix its "
                             f"configuration and restart the server.")
        task_path = (body.task_path if body else None) or state.config.task(task).task_path
        if task_path:
            check_bundle_root(task_path, state.config.server.allowed_bundle_roots)
        context = CallContext(actor=key.id, tenant=key.tenant, source=client_address(request),
                              request_id=request_id(request), channel="http")
        previous = taskflow.meta
        start = time.perf_counter()
        try:
            current = await asyncio.get_running_loop().run_in_executor(
                state.reload_executor, lambda: taskflow.reload(task_path, context=context))
        except SectorflowError:
            state.metrics.reloads.labels(task, "failure").inc()
            raise
        except Exception as exc:  # e.g. Paddle cannot parse a model file: the old model keeps serving
            state.metrics.reloads.labels(task, "failure").inc()
            raise BundleError(f"The bundle {task_path} failed to load: {type(exc).__name__}: {exc}") from exc
        state.metrics.reloads.labels(task, "success").inc()
        if state.frozen:
            gcfreeze.refreeze()  # the new model's objects too (the old one's are freed by reference counting)
        state.metrics.set_model(task, current)
        request.state.reload_ms = (time.perf_counter() - start) * 1000
        return ReloadResponse(task=task, previous=previous, current=current)

    return router
