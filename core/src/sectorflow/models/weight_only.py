"""Weight-only INT8 storage in an ONNX model (the ``GRU`` and ``MatMulWeightOnly`` choices of ``sectorflow models
quantize``).

ONNX Runtime's dynamic quantizer has no GRU: its weights stay float32, and in a small recurrent tagger they are most
of the model (the medical_report span tagger: about 75% of its parameters). Here each ``GRU`` node's input weight
``W`` ``[directions, 3*hidden, input]`` and recurrence weight ``R`` ``[directions, 3*hidden, hidden]`` are stored
as int8 with one symmetric scale per gate row (axis 1, the largest absolute value over directions and inputs / 127,
zero point 0), and an ONNX ``DequantizeLinear`` node (opset >= 13, per-axis) turns them back into float32 in front of
the GRU. Arithmetic stays float32 (no int8 kernels): this trades nothing in speed for a quarter of the storage. The
bias ``B`` stays float32 (small).

``MatMulWeightOnly`` does the same for the constant right-hand weight ``[in, out]`` of ``MatMul`` nodes (linear
layers), one scale per output column (axis 1). Unlike ONNX Runtime's dynamic ``MatMul`` quantization, activations
stay float32: nothing is rounded per batch, so outputs differ from fp32 only by the weights' rounding. Small MLPs
whose inputs have a wide range (the AML risk scorer) keep their accuracy this way, at fp32 speed.

Source: ONNX operator specification, ``DequantizeLinear`` (opset 13+), ``GRU`` and ``MatMul``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WEIGHT_ONLY_OPS = ("GRU", "MatMulWeightOnly")
"""Choices whose constant weights :func:`store_weights_int8` stores as int8 (weight-only)."""

_SLOTS: dict[str, dict[str, tuple[tuple[int, ...], int]]] = {
    "GRU": {"GRU": ((1, 2), 3)},
    "MatMulWeightOnly": {"MatMul": ((1,), 2), "Gemm": ((1,), 2)},  # paddle2onnx writes linear layers as Gemm
}
"""choice -> {ONNX operator: (input slots holding its weights, weight rank)}."""


def _scale_axis(node: Any) -> int:
    """The weight axis that gets one scale each: GRU gate rows and MatMul output columns are axis 1; a ``Gemm``
    with ``transB=1`` holds its weight as ``[out, in]``, so axis 0."""
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return 1


def _int8_rows(weight: np.ndarray, axis: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 of a float array with one scale per index of ``axis`` (a GRU's gate rows ``[directions, rows,
    cols]``, a MatMul weight's output columns ``[in, out]``)."""
    other = tuple(a for a in range(weight.ndim) if a != axis)
    scale = np.abs(weight).max(axis=other) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    q = np.clip(np.rint(weight / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def store_weights_int8(model: Any, op_types: tuple[str, ...] = WEIGHT_ONLY_OPS) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place: the constant weights of every node of the ``op_types``
    choices (``GRU``: ``W`` and ``R``; ``MatMulWeightOnly``: the constant weight of a ``MatMul`` or ``Gemm``) become
    int8 initializers read through ``DequantizeLinear``. Returns the number of weight tensors stored as int8 (0 when the
    model has no such node with initializer weights). A weight read by more than one node is left float32."""
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    converted = 0
    new_nodes = []
    plans = {op: plan for choice in op_types for op, plan in _SLOTS.get(choice, {}).items()}
    for node in graph.node:
        plan = plans.get(node.op_type)
        if plan is not None:
            slots, rank = plan
            for slot in slots:
                name = node.input[slot] if len(node.input) > slot else ""
                init = initializers.get(name)
                if init is None or init.data_type != 1 or users.get(name, 0) != 1:  # float32, read by this node only
                    continue
                weight = numpy_helper.to_array(init)
                if weight.ndim != rank:
                    continue
                axis = _scale_axis(node)
                q, scale = _int8_rows(weight, axis)
                graph.initializer.remove(init)
                graph.initializer.extend([
                    numpy_helper.from_array(q, f"{name}_int8"),
                    numpy_helper.from_array(scale, f"{name}_scale"),
                    numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), f"{name}_zero_point"),
                ])
                new_nodes.append(helper.make_node("DequantizeLinear",
                                                  [f"{name}_int8", f"{name}_scale", f"{name}_zero_point"], [name],
                                                  name=f"{name}_dequantize", axis=axis))
                converted += 1
    if new_nodes:  # the dequantize nodes read only initializers: putting them first keeps the graph sorted
        nodes = list(graph.node)
        del graph.node[:]
        graph.node.extend(new_nodes + nodes)
    return converted
