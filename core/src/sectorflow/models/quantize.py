"""Build a task's INT8 bundle: paddle2onnx, then ONNX Runtime dynamic quantization, checked on validation data.

Method (what works on CPU with Paddle 3.3.1; ../shared/notes/stack-facts.md):

1. the fp32 ``paddle-inference`` bundle's program is converted to ONNX (paddle2onnx, opset 17);
2. ``onnxruntime.quantization.shape_inference.quant_pre_process`` folds the weights, which paddle2onnx leaves as
   ``Constant`` nodes, into initializers and infers shapes (without it quantization silently changes nothing);
3. ``quantize_dynamic(weight_type=QInt8, per_channel=True, op_types_to_quantize=["MatMul"])``: MatMul weights are
   stored as int8 with one symmetric scale per output channel; activations are quantized per batch at run time
   (dynamic quantization: no calibration data needed). ``Gather`` (embedding tables) likewise, weight-only;
   ``GRU`` weights, which that quantizer does not cover, are stored int8 by :mod:`sectorflow.models.weight_only`. Other
   operators stay fp32. Last, :func:`sectorflow.models.onnx_compact.compact_graph` drops the graph's shape annotations and
   shortens internal tensor names (same arithmetic; half of a small model's file was that text).

The task's :attr:`~sectorflow.Int8Spec.validation` batches then run through the fp32 Paddle predictor (the
reference) and the INT8 ONNX Runtime session. The metric on both, the loss in points (``100 * (fp32 - int8)``),
the largest absolute output difference and the model sizes go into the INT8 bundle's manifest (``quantization``).
A model whose metric falls below ``100 - margin`` percent of fp32's (relative: default 99.5 %, see
:func:`accuracy_rule`) is refused with :class:`~sectorflow.errors.QuantizationError` and nothing is written. Where
the bundle goes: :mod:`sectorflow.models.int8_store`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..bundle import Bundle, write_manifest
from ..errors import BundleError, ConfigError, QuantizationError
from .export import (
    OPSET,
    check_out_folder,
    copy_other_files,
    cpu_paddle_pool,
    max_abs_diff,
    paddle_files,
    paddle_to_onnx,
    quiet_native,
    replace_folder,
    run_batches,
    source_bundle,
    tool_versions,
)
from .int8_store import int8_bundle_dir

_cwd_lock = threading.Lock()  # os.chdir is process-wide: one quantization at a time changes folder
from ..onnx_runtime import DEFAULT_ONNX_FILE, OnnxSessionPool
from ..spec import TaskSpec, ValidationSet
from .onnx_compact import compact_graph
from .weight_only import WEIGHT_ONLY_OPS, store_weights_int8

DEFAULT_MARGIN = 0.5
"""Percent of fp32's validation metric the INT8 model may lose before it is refused (relative: 0.5 means INT8 must
reach at least 99.5 % of fp32's metric; issue 10's accuracy target, issue 30's rule)."""
DEFAULT_OPS = ("MatMul",)
OPS = ("MatMul", "Gather", "GRU", "MatMulWeightOnly")
"""Operators whose weights may be quantized: ``MatMul`` (linear layers; int8 kernels at run time), ``Gather``
(embedding tables: stored 8-bit, dequantized when read; weight-only storage, for models whose size is mostly an
embedding table) and ``GRU`` (recurrent weights stored int8 per gate row behind ``DequantizeLinear``; weight-only,
:mod:`sectorflow.models.weight_only`, since ONNX Runtime's quantizer has no GRU) and ``MatMulWeightOnly`` (MatMul weights
stored int8 per output column behind ``DequantizeLinear``, activations and arithmetic float32: no per-batch rounding
of activations, for small models whose inputs span a wide range; not together with ``MatMul``)."""


