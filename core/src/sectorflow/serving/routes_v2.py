"""The Open Inference Protocol (KServe v2) over REST: ``/v2/health/*``, ``/v2``, ``/v2/models/NAME[/ready|/infer]``.

Every task answers here as well as at ``POST /v1/tasks/NAME``, through the same key check (:func:`.access.require`:
access decisions), :func:`.routes_tasks.submit_items` (scopes, lanes, the key's and tenant's rate limits, the task's
:class:`~.batching.TaskBatcher`, tenant state, task events) and the same metrics (``ServingMiddleware`` counts
``POST /v2/models/NAME/infer`` in ``sectorflow_requests_total`` like the native route). Tensors: :mod:`.oip`.

Every error answer is the protocol's ``{"error": "..."}`` with the status the native route would give (400 for a
wrong tensor, 401/403 for keys, 404 for an unknown model or version, 413, 422 for an item the task's input model
refuses, 429 with Retry-After, 503), never a 500 for bad input. Health answers are open (no key), as for probes:
``/v2/health/live`` is 200 while the process serves; ``/v2/health/ready`` 200 once every model is loaded, else 400
(the protocol's "4xx means false").

This module does not use ``from __future__ import annotations``: FastAPI reads endpoint annotations.
"""

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from .. import CallContext, SectorflowError, TaskEvent, TaskSpec, host
from . import oip
from .access import AccessDenied, client_address, off_the_loop, request_id, require
from .auth import ApiKey
from .handlers import exception_response
from .routes_tasks import submit_items
from .schemas import request_model

BINARY_HEADER = "inference-header-content-length"
V2_OPEN_PATHS = ("/v2/health/live", "/v2/health/ready")


def v2_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The protocol's error answer: ``{"error": message}``."""
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def v2_exception(exc: BaseException) -> JSONResponse:
    """An expected exception (typed error, access, rate limit, overload) as the protocol's error answer, with the
    status and headers (WWW-Authenticate, Retry-After) of the native answer. Re-raises any other exception."""
    native = exception_response(exc)
    if native is None:
        raise exc
    body = json.loads(bytes(native.body))
    headers = {k: v for k, v in native.headers.items() if k.lower() in ("retry-after", "www-authenticate")}
    return v2_error(native.status_code, f"{body['error']}: {body['message']}", headers)


async def record_refused(state: Any, name: str, key: ApiKey, source: str, rid: str, error: BaseException,
                         channel: str) -> None:
    """A ``call_failed`` task event naming the key, for a request refused before the model call because its tensors
    or items were invalid (the native route's ``record_refused_call``): every authenticated task request leaves an
    event. Raises the audit log's error when it cannot record (answered 503)."""
    taskflow = state.taskflows.get(name)
    context = CallContext(actor=key.id, tenant=key.tenant, source=source, request_id=rid,
                          channel=channel)  # type: ignore[arg-type]
    event = TaskEvent("call_failed", name, context, taskflow.meta if taskflow else None, n_items=0,
                      error=f"{type(error).__name__}: {error}")
    await off_the_loop(state.observer_executor, "sectorflow_task_event", lambda: host.emit(event))


def parse_infer_body(body: bytes, json_length: str | None) -> tuple[dict[str, Any], list[oip.Tensor]]:
    """The JSON header object and input tensors of a REST inference request (with Triton's binary tensor
    extension when ``Inference-Header-Content-Length`` is given). Raises :class:`~.oip.TensorError`."""
    binary = None
    if json_length is not None:
        if not json_length.isdigit() or int(json_length) > len(body):
            raise oip.TensorError(f"Inference-Header-Content-Length {json_length!r} is not a size within the "
                                  f"body's {len(body)} bytes.")
        binary = memoryview(body)[int(json_length):]
        body = body[:int(json_length)]
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise oip.TensorError(f"The request body is not JSON ({exc}); send an inference request object "
                              '({"inputs": [{"name", "datatype", "shape", "data"}]}).') from exc
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise oip.TensorError('The inference request must be a JSON object with a list "inputs" of tensors.')
    if request.get("id") is not None and not isinstance(request["id"], str):
        raise oip.TensorError("'id' must be a string.")
    if request.get("parameters") is not None and not isinstance(request["parameters"], dict):
        raise oip.TensorError("'parameters' must be an object.")
    outputs = request.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, list) or any(not isinstance(o, dict) or o.get("name") != oip.RESULTS
                                                for o in outputs):
            raise oip.TensorError(f"The only output is '{oip.RESULTS}' (BYTES, JSON per item); ask for it or "
                                  f"leave 'outputs' out.")
    tensors, offset = [], 0
    for raw in request["inputs"]:
        tensor, offset = oip.decode_json_tensor(raw, binary, offset)
        tensors.append(tensor)
    return request, tensors


