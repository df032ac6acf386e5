"""Model bundles: a folder with ``manifest.json`` and the files it lists, each checked by SHA-256 on load.

``manifest.json`` fields:
    task, name, version: what the model is for and which release it is.
    format: ``paddle-inference`` (``<prefix>.json`` + ``<prefix>.pdiparams`` from ``paddle.jit.save``),
        ``onnx``, ``safetensors``, ``json`` (rule tables, thresholds) or another string the pipeline knows.
    precision: the precision the weights are stored at (``fp32``, ``int8``, ...).
    cpu_onednn: optional, default ``true``; ``false`` runs the CPU predictor without oneDNN (bf16 still uses it).
        For tiny models, where oneDNN's per-run overhead exceeds its gain (the AML scorer: docs/aml.md).
    model_prefix: for ``paddle-inference``, the file prefix inside the bundle (default ``model``).
    labels: output labels, in order (may be empty).
    metrics: evaluation figures, with the split they were measured on.
    provenance: training data (dataset, licence, commit or sha256), the script and command that made the bundle.
    files: relative path -> SHA-256 hex of every other file in the bundle.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._paddle import import_paddle
from .device import Device
from .errors import (
    BundleError,
    BundleIntegrityError,
    DeviceUnavailableError,
    UnsafePickleError,
    UnsupportedPrecisionError,
)

MANIFEST = "manifest.json"
_REQUIRED = ("task", "name", "version", "format", "files")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Bundle:
    """A verified model bundle. Create with :func:`load_bundle`; never construct directly from unchecked files."""

    path: Path
    manifest: dict[str, Any]
    sha256: str
    """SHA-256 of ``manifest.json``; since the manifest lists every file's hash, this names the whole bundle."""

    @property
    def name(self) -> str:
        return str(self.manifest["name"])

    @property
    def version(self) -> str:
        return str(self.manifest["version"])

    @property
    def format(self) -> str:
        return str(self.manifest["format"])

    @property
    def labels(self) -> list[str]:
        return list(self.manifest.get("labels") or [])

    def file(self, relative: str) -> Path:
        """Path of a file listed in the manifest.

        Raises:
            BundleError: the file is not listed (unlisted files are never read).
        """
        if relative not in self.manifest["files"]:
            raise BundleError(f"Bundle {self.path} has no file {relative!r} in its manifest.")
        return self.path / relative

    def read_json(self, relative: str) -> Any:
        """Parse a JSON file of the bundle."""
        return json.loads(self.file(relative).read_text(encoding="utf-8"))


def load_bundle(path: str | Path, *, expected_task: str | None = None) -> Bundle:
    """Open a bundle folder and check the SHA-256 of every file its manifest lists.

    Raises:
        BundleError: no folder, no or malformed manifest, or a bundle made for another task.
        BundleIntegrityError: a listed file is missing or its hash differs (the message names the file).
    """
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{folder} is not a model bundle: it has no {MANIFEST}.")
    raw = manifest_path.read_bytes()
    try:
        manifest = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BundleError(f"{manifest_path} is not valid JSON: {exc}") from exc
    missing = [key for key in _REQUIRED if key not in manifest]
    if missing:
        raise BundleError(f"{manifest_path} lacks the fields {missing}.")
    if expected_task and manifest["task"] != expected_task:
        raise BundleError(f"Bundle {folder} is for task {manifest['task']!r}, not {expected_task!r}.")
    for relative, expected in sorted(manifest["files"].items()):
        file_path = (folder / relative).resolve()
        if folder.resolve() not in file_path.parents:
            raise BundleError(f"Bundle {folder}: file {relative!r} points outside the bundle.")
        if not file_path.is_file():
            raise BundleIntegrityError(f"Bundle {folder}: file {relative!r} listed in the manifest is missing.",
                                       details={"file": relative})
        actual = sha256_file(file_path)
        if actual != expected:
            raise BundleIntegrityError(
                f"Bundle {folder}: file {relative!r} has SHA-256 {actual}, but the manifest says {expected}. "
                f"The file was changed or corrupted; reinstall the bundle.",
                details={"file": relative, "expected": expected, "actual": actual})
    return Bundle(folder, manifest, hashlib.sha256(raw).hexdigest())


