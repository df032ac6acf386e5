"""Error responses and the ASGI middleware (body size limit, request id, HTTP metrics).

Every error body is :class:`~sectorflow.serving.schemas.ErrorBody`. Bad input never becomes a 500: request
validation gives 422 with field and reason, a :class:`~sectorflow.errors.SectorflowError` gives its
``http_status``, overload gives 503 and rate limits 429, both with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import secrets
from types import SimpleNamespace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import CallContext, SectorflowError, TaskEvent, host
from .access import AccessDenied, off_the_loop, require
from .batching import Overloaded
from .metrics import MODEL_CALL, request_outcome
from .oip import v2_task_routes

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
TASKS_PREFIX = "/v1/tasks/"


class RateLimited(Exception):
    """A key or tenant over its rate limit (429), or a request larger than a whole window (413)."""

    def __init__(self, message: str, retry_after_s: int, too_large: bool = False) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.too_large = too_large


async def record_refused_call(request: Request, error: str, body: Any) -> None:
    """Emit a ``call_failed`` task event for a task request refused at validation, naming the key as actor (the
    same event ``Taskflow.run`` emits for invalid items), so that every authenticated task request leaves an event.
    Requests refused before authentication leave an access decision instead."""
    key = getattr(request.state, "api_key", None)
    state = getattr(request.app.state, "sectorflow", None)
    if key is None or state is None or not request.url.path.startswith(TASKS_PREFIX):
        return
    name = state.aliases.get(request.url.path[len(TASKS_PREFIX):])
    if name is None:
        return
    inputs = body.get("inputs") if isinstance(body, dict) else None
    await emit_refused(request, name, key, error, len(inputs) if isinstance(inputs, list) else 0)


async def emit_refused(request: Request, name: str, key: Any, error: str, n_items: int) -> None:
    """The ``call_failed`` event of task ``name`` for a request of ``key`` refused before the model call."""
    state = request.app.state.sectorflow
    taskflow = state.taskflows.get(name)
    context = CallContext(actor=key.id, tenant=key.tenant, source=request.client.host if request.client else "unknown",
                          request_id=request.state.request_id, channel="http")
    event = TaskEvent("call_failed", name, context, taskflow.meta if taskflow else None, n_items=n_items, error=error)
    await off_the_loop(state.observer_executor, "sectorflow_task_event", lambda: host.emit(event))


def error_response(status: int, error: str, message: str, details: Any = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, "details": details}, status_code=status,
                        headers=headers)


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts)


_SEND_JSON = 'send a JSON object (for a task: {"inputs": [...]}) with Content-Type: application/json'
_UNPARSED = "There was an error parsing the body"  # FastAPI's 400 when json.loads raises other than JSONDecodeError


def unparsed_body_reason(cause: BaseException | None) -> str:
    """What to fix about a body that ``json.loads`` refused with something other than a ``JSONDecodeError``: bytes
    that are not UTF-8, a number too long for Python's int conversion limit, or nesting deeper than the parser's
    recursion limit (FastAPI answers these with a bare 400 "There was an error parsing the body")."""
    if isinstance(cause, UnicodeDecodeError):
        byte = cause.object[cause.start:cause.start + 1].hex() if cause.object else "?"
        return (f"The request body is not valid UTF-8 (byte 0x{byte} at byte offset {cause.start}); encode the "
                f"JSON as UTF-8 and {_SEND_JSON}")
    if isinstance(cause, RecursionError):
        return (f"The request body nests arrays or objects too deeply to parse (task items are flat objects); "
                f"{_SEND_JSON}")
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return (f"The request body holds a number too long to parse ({cause}); send long numbers as strings, "
                f"or {_SEND_JSON}").replace("; use sys.set_int_max_str_digits() to increase the limit", "")
    return f"The request body could not be parsed as JSON ({type(cause).__name__}: {cause}); {_SEND_JSON}"


def _problem(error: dict[str, Any], content_type: str = "application/json") -> dict[str, Any]:
    """One ``details`` entry of a 422 from a pydantic/FastAPI validation error.

    A body that is not JSON at all comes as ``json_invalid`` with the location ``("body", <character offset>)``;
    the offset is not a field, so it is reported as field ``body`` with the offset in the reason."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":
        where = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        why = (error.get("ctx") or {}).get("error") or error.get("msg", "JSON decode error")
        at = f" at character {where}" if where is not None else ""
        return {"field": "body", "row": None, "reason": f"The request body is not valid JSON ({why}{at}); {_SEND_JSON}"}
    if loc == ("body",) and error.get("type") == "missing":
        return {"field": "body", "row": None, "reason": f"The request body is empty; {_SEND_JSON}"}
    if loc == ("body",) and error.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        sent = (f" (this one came with Content-Type: {content_type})" if content_type and not
                _is_json(content_type) else " (no Content-Type header came)" if not content_type else "")
        return {"field": "body", "row": None,
                "reason": 'The request body must be a JSON object (for a task: {"inputs": [...]}) sent with '
                          f"Content-Type: application/json{sent}"}
    if error.get("type") == "string_unicode":  # pydantic-core: a lone surrogate escape such as "\ud800"
        return {"field": _field(loc), "row": None,
                "reason": "Not valid Unicode: the string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff "
                          "without its pair); send the character itself or both halves of its pair"}
    return {"field": _field(loc), "reason": error.get("msg", "invalid"), "row": None}


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def authenticate_first(request: Request) -> JSONResponse | None:
    """Run the route's key check (the ``require`` dependency of :mod:`.access`) for a request whose body could not
    be parsed: FastAPI parses the body before it resolves dependencies, so without this an unparseable body was
    answered 422 before the key was looked at, and left neither an access decision nor a ``call_failed`` event.
    Returns the 401/403 (or the audit log's refusal) to send instead, or ``None`` when the key passed (it is then
    in ``request.state.api_key``) or the route needs none."""
    if getattr(request.state, "api_key", None) is not None:
        return None
    dependant = getattr(request.scope.get("route"), "dependant", None)
    for dependency in getattr(dependant, "dependencies", ()):
        if getattr(dependency.call, "sectorflow_scope", None) is not None:
            try:
                await dependency.call(request)
            except (AccessDenied, SectorflowError) as exc:
                return exception_response(exc)
    return None


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

    async def _refuse(request: Request, problems: list[dict[str, Any]], body: Any) -> JSONResponse:
        refused = await authenticate_first(request)  # 401/403 come before complaints about the body
        if refused is not None:
            return refused
        shown = "; ".join(f"{p['field'] or '(body)'}: {p['reason']}" for p in problems[:5])
        try:
            await record_refused_call(request, f"InvalidInputError: Invalid request: {shown}.", body)
        except SectorflowError as exc:  # e.g. the audit log could not record it (AuditWriteError, 503)
            return error_response(exc.http_status, type(exc).__name__, str(exc))
        return error_response(422, "InvalidInputError", f"Invalid request: {shown}.", problems)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        return await _refuse(request, [_problem(e, content_type) for e in exc.errors()], exc.body)

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
        if exc.status_code == 400 and exc.detail == _UNPARSED:  # json.loads raised other than JSONDecodeError
            return await _refuse(request, [{"field": "body", "row": None,
                                            "reason": unparsed_body_reason(exc.__cause__)}], None)
        message = str(exc.detail)
        if exc.status_code == 405 and exc.headers and exc.headers.get("Allow"):
            message = (f"Method {request.method} is not allowed on {request.url.path}; use "
                       f"{exc.headers['Allow']} (see /docs).")
        elif exc.status_code == 404 and exc.detail == "Not Found":
            message = (f"No route {request.url.path}: tasks are at POST /v1/tasks/NAME (GET /v1/tasks lists them; "
                       f"every route is in /docs).")
        return error_response(exc.status_code, "HTTPError", message, headers=exc.headers)