def lane_of(parameters: Any) -> str | None:
    """The ``lane`` request parameter (``interactive`` or ``batch``), else ``None`` (the key's lane)."""
    lane = parameters.get("lane") if isinstance(parameters, dict) else None
    if lane is None:
        return None
    if lane not in ("interactive", "batch"):
        raise oip.TensorError(f"Parameter 'lane' is {lane!r}; use 'interactive' or 'batch'.")
    return lane


def infer_answer(spec_name: str, version: str, rid: str | None, answer: Any) -> dict[str, Any]:
    elements = oip.result_elements(answer.outputs)
    return {"model_name": spec_name, "model_version": version, "id": rid or "",
            "parameters": {"call_id": answer.call_id, "batch_items": answer.batch_items},
            "outputs": [{"name": oip.RESULTS, "datatype": "BYTES", "shape": [len(elements)],
                         "data": [e.decode("utf-8") for e in elements]}]}


_TENSOR = {"type": "object", "required": ["name", "datatype", "shape"], "properties": {
    "name": {"type": "string"}, "datatype": {"type": "string", "enum": list(oip.DATATYPES)},
    "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}}, "parameters": {"type": "object"},
    "data": {"type": "array", "description": "Row-major elements (flat or nested); BYTES elements are strings."}}}
INFER_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "type": "object", "required": ["inputs"], "properties": {
        "id": {"type": "string"}, "parameters": {"type": "object", "description": "lane: interactive or batch"},
        "inputs": {"type": "array", "items": _TENSOR},
        "outputs": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "enum": [oip.RESULTS]}, "parameters": {"type": "object"}}}}}}}}}}
"""The inference request's JSON form in /openapi.json (the endpoint reads the body itself, also in the binary
extension's form, so FastAPI does not describe it)."""


