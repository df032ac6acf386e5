"""ONNX Runtime sessions with the interface of :class:`~sectorflow.bundle.PredictorPool`.

A bundle of format ``onnx`` (``sectorflow models export --format onnx`` writes fp32 ones, ``sectorflow models
quantize`` INT8 ones) holds ``model.onnx`` (manifest ``onnx_model``). :meth:`Pipeline.predictor_pool` returns an
:class:`OnnxSessionPool` for it, so a pipeline's ``pool.run({name: array}) -> [outputs]``, ``pool.input_names`` and
``pool.output_names`` work unchanged: the exporter keeps the Paddle program's input names and output order.

ONNX Runtime runs these bundles on CPU only (``CPUExecutionProvider``); INT8 on a GPU goes through Paddle Inference
with TensorRT instead (:func:`sectorflow.bundle.make_predictor_config`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .bundle import Bundle
from .device import Device
from .errors import BundleError, DeviceUnavailableError, UnsupportedPrecisionError

ONNX_FORMAT = "onnx"
DEFAULT_ONNX_FILE = "model.onnx"

# ONNX tensor element types (onnx.TensorProto) as ONNX Runtime names them -> numpy dtypes.
_ORT_DTYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def import_onnxruntime() -> Any:
    """``onnxruntime``, or a :class:`~sectorflow.errors.UnsupportedPrecisionError` saying what to install."""
    try:
        import onnxruntime
    except ImportError as exc:  # pragma: no cover - the shared environment has it
        raise UnsupportedPrecisionError("ONNX bundles (INT8 on CPU, exported models) need onnxruntime: "
                                        "pip install 'sectorflow[int8]'.") from exc
    return onnxruntime


def onnx_model_file(bundle: Bundle) -> Path:
    """The ``.onnx`` file of an ``onnx`` bundle (manifest ``onnx_model``, default ``model.onnx``).

    Raises:
        BundleError: the bundle is not of format ``onnx`` or does not list the file.
    """
    if bundle.format != ONNX_FORMAT:
        raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}, not {ONNX_FORMAT!r}.")
    return bundle.file(str(bundle.manifest.get("onnx_model", DEFAULT_ONNX_FILE)))


class OnnxSessionPool:
    """ONNX Runtime inference for one ``.onnx`` file on CPU, shaped like :class:`~sectorflow.bundle.PredictorPool`.

    An ``InferenceSession`` is safe to call from several threads at once, so the pool holds one session;
    ``num_threads`` sets its intra-op threads (one inter-op thread, as the Paddle CPU predictor). Inputs are cast
    to the dtypes the model declares (a pipeline that feeds Paddle int64 ids or float32 features needs no change).

    Args:
        model_path: the ``.onnx`` file.
        num_threads: CPU threads for one run (at least 1).

    Raises:
        BundleError: ONNX Runtime cannot load the file.
    """

    def __init__(self, model_path: str | Path, num_threads: int = 1) -> None:
        ort = import_onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, int(num_threads))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only; ORT otherwise warns about every unused initializer
        try:
            self.session = ort.InferenceSession(str(model_path), sess_options=options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph classes
            raise BundleError(f"ONNX Runtime cannot load {model_path}: {exc}") from exc
        self.model_path = Path(model_path)
        self.input_names: list[str] = [i.name for i in self.session.get_inputs()]
        self.output_names: list[str] = [o.name for o in self.session.get_outputs()]
        self._dtypes = {i.name: _ORT_DTYPES.get(i.type) for i in self.session.get_inputs()}

    @classmethod
    def for_bundle(cls, bundle: Bundle, device: Device, precision: str = "fp32",
                   num_threads: int = 1) -> OnnxSessionPool:
        """The pool for an ``onnx`` bundle on ``device`` at ``precision``.

        Raises:
            DeviceUnavailableError: a device other than CPU (ONNX bundles run on CPU here; INT8 on a GPU runs the
                fp32 Paddle bundle through TensorRT).
            UnsupportedPrecisionError: ``precision`` is not the precision the bundle stores.
            BundleError: not an ``onnx`` bundle, or ONNX Runtime cannot load it.
        """
        stored = str(bundle.manifest.get("precision", "fp32"))
        if device.kind != "cpu":
            raise DeviceUnavailableError(
                f"Bundle {bundle.path} is an ONNX model ({stored}); sectorflow runs ONNX models on CPU only. Use "
                f"device='cpu', or the task's Paddle bundle on {device} (INT8 on a GPU uses TensorRT).")
        if precision != stored:
            raise UnsupportedPrecisionError(
                f"precision={precision!r}: bundle {bundle.path} stores an ONNX model at {stored}; use "
                f"precision={stored!r} with it.")
        return cls(onnx_model_file(bundle), num_threads)

    @contextmanager
    def predictor(self) -> Iterator[Any]:
        """The session (``PredictorPool.predictor`` yields a Paddle predictor; here ``session.run`` is thread-safe)."""
        yield self.session

    def run(self, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch. ``inputs`` maps every input name to an array (first axis the batch); returns the outputs
        in order, as numpy arrays."""
        feed = {}
        for name in self.input_names:
            array = np.asarray(inputs[name])
            dtype = self._dtypes.get(name)
            if dtype is not None and array.dtype != dtype:
                array = array.astype(dtype)
            feed[name] = np.ascontiguousarray(array)
        return [np.asarray(out) for out in self.session.run(self.output_names, feed)]