class ServingMiddleware:
    """Pure ASGI middleware: refuses request bodies over ``max_body_bytes`` (read here, before the app, so it works
    with every FastAPI version; see :meth:`too_large`), gives every request an id (the caller's well-formed
    ``X-Request-ID``, else a new one), returns it as ``X-Request-ID`` on every response, counts responses in
    ``sectorflow_http_requests_total`` by route template (``unmatched`` for unknown paths) and, with ``state``, every
    answered request to a served task's route in ``sectorflow_requests_total`` with its status.

    With ``fast`` (a :class:`~sectorflow.serving.fastpath.TaskFastPath`), a well-formed task request is answered
    there, without FastAPI's routing and dependency machinery, and an oversized request to a task's route has its
    key checked and its refusal recorded (:meth:`too_large`); everything else goes on to the app."""

    def __init__(self, app: ASGIApp, metrics: Any, max_body_bytes: int, fast: Any = None, state: Any = None) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.fast = fast
        self.state = state
        self._counted: dict[tuple[str, str, int], Any] = {}  # (method, route, status) -> its counter child
        self._tasks: dict[str, str] | None = None  # route path of a task or alias -> task name
        self._v2: list[tuple[re.Pattern[str], Any, str]] | None = None  # v2 infer routes: (pattern, route, task)

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
        answered = True

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                status["started"] = True
                message["headers"] = list(message.get("headers", [])) + [rid_header]
            await send(message)

        try:
            body = await read_body(self.max_body_bytes, headers, receive)
            if body is None:
                response = await self.too_large(scope)
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
        except asyncio.CancelledError:
            answered = "started" in status  # cancelled before answering (shutdown): no task response to count
            raise
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self._count(scope.get("method", ""), route, status["code"])
            if answered and self.state is not None and scope.get("method") == "POST":
                self._count_task(route, scope["state"], status["code"])

    async def too_large(self, scope: Scope) -> JSONResponse:
        """The answer to a request whose body is (or is declared) over ``max_body_bytes``; the body is never read
        past the limit (not at all when ``Content-Length`` declares it), and nothing here reads it.

        On a task route (or alias), the key is checked first, from the headers alone, as for a malformed body: no
        key or an unknown one is 401, a key without the task's scope 403, each with its access decision. A valid
        key gets 413 with its allowed access decision and a ``call_failed`` event naming the key and the task
        (``RequestTooLarge``, no items), so that the refusal reaches the audit log; a record the audit log cannot
        write (``access`` or the task regulated) answers its error instead (503). A task's ``/v2/models/NAME/infer``
        (and ``/versions/V/infer``) is checked the same way and answers the Open Inference Protocol's ``{"error"}``
        body. Any other path is 413 at once."""
        message = (f"The request body exceeds {self.max_body_bytes} bytes (the server's [server] max_body_bytes): split "
                   "the inputs into several requests (e.g. a few hundred items each), or ask the operator to raise "
                   "max_body_bytes.")
        route = self.fast.route(scope) if self.fast is not None else None
        if route is not None and "app" in scope:
            scope["route"] = route  # labels the metrics and the access decision's action with the task's route
            request = Request(scope)  # no receive channel: the body cannot be read from it
            try:
                await require(route.scope)(request)
                await record_refused_call(request, f"RequestTooLarge: {message}", None)
            except (AccessDenied, SectorflowError) as exc:
                response = exception_response(exc)
                assert response is not None
                return response
        v2 = self._v2_infer(scope) if route is None else None
        if v2 is not None:  # a task's Open Inference Protocol infer route: the same key check, the protocol's body
            scope["route"], task = v2
            request = Request(scope)
            try:
                key = await require(f"task:{task}")(request)
                await emit_refused(request, task, key, f"RequestTooLarge: {message}", 0)
            except (AccessDenied, SectorflowError) as exc:
                response = exception_response(exc)
                assert response is not None
                native = json.loads(bytes(response.body))
                headers = {k: v for k, v in response.headers.items()
                           if k.lower() in ("retry-after", "www-authenticate")}
                return JSONResponse({"error": f"{native['error']}: {native['message']}"},
                                    status_code=response.status_code, headers=headers)
        if scope.get("path", "").startswith("/v2/"):  # the Open Inference Protocol's error body
            return JSONResponse({"error": f"RequestTooLarge: {message}"}, status_code=413)
        return error_response(413, "RequestTooLarge", message)

    def _v2_infer(self, scope: Scope) -> tuple[Any, str] | None:
        """``(route, task)`` of a ``POST`` to a served task's ``/v2/models/NAME[/versions/V]/infer`` (``route`` has
        the template as ``path``, for the metrics and the access decision's action), else ``None``."""
        if self.state is None or "app" not in scope or scope.get("method") != "POST" \
                or not scope.get("path", "").startswith("/v2/models/"):
            return None
        if self._v2 is None:
            self._v2 = [(re.compile(re.escape(t).replace(re.escape("{version}"), "[^/]+")), SimpleNamespace(path=t),
                         task) for t, task in v2_task_routes(self.state.aliases).items()]
        for pattern, route, task in self._v2:
            if pattern.fullmatch(scope["path"]):
                return route, task
        return None

    def _count_task(self, route: str, state: dict[str, Any], status: int) -> None:
        """Count an answered request to a served task's route (or alias) in ``sectorflow_requests_total``: labelled
        with the model version of the call that answered it, or, with no model call (a refusal), the version
        serving now (empty while loading)."""
        if self._tasks is None:
            self._tasks = {f"{TASKS_PREFIX}{alias}": name for alias, name in self.state.aliases.items()}
            self._tasks.update(v2_task_routes(self.state.aliases))  # POST /v2/models/NAME/infer
        task = self._tasks.get(route)
        if task is None:
            return
        version = state.get(MODEL_CALL)
        called = version is not None
        if not called:
            taskflow = self.state.taskflows.get(task)
            version = (taskflow.meta.model_version if taskflow is not None else None) or ""
        self.metrics.count_request(task, version, request_outcome(status, called), status)

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
