"""``sectorflow.models.onnx_compact.compact_graph``: smaller graph text, bit-identical outputs."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from sectorflow.models.onnx_compact import compact_graph  # noqa: E402


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.normal(size=(6, 4)).astype(np.float32), "p2o.pd_op.linear_0.w_0"),
             numpy_helper.from_array(rng.normal(size=(4,)).astype(np.float32), "p2o.pd_op.linear_0.b_0")]
    nodes = [helper.make_node("MatMul", ["features", "p2o.pd_op.linear_0.w_0"], ["p2o.pd_op.matmul.0"],
                              name="p2o.pd_op.matmul.0", doc_string="converted from paddle"),
             helper.make_node("Add", ["p2o.pd_op.matmul.0", "p2o.pd_op.linear_0.b_0"], ["p2o.pd_op.add.0"],
                              name="p2o.pd_op.add.0"),
             helper.make_node("Sigmoid", ["p2o.pd_op.add.0"], ["score"], name="p2o.pd_op.sigmoid.0")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["n", 6])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["n", 4])], inits,
                              value_info=[helper.make_tensor_value_info("p2o.pd_op.matmul.0", TensorProto.FLOAT,
                                                                        ["n", 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_compaction_shrinks_the_file_and_keeps_outputs_and_io_names():
    model = _mlp()
    before = model.SerializeToString()
    x = np.random.default_rng(1).normal(size=(3, 6)).astype(np.float32)
    want = ort.InferenceSession(before, providers=["CPUExecutionProvider"]).run(None, {"features": x})[0]
    assert compact_graph(model) is True
    after = model.SerializeToString()
    assert len(after) < 0.8 * len(before)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["features"] and [o.name for o in model.graph.output] == ["score"]
    assert not model.graph.value_info and all(not n.name and not n.doc_string for n in model.graph.node)
    assert all(len(init.name) <= 3 for init in model.graph.initializer)
    got = ort.InferenceSession(after, providers=["CPUExecutionProvider"]).run(None, {"features": x})[0]
    assert np.array_equal(got, want)


def test_a_graph_with_subgraphs_is_left_unchanged():
    branch = helper.make_graph([helper.make_node("Identity", ["features"], ["y"])], "branch", [],
                               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    node = helper.make_node("If", ["cond"], ["score"], then_branch=branch, else_branch=branch)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("features", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    before = model.SerializeToString()
    assert compact_graph(model) is False and model.SerializeToString() == before
