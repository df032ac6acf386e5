"""Error responses and the ASGI middleware (body size limit, request id, HTTP metrics).

Every error body is :class:`~sectorflow.serving.schemas.ErrorBody`. Bad input never becomes a 500: request
validation gives 422 with field and reason, a :class:`~sectorflow.errors.SectorflowError` gives its
``http_status``, overload gives 503 and rate limits 429, both with ``Retry-After``.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import plugins
from ..errors import SectorflowError
from ..spec import CallContext, TaskEvent
from .access import AccessDenied
from .batching import Overloaded

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RateLimited(Exception):
    """A key or tenant over its rate limit (429), or a request larger than a whole window (413)."""

    def __init__(self, message: str, retry_after_s: int, too_large: bool = False) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.too_large = too_large


def record_refused_call(request: Request, error: str, body: Any) -> None:
    """Emit a ``call_failed`` task event for a task request refused at validation, naming the key as actor (the
    same event ``Taskflow.run`` emits for invalid items), so that every authenticated task request leaves an event.
    Requests refused before authentication leave an access decision instead."""
    key = getattr(request.state, "api_key", None)
    state = getattr(request.app.state, "sectorflow", None)
    prefix = "/v1/tasks/"
    if key is None or state is None or not request.url.path.startswith(prefix):
        return
    name = state.aliases.get(request.url.path[len(prefix):])
    if name is None:
        return
    taskflow = state.taskflows.get(name)
    inputs = body.get("inputs") if isinstance(body, dict) else None
    context = CallContext(actor=key.id, tenant=key.tenant, source=request.client.host if request.client else "unknown",
                          request_id=request.state.request_id, channel="http")
    plugins.emit(TaskEvent("call_failed", name, context, taskflow.meta if taskflow else None,
                           n_items=len(inputs) if isinstance(inputs, list) else 0, error=error))


def error_response(status: int, error: str, message: str, details: Any = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, "details": details}, status_code=status,
                        headers=headers)


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts)


def _problem(error: dict[str, Any]) -> dict[str, Any]:
    """One ``details`` entry of a 422 from a pydantic/FastAPI validation error.

    A body that is not JSON at all comes as ``json_invalid`` with the location ``("body", <character offset>)``;
    the offset is not a field, so it is reported as field ``body`` with the offset in the reason."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":
        where = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        why = (error.get("ctx") or {}).get("error") or error.get("msg", "JSON decode error")
        at = f" at character {where}" if where is not None else ""
        return {"field": "body", "row": None,
                "reason": f"The request body is not valid JSON ({why}{at}); send a JSON object (for a task: "
                          f'{{"inputs": [...]}}) with Content-Type: application/json'}
    if loc == ("body",) and error.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        return {"field": "body", "row": None,
                "reason": 'The request body must be a JSON object (for a task: {"inputs": [...]}) sent with '
                          "Content-Type: application/json"}
    return {"field": _field(loc), "reason": error.get("msg", "invalid"), "row": None}


def exception_response(exc: BaseException) -> JSONResponse | None:
    """The error response for an expected exception (typed error, access, rate limit, overload); ``None`` for any
    other exception. Used by the app's exception handlers and by the task fast path alike."""
    if isinstance(exc, SectorflowError):
        details = exc.details
        try:
            json.dumps(details)
        except (TypeError, ValueError):
            details = repr(details)
        return error_response(exc.http_status, type(exc).__name__, str(exc), details)
    if isinstance(exc, AccessDenied):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, "Unauthorized" if exc.status == 401 else "Forbidden", str(exc),
                              headers=headers)
    if isinstance(exc, RateLimited):
        if exc.too_large:
            return error_response(413, "RequestTooLarge", str(exc))
        return error_response(429, "RateLimited", str(exc), headers={"Retry-After": str(exc.retry_after_s)})
    if isinstance(exc, Overloaded):
        return error_response(503, "Overloaded", str(exc), {"reason": exc.reason},
                              headers={"Retry-After": str(exc.retry_after_s)})
    return None