def _model_routes(router: APIRouter, spec: TaskSpec, max_items: int, path_name: str, hidden: bool) -> None:
    name = spec.name
    scope = f"task:{name}"
    Req = request_model(spec, max_items)

    def serving_version(state: Any) -> str:
        taskflow = state.taskflows.get(name)
        return (taskflow.meta.model_version if taskflow is not None else None) or ""

    async def metadata(request: Request, version: str = "") -> Response:
        state = request.app.state.sectorflow
        try:
            await require(scope)(request)
            oip.check_version(spec, version, serving_version(state))
        except Exception as exc:
            return v2_exception(exc)
        return JSONResponse(oip.model_metadata(spec, serving_version(state)))

    async def ready(request: Request, version: str = "") -> Response:
        state = request.app.state.sectorflow
        try:
            await require(scope)(request)
            oip.check_version(spec, version, serving_version(state))
        except Exception as exc:
            return v2_exception(exc)
        is_ready = name in state.batchers
        return JSONResponse({"name": name, "ready": is_ready}, status_code=200 if is_ready else 400)

    async def infer(request: Request, version: str = "") -> Response:
        state = request.app.state.sectorflow
        rid, source = request_id(request), client_address(request)
        try:
            key = await require(scope)(request)
        except Exception as exc:
            return v2_exception(exc)
        try:
            oip.check_version(spec, version, serving_version(state))
            body, tensors = parse_infer_body(await request.body(), request.headers.get(BINARY_HEADER))
            lane = lane_of(body.get("parameters"))
            items = oip.validate_items(Req, oip.items_from_tensors(spec, tensors, max_items))
        except SectorflowError as exc:
            try:
                await record_refused(state, name, key, source, rid, exc, "http")
            except SectorflowError as audit:
                return v2_exception(audit)
            return v2_exception(exc)
        try:
            answer = await submit_items(state, name, key, items, lane, source, rid, request.scope.get("state"))
        except Exception as exc:
            return v2_exception(exc)
        return JSONResponse(infer_answer(name, serving_version(state), body.get("id"), answer),
                            headers={"X-Sectorflow-Call-ID": answer.call_id,
                                     "X-Sectorflow-Batch-Items": str(answer.batch_items)})

    tags = ["open inference protocol"]
    for prefix in (f"/v2/models/{path_name}", f"/v2/models/{path_name}/versions/{{version}}"):
        router.add_api_route(prefix, metadata, methods=["GET"], tags=tags, include_in_schema=not hidden,
                             operation_id=None if hidden else f"v2_metadata_{name}" + ("_v" if "{" in prefix else ""),
                             summary=f"Model metadata of {name} (inputs and outputs)")
        router.add_api_route(f"{prefix}/ready", ready, methods=["GET"], tags=tags, include_in_schema=not hidden,
                             operation_id=None if hidden else f"v2_ready_{name}" + ("_v" if "{" in prefix else ""),
                             summary=f"Whether {name}'s model is loaded")
        router.add_api_route(f"{prefix}/infer", infer, methods=["POST"], tags=tags, include_in_schema=not hidden,
                             openapi_extra=INFER_BODY,
                             operation_id=None if hidden else f"v2_infer_{name}" + ("_v" if "{" in prefix else ""),
                             summary=f"Run {name} (Open Inference Protocol; scope task:{name})",
                             description="Inputs: 'items' (BYTES [N], JSON text per item) or one tensor per "
                                         "input field; output 'results' (BYTES [N], JSON text per item).")


def v2_router(specs: dict[str, TaskSpec], max_items: int) -> APIRouter:
    """The router of the protocol's routes for every served task (and hidden ones per alias)."""
    router = APIRouter()
    tags = ["open inference protocol"]

    @router.get("/v2/health/live", tags=tags, operation_id="v2_live", summary="The process serves (no key)")
    async def live() -> dict[str, bool]:
        return {"live": True}

    @router.get("/v2/health/ready", tags=tags, operation_id="v2_ready", summary="Every model is loaded (no key)")
    async def server_ready(request: Request) -> JSONResponse:
        is_ready = request.app.state.sectorflow.ready
        return JSONResponse({"ready": is_ready}, status_code=200 if is_ready else 400)

    @router.get("/v2", tags=tags, operation_id="v2_server_metadata", summary="Server name, version, extensions")
    async def server_metadata(request: Request) -> Response:
        try:
            await require("")(request)
        except (AccessDenied, SectorflowError) as exc:
            return v2_exception(exc)
        return JSONResponse(oip.server_metadata())

    for name, spec in specs.items():
        _model_routes(router, spec, max_items, name, hidden=False)
        for alias in spec.aliases:
            _model_routes(router, spec, max_items, alias, hidden=True)

    @router.api_route("/v2/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"], include_in_schema=False)
    async def unknown(request: Request, rest: str) -> Response:
        try:
            await require("")(request)  # 401 before telling an unauthenticated caller what exists
        except (AccessDenied, SectorflowError) as exc:
            return v2_exception(exc)
        parts = rest.split("/")
        if len(parts) >= 2 and parts[0] == "models" and parts[1] not in specs:
            return v2_error(404, f"No model {parts[1]!r}; served: {', '.join(specs)}.")
        return v2_error(404, f"No route {request.method} /v2/{rest}: the protocol's routes are GET /v2, "
                             "GET /v2/health/live|ready, GET /v2/models/NAME[/ready], POST /v2/models/NAME/infer.")

    return router


__all__ = ["V2_OPEN_PATHS", "v2_router"]
