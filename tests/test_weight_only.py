"""Weight-only int8 storage of GRU weights in an ONNX model (``sectorflow.weight_only``)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from sectorflow.weight_only import store_recurrent_int8  # noqa: E402


def _gru_model(hidden: int = 8, inputs: int = 5, directions: int = 2) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    w = rng.normal(0, 0.4, size=(directions, 3 * hidden, inputs)).astype(np.float32)
    r = rng.normal(0, 0.4, size=(directions, 3 * hidden, hidden)).astype(np.float32)
    b = rng.normal(0, 0.1, size=(directions, 6 * hidden)).astype(np.float32)
    node = helper.make_node("GRU", ["x", "W", "R", "B"], ["y"], hidden_size=hidden,
                            direction="bidirectional" if directions == 2 else "forward")
    graph = helper.make_graph(
        [node], "gru", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["time", "batch", inputs])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["time", directions, "batch", hidden])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_gru_weights_become_int8_and_the_output_stays_close():
    model = _gru_model()
    x = np.random.default_rng(0).normal(size=(7, 3, 5)).astype(np.float32)
    want = _run(model, x)
    assert store_recurrent_int8(model) == 2  # W and R
    onnx.checker.check_model(model)
    kinds = {init.name: init.data_type for init in model.graph.initializer}
    assert kinds["W_int8"] == kinds["R_int8"] == TensorProto.INT8 and kinds["B"] == TensorProto.FLOAT
    assert "W" not in kinds and "R" not in kinds
    assert [n.op_type for n in model.graph.node] == ["DequantizeLinear", "DequantizeLinear", "GRU"]
    got = _run(model, x)
    assert got.shape == want.shape
    diff = float(np.abs(got - want).max())
    assert 0 < diff < 0.02  # int8 per gate row: changed, but little


def test_scales_are_per_gate_row_and_symmetric():
    model = _gru_model(hidden=4, inputs=3, directions=1)
    w = numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == "W"))
    store_recurrent_int8(model)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    np.testing.assert_allclose(inits["W_scale"], np.abs(w).max(axis=(0, 2)) / 127.0, rtol=1e-6)
    assert np.abs(inits["W_int8"]).max() == 127 and not inits["W_zero_point"].any()
    np.testing.assert_allclose(inits["W_int8"] * inits["W_scale"][None, :, None], w, atol=inits["W_scale"].max())


def test_a_model_without_gru_is_left_alone():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert store_recurrent_int8(model) == 0 and len(model.graph.node) == 1
