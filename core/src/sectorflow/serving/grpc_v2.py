"""The Open Inference Protocol (KServe v2) over gRPC: service ``inference.GRPCInferenceService`` beside the REST app.

Started by the app's lifespan on ``[server] grpc_listen`` (e.g. ``"0.0.0.0:8081"``; unset: no gRPC), in the same
event loop and over the same :class:`~.state.ServerState` as the REST routes, so that keys, scopes, tenant state,
the key's and tenant's rate limits, the task's batcher, task events and metrics are shared:

- keys come as metadata ``authorization: Bearer KEY`` (or ``x-api-key``); every check is an access decision with
  channel ``grpc`` and action ``grpc ModelInfer`` (etc.); task events carry channel ``grpc``;
- tensors are decoded by :mod:`.oip` (``raw_input_contents`` or typed ``contents``), the answer is ``results``
  (BYTES, JSON per item) in ``raw_output_contents``, ``parameters`` ``call_id`` and ``batch_items``;
- errors are gRPC status codes: INVALID_ARGUMENT (a wrong tensor or item), UNAUTHENTICATED, PERMISSION_DENIED,
  NOT_FOUND, RESOURCE_EXHAUSTED (rate limit; trailing metadata ``retry-after``), UNAVAILABLE (loading, queue);
- ``sectorflow_requests_total`` counts each ModelInfer with the HTTP status the REST route would give, and
  ``sectorflow_grpc_requests_total{method, code}`` every call.

Messages are built from ``grpc_predict_v2.proto``'s descriptor (:mod:`.oip_descriptor`) in a private descriptor pool.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from .. import ConfigError, SectorflowError
from . import oip
from .access import AccessDenied, authorize
from .auth import ApiKey, presented_secret
from .batching import Overloaded
from .handlers import _REQUEST_ID, RateLimited, new_request_id
from .metrics import MODEL_CALL, request_outcome
from .oip_descriptor import SERIALIZED
from .routes_tasks import submit_items
from .routes_v2 import record_refused
from .schemas import request_model

log = logging.getLogger("sectorflow.serving.grpc")
SERVICE = "inference.GRPCInferenceService"
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED))
MESSAGES = {name: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"inference.{name}")) for name in (
    "ServerLiveRequest", "ServerLiveResponse", "ServerReadyRequest", "ServerReadyResponse", "ModelReadyRequest",
    "ModelReadyResponse", "ServerMetadataRequest", "ServerMetadataResponse", "ModelMetadataRequest",
    "ModelMetadataResponse", "ModelInferRequest", "ModelInferResponse", "InferParameter")}
_CONTENTS = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
             "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
             "UINT32": "uint_contents", "UINT64": "uint64_contents", "FP32": "fp32_contents",
             "FP64": "fp64_contents", "BYTES": "bytes_contents"}
_CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 401: grpc.StatusCode.UNAUTHENTICATED,
          403: grpc.StatusCode.PERMISSION_DENIED, 404: grpc.StatusCode.NOT_FOUND,
          413: grpc.StatusCode.RESOURCE_EXHAUSTED, 422: grpc.StatusCode.INVALID_ARGUMENT,
          429: grpc.StatusCode.RESOURCE_EXHAUSTED, 503: grpc.StatusCode.UNAVAILABLE}


class Refusal(Exception):
    """An answer other than OK: the HTTP status the REST route would give, its message and trailing metadata."""

    def __init__(self, status: int, message: str, trailers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.trailers = trailers


def refusal(exc: BaseException) -> Refusal:
    """An expected exception as a :class:`Refusal` (re-raises anything else)."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, SectorflowError):
        return Refusal(exc.http_status, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, AccessDenied):
        return Refusal(exc.status, str(exc))
    if isinstance(exc, RateLimited):
        if exc.too_large:
            return Refusal(413, f"RequestTooLarge: {exc}")
        return Refusal(429, f"RateLimited: {exc}", (("retry-after", str(exc.retry_after_s)),))
    if isinstance(exc, Overloaded):
        return Refusal(503, f"Overloaded: {exc}", (("retry-after", str(exc.retry_after_s)),))
    raise exc


