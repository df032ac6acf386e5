"""Compact an ONNX model's graph text without touching its arithmetic (the last step of ``sectorflow models quantize``).

After paddle2onnx and ONNX Runtime's quantizer, a small model's file is mostly text: shape annotations
(``value_info``, which ONNX Runtime infers again at load), long generated tensor names (``p2o.pd_op.matmul.0_quantized``)
repeated at every use, node names and doc strings. For the 28-feature AML scorer that text was half of the INT8 file.
:func:`compact_graph` drops the annotations, node names and doc strings and renames internal tensors to short ids;
the graph's inputs and outputs keep their names (pipelines feed and read them by name), and so do the tensors of
subgraphs' outer scope (a model with ``If``/``Loop``/``Scan`` subgraphs is left as it is). Weights and operators are
unchanged, so the outputs are bit-identical (``tests/models/test_onnx_compact.py`` checks).
"""

from __future__ import annotations

from typing import Any


def compact_graph(model: Any) -> bool:
    """Compact ``model`` (an ``onnx.ModelProto``) in place (see the module docstring).

    Returns:
        ``False`` (and leaves the model unchanged) when the graph has subgraphs; ``True`` otherwise.
    """
    graph = model.graph
    if any(attr.g.node or attr.graphs for node in graph.node for attr in node.attribute):
        return False
    keep = {v.name for v in graph.input} | {v.name for v in graph.output}
    names: dict[str, str] = {}

    def short(name: str) -> str:
        if not name or name in keep:
            return name
        if name not in names:
            names[name] = f"t{len(names):x}"
        return names[name]

    for init in graph.initializer:
        init.name = short(init.name)
        init.doc_string = ""
    for node in graph.node:
        node.name = ""
        node.doc_string = ""
        node.input[:] = [short(x) for x in node.input]
        node.output[:] = [short(x) for x in node.output]
    del graph.value_info[:]
    graph.doc_string = ""
    model.doc_string = ""
    return True
