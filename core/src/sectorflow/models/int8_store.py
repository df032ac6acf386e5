"""Where INT8 bundles live, and which bundle ``Taskflow(task, precision="int8")`` runs.

``sectorflow models quantize TASK`` writes the INT8 bundle of a task's fp32 bundle to::

    $SECTORFLOW_HOME/bundles/<task>/<first 16 hex of the fp32 bundle's manifest SHA-256>-int8/

(``SECTORFLOW_HOME`` defaults to ``~/.cache/sectorflow``), unless given ``--out DIR``. Keying the folder by the fp32
bundle's hash means a plugin upgrade that ships new weights never picks up an INT8 model of the old ones.

``Taskflow(task, precision="int8")`` on CPU runs, in this order:

1. ``task_path`` itself when it is an INT8 ONNX bundle (format ``onnx``, precision ``int8``), e.g. a ``--out`` folder;
2. the INT8 bundle in the store for ``task_path`` (or the task's default bundle) when it exists and records that
   fp32 bundle as its source;
3. otherwise an :class:`~sectorflow.errors.UnsupportedPrecisionError` telling the user to run
   ``sectorflow models quantize TASK``.

A plugin whose shipped bundle has its own format and that builds a ``paddle-inference`` bundle from it at load time
gets, from ``Pipeline.predictor_pool()`` at ``precision="int8"``, the INT8 session of that built bundle (same store,
keyed by the built bundle's hash; build it with ``sectorflow models quantize TASK --task-path BUILT_BUNDLE``, which
the error message spells out).

On a GPU the fp32 Paddle bundle runs through TensorRT INT8 (:func:`sectorflow.bundle.make_predictor_config`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..env import home
from ..bundle import MANIFEST
from ..device import Device
from ..errors import BundleError, UnsupportedPrecisionError
from ..spec import TaskSpec



def manifest_sha256(bundle_dir: Path) -> str:
    """SHA-256 of a bundle's ``manifest.json`` (the bundle's identity, as :attr:`Bundle.sha256`).

    Raises:
        BundleError: the folder has no manifest.
    """
    path = Path(bundle_dir) / MANIFEST
    if not path.is_file():
        raise BundleError(f"{bundle_dir} is not a model bundle: it has no {MANIFEST}.")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(bundle_dir: Path) -> dict[str, Any]:
    """A bundle's manifest, unverified (``load_bundle`` checks the files later); ``{}`` when unreadable."""
    try:
        data = json.loads((Path(bundle_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_int8_onnx(bundle_dir: Path) -> bool:
    """Whether a folder holds an INT8 ONNX bundle (``sectorflow models quantize`` output)."""
    manifest = read_manifest(bundle_dir)
    return manifest.get("format") == "onnx" and manifest.get("precision") == "int8"


def int8_bundle_dir(task: str, source_sha256: str) -> Path:
    """The store folder of the INT8 bundle made from the fp32 bundle whose manifest hash is ``source_sha256``."""
    return home() / "bundles" / task / f"{source_sha256[:16]}-int8"


def find_int8_bundle(task: str, bundle_dir: Path, *, default_bundle: Path | None = None) -> Path:
    """The store's INT8 bundle made from the fp32 bundle at ``bundle_dir``.

    Raises:
        UnsupportedPrecisionError: none was built (the message gives the command that builds it and the folder
            looked in; ``--task-path`` is added when ``bundle_dir`` is not the task's default bundle).
    """
    source = read_manifest(bundle_dir)
    sha = manifest_sha256(bundle_dir)
    candidate = int8_bundle_dir(task, sha)
    made_from = read_manifest(candidate).get("quantization", {}).get("source_bundle_sha256")
    if is_int8_onnx(candidate) and made_from == sha:
        return candidate
    command = f"sectorflow models quantize {task}"
    if default_bundle is None or Path(bundle_dir).resolve() != Path(default_bundle).resolve():
        command += f" --task-path {bundle_dir}"
    raise UnsupportedPrecisionError(
        f"Task {task!r} has no INT8 model for bundle {source.get('name', bundle_dir)}@{source.get('version', '?')} "
        f"yet. Build it once with `{command}` (it checks the accuracy against fp32 and writes {candidate}), or pass "
        f"task_path= an INT8 bundle folder.",
        details={"task": task, "looked_in": str(candidate), "fix": command})


def resolve_int8_bundle(spec: TaskSpec, bundle_dir: Path | None, device: Device) -> Path | None:
    """The bundle folder ``Taskflow(spec.name, precision="int8", task_path=bundle_dir)`` loads on ``device``.

    An fp32 ``paddle-inference`` bundle on CPU is replaced by its INT8 ONNX bundle from the store, so results name
    the INT8 bundle (``ResultMeta.bundle_sha256``). Any other bundle is returned unchanged: an INT8 bundle itself, a
    GPU run (TensorRT quantizes the fp32 program), or a plugin's own format, whose pipeline builds a
    ``paddle-inference`` bundle and gets its INT8 session from ``Pipeline.predictor_pool``.

    Raises:
        UnsupportedPrecisionError: on CPU, no INT8 bundle was built for this fp32 bundle.
    """
    if bundle_dir is None or device.kind != "cpu":
        return bundle_dir
    source = read_manifest(bundle_dir)
    if source.get("format") != "paddle-inference" or source.get("precision", "fp32") == "int8":
        return bundle_dir
    return find_int8_bundle(spec.name, bundle_dir, default_bundle=spec.default_bundle)