def install_error_handlers(app: FastAPI) -> None:
    """Map every expected exception to a 4xx/503 JSON response."""

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()]
        shown = "; ".join(f"{p['field'] or '(body)'}: {p['reason']}" for p in problems[:5])
        record_refused_call(request, f"InvalidInputError: Invalid request: {shown}.", exc.body)
        return error_response(422, "InvalidInputError", f"Invalid request: {shown}.", problems)

    @app.exception_handler(SectorflowError)
    @app.exception_handler(AccessDenied)
    @app.exception_handler(RateLimited)
    @app.exception_handler(Overloaded)
    async def _expected(request: Request, exc: Exception) -> JSONResponse:
        response = exception_response(exc)
        assert response is not None  # registered only for the types exception_response maps
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "HTTPError", str(exc.detail), headers=exc.headers)


class ServingMiddleware:
    """Pure ASGI middleware: refuses request bodies over ``max_body_bytes`` with 413 (read here, before the app, so
    it works with every FastAPI version), gives every request an id (the caller's well-formed ``X-Request-ID``, else
    a new one), returns it as ``X-Request-ID`` on every response, and counts responses in
    ``sectorflow_http_requests_total`` by route template (``unmatched`` for unknown paths).

    With ``fast`` (a :class:`~sectorflow.serving.fastpath.TaskFastPath`), a well-formed task request is answered
    there, without FastAPI's routing and dependency machinery; everything else goes on to the app."""

    def __init__(self, app: ASGIApp, metrics: Any, max_body_bytes: int, fast: Any = None) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.fast = fast
        self._counted: dict[tuple[str, str, int], Any] = {}  # (method, route, status) -> its counter child

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}
        headers = first_headers(scope)
        given = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = given if _REQUEST_ID.match(given) else new_request_id()
        scope.setdefault("state", {})["request_id"] = rid
        rid_header = (b"x-request-id", rid.encode())

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = list(message.get("headers", [])) + [rid_header]
            await send(message)

        try:
            body = await read_body(self.max_body_bytes, headers, receive)
            if body is None:
                response = error_response(413, "RequestTooLarge", f"The request body exceeds {self.max_body_bytes} "
                                          f"bytes; send fewer items per request.")
                await response(scope, receive, tracking_send)
                return
            if self.fast is not None and await self.fast(scope, headers, body, rid, tracking_send):
                return
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # later calls wait for the disconnect, as the server's receive does

            await self.app(scope, replay, tracking_send)
        finally:
            self._count(scope.get("method", ""), getattr(scope.get("route"), "path", "unmatched"), status["code"])

    def _count(self, method: str, route: str, status: int) -> None:
        """Count one response in ``sectorflow_http_requests_total``. The counter's children are looked up once per
        (method, route, status) and kept (at most 1,024 of them; unknown paths all count as ``unmatched``):
        ``labels()`` took a lock and built its key on every request."""
        key = (method, route, status)
        child = self._counted.get(key)
        if child is None:
            child = self.metrics.http.labels(method, route, str(status))
            if len(self._counted) < 1024:
                self._counted[key] = child
        child.inc()


_ID_PREFIX = secrets.token_hex(8)
_ID_COUNTER = itertools.count(1)


def new_request_id() -> str:
    """A new request id: 32 hex digits, a random 64-bit prefix per process and a 64-bit counter (unique without
    a system call per request, unlike ``uuid4``; the prefix keeps ids of different processes apart)."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"


def first_headers(scope: Scope) -> dict[bytes, bytes]:
    """Header name -> value, keeping the first of repeated headers (as Starlette's ``Request.headers.get``)."""
    found: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or ():
        if name not in found:
            found[name] = value
    return found


async def read_body(max_bytes: int, headers: dict[bytes, bytes], receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when it is (or is declared) larger than ``max_bytes``."""
    declared = headers.get(b"content-length", b"")
    if declared.isdigit() and int(declared) > max_bytes:
        return None
    chunks, total = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: hand the app an empty body
            break
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > max_bytes:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


__all__ = ["RateLimited", "ServingMiddleware", "error_response", "install_error_handlers"]