def method(op_types: tuple[str, ...]) -> str:
    """The manifest's one-line description of the quantization (what ONNX Runtime 1.32 and
    :mod:`sectorflow.models.weight_only` store for each operator)."""
    parts = []
    if "MatMul" in op_types:
        parts.append("onnxruntime quantize_dynamic of MatMul weights: int8 (QInt8, symmetric, per output channel), "
                     "MatMul activations quantized per batch at run time")
    if "Gather" in op_types:
        parts.append("Gather (embedding) tables stored 8-bit by onnxruntime quantize_dynamic (uint8 with one scale "
                     "and zero point per table), dequantized when read (weight-only)")
    if "GRU" in op_types:
        parts.append("GRU weights stored int8 (symmetric, per gate row) and dequantized by DequantizeLinear "
                     "(weight-only)")
    if "MatMulWeightOnly" in op_types:
        parts.append("MatMul weights stored int8 (symmetric, per output column) and dequantized by DequantizeLinear; "
                     "activations and arithmetic float32 (weight-only)")
    return "; ".join(parts + ["other operators fp32"])


def quantize_onnx(fp32_file: Path, out_file: Path, op_types: tuple[str, ...] = DEFAULT_OPS) -> int:
    """Quantize the weights of the ``op_types`` operators (from :data:`OPS`) of an fp32 ONNX model to 8 bits, then
    compact the graph (see the module docstring); returns how many 8-bit weight tensors the result holds.

    Raises:
        QuantizationError: onnxruntime's quantization tools are missing, or no weight was quantized (the model has
            none of ``op_types`` with a constant weight, e.g. only convolutions).
    """
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:  # pragma: no cover - the shared environment has them
        raise QuantizationError("INT8 quantization needs onnx and onnxruntime: pip install 'sectorflow[int8]'.") \
            from exc
    prepared = out_file.resolve().with_name(out_file.stem + ".pre.onnx")
    source = fp32_file.resolve()
    # When its symbolic shape inference gives up, ONNX Runtime saves "sym_shape_infer_temp.onnx" (plus external
    # data) into the *current* folder: run it from a scratch folder so nothing lands in the user's working folder.
    with tempfile.TemporaryDirectory(prefix=".quant-pre-") as scratch, _cwd_lock:
        previous = os.getcwd()
        os.chdir(scratch)
        try:
            try:
                with quiet_native("onnxruntime quant_pre_process"):
                    quant_pre_process(str(source), str(prepared))
            except Exception:  # "Incomplete symbolic shape inference" on some graphs: ONNX's own inference suffices
                with quiet_native("onnxruntime quant_pre_process"):
                    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        finally:
            os.chdir(previous)
    dynamic = [op for op in op_types if op not in WEIGHT_ONLY_OPS]
    try:
        if dynamic:
            with quiet_native("onnxruntime quantize_dynamic"):
                quantize_dynamic(str(prepared), str(out_file), weight_type=QuantType.QInt8, per_channel=True,
                                 op_types_to_quantize=dynamic)
        else:
            shutil.copyfile(prepared, out_file)
    except Exception as exc:
        raise QuantizationError(f"ONNX Runtime could not quantize {fp32_file.name}: {type(exc).__name__}: {exc}") \
            from exc
    prepared.unlink()
    model = onnx.load(str(out_file))
    weight_only = tuple(op for op in op_types if op in WEIGHT_ONLY_OPS)
    if weight_only:
        store_weights_int8(model, weight_only)
    if compact_graph(model):  # shape annotations and long generated names: half of a small model's file
        onnx.save(model, str(out_file))
    quantized_types = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)  # a Gather-only table is stored as uint8
    n_int8 = sum(1 for init in model.graph.initializer if init.data_type in quantized_types)
    if n_int8 == 0:
        raise QuantizationError(f"Quantization changed nothing in {fp32_file.name}: it has no {' or '.join(op_types)} "
                                f"with constant weights (MatMul: the layers of MLPs and transformers).")
    return n_int8


