"""Export a task's Paddle model bundle to ONNX (or as Paddle inference files), checked against the Paddle predictor.

``sectorflow models export TASK --format onnx`` converts the bundle's ``paddle.jit.save`` program with paddle2onnx
(opset 17) into a bundle of format ``onnx`` (precision fp32): ``model.onnx``, the bundle's other files (tokenizer,
labels, thresholds) and a manifest whose ``export`` section records the tools, their versions and the check. The
check feeds the same inputs to the Paddle predictor and to ONNX Runtime and fails with
:class:`~sectorflow.errors.ExportMismatchError` when any output differs by more than the tolerance (largest absolute
difference; default :data:`DEFAULT_TOLERANCE`). Inputs are the task's validation batches
(:attr:`Int8Spec.validation`) when it has them, else synthetic ones (see :func:`synthetic_batches`).

``--format paddle`` copies the Paddle inference program and weights (``.json`` + ``.pdiparams``, for Paddle
Inference, FastDeploy or Paddle Lite's ``paddle_lite_opt``) with the bundle's manifest, hashes unchanged.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .._paddle import import_paddle
from ..bundle import MANIFEST, Bundle, PredictorPool, load_bundle, make_predictor_config, write_manifest
from ..device import Device
from ..errors import BundleError, ConfigError, ExportMismatchError
from ..onnx_runtime import DEFAULT_ONNX_FILE, OnnxSessionPool
from ..spec import TaskSpec

log = logging.getLogger("sectorflow")

OPSET = 17
DEFAULT_TOLERANCE = 1e-4
"""Largest absolute difference allowed between the Paddle predictor's and ONNX Runtime's fp32 outputs."""
FORMATS = ("onnx", "paddle")


def paddle_files(bundle: Bundle) -> tuple[Path, Path]:
    """The ``(program .json, weights .pdiparams)`` of a ``paddle-inference`` bundle.

    Raises:
        BundleError: another format.
    """
    if bundle.format != "paddle-inference":
        raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}; export and quantization start from a "
                          f"'paddle-inference' bundle. If the task's plugin builds one from this bundle when it "
                          f"loads, pass that folder with --task-path.", details={"format": bundle.format})
    prefix = bundle.manifest.get("model_prefix", "model")
    return bundle.file(f"{prefix}.json"), bundle.file(f"{prefix}.pdiparams")


def source_bundle(spec: TaskSpec, task_path: str | Path | None, action: str) -> Bundle:
    """The fp32 bundle that export or quantize reads: ``task_path`` if given, else the task's default bundle,
    hash-checked by :func:`~sectorflow.bundle.load_bundle`; when that is not a ``paddle-inference`` bundle and the
    task has a :attr:`Int8Spec.inference_bundle`, the bundle it builds from it.

    Raises:
        BundleError: the task has no model bundle (``action`` says what could not be done), or the bundle fails to
            load (see :func:`~sectorflow.bundle.load_bundle`).
    """
    source_dir = Path(task_path) if task_path is not None else spec.default_bundle
    if source_dir is None:
        raise BundleError(f"Task {spec.name!r} has no model bundle: there is nothing to {action}.")
    bundle = load_bundle(source_dir, expected_task=spec.name)
    if bundle.format != "paddle-inference" and spec.int8.inference_bundle is not None:
        bundle = spec.int8.inference_bundle(bundle)
    return bundle


_fd_lock = threading.Lock()


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""Terminal colour and cursor codes (onnxruntime's C++ logger colours its warnings)."""


@contextmanager
def quiet_native(what: str) -> Iterator[None]:
    """Keep what third-party code writes to file descriptors 1 and 2 during the block off the terminal: paddle2onnx's
    C++ side prints its banner ("[Paddle2ONNX] Start parsing ...") on the process's stdout even with
    ``verbose=False`` (which broke ``sectorflow models quantize --json | jq``), and onnxruntime's C++ logger writes
    colour-coded warnings to stderr. The output goes to a temporary file: on success it is logged at debug level
    on the ``sectorflow`` logger; if the block raises, its last 20 lines (colour codes removed) are logged as a
    warning naming ``what`` ("paddle2onnx"), so a failure keeps its cause.

    Descriptors are process-wide: one block at a time (a lock), Python's own buffers flushed on both sides.
    """
    with _fd_lock, tempfile.TemporaryFile() as sink:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        failed = False
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                yield
            except BaseException:
                failed = True
                raise
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                sink.seek(0)
                text = _ANSI.sub("", sink.read().decode("utf-8", "replace")).strip()
                if text and failed:
                    log.warning("%s said (last lines):\n%s", what, "\n".join(text.splitlines()[-20:]))
                elif text:
                    log.debug("%s said:\n%s", what, text)
        finally:
            os.close(saved[0])
            os.close(saved[1])


