"""The Open Inference Protocol (KServe v2) of a served task, apart from its transport.

The REST routes (:mod:`.routes_v2`) and the gRPC service (:mod:`.grpc_v2`) both turn a request's tensors into task
items here, and a task's outputs into the response tensor here, so that both protocols accept and answer alike.

Inputs (one of two forms per request; docs/serving.md "Open Inference Protocol"):

- ``items``: ``BYTES``, shape ``[N]`` (or ``[N, 1]``): element ``i`` is the JSON text of input item ``i`` (an object
  shaped like the task's input model, e.g. ``{"account": "acc-1", "amount": 12.5}``);
- one tensor per field of the input model, all with ``N`` rows: ``BYTES`` for a text field (UTF-8 text as is;
  for a non-text field, the JSON text of the value), a numeric or ``BOOL`` datatype for numbers, e.g. ``features``
  ``FP32 [N, 4]`` gives each item a list of 4 numbers. Fields left out take the model's defaults.

Output: ``results``, ``BYTES`` shape ``[N]``: element ``i`` is the JSON text of output item ``i`` (the native route's
``outputs[i]``). Response ``parameters``: ``call_id`` (the audit event's request id) and ``batch_items``.

Errors are :class:`~sectorflow.errors.InvalidInputError` (a wrong datatype, shape or element: ``TensorError``, 400;
an item that fails the task's input model: 422), which both transports turn into the protocol's error answer.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

import numpy as np
from pydantic import BaseModel, ValidationError

from .. import InvalidInputError, SectorflowError, TaskSpec, __version__

ITEMS = "items"
RESULTS = "results"
SERVER_NAME = "sectorflow"
PLATFORM = "sectorflow_paddle"
EXTENSIONS: tuple[str, ...] = ("binary_tensor_data",)
"""Triton's binary tensor extension is accepted for inputs (REST: ``Inference-Header-Content-Length``); outputs
are always JSON data (REST) or typed contents (gRPC), which every client reads."""
V2_INFER = "/v2/models/{name}/infer"
V2_INFER_VERSION = "/v2/models/{name}/versions/{version}/infer"

NUMPY: dict[str, str] = {
    "BOOL": "?", "UINT8": "<u1", "UINT16": "<u2", "UINT32": "<u4", "UINT64": "<u8", "INT8": "<i1", "INT16": "<i2",
    "INT32": "<i4", "INT64": "<i8", "FP16": "<f2", "FP32": "<f4", "FP64": "<f8",
}
DATATYPES = (*NUMPY, "BYTES")


class TensorError(InvalidInputError):
    """A tensor of an inference request with a wrong name, datatype, shape or element (HTTP 400, gRPC
    INVALID_ARGUMENT)."""

    http_status = 400


class ModelVersionNotFound(SectorflowError):
    """A model version the server does not serve (HTTP 404, gRPC NOT_FOUND)."""

    http_status = 404


@dataclass
class Tensor:
    """One input tensor: ``values`` flat, row-major, ``len(values) == prod(shape)``; BYTES elements are ``bytes``."""

    name: str
    datatype: str
    shape: list[int]
    values: list[Any]
    parameters: dict[str, Any] = field(default_factory=dict)


def check_tensor(name: Any, datatype: Any, shape: Any) -> tuple[str, str, list[int]]:
    """The name, datatype and shape of an input tensor, checked. Raises :class:`TensorError`."""
    if not isinstance(name, str) or not name:
        raise TensorError("An input tensor has no name: give each input a 'name' (e.g. 'items').")
    if datatype not in DATATYPES:
        raise TensorError(f"Input {name!r} has datatype {datatype!r}; use one of {', '.join(DATATYPES)} "
                          f"(BYTES for texts and JSON items).")
    if (not isinstance(shape, list) or not shape
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise TensorError(f"Input {name!r} has shape {shape!r}; give a list of one or more sizes >= 0, e.g. [N].")
    return name, datatype, shape


def flatten(data: Any) -> list[Any]:
    """Row-major elements of JSON ``data`` (flat or nested lists)."""
    if not isinstance(data, list):
        return [data]
    if not any(isinstance(v, list) for v in data):
        return data
    out: list[Any] = []
    for v in data:
        out.extend(flatten(v))
    return out


def decode_json_tensor(raw: Any, binary: memoryview | None, offset: int) -> tuple[Tensor, int]:
    """One input tensor of a REST request body (``raw``: its JSON object). With the binary extension, its data are
    the ``parameters.binary_data_size`` bytes of ``binary`` from ``offset``. Returns the tensor and the next offset."""
    if not isinstance(raw, dict):
        raise TensorError(f"Each entry of 'inputs' must be a tensor object (name, datatype, shape, data); got "
                          f"{type(raw).__name__}.")
    name, datatype, shape = check_tensor(raw.get("name"), raw.get("datatype"), raw.get("shape"))
    parameters = raw.get("parameters") or {}
    size = parameters.get("binary_data_size") if isinstance(parameters, dict) else None
    if size is not None:
        if binary is None or not isinstance(size, int) or size < 0 or offset + size > len(binary):
            raise TensorError(f"Input {name!r} declares binary_data_size {size!r}, but the body holds "
                              f"{0 if binary is None else len(binary) - offset} more bytes after the JSON header.")
        values = decode_raw(name, datatype, shape, bytes(binary[offset:offset + size]))
        return Tensor(name, datatype, shape, values, parameters), offset + size
    if "data" not in raw:
        raise TensorError(f"Input {name!r} has no 'data' (nor parameters.binary_data_size).")
    values = flatten(raw["data"])
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in values):
            raise TensorError(f"Input {name!r} is BYTES: its data must be strings (JSON text per item for "
                              f"'{ITEMS}').")
        values = [v.encode("utf-8", "surrogatepass") for v in values]
    else:
        check_numbers(name, datatype, values)
    check_count(name, shape, len(values))
    return Tensor(name, datatype, shape, values, parameters), offset


def check_numbers(name: str, datatype: str, values: Sequence[Any]) -> None:
    """Raise :class:`TensorError` unless every value fits ``datatype`` (bools for BOOL, integers for INT/UINT)."""
    for v in values:
        if datatype == "BOOL":
            ok = isinstance(v, bool)
        elif datatype.startswith(("INT", "UINT")):
            ok = isinstance(v, int) and not isinstance(v, bool) and (v >= 0 or datatype.startswith("INT"))
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not ok:
            raise TensorError(f"Input {name!r} is {datatype}; element {v!r} is not a finite value of that type.")


def check_count(name: str, shape: list[int], count: int) -> None:
    want = math.prod(shape)
    if want != count:
        raise TensorError(f"Input {name!r} has shape {shape} ({want} elements) but {count} elements of data.")


def decode_raw(name: str, datatype: str, shape: list[int], raw: bytes) -> list[Any]:
    """Elements of a tensor in the protocol's raw form: little-endian, row-major; BYTES elements each a 4-byte
    little-endian length and that many bytes."""
    if datatype == "BYTES":
        values, pos = [], 0
        while pos < len(raw):
            if pos + 4 > len(raw):
                raise TensorError(f"Input {name!r}: raw BYTES data end inside an element's 4-byte length.")
            (size,) = struct.unpack_from("<I", raw, pos)
            if pos + 4 + size > len(raw):
                raise TensorError(f"Input {name!r}: a raw BYTES element of {size} bytes runs past the data.")
            values.append(raw[pos + 4:pos + 4 + size])
            pos += 4 + size
    else:
        dtype = np.dtype(NUMPY[datatype])
        if len(raw) % dtype.itemsize:
            raise TensorError(f"Input {name!r}: {len(raw)} raw bytes are no whole number of {datatype} elements.")
        values = np.frombuffer(raw, dtype=dtype).tolist()
    check_count(name, shape, len(values))
    return values


def encode_bytes(elements: Sequence[bytes]) -> bytes:
    """The raw form of a BYTES tensor (each element's 4-byte little-endian length, then the element)."""
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


def _rows(tensor: Tensor) -> list[Any]:
    """The tensor split along its first dimension: scalars for shape [N], (nested) lists for [N, ...]."""
    n, rest = tensor.shape[0], tensor.shape[1:]
    if not rest:
        return list(tensor.values)
    arr = np.empty(len(tensor.values), dtype=object)
    arr[:] = tensor.values
    return arr.reshape([n, *rest]).tolist()


def _is_text(annotation: Any) -> bool:
    if annotation is str:
        return True
    return get_origin(annotation) is not None and str in get_args(annotation) and not any(
        get_origin(a) is not None for a in get_args(annotation))


def items_from_tensors(spec: TaskSpec, tensors: Sequence[Tensor], max_items: int) -> list[dict[str, Any]]:
    """The raw input items (dicts) of a request's tensors (see the module docstring). Raises :class:`TensorError`
    for a tensor that names no field, a datatype or shape that does not fit, or an element that is not JSON."""
    if not tensors:
        raise TensorError(f"The request has no inputs: send '{ITEMS}' (BYTES [N], JSON per item) or one tensor per "
                          f"field of {spec.name}'s input ({', '.join(spec.input_model.model_fields)}).")
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        raise TensorError(f"Inputs {names} name a tensor twice.")
    fields = spec.input_model.model_fields
    if ITEMS in names:
        if len(tensors) > 1:
            raise TensorError(f"Input '{ITEMS}' carries whole items: send it alone (also sent: "
                              f"{[n for n in names if n != ITEMS]}).")
        tensor = tensors[0]
        if tensor.datatype != "BYTES":
            raise TensorError(f"Input '{ITEMS}' must be BYTES (the JSON text of each item), not {tensor.datatype}.")
        if len(tensor.shape) > 2 or (len(tensor.shape) == 2 and tensor.shape[1] != 1):
            raise TensorError(f"Input '{ITEMS}' must have shape [N] or [N, 1], not {tensor.shape}.")
        items = []
        for i, element in enumerate(tensor.values):
            try:
                item = json.loads(element)
            except (ValueError, RecursionError) as exc:
                raise TensorError(f"Element {i} of '{ITEMS}' is not JSON text ({exc}); send "
                                  f"json.dumps(item) per element.") from exc
            if not isinstance(item, dict):
                raise TensorError(f"Element {i} of '{ITEMS}' is JSON {type(item).__name__}, not an object of "
                                  f"{spec.name}'s input fields.")
            items.append(item)
    else:
        unknown = [n for n in names if n not in fields]
        if unknown:
            raise TensorError(f"Input(s) {unknown} name no field of task {spec.name!r}; send '{ITEMS}' or tensors "
                              f"named after its fields: {', '.join(fields)}.")
        counts = {t.name: t.shape[0] for t in tensors}
        if len(set(counts.values())) != 1:
            raise TensorError(f"Inputs must all have the same first dimension (items); got {counts}.")
        items = [{} for _ in range(tensors[0].shape[0])]
        for tensor in tensors:
            text = _is_text(fields[tensor.name].annotation)
            rows = _rows(tensor)
            for i, row in enumerate(rows):
                if tensor.datatype == "BYTES":
                    row = _bytes_value(tensor.name, i, row, text)
                items[i][tensor.name] = row
    if not items:
        raise TensorError("The request has 0 items; send 1 or more.")
    if len(items) > max_items:
        raise TensorError(f"The request has {len(items)} items; this server takes at most {max_items} per request.")
    return items


def _bytes_value(name: str, row: int, value: Any, text: bool) -> Any:
    if isinstance(value, list):
        return [_bytes_value(name, row, v, text) for v in value]
    try:
        decoded = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TensorError(f"Element {row} of input {name!r} is not UTF-8 text ({exc}).") from exc
    if text:
        return decoded
    try:
        return json.loads(decoded)
    except ValueError as exc:
        raise TensorError(f"Element {row} of input {name!r} is not JSON text of the field's value ({exc}).") from exc


def validate_items(request_model: type[BaseModel], items: list[dict[str, Any]]) -> list[Any]:
    """The items validated as the task's input model (the native route's request model, so the same bounds apply).
    Raises :class:`~sectorflow.errors.InvalidInputError` (422) naming each item and field, as the native 422."""
    try:
        return request_model.model_validate({"inputs": items}).inputs  # type: ignore[attr-defined]
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:20]:
            loc = [str(p) for p in error.get("loc", ())]
            row = int(loc[1]) if len(loc) > 1 and loc[0] == "inputs" and loc[1].isdigit() else None
            problems.append({"field": ".".join(loc), "row": row, "reason": error.get("msg", "invalid")})
        shown = "; ".join(f"{p['field']}: {p['reason']}" for p in problems[:5])
        raise InvalidInputError(f"Invalid request: {shown}.", details=problems) from None