def accuracy_rule(fp32_score: float, int8_score: float, margin: float = DEFAULT_MARGIN) -> dict[str, Any]:
    """The INT8 accuracy rule: INT8 must reach ``100 - margin`` percent of fp32's metric (relative, not points).

    Args:
        fp32_score, int8_score: the validation metric of each model, in ``[0, 1]`` (higher is better).
        margin: the most INT8 may lose, in percent of fp32's metric (default 0.5: at least 99.5 % of fp32).

    Returns:
        ``{"relative": int8 / fp32 (1.0 when fp32 is 0), "relative_loss_percent": 100 * (1 - relative),
        "loss_points": 100 * (fp32 - int8), "accepted": bool}``. Compared at 1e-9 so that a model exactly at the
        limit (e.g. 199 of 200 right against 200 of 200 at margin 0.5) is accepted despite float rounding.
        Example: the customer-service INT8 model at 931 of 1,003 validation messages against fp32's 936 loses 0.50
        points but keeps 99.47 % of fp32: refused.
    """
    relative = int8_score / fp32_score if fp32_score > 0 else 1.0
    loss_percent = 100.0 * (1.0 - relative)
    return {"relative": round(relative, 6), "relative_loss_percent": round(loss_percent, 4),
            "loss_points": round(100.0 * (fp32_score - int8_score), 4), "accepted": loss_percent <= margin + 1e-9}


def evaluate(validation: ValidationSet, outputs: list[list[Any]]) -> float:
    """The validation metric of one model's outputs, checked to be a number in ``[0, 1]``."""
    value = float(validation.metric(outputs, validation.labels))
    if not 0.0 <= value <= 1.0:
        raise QuantizationError(f"The task's validation metric {validation.metric_name!r} returned {value}; it must "
                                f"be in [0, 1] (higher is better).")
    return value


def _sizes(bundle: Bundle, int8_file: Path) -> dict[str, Any]:
    fp32 = sum(p.stat().st_size for p in paddle_files(bundle))
    int8 = int8_file.stat().st_size
    return {"fp32_bytes": fp32, "int8_bytes": int8, "ratio": round(int8 / fp32, 4)}