def paddle_to_onnx(bundle: Bundle, out_file: Path, opset: int = OPSET) -> Path:
    """Convert a ``paddle-inference`` bundle's program to ONNX with paddle2onnx; returns ``out_file``.

    paddle2onnx is called without a save file, so its optional optimisers (polygraphy, which would pip-install
    packages at conversion time, or onnxoptimizer) do not run; weights may stay ``Constant`` nodes (quantization
    moves them to initializers first: :mod:`sectorflow.models.quantize`).

    Raises:
        BundleError: paddle2onnx is missing or cannot convert the program.
    """
    model_json, params = paddle_files(bundle)
    import_paddle()  # paddle2onnx imports paddle; ours resets paddle's logging side effects first
    try:
        import onnx
        import paddle2onnx
    except ImportError as exc:  # pragma: no cover - the shared environment has both
        raise BundleError("ONNX export needs paddle2onnx and onnx: pip install 'sectorflow[int8]'.") from exc
    try:
        with quiet_native("paddle2onnx"):
            data = paddle2onnx.export(str(model_json), str(params), None, opset_version=opset,
                                      auto_upgrade_opset=False, enable_onnx_checker=True, verbose=False)
    except Exception as exc:  # paddle2onnx logs and re-raises assorted errors (or UnboundLocalError after a failure)
        raise BundleError(f"paddle2onnx could not convert {model_json}: {type(exc).__name__}: {exc}") from exc
    if not data:
        raise BundleError(f"paddle2onnx produced no model for {model_json}.")
    model = onnx.load_from_string(data)
    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out_file))
    return out_file


def cpu_paddle_pool(bundle: Bundle, num_threads: int = 1) -> PredictorPool:
    """The fp32 Paddle CPU predictor pool of a bundle (oneDNN unless the manifest opts out), the reference."""
    return PredictorPool(make_predictor_config(bundle, Device("cpu"), "fp32", num_threads))


def run_batches(pool: Any, batches: Sequence[Mapping[str, np.ndarray]]) -> list[list[np.ndarray]]:
    """``pool.run`` over every batch: ``outputs[b]`` is the list of outputs of ``batches[b]``."""
    return [pool.run(batch) for batch in batches]


def max_abs_diff(reference: list[list[np.ndarray]], other: list[list[np.ndarray]],
                 names: Sequence[str] = ()) -> tuple[float, str]:
    """Largest absolute difference between two runs' outputs, and the output it was seen on.

    Raises:
        ExportMismatchError: the runs' output counts or shapes differ.
    """
    worst, where = 0.0, ""
    for b, (ref_batch, batch) in enumerate(zip(reference, other)):
        if len(ref_batch) != len(batch):
            raise ExportMismatchError(f"Batch {b}: the reference gives {len(ref_batch)} outputs, the export "
                                      f"{len(batch)}.", details={"batch": b})
        for i, (ref, out) in enumerate(zip(ref_batch, batch)):
            name = names[i] if i < len(names) else f"output {i}"
            ref, out = np.asarray(ref, dtype=np.float64), np.asarray(out, dtype=np.float64)
            if ref.size != out.size:
                raise ExportMismatchError(f"Batch {b}, {name}: shape {out.shape} from the export, {ref.shape} from "
                                          f"Paddle.", details={"batch": b, "output": name})
            diff = float(np.max(np.abs(ref.reshape(-1) - out.reshape(-1)))) if ref.size else 0.0
            if not diff <= worst:  # also catches NaN
                worst, where = diff, name
    return worst, where


def synthetic_batches(session_pool: OnnxSessionPool, n_batches: int = 2, batch: int = 4, length: int = 16,
                      seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Inputs for the export check when a task has no validation data, shaped as the ONNX model's inputs:
    standard-normal floats; integer inputs (token and segment ids) in ``{0, 1}`` so that any embedding table accepts
    them, except one-dimensional integer inputs (one per row: sequence lengths), which run from 1 to ``length`` (the
    first row full), so that padded batches are checked too. Dynamic dimensions are ``batch`` (the first) and
    ``length`` (the others)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_batches):
        feed = {}
        for spec in session_pool.session.get_inputs():
            dims = [d if isinstance(d, int) and d > 0 else (batch if i == 0 else length)
                    for i, d in enumerate(spec.shape)]
            if "int" in spec.type and len(dims) == 1:  # one integer per row: sequence lengths, full and shorter
                lengths = rng.integers(1, length + 1, size=dims)
                lengths[0] = length
                feed[spec.name] = lengths.astype(np.int64 if "64" in spec.type else np.int32)
            elif "int" in spec.type:
                feed[spec.name] = rng.integers(0, 2, size=dims).astype(np.int64 if "64" in spec.type else np.int32)
            else:
                feed[spec.name] = rng.standard_normal(dims).astype(np.float32)
        out.append(feed)
    return out


def copy_other_files(bundle: Bundle, target: Path, skip: set[str]) -> None:
    """Copy every file the manifest lists except ``skip`` (the model files being replaced) into ``target``."""
    for relative in sorted(bundle.manifest["files"]):
        if relative in skip:
            continue
        dest = target / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(bundle.file(relative), dest)


