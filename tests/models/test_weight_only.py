"""Weight-only int8 storage of GRU, MatMul and Gemm weights in an ONNX model (``sectorflow.models.weight_only``)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from sectorflow.models.weight_only import store_weights_int8  # noqa: E402


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
    assert store_weights_int8(model, ("GRU",)) == 2  # W and R
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
    store_weights_int8(model)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    np.testing.assert_allclose(inits["W_scale"], np.abs(w).max(axis=(0, 2)) / 127.0, rtol=1e-6)
    assert np.abs(inits["W_int8"]).max() == 127 and not inits["W_zero_point"].any()
    np.testing.assert_allclose(inits["W_int8"] * inits["W_scale"][None, :, None], w, atol=inits["W_scale"].max())


def test_a_model_without_gru_is_left_alone():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert store_weights_int8(model) == 0 and len(model.graph.node) == 1


def _mlp_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """x [n, 6] -> MatMul [6, 5] -> Gemm (transB=1, weight [4, 5]) -> Gemm (weight [4, 3], bias) -> y [n, 3]."""
    rng = np.random.default_rng(11)
    weights = {"A": rng.normal(0, 0.5, (6, 5)), "B": rng.normal(0, 0.5, (4, 5)), "C": rng.normal(0, 0.5, (4, 3)),
               "c": rng.normal(0, 0.1, (3,))}
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    nodes = [helper.make_node("MatMul", ["x", "A"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "B"], ["h2"], transB=1), helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("Gemm", ["r2", "C", "c"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), weights


def test_matmul_and_gemm_weights_become_int8_per_output_column_and_activations_stay_float():
    model, weights = _mlp_model()
    x = np.random.default_rng(1).normal(0, 30, size=(64, 6)).astype(np.float32)  # a wide input range
    want = _run(model, x)
    assert store_weights_int8(model, ("GRU",)) == 0  # no GRU here: GRU alone changes nothing
    assert store_weights_int8(model, ("MatMulWeightOnly",)) == 3  # A, B and C; the bias c stays float32
    onnx.checker.check_model(model)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert inits["c"].dtype == np.float32 and {"A", "B", "C"}.isdisjoint(inits)
    axes = {n.output[0]: next(a.i for a in n.attribute if a.name == "axis") for n in model.graph.node
            if n.op_type == "DequantizeLinear"}
    assert axes == {"A": 1, "B": 0, "C": 1}  # output columns; B is [out, in] under transB=1
    np.testing.assert_allclose(inits["A_scale"], np.abs(weights["A"]).max(axis=0) / 127.0, rtol=1e-6)
    np.testing.assert_allclose(inits["B_scale"], np.abs(weights["B"]).max(axis=1) / 127.0, rtol=1e-6)
    got = _run(model, x)
    rel = float(np.abs(got - want).max() / np.abs(want).max())
    assert 0 < rel < 0.02  # only the weights' rounding: no per-batch rounding of the wide-range activations
