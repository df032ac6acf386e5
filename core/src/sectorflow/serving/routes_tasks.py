"""``POST /v1/tasks/{task}`` (one typed route per task), ``GET /v1/tasks`` and the unknown-task fallback.

A task request has one implementation, :func:`serve_task` (the key checked for the task's scope, the items run,
the answer serialised), whichever way it arrives: the ASGI fast path (:mod:`sectorflow.serving.fastpath`) calls it
for a body it parsed itself, the FastAPI route (documented in ``/openapi.json``) for every other body once FastAPI
parsed it. Requests refused before that (422 for the body or the query, 400 for an unparseable one) are answered by
the app's handlers (:mod:`sectorflow.serving.handlers`), which check the key first with the route's scope
(``sectorflow_scope`` on the endpoint), so 401/403 still come before complaints about the body.

This module does not use ``from __future__ import annotations``: FastAPI reads the per-task request and response
models from the annotations of endpoint functions made in a closure.
"""

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Optional

from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request, Response
from pydantic import BaseModel

from .. import CallContext, TaskSpec, UnknownTaskError
from .access import AccessDenied, authorize, client_address, request_id, require
from .auth import ApiKey, presented_secret
from .batching import Overloaded
from .handlers import RateLimited
from .schemas import ErrorBody, ModelInfo, TaskListing, request_model, response_model

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in {
        401: "No API key, or an unknown one.",
        403: "The key lacks the scope task:NAME (or asks for a lane it may not use).",
        413: "Body larger than the server's limit, or more items than the key's whole rate window.",
        422: "Invalid input: `details` lists each field and reason.",
        429: "The key or its tenant is over its rate limit; see Retry-After.",
        503: "The model is not loaded yet, or the task's queue is full or too slow; see Retry-After.",
    }.items()}


@dataclass(frozen=True)
class TaskRoute:
    """One ``POST`` path of a task (its route or an alias) with what answering it needs."""

    path: str  # the route template, as FastAPI's route (metrics label ``route`` and the access decision's action)
    task: str
    request_model: type[BaseModel]
    response_model: type[BaseModel]
    scope: str  # the key's scope needed, ``task:NAME``
    action: str  # the access decision's action, ``POST <path>``

    @classmethod
    def of(cls, path: str, task: str, request_model: type[BaseModel], response_model: type[BaseModel]) -> "TaskRoute":
        return cls(path, task, request_model, response_model, f"task:{task}", f"POST {path}")


async def serve_task(state: Any, route: TaskRoute, secret: Optional[str], items: Sequence[Any], lane: Optional[str],
                     source: str, rid: str, note: Optional[dict[str, Any]] = None) -> tuple[bytes, dict[str, str]]:
    """The one implementation of a task request whose body validated as ``route.request_model``: the presented
    ``secret`` checked for ``route.scope`` (:func:`~.access.authorize`, its decision recorded), then the ``items``
    run and answered (:func:`task_answer`): the JSON body and headers of the 200. Called by the ASGI fast path and by
    the FastAPI route alike.

    Raises AccessDenied (401/403), the decision observer's SectorflowError (e.g. 503) and as :func:`task_answer`.
    """
    key = await authorize(state, secret, route.scope, source, rid, route.action)
    return await task_answer(state, route.task, route.response_model, key, items, lane, source, rid, note)


async def task_answer(state: Any, name: str, Resp: Any, key: ApiKey, items: Sequence[Any], lane: str | None,
                      source: str, rid: str, note: dict[str, Any] | None = None) -> tuple[bytes, dict[str, str]]:
    """Run validated ``items`` of task ``name`` for ``key`` through its batcher: the JSON body (``Resp``) and the
    task headers (``X-Sectorflow-Call-ID``, ``X-Sectorflow-Batch-Items``) of a 200 answer.

    Shared by the FastAPI route and the ASGI fast path, so both answer alike. ``note``: the request's ASGI
    ``scope["state"]``, where the batcher notes the model call (``TaskBatcher.submit``). Raises as
    :func:`submit_items`.
    """
    answer = await submit_items(state, name, key, items, lane, source, rid, note)
    # Serialised here, once: returning the model would make FastAPI validate the outputs a second time.
    result = Resp(outputs=answer.outputs, call_id=answer.call_id)
    return (result.__pydantic_serializer__.to_json(result),
            {"X-Sectorflow-Call-ID": answer.call_id, "X-Sectorflow-Batch-Items": str(answer.batch_items)})