def write_manifest(folder: str | Path, **fields: Any) -> Path:
    """Write ``manifest.json`` for a folder, hashing every file in it (except the manifest).

    ``fields`` must include task, name, version and format; ``files`` is computed. Returns the manifest path.
    """
    folder = Path(folder)
    files = {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST and "__pycache__" not in p.parts
    }
    manifest = {**fields, "files": files}
    missing = [key for key in _REQUIRED if key not in manifest]
    if missing:
        raise BundleError(f"write_manifest needs {missing}.")
    out = folder / MANIFEST
    out.write_text(json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


# --- Paddle inference predictors -------------------------------------------------------------------------------


def make_predictor_config(bundle: Bundle, device: Device, precision: str = "fp32", num_threads: int = 1) -> Any:
    """A ``paddle.inference.Config`` for a ``paddle-inference`` bundle on one device.

    CPU: oneDNN on, ``num_threads`` math threads. GPU: ``enable_use_gpu``; custom devices (npu, mlu, ...):
    ``enable_custom_device``; xpu: ``enable_xpu``. Never calls ``paddle.set_device``.

    Precision: the bundle's stored precision (manifest ``precision``, default fp32) always runs; besides that, CPU
    converts to bf16 (oneDNN, AVX-512 BF16/AMX only) and GPU to fp16/bf16, or to int8 through TensorRT when this
    Paddle build has it. Anything else is refused, never replaced (INT8 on CPU: ``sectorflow models quantize``).

    Raises:
        BundleError: the bundle is not ``paddle-inference``.
        UnsupportedPrecisionError: ``fp16`` on CPU, ``bf16`` on a CPU without AVX-512 BF16, ``int8`` on CPU with a
            bundle that does not store int8 weights, ``int8`` on a GPU without TensorRT, or a conversion the device
            cannot do.
        DeviceUnavailableError: this Paddle build cannot drive the device (CPU build asked for gpu or xpu; no
            custom-device plugin for npu/mlu).
    """
    inference = import_paddle().inference

    if bundle.format != "paddle-inference":
        raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}, not 'paddle-inference'.")
    prefix = bundle.manifest.get("model_prefix", "model")
    config = inference.Config(str(bundle.file(f"{prefix}.json")), str(bundle.file(f"{prefix}.pdiparams")))
    config.disable_glog_info()
    stored = str(bundle.manifest.get("precision", "fp32"))

    def refuse(why: str) -> UnsupportedPrecisionError:
        return UnsupportedPrecisionError(f"precision={precision!r} on {device}: {why} The bundle stores its weights "
                                         f"at {stored}; use precision={stored!r}.")

    if device.kind == "cpu":
        config.disable_gpu()
        if bundle.manifest.get("cpu_onednn", True) or precision == "bf16":
            config.enable_mkldnn()
        else:  # the bundle opts out: for a tiny model oneDNN's per-run overhead outweighs its kernels
            config.disable_mkldnn()
        config.set_cpu_math_library_num_threads(max(1, int(num_threads)))
        if precision == "fp16":
            raise UnsupportedPrecisionError("precision='fp16' needs a GPU or NPU; on CPU use fp32, bf16 or int8.")
        if precision == "bf16" and stored != "bf16":
            if not _cpu_has_bf16():
                raise UnsupportedPrecisionError("precision='bf16' on CPU needs AVX-512 BF16 or AMX; this CPU has "
                                                "neither. Use fp32.")
            config.enable_mkldnn_bfloat16()
        elif precision not in (stored, "bf16"):
            raise refuse("a CPU predictor does not convert weights to this precision.")
    elif device.kind == "gpu" and precision == "int8" and stored != "int8":
        _enable_tensorrt_int8(config, device, inference)
    elif device.kind == "gpu":
        precision_type = {"fp32": inference.PrecisionType.Float32, "fp16": inference.PrecisionType.Half,
                          "bf16": inference.PrecisionType.Bfloat16}.get(precision)
        if precision_type is None:
            raise UnsupportedPrecisionError(f"precision={precision!r} is not available on GPU through this bundle.")
        config.enable_use_gpu(256, device.index, precision_type)
        if not config.use_gpu():  # a CPU build of Paddle only logs an error and would quietly run on the CPU
            raise DeviceUnavailableError(f"Device {device} was asked for, but this Paddle build has no CUDA/ROCm "
                                         f"support. Install a GPU build of paddlepaddle, or use device='cpu'.")
    else:
        if precision != stored:
            raise refuse(f"sectorflow runs {device.kind} predictors at the bundle's stored precision only.")
        if device.kind == "xpu":
            try:
                config.enable_xpu()
            except RuntimeError as exc:  # CPU builds raise "please compile with option 'WITH_XPU'"
                raise DeviceUnavailableError(f"Device {device} was asked for, but this Paddle build has no XPU "
                                             f"support ({exc}). Use device='cpu'.") from exc
            config.set_xpu_device_id(device.index)
        else:
            paddle = import_paddle()
            known = list(paddle.device.get_all_custom_device_type() or [])
            if device.kind not in known:  # the predictor would abort the whole process ("No allocator found")
                raise DeviceUnavailableError(f"Device {device} was asked for, but Paddle has no custom-device plugin "
                                             f"for {device.kind!r} (it knows {known or 'none'}). Install the "
                                             f"vendor's Paddle plugin, or use device='cpu'.")
            config.enable_custom_device(device.kind, device.index)
    return config


def tensorrt_version() -> tuple[int, int, int]:
    """The TensorRT version this Paddle build runs with; ``(0, 0, 0)`` when it has none (every CPU build)."""
    inference = import_paddle().inference
    try:
        return tuple(int(v) for v in inference.get_trt_runtime_version())  # type: ignore[return-value]
    except (AttributeError, RuntimeError):
        return (0, 0, 0)


