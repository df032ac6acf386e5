"""Weight-only INT8 storage of recurrent layers in an ONNX model (the ``GRU`` choice of ``sectorflow models quantize``).

ONNX Runtime's dynamic quantizer has no GRU: its weights stay float32, and in a small recurrent tagger they are most
of the model (the medical_report span tagger: about 75% of its parameters). Here each ``GRU`` node's input weight
``W`` ``[directions, 3*hidden, input]`` and recurrence weight ``R`` ``[directions, 3*hidden, hidden]`` are stored
as int8 with one symmetric scale per gate row (axis 1, the largest absolute value over directions and inputs / 127,
zero point 0), and an ONNX ``DequantizeLinear`` node (opset >= 13, per-axis) turns them back into float32 in front of
the GRU. Arithmetic stays float32 (no int8 kernels): this trades nothing in speed for a quarter of the storage. The
bias ``B`` stays float32 (small). Source: ONNX operator specification, ``DequantizeLinear`` (opset 13+) and ``GRU``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WEIGHT_ONLY_OPS = ("GRU",)
"""Operator types whose constant weights :func:`store_recurrent_int8` stores as int8."""


def _int8_rows(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 of a ``[directions, rows, cols]`` float array with one scale per row (axis 1)."""
    scale = np.abs(weight).max(axis=(0, 2)) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(weight / scale[None, :, None]), -127, 127).astype(np.int8)
    return q, scale


def store_recurrent_int8(model: Any, op_types: tuple[str, ...] = WEIGHT_ONLY_OPS) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place: the constant ``W`` and ``R`` of every node whose type is
    in ``op_types`` become int8 initializers read through ``DequantizeLinear``. Returns the number of weight tensors
    stored as int8 (0 when the model has no such node with initializer weights)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    converted = 0
    new_nodes = []
    for node in graph.node:
        if node.op_type in op_types:
            for slot in (1, 2):  # W, R
                name = node.input[slot] if len(node.input) > slot else ""
                init = initializers.get(name)
                if init is None or init.data_type != 1 or users.get(name, 0) != 1:  # float32, read by this node only
                    continue
                weight = numpy_helper.to_array(init)
                if weight.ndim != 3:
                    continue
                q, scale = _int8_rows(weight)
                graph.initializer.remove(init)
                graph.initializer.extend([
                    numpy_helper.from_array(q, f"{name}_int8"),
                    numpy_helper.from_array(scale, f"{name}_scale"),
                    numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), f"{name}_zero_point"),
                ])
                new_nodes.append(helper.make_node("DequantizeLinear",
                                                  [f"{name}_int8", f"{name}_scale", f"{name}_zero_point"], [name],
                                                  name=f"{name}_dequantize", axis=1))
                converted += 1
    if new_nodes:  # the dequantize nodes read only initializers: putting them first keeps the graph sorted
        nodes = list(graph.node)
        del graph.node[:]
        graph.node.extend(new_nodes + nodes)
    return converted