def result_elements(outputs: Sequence[BaseModel]) -> list[bytes]:
    """The ``results`` tensor's elements: the JSON text (UTF-8) of each output item."""
    return [o.__pydantic_serializer__.to_json(o) for o in outputs]


def _datatype(annotation: Any) -> tuple[str, list[int]]:
    """The tensor datatype and shape (per item) a field of this annotation is sent as."""
    if _is_text(annotation):
        return "BYTES", []
    for kind, datatype in ((bool, "BOOL"), (int, "INT64"), (float, "FP64")):
        if annotation is kind:
            return datatype, []
    if get_origin(annotation) is list:
        (inner,) = get_args(annotation) or (Any,)
        inner = get_args(inner)[0] if get_args(inner) and get_origin(inner) is not list else inner  # Annotated
        datatype, rest = _datatype(inner)
        if datatype != "BYTES" and not rest:
            return datatype, [-1]
    return "BYTES", []


def model_metadata(spec: TaskSpec, model_version: str | None) -> dict[str, Any]:
    """The protocol's model metadata of a task: inputs ``items`` and one per field (see the module docstring),
    output ``results``; shapes with -1 for variable sizes."""
    inputs = [{"name": ITEMS, "datatype": "BYTES", "shape": [-1]}]
    for name, info in spec.input_model.model_fields.items():
        datatype, rest = _datatype(info.annotation)
        low = [m.min_length for m in info.metadata if getattr(m, "min_length", None) is not None]
        high = [m.max_length for m in info.metadata if getattr(m, "max_length", None) is not None]
        if rest and low and low == high:  # a fixed-length list (min_length == max_length) gets its size
            rest = [low[0]]
        inputs.append({"name": name, "datatype": datatype, "shape": [-1, *rest]})
    return {"name": spec.name, "versions": [model_version] if model_version else [], "platform": PLATFORM,
            "inputs": inputs, "outputs": [{"name": RESULTS, "datatype": "BYTES", "shape": [-1]}]}


def server_metadata() -> dict[str, Any]:
    return {"name": SERVER_NAME, "version": __version__, "extensions": list(EXTENSIONS)}


def check_version(spec: TaskSpec, asked: str | None, serving: str | None) -> None:
    """Refuse a model version other than the one serving (the server holds one version per task)."""
    if asked and asked != (serving or ""):
        raise ModelVersionNotFound(f"Task {spec.name!r} serves model version {serving!r} only, not {asked!r}; leave "
                                   f"the version out or ask for {serving!r}.")


def v2_task_routes(aliases: dict[str, str]) -> dict[str, str]:
    """Route template of every task's infer route (and its alias's) -> task name, for the request metrics."""
    routes = {}
    for alias, name in aliases.items():
        routes[V2_INFER.format(name=alias)] = name
        routes[V2_INFER_VERSION.format(name=alias, version="{version}")] = name
    return routes


__all__ = ["ITEMS", "RESULTS", "Tensor", "TensorError", "items_from_tensors", "model_metadata", "validate_items"]
