"""``POST /v1/admin/state/{task}/reset``: forget one tenant's state of a stateful task (scope ``admin``).

A stateful task (the AML transaction window, same-day report aggregates, alert cooldowns) keeps its state per
tenant (``Taskflow`` per-tenant pipelines); this route resets one tenant's and no other's. A key with a tenant may
reset only its own tenant (the body may leave the tenant out or name it); a key without a tenant names the tenant
in the body (``{"tenant": "bank-1"}``, or ``{"tenant": null}`` for the default tenant that keys without a tenant
share). The core emits a ``state_reset`` task event with the admin key as actor (the audit log records it as
``task.state_reset``); a refused reset is an access decision (denied) besides the one the scope check recorded.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request

from .. import CallContext, ConfigError, InvalidInputError, UnknownTaskError
from .access import AccessDenied, client_address, decision, record_access_decision_async, request_id, require
from .auth import SCOPE_ADMIN, ApiKey
from .routes_tasks import ERRORS
from .schemas import StateResetRequest, StateResetResponse

ROUTE = "/v1/admin/state/{task}/reset"


def state_router() -> APIRouter:
    """The admin route that resets a tenant's state."""
    router = APIRouter(prefix="/v1/admin", tags=["admin"])

    @router.post("/state/{task}/reset", response_model=StateResetResponse, operation_id="reset_task_state",
                 summary="Forget one tenant's state of a stateful task",
                 responses={k: ERRORS[k] for k in (401, 422)} | {
                     400: {"model": ERRORS[422]["model"], "description": "The task keeps no state, or its model "
                                                                       "never loaded."},
                     403: {"model": ERRORS[422]["model"], "description": "No admin scope, or a key of one tenant "
                                                                       "naming another."},
                     404: {"model": ERRORS[422]["model"], "description": "Unknown task."}})
    async def reset_state(task: str, request: Request, body: StateResetRequest | None = None,
                          key: ApiKey = Depends(require(SCOPE_ADMIN))) -> StateResetResponse:
        state = request.app.state.sectorflow
        if task not in state.specs:
            raise UnknownTaskError(task, list(state.specs))
        if not state.specs[task].stateful:
            raise ConfigError(f"Task {task!r} keeps no state between calls: there is nothing to reset.")
        taskflow = state.taskflows.get(task)
        if taskflow is None:
            raise ConfigError(f"Task {task!r} has no loaded model ({state.status(task)}), so it holds no state.")
        named = body is not None and "tenant" in body.model_fields_set
        wanted = body.tenant if body is not None else None
        source, rid = client_address(request), request_id(request)
        if key.tenant is not None:
            if named and wanted != key.tenant:
                await record_access_decision_async(decision(
                    key, SCOPE_ADMIN, False, f"key of tenant {key.tenant!r} may not reset the state of tenant "
                    f"{wanted!r}", source, rid, f"POST {ROUTE}"), state.observer_executor, SCOPE_ADMIN)
                raise AccessDenied(403, f"API key {key.id!r} belongs to tenant {key.tenant!r}: it may reset that "
                                        f"tenant's state only (leave the tenant out, or name {key.tenant!r}).")
            tenant = key.tenant
        elif not named:
            raise InvalidInputError(
                'Name the tenant whose state to reset: {"tenant": "bank-1"}, or {"tenant": null} for the default '
                "tenant (the one keys without a tenant share). This key has no tenant of its own.",
                details=[{"field": "tenant", "row": None, "reason": "missing: a key without a tenant names it"}])
        else:
            tenant = wanted
        context = CallContext(actor=key.id, tenant=key.tenant, source=source, request_id=rid, channel="http")
        # waits for the tenant's running call: off the event loop, in the thread that runs reloads
        had = await asyncio.get_running_loop().run_in_executor(
            state.reload_executor, lambda: taskflow.reset_state(tenant, context=context))
        return StateResetResponse(task=task, tenant=tenant, had_state=had)

    return router