def quantize_bundle(spec: TaskSpec, *, task_path: str | Path | None = None, out: str | Path | None = None,
                    margin: float = DEFAULT_MARGIN, num_threads: int = 1,
                    op_types: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Build, check and save the INT8 bundle of ``spec``'s fp32 bundle (or ``task_path``).

    Args:
        spec: the task (its ``validation`` gives the data and metric).
        task_path: an fp32 ``paddle-inference`` bundle instead of the task's default one.
        out: where to write the INT8 bundle; default the store folder ``Taskflow(precision="int8")`` looks in
            (:func:`sectorflow.models.int8_store.int8_bundle_dir`).
        margin: the most the INT8 model may lose, in percent of fp32's validation metric (relative; default 0.5:
            INT8 must reach 99.5 % of fp32's metric; :func:`accuracy_rule`).
        num_threads: CPU threads for the two evaluation runs.
        op_types: operators to quantize, from :data:`OPS`; default the task's ``TaskSpec.int8.quantize_ops`` (MatMul
            unless the plugin says otherwise).

    Returns:
        the manifest's ``quantization`` record plus ``"out"`` (the folder written).

    Raises:
        ConfigError: a negative margin, an operator outside :data:`OPS`, or an ``out`` that is empty, the current
            folder or one above it, a file, or a non-empty folder that is not a bundle (checked before any work).
        BundleError: no model bundle, or not an fp32 ``paddle-inference`` bundle.
        QuantizationError: no validation data, nothing to quantize, or an INT8 metric below ``100 - margin``
            percent of fp32's (``details`` holds the record; nothing is written).
    """
    if not 0 <= margin <= 100:  # also refuses NaN and inf (a check that cannot fail)
        raise ConfigError(f"--margin {margin}: give the allowed loss in percent of fp32's metric, from 0 to 100 "
                          f"(default {DEFAULT_MARGIN}: INT8 must reach {100 - DEFAULT_MARGIN:g} % of fp32).")
    op_types = tuple(spec.int8.quantize_ops if op_types is None else op_types)
    if not op_types or set(op_types) - set(OPS):
        raise ConfigError(f"--ops {','.join(op_types)}: give one or more of {', '.join(OPS)}.")
    if {"MatMul", "MatMulWeightOnly"} <= set(op_types):
        raise ConfigError(f"--ops {','.join(op_types)}: MatMul (int8 weights and activations) and MatMulWeightOnly "
                          f"(int8 weights, float32 activations) are two ways to store the same layers; give one.")
    if out is not None:
        check_out_folder(out)
    bundle = source_bundle(spec, task_path, "quantize")
    model_json, params = paddle_files(bundle)
    if str(bundle.manifest.get("precision", "fp32")) != "fp32":
        raise BundleError(f"Bundle {bundle.path} stores {bundle.manifest.get('precision')} weights; quantize its fp32 "
                          f"original.")
    if spec.int8.validation is None:
        raise QuantizationError(
            f"Task {spec.name!r} gives no validation data, so its INT8 model cannot be checked against fp32. Its "
            f"plugin must set its TaskSpec validation: TaskSpec(int8=Int8Spec(validation=...)) (docs/performance.md).")
    validation = spec.int8.validation(bundle)
    if not validation.batches:
        raise QuantizationError(f"Task {spec.name!r}: the validation set is empty.")
    target = check_out_folder(out) if out is not None else int8_bundle_dir(spec.name, bundle.sha256)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".quantize-", dir=target.parent))
    try:
        staged = work / "bundle"
        staged.mkdir()
        fp32_onnx = paddle_to_onnx(bundle, work / "fp32.onnx")
        int8_file = staged / DEFAULT_ONNX_FILE
        n_int8 = quantize_onnx(fp32_onnx, int8_file, op_types)
        reference_pool = cpu_paddle_pool(bundle, num_threads)
        fp32_out = run_batches(reference_pool, validation.batches)
        int8_out = run_batches(OnnxSessionPool(int8_file, num_threads), validation.batches)
        fp32_score, int8_score = evaluate(validation, fp32_out), evaluate(validation, int8_out)
        worst, where = max_abs_diff(fp32_out, int8_out, reference_pool.output_names)
        rule = accuracy_rule(fp32_score, int8_score, margin)
        record: dict[str, Any] = {
            "method": method(op_types), "op_types": list(op_types), "opset": OPSET, "int8_tensors": n_int8, "tools": tool_versions(),
            "source_bundle": f"{bundle.name}@{bundle.version}", "source_bundle_sha256": bundle.sha256,
            "size": _sizes(bundle, int8_file),
            "accuracy": {"metric": validation.metric_name, "split": validation.split,
                         "batches": len(validation.batches), "fp32": round(fp32_score, 6),
                         "int8": round(int8_score, 6), "loss_points": rule["loss_points"],
                         "relative": rule["relative"], "relative_loss_percent": rule["relative_loss_percent"],
                         "margin_percent": margin, "rule": f"int8 >= {100 - margin:g} % of fp32 (relative)"},
            "max_abs_diff": {"value": worst, "output": where},
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        if not rule["accepted"]:
            raise QuantizationError(
                f"The INT8 model of {bundle.name}@{bundle.version} scores {validation.metric_name} "
                f"{100 * int8_score:.2f} against fp32 {100 * fp32_score:.2f} on {validation.split}: "
                f"{100 * rule['relative']:.2f} % of fp32 ({rule['loss_points']:.2f} points), below the "
                f"{100 - margin:g} % the rule asks for (more than the margin of {margin:g} %). Nothing was saved; keep "
                f"fp32 for this task (or allow a larger --margin if that loss is acceptable).", details=record)
        copy_other_files(bundle, staged, skip={model_json.relative_to(bundle.path).as_posix(),
                                               params.relative_to(bundle.path).as_posix()})
        manifest = {k: v for k, v in bundle.manifest.items()
                    if k not in ("files", "model_prefix", "cpu_onednn", "metrics")}
        manifest.update(format="onnx", precision="int8", onnx_model=DEFAULT_ONNX_FILE, quantization=record,
                        metrics={"fp32_bundle": bundle.manifest.get("metrics"),
                                 "int8_validation": {validation.metric_name: round(int8_score, 6),
                                                     "split": validation.split}})
        write_manifest(staged, **manifest)
        replace_folder(staged, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**record, "out": str(target)}