def decode_tensors(request: Any) -> list[oip.Tensor]:
    """The input tensors of a ModelInferRequest (raw contents, or typed contents). Raises :class:`~.oip.TensorError`."""
    raw = list(request.raw_input_contents)
    if raw and len(raw) != len(request.inputs):
        raise oip.TensorError(f"raw_input_contents has {len(raw)} entries for {len(request.inputs)} inputs; give one "
                              f"per input, in order.")
    tensors = []
    for i, tensor in enumerate(request.inputs):
        name, datatype, shape = oip.check_tensor(tensor.name, tensor.datatype, list(tensor.shape))
        if raw:
            values = oip.decode_raw(name, datatype, shape, raw[i])
        elif datatype == "FP16":
            raise oip.TensorError(f"Input {name!r} is FP16: send it in raw_input_contents.")
        else:
            values = list(getattr(tensor.contents, _CONTENTS[datatype]))
            oip.check_count(name, shape, len(values))
        tensors.append(oip.Tensor(name, datatype, shape, values))
    return tensors


def _param(value: Any) -> Any:
    kind = value.WhichOneof("parameter_choice")
    return getattr(value, kind) if kind else None


class InferenceService:
    """The six methods of the protocol's gRPC service over one server's state."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.request_models = {name: request_model(spec, state.config.server.max_items_per_request)
                               for name, spec in state.specs.items()}
        self.calls = state.metrics.grpc

    # --- plumbing ---------------------------------------------------------------------------------------------

    async def authorize(self, context: Any, scope: str, method: str, rid: str) -> ApiKey:
        """The caller's key from the metadata, checked for ``scope``; records the access decision. Raises
        :class:`AccessDenied` (401/403)."""
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        secret = presented_secret(metadata.get("authorization"), metadata.get("x-api-key"))
        return await authorize(self.state, secret, scope, self.source(context), rid, f"grpc {method}", channel="grpc",
                               names="authorization and x-api-key", send="metadata 'authorization: Bearer <key>'")

    @staticmethod
    def source(context: Any) -> str:
        peer = context.peer() or "unknown"  # "ipv4:127.0.0.1:50514", "ipv6:[::1]:50514", "unix:..."
        kind, _, rest = peer.partition(":")
        if kind in ("ipv4", "ipv6"):
            return rest.rsplit(":", 1)[0].strip("[]")
        return peer

    @staticmethod
    def request_id(context: Any) -> str:
        given = dict(context.invocation_metadata() or ()).get("x-request-id", "")
        return given if _REQUEST_ID.match(given) else new_request_id()

    def task(self, name: str) -> str:
        task = self.state.aliases.get(name)
        if task is None:
            raise Refusal(404, f"No model {name!r}; served: {', '.join(self.state.specs)}.")
        return task

    def version(self, task: str) -> str:
        taskflow = self.state.taskflows.get(task)
        return (taskflow.meta.model_version if taskflow is not None else None) or ""

    async def answer(self, method: str, context: Any, call: Any, outcome: dict[str, Any] | None = None) -> Any:
        """Run ``call``; map a refusal to its status code (and count the call). ``outcome["status"]``: the HTTP
        status the REST route would have answered."""
        outcome = {} if outcome is None else outcome
        try:
            response = await call()
        except Exception as exc:  # noqa: BLE001 - an unexpected one is re-raised by refusal()
            try:
                refused = refusal(exc)
            except Exception:
                self.calls.labels(method, "INTERNAL").inc()
                log.exception("gRPC %s failed", method)
                raise
            code = _CODES.get(refused.status, grpc.StatusCode.INVALID_ARGUMENT)
            self.calls.labels(method, code.name).inc()
            outcome["status"] = refused.status
            if refused.trailers:
                context.set_trailing_metadata(refused.trailers)
            await context.abort(code, str(refused))
        self.calls.labels(method, "OK").inc()
        outcome["status"] = 200
        return response

    # --- the service's methods --------------------------------------------------------------------------------

    async def ServerLive(self, request: Any, context: Any) -> Any:
        return await self.answer("ServerLive", context, self._live)

    async def _live(self) -> Any:
        return MESSAGES["ServerLiveResponse"](live=True)

    async def ServerReady(self, request: Any, context: Any) -> Any:
        async def run() -> Any:
            return MESSAGES["ServerReadyResponse"](ready=self.state.ready)
        return await self.answer("ServerReady", context, run)

    async def ServerMetadata(self, request: Any, context: Any) -> Any:
        async def run() -> Any:
            await self.authorize(context, "", "ServerMetadata", self.request_id(context))
            return MESSAGES["ServerMetadataResponse"](**oip.server_metadata())
        return await self.answer("ServerMetadata", context, run)

    async def ModelReady(self, request: Any, context: Any) -> Any:
        async def run() -> Any:
            task = self.task(request.name)
            await self.authorize(context, f"task:{task}", "ModelReady", self.request_id(context))
            oip.check_version(self.state.specs[task], request.version, self.version(task))
            return MESSAGES["ModelReadyResponse"](ready=task in self.state.batchers)
        return await self.answer("ModelReady", context, run)

    async def ModelMetadata(self, request: Any, context: Any) -> Any:
        async def run() -> Any:
            task = self.task(request.name)
            await self.authorize(context, f"task:{task}", "ModelMetadata", self.request_id(context))
            oip.check_version(self.state.specs[task], request.version, self.version(task))
            return MESSAGES["ModelMetadataResponse"](**oip.model_metadata(self.state.specs[task], self.version(task)))
        return await self.answer("ModelMetadata", context, run)

    async def ModelInfer(self, request: Any, context: Any) -> Any:
        note: dict[str, Any] = {}
        status: dict[str, Any] = {"status": 500, "task": None}

        async def run() -> Any:
            task = status["task"] = self.task(request.model_name)
            rid, source = self.request_id(context), self.source(context)
            key = await self.authorize(context, f"task:{task}", "ModelInfer", rid)
            spec = self.state.specs[task]
            try:
                oip.check_version(spec, request.model_version, self.version(task))
                lane = _param(request.parameters["lane"]) if "lane" in request.parameters else None
                if lane is not None and lane not in ("interactive", "batch"):
                    raise oip.TensorError(f"Parameter 'lane' is {lane!r}; use 'interactive' or 'batch'.")
                if any(o.name != oip.RESULTS for o in request.outputs):
                    raise oip.TensorError(f"The only output is '{oip.RESULTS}' (BYTES, JSON per item).")
                items = oip.validate_items(self.request_models[task], oip.items_from_tensors(
                    spec, decode_tensors(request), self.state.config.server.max_items_per_request))
            except SectorflowError as exc:
                await record_refused(self.state, task, key, source, rid, exc, "grpc")
                raise
            answer = await submit_items(self.state, task, key, items, lane, source, rid, note, channel="grpc")
            elements = oip.result_elements(answer.outputs)
            Param = MESSAGES["InferParameter"]
            response = MESSAGES["ModelInferResponse"](
                model_name=task, model_version=self.version(task), id=request.id,
                parameters={"call_id": Param(string_param=answer.call_id),
                            "batch_items": Param(int64_param=answer.batch_items)},
                raw_output_contents=[oip.encode_bytes(elements)])
            response.outputs.add(name=oip.RESULTS, datatype="BYTES", shape=[len(elements)])
            context.set_trailing_metadata((("x-sectorflow-call-id", answer.call_id),))
            return response

        try:
            return await self.answer("ModelInfer", context, run, status)
        finally:
            if status["task"] is not None:
                version = note.get(MODEL_CALL)
                called = version is not None
                self.state.metrics.count_request(status["task"], version if called else self.version(status["task"]),
                                                 request_outcome(status["status"], called), status["status"])

    def handler(self) -> grpc.GenericRpcHandler:
        methods = {}
        for name in ("ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata", "ModelInfer"):
            req, resp = MESSAGES[f"{name}Request"], MESSAGES[f"{name}Response"]
            methods[name] = grpc.unary_unary_rpc_method_handler(
                getattr(self, name), request_deserializer=req.FromString, response_serializer=resp.SerializeToString)
        return grpc.method_handlers_generic_handler(SERVICE, methods)


async def start_grpc(state: Any, listen: str) -> Any:
    """Start the gRPC server on ``listen`` (``host:port``; port 0: a free one) in the running event loop; returns
    the ``grpc.aio.Server`` (its bound port in ``state.grpc_port``)."""
    limit = state.config.server.max_body_bytes
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", limit),
                                      ("grpc.max_send_message_length", max(limit, 4 << 20))])
    server.add_generic_rpc_handlers((InferenceService(state).handler(),))
    try:
        state.grpc_port = server.add_insecure_port(listen)
    except RuntimeError:  # grpcio raises where older versions returned 0
        state.grpc_port = 0
    if not state.grpc_port:
        raise ConfigError(f"[server] grpc_listen = {listen!r}: cannot listen there (the port is in use, or the "
                          f"host is not an address of this machine).")
    await server.start()
    log.info("gRPC (Open Inference Protocol) on %s, port %s", listen, state.grpc_port)
    return server


__all__ = ["InferenceService", "MESSAGES", "start_grpc"]
