"""The hot path of ``POST /v1/tasks/{task}`` as plain ASGI: same answers as the FastAPI route, a fraction of the cost.

FastAPI's route for a task (``routes_tasks``) stays the description in ``/openapi.json`` and the place where every
unusual request is answered. A profile at 200 concurrent clients (``benchmarks/serve_load.py``, py-spy) showed most
of the event loop's time per request in the framework rather than in the task: routing through the included
routers, the exception and exit-stack middlewares, dependency resolution, ``json.loads`` followed by pydantic
validation of the Python objects. :class:`TaskFastPath` answers a request itself only when everything about it is
ordinary:

- ``POST`` to a served task's path (or alias), ``Content-Type: application/json``, no query string or exactly
  ``lane=interactive`` / ``lane=batch``;
- the body validates as the task's request model, parsed and validated in one step by pydantic-core
  (``model_validate_json``, no intermediate Python objects).

Then it calls :func:`routes_tasks.serve_task`, the one implementation of a task request that the FastAPI route's
endpoint calls too (the key checked with :func:`access.authorize` and its decision recorded, the items run, the
answer serialised), sends its body and headers as the two ASGI messages a Starlette ``Response`` would send (same
headers, in the same order, without building one) and maps its exceptions with :func:`handlers.exception_response`
(the function behind the app's exception handlers). A request whose body or query the fast parse does not take
(invalid JSON or fields, another content type or query) goes on to FastAPI untouched: FastAPI parses it and either
refuses it through the app's handlers (401/403 before 422 with fields, ...) or its endpoint calls the same
:func:`~routes_tasks.serve_task`. So this module only parses: checking, recording and answering have one
implementation, and each request goes through it once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from .auth import presented_secret
from .handlers import exception_response
from .routes_tasks import TaskRoute, serve_task

_LANE_QUERIES = {b"": None, b"lane=interactive": "interactive", b"lane=batch": "batch"}
_JSON = (b"content-type", b"application/json")


class TaskFastPath:
    """Answer ordinary task requests without FastAPI (see the module docstring); ``await fast(...)`` returns
    ``False`` when the request must go on to the app."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self._routes: dict[str, TaskRoute] = {}

    def add(self, route: TaskRoute) -> None:
        """Serve ``POST route.path`` (a task's route or an alias)."""
        self._routes[route.path] = route

    def route(self, scope: dict[str, Any]) -> TaskRoute | None:
        """The task route a request goes to (``POST`` to a served task's path or alias), else ``None``: ``path`` (the
        route template), ``task``, ``scope`` (``task:NAME``) and ``action`` (``POST <path>``)."""
        route = self._routes.get(scope["path"])
        if route is None or scope["method"] != "POST" or scope.get("root_path"):
            return None
        return route

    async def __call__(self, scope: dict[str, Any], headers: dict[bytes, bytes], body: bytes, rid: str,
                       send: Callable[[Any], Awaitable[None]]) -> bool:
        route = self.route(scope)
        if route is None:
            return False
        query = scope.get("query_string", b"")
        if query not in _LANE_QUERIES:
            return False
        content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if content_type != b"application/json":
            return False
        try:
            request = route.request_model.model_validate_json(body)
        except ValidationError:
            return False  # FastAPI answers 422 with fields (and the call_failed event), or 401 first
        state = self.state
        auth, api_key = headers.get(b"authorization"), headers.get(b"x-api-key")
        secret = presented_secret(auth.decode("latin-1") if auth is not None else None,
                                  api_key.decode("latin-1") if api_key is not None else None)
        client = scope.get("client")
        source = client[0] if client else "unknown"
        scope["route"] = route  # labels sectorflow_http_requests_total like the FastAPI route
        try:
            # The access check of every protocol (401/403 answered here too, with their decision); inside the try:
            # an observer of the decision may refuse it (the audit log's AuditWriteError, 503, when "access" is
            # regulated and the record cannot be written).
            body, task_headers = await serve_task(state, route, secret,
                                                  request.inputs,  # type: ignore[attr-defined]
                                                  _LANE_QUERIES[query], source, rid, scope.get("state"))
        except Exception as exc:
            mapped = exception_response(exc)
            if mapped is None:
                raise  # Starlette's ServerErrorMiddleware answers 500, as for the FastAPI route
            await mapped(scope, _no_more_body, send)
            return True
        # What Response(body, media_type="application/json", headers=task_headers) sends: its headers lower-cased
        # in their order, then content-length and content-type.
        raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in task_headers.items()]
        raw += [(b"content-length", str(len(body)).encode("latin-1")), _JSON]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        await send({"type": "http.response.body", "body": body})
        return True


async def _no_more_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


__all__ = ["TaskFastPath"]