async def submit_items(state: Any, name: str, key: ApiKey, items: Sequence[Any], lane: str | None, source: str,
                       rid: str, note: dict[str, Any] | None = None, channel: str = "http") -> Any:
    """Check the lane and the key's and tenant's rate limits, then run validated ``items`` of task ``name`` through
    its batcher (as the key's tenant); the batcher's :class:`~.batching.Answer`. Every protocol (the native route,
    its fast path, the Open Inference Protocol over REST and gRPC) calls this, so limits, batching, tenant state and
    task events are the same whichever a client uses.

    Raises AccessDenied (403, lane), Overloaded (503: not loaded, queue full or too slow, rate-limit storage
    unreachable), RateLimited (429/413) or the task's SectorflowError.
    """
    chosen = lane or key.lane
    if key.lane == "batch" and chosen == "interactive":
        raise AccessDenied(403, f"API key {key.id!r} may use the batch lane only.")
    batcher = state.batchers.get(name)
    if batcher is None:
        why = state.failed.get(name)
        state.metrics.rejections.labels(name, "not_ready").inc()
        raise Overloaded("not_ready", f"Task {name!r} " + (f"failed to load: {why}" if why else
                                                           "is still loading its model."), 5 if not why else 60)
    verdict = state.limits.hit(key.id, key.rate_limit, key.tenant, len(items))
    if not verdict.allowed:
        state.metrics.rejections.labels(name, "rate_limited").inc()
        if verdict.too_large:
            raise RateLimited(f"{len(items)} items exceed the whole rate window {verdict.limit!r} of key "
                              f"{key.id!r}: split the inputs into requests of at most that many items and send them as "
                              "the window allows, or ask the operator to raise the key's rate_limit.", 0, too_large=True)
        raise RateLimited(f"API key {key.id!r} is over its limit {verdict.limit!r}; retry after "
                          f"{verdict.retry_after_s} s.", verdict.retry_after_s)
    context = CallContext(actor=key.id, tenant=key.tenant, source=source, request_id=rid,
                          channel=channel)  # type: ignore[arg-type]
    return await batcher.submit(items, context, chosen, note)


def _task_endpoint(route: TaskRoute, examples: Optional[dict[str, Any]]) -> Any:
    """The FastAPI endpoint of one task path: FastAPI parses and documents the body and the lane; the request is
    answered by :func:`serve_task`."""
    Req = route.request_model

    async def run_task(request: Request,
                       body: Req = Body(..., openapi_examples=examples),  # type: ignore[valid-type]
                       lane: Optional[Literal["interactive", "batch"]] = Query(
                           None, description="Priority lane; default: the key's lane. interactive runs first.")
                       ) -> Response:
        secret = presented_secret(request.headers.get("authorization"), request.headers.get("x-api-key"))
        payload, headers = await serve_task(request.app.state.sectorflow, route, secret,
                                            body.inputs,  # type: ignore[attr-defined]
                                            lane, client_address(request), request_id(request),
                                            request.scope.get("state"))
        return Response(payload, media_type="application/json", headers=headers)

    run_task.__name__ = f"run_{route.task}"
    run_task.sectorflow_scope = route.scope  # type: ignore[attr-defined] # found by handlers.authenticate_first
    return run_task


def task_router(app: FastAPI, specs: dict[str, TaskSpec], max_items: int, fast: Any = None) -> APIRouter:
    """The router with one typed ``POST /v1/tasks/NAME`` per task (and hidden ones per alias).

    ``fast`` (a :class:`~sectorflow.serving.fastpath.TaskFastPath`) learns each task route's path and models, so
    that well-formed requests skip FastAPI's routing and dependency machinery (same answers; see that module).
    """
    router = APIRouter(prefix="/v1/tasks")
    for name, spec in specs.items():
        req, resp = request_model(spec, max_items), response_model(spec)
        examples = ({"example": {"summary": f"{len(spec.examples)} example item(s) of {spec.name}",
                                 "value": {"inputs": list(spec.examples)}}} if spec.examples else None)
        endpoints = {}
        for route_name in (name, *spec.aliases):
            route = TaskRoute.of(f"{router.prefix}/{route_name}", name, req, resp)
            endpoints[route_name] = _task_endpoint(route, examples)
            if fast is not None:
                fast.add(route)
        summary = spec.description or f"Run {name}"
        router.add_api_route(f"/{name}", endpoints[name], methods=["POST"], response_model=resp, responses=ERRORS,
                             summary=summary, tags=["tasks"], operation_id=f"run_{name}",
                             description=f"Task `{name}` of plugin `{spec.plugin}` {spec.version}. Needs scope "
                                         f"`task:{name}`. Outputs follow the order of `inputs`.")
        for alias in spec.aliases:
            router.add_api_route(f"/{alias}", endpoints[alias], methods=["POST"], response_model=resp, responses=ERRORS,
                                 include_in_schema=False)

    @router.get("", response_model=list[TaskListing], tags=["tasks"], operation_id="list_tasks",
                responses={401: ERRORS[401]}, summary="Served tasks with their model versions and hashes")
    async def list_tasks(request: Request, key: ApiKey = Depends(require(""))) -> list[TaskListing]:
        state = request.app.state.sectorflow
        rows = []
        for name, spec in specs.items():
            tf = state.taskflows.get(name)
            config = state.config.task(name)
            rows.append(TaskListing(
                task=name, plugin=spec.plugin, version=spec.version, description=spec.description,
                languages=list(spec.languages), status=state.status(name), error=state.failed.get(name),
                model=ModelInfo(name=tf.meta.model_name, version=tf.meta.model_version,
                                bundle_sha256=tf.meta.bundle_sha256) if tf else None,
                max_batch_size=config.max_batch_size, max_queue_delay_ms=config.max_queue_delay_ms,
                allowed=key.allows(f"task:{name}")))
        return rows

    @router.post("/{task}", include_in_schema=False)
    async def unknown_task(task: str, key: ApiKey = Depends(require(""))) -> None:
        close = difflib.get_close_matches(task, list(specs), n=1, cutoff=0.5)
        raise UnknownTaskError(task, list(specs), close[0] if close else None)

    return router