def _enable_tensorrt_int8(config: Any, device: Device, inference: Any) -> None:
    """INT8 on a GPU: Paddle Inference with a TensorRT engine in INT8 mode, calibrated on the first batches it
    serves (``use_calib_mode``), from the fp32 bundle.

    Raises:
        UnsupportedPrecisionError: this Paddle build has no TensorRT (the message says what to do instead).
        DeviceUnavailableError: this Paddle build has no CUDA support.
    """
    if tensorrt_version() == (0, 0, 0):
        raise UnsupportedPrecisionError(
            f"precision='int8' on {device} runs through TensorRT, and this Paddle build has none. Install a "
            f"paddlepaddle-gpu build with TensorRT, or run INT8 on CPU (device='cpu', after `sectorflow models "
            f"quantize TASK`), or use precision='fp16' on the GPU.")
    config.enable_use_gpu(256, device.index, inference.PrecisionType.Float32)
    if not config.use_gpu():
        raise DeviceUnavailableError(f"Device {device} was asked for, but this Paddle build has no CUDA/ROCm "
                                     f"support. Install a GPU build of paddlepaddle, or use device='cpu'.")
    config.enable_tensorrt_engine(workspace_size=1 << 30, max_batch_size=1, min_subgraph_size=3,
                                  precision_mode=inference.PrecisionType.Int8, use_static=False, use_calib_mode=True)


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def default_pool_size() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``), at least 1: the most
    predictors a :class:`PredictorPool` makes unless told otherwise."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class PredictorPool:
    """A pool of ``paddle.inference`` predictors for one bundle and device.

    Predictors are not thread-safe; the pool clones one per concurrent user (``Predictor.clone()`` shares the
    weights), up to ``max_size`` predictors; further users wait for a free one. Paddle keeps oneDNN state (weights
    reordered for the CPU, per input shape) for every pair of calling thread and predictor, kept after the thread
    ends, so memory grows with threads x predictors: bound both, and call from a fixed set of threads (a thread
    pool), not a new thread per request.
    ``run`` feeds named numpy arrays and returns the outputs in order.

    Args:
        config: the ``paddle.inference.Config`` (:func:`make_predictor_config`).
        max_size: the most predictors (default :func:`default_pool_size`: the CPUs this process may use).
    """

    def __init__(self, config: Any, max_size: int | None = None) -> None:
        inference = import_paddle().inference
        self.max_size = max(1, int(max_size)) if max_size is not None else default_pool_size()
        self._first = inference.create_predictor(config)
        self._free: list[Any] = [self._first]
        self._made = 1
        self._lock = threading.Condition()
        self.input_names: list[str] = list(self._first.get_input_names())
        self.output_names: list[str] = list(self._first.get_output_names())

    @contextmanager
    def predictor(self) -> Iterator[Any]:
        with self._lock:
            while not self._free and self._made >= self.max_size:
                self._lock.wait()
            if self._free:
                pred = self._free.pop()
            else:
                self._made += 1
                pred = None
        if pred is None:  # clone outside the lock, so that other users can take and return predictors meanwhile
            try:
                pred = self._first.clone()
            except BaseException:
                with self._lock:
                    self._made -= 1
                    self._lock.notify()
                raise
        try:
            yield pred
        finally:
            with self._lock:
                self._free.append(pred)
                self._lock.notify()

    def run(self, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch. ``inputs`` maps every input name to an array (first axis the batch)."""
        with self.predictor() as pred:
            for name in self.input_names:
                handle = pred.get_input_handle(name)
                array = np.ascontiguousarray(inputs[name])
                handle.reshape(array.shape)
                handle.copy_from_cpu(array)
            pred.run()
            return [pred.get_output_handle(name).copy_to_cpu() for name in self.output_names]


# --- Restricted reading of pickled Paddle weights (.pdparams) ---------------------------------------------------

_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("collections", "OrderedDict"),
}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise UnsafePickleError(f"Refusing to unpickle {module}.{name}: a weights file may hold only arrays, "
                                f"dicts, lists, strings and numbers.")


def load_pdparams(path: str | Path) -> dict[str, np.ndarray]:
    """Read a ``.pdparams`` file (``paddle.save`` of a state dict) without executing code.

    Only numpy arrays, dicts, lists, strings and numbers are admitted; Paddle's
    ``StructuredToParameterName@@`` bookkeeping entry is dropped.

    Raises:
        UnsafePickleError: the file references any other Python object (it could run code).
        BundleError: the file is not a pickle of a dict.
    """
    data = Path(path).read_bytes()
    try:
        obj = _ArrayOnlyUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except Exception as exc:
        raise BundleError(f"{path} is not a readable .pdparams file: {exc!r}") from exc
    if not isinstance(obj, dict):
        raise BundleError(f"{path} holds a {type(obj).__name__}, not a state dict.")
    return {k: v for k, v in obj.items() if isinstance(v, np.ndarray)}