def tool_versions() -> dict[str, str]:
    """Versions of the libraries that made an exported or quantized model (recorded in its manifest)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for dist in ("paddlepaddle", "paddle2onnx", "onnx", "onnxruntime"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found


def check_out_folder(out: str | Path) -> Path:
    """``out`` as a :class:`~pathlib.Path` once it is a folder an export or quantization may write (and replace).

    Raises:
        ConfigError: ``out`` is empty or blank (an unset variable: ``Path("")`` would be the current folder), the
            current folder or a folder above it (replacing it would delete the caller's working folder, and with it
            the staged bundle), a file, or a non-empty folder that is not a model bundle.
    """
    if not str(out).strip():
        raise ConfigError("out is empty: give the folder to write the bundle to (a new or empty folder, or an "
                          "earlier bundle to replace).")
    path = Path(out)
    resolved = path.resolve()
    here = Path.cwd().resolve()
    if resolved == here or resolved in here.parents:
        raise ConfigError(f"out={str(out)!r} is the current folder or a folder above it, which would be deleted "
                          f"and replaced; give a new folder, e.g. {str(path / 'bundle')!r}.")
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"{out} is a file; give a new or empty folder.")
        if not (path / MANIFEST).is_file() and any(path.iterdir()):
            raise ConfigError(f"{out} exists and is not a model bundle; give an empty or new folder.")
    return path


def replace_folder(staged: Path, out: Path) -> None:
    """Move a finished folder to ``out``, replacing an earlier one (only a folder holding a bundle manifest;
    :func:`check_out_folder` is checked again, as the folder may have changed while the model was converted)."""
    out = check_out_folder(out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(staged), str(out))


def export_bundle(spec: TaskSpec, out: str | Path, *, fmt: str = "onnx", task_path: str | Path | None = None,
                  tolerance: float = DEFAULT_TOLERANCE, num_threads: int = 1) -> dict[str, Any]:
    """Export ``spec``'s bundle (or ``task_path``) to ``out`` as an ONNX or Paddle bundle; returns the check record.

    Returns:
        ``{"format", "out", "max_abs_diff", "tolerance", "output", "inputs", "batches"}``.

    Raises:
        ConfigError: unknown ``fmt``; ``out`` is empty, the current folder or one above it, a file, or a non-empty
            folder that is not a bundle (:func:`check_out_folder`).
        BundleError: the task has no model bundle, or it is not ``paddle-inference``.
        ExportMismatchError: ONNX Runtime's outputs differ from Paddle's by more than ``tolerance`` (nothing is
            written).
    """
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: give one of {', '.join(FORMATS)}.")
    out = check_out_folder(out)  # before any work: an empty or unusable folder is refused at once
    bundle = source_bundle(spec, task_path, "export")
    model_json, params = paddle_files(bundle)
    reference_pool = cpu_paddle_pool(bundle, num_threads)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=out.parent if out.parent.exists() else None))
    try:
        staged = work / "bundle"
        staged.mkdir()
        onnx_file = paddle_to_onnx(bundle, (staged if fmt == "onnx" else work) / DEFAULT_ONNX_FILE)
        onnx_pool = OnnxSessionPool(onnx_file, num_threads)
        if spec.int8.validation is not None:
            batches, inputs = list(spec.int8.validation(bundle).batches), "validation"
        else:
            batches, inputs = synthetic_batches(onnx_pool), "synthetic"
        reference = run_batches(reference_pool, batches)
        if fmt == "paddle":
            copy_other_files(bundle, staged, skip=set())
            shutil.copy2(bundle.path / MANIFEST, staged / MANIFEST)
            exported = load_bundle(staged, expected_task=spec.name)  # hashes unchanged: the same bundle
            other = run_batches(cpu_paddle_pool(exported, num_threads), batches)
        else:
            other = run_batches(onnx_pool, batches)
        worst, where = max_abs_diff(reference, other, reference_pool.output_names)
        check = {"format": fmt, "out": str(out), "max_abs_diff": worst, "tolerance": tolerance, "output": where,
                 "inputs": inputs, "batches": len(batches)}
        if not worst <= tolerance:
            raise ExportMismatchError(
                f"The {fmt} export of {bundle.name}@{bundle.version} differs from the Paddle predictor by {worst:.3g} "
                f"on {where} (tolerance {tolerance:g}); nothing was written. Report it with the paddle2onnx and "
                f"onnxruntime versions: {tool_versions()}.", details=check)
        if fmt == "onnx":
            copy_other_files(bundle, staged, skip={model_json.relative_to(bundle.path).as_posix(),
                                                   params.relative_to(bundle.path).as_posix()})
            manifest = {k: v for k, v in bundle.manifest.items() if k not in ("files", "model_prefix", "cpu_onednn")}
            manifest.update(format="onnx", precision="fp32", onnx_model=DEFAULT_ONNX_FILE, export={
                "from_bundle_sha256": bundle.sha256, "opset": OPSET, "tools": tool_versions(),
                "check": {k: check[k] for k in ("max_abs_diff", "tolerance", "output", "inputs", "batches")},
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            })
            write_manifest(staged, **manifest)
        replace_folder(staged, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return check
