"""The banking77 intent head as a federated :class:`sectorflow.Trainable`: each branch trains the MiniLM head of the
shipped bundle on its own labelled messages over the shipped encoder's frozen sentence vectors (only the head's
weights travel), and the run ends in a bundle the ``customer_service`` pipeline serves.

``build(partition)`` accepts:

- ``{"data": "/path/messages.jsonl"}`` (or ``.csv``): the branch's own ``{"text", "label"}`` rows; labels must be
  banking77 intent names (the shared label set); a seeded 20% is held out for :meth:`IntentHeadTrainable.evaluate`;
- ``{"partition_id": i, "num_partitions": n, "banking77": "/path/to/banking77"}``: slice ``i`` of banking77's
  train split (minus the validation slice) for training and of the validation slice for evaluation (a simulation
  of branches; the path is the folder with ``train.csv``); optional ``max_examples`` keeps the first N of the
  training slice (tests).

Optional ``seed``, ``init`` (``"bundle"``, the default: start from the shipped bundle's banking77 head;
``"zeros"``: from scratch).

**The vector.** The weights, ``{"weight": float32 [384, 77], "bias": float32 [77]}``, are the shipped bundle's
banking77 head ``heads.<i>`` (:class:`~.intent_model.IntentModel`: a Paddle ``Linear``, ``logits = pooled @ weight +
bias``) and read what it reads: the **un-normalised** mean-pooled MiniLM vector (``IntentModel.pooled``), computed
here by the same layer the pipeline's inference program is exported from (:func:`.runtime.build_layer`, eager, no
gradient), kept in ``$SECTORFLOW_HOME/customer_service/vectors/`` (:func:`~.encoders.encode_cached`: in
deployment a SuperNode starts a fresh process for every message, which then reads them instead of encoding again).
(Before 2 Dec 2026 the head read the program's L2-normalised ``embedding`` output, which no head of the pipeline
reads, so its weights could not be served; now they replace the bundle's head one for one.)

Training: mini-batch gradient descent on softmax cross-entropy (NumPy), learning rate ``lr`` (the federation's
``lr``; default here 0.01: the pooled vectors' length is about 12, so a step moves the logits by about
``lr * 144`` times the error), batch ``batch_size`` (default 64), seed ``seed + server_round``.

:func:`export` writes the run's kept head as a bundle of the shipped layout (format ``sectorflow-cs-int8``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import ConfigError, InvalidInputError, TrainableSpec, import_paddle, load_bundle, write_manifest

from . import datasets
from .encoders import encode_cached
from .prototypes import read_examples
from .plugin import BUNDLE_DIR

HEAD = "banking77"
MAX_LEN = 64
"""Word pieces per message, as the pipeline's encoder (:class:`~.runtime.PredictorEncoder`) cuts them."""


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def head_index(bundle: Any) -> int:
    """Index ``i`` of the banking77 head among the bundle's heads (its weights are ``heads.<i>.*``).

    Raises:
        ConfigError: the bundle has no banking77 head.
    """
    from .runtime import heads_of

    names = [name for name, _ in heads_of(bundle)]
    if HEAD not in names:
        raise ConfigError(f"Bundle {bundle.path} has no {HEAD} head (heads: {names}).")
    return names.index(HEAD)


def shipped_head(bundle: Any) -> tuple[np.ndarray, np.ndarray]:
    """The bundle's banking77 head as float32 ``(weight [384, 77], bias [77])`` (dequantised as the pipeline
    loads it)."""
    from safetensors.numpy import load_file
    from sectorflow_text_encoder import dequantize_state_int8

    i = head_index(bundle)
    state = dequantize_state_int8(load_file(str(bundle.file("weights.safetensors"))))
    return state[f"heads.{i}.weight"].astype(np.float32), state[f"heads.{i}.bias"].astype(np.float32)


class PooledEncoder:
    """``encode(texts) -> float32 [n, 384]``: the un-normalised mean-pooled vector the bundle's heads read (eager
    :class:`~.intent_model.IntentModel` of the bundle, the shipped tokenizer, at most :data:`MAX_LEN` pieces)."""

    def __init__(self, bundle: Any, batch_size: int = 64) -> None:
        from .runtime import tokenizer_of

        self.bundle, self.tokenizer, self.batch_size = bundle, tokenizer_of(bundle), batch_size
        self._model: Any = None
        self.name = f"{bundle.name}-pooled-{bundle.sha256[:16]}"
        """Names the vectors in :func:`~.encoders.encode_cached`'s cache: this bundle's, un-normalised."""

    @property
    def model(self) -> Any:
        """The eager layer, built on first use (cached vectors need none)."""
        if self._model is None:
            from .runtime import build_layer

            self._model = build_layer(self.bundle)
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        paddle = import_paddle()
        if not texts:
            return np.zeros((0, self.model.heads[0].weight.shape[0]), np.float32)
        ids = self.tokenizer.encode_batch(texts, MAX_LEN)
        lengths = (ids != self.tokenizer.pad_id).sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((len(texts), self.model.heads[0].weight.shape[0]), np.float32)
        with paddle.no_grad():
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                batch = ids[rows, :int(lengths[rows].max())]
                out[rows] = self.model.pooled(paddle.to_tensor(batch)).numpy()
        return out


def _digest(rows: list[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()


def _rows(partition: Mapping[str, Any], index: Mapping[str, int]) -> tuple[list, list, str]:
    """(train rows, validation rows, data digest) of a partition (see the module docstring)."""
    seed = int(partition.get("seed", 0))
    if "data" in partition:
        path = Path(partition["data"])
        rows = read_examples(path)
        unknown = sorted({lab for _, lab in rows if lab not in index})
        if unknown:
            raise InvalidInputError(f"{partition['data']}: labels {unknown[:5]} are not banking77 intents.")
        order = np.random.default_rng(seed).permutation(len(rows))
        cut = max(1, round(0.2 * len(rows)))
        return [rows[i] for i in order[cut:]], [rows[i] for i in order[:cut]], \
            hashlib.sha256(path.read_bytes()).hexdigest()
    pid, n = int(partition.get("partition_id", 0)), int(partition.get("num_partitions", 1))
    if not 0 <= pid < n:
        raise InvalidInputError(f"partition_id {pid} must be in [0, num_partitions={n}).")
    if "banking77" not in partition:
        raise InvalidInputError("A simulated partition needs 'banking77': the folder with train.csv.")
    split = datasets.banking77(partition["banking77"])
    train, val = split["train"][pid::n], split["val"][pid::n]
    if partition.get("max_examples"):
        train = train[:int(partition["max_examples"])]
        val = val[:max(1, int(partition["max_examples"]) // 4)]
    return train, val, _digest(train + val)


class IntentHeadTrainable:
    """A :class:`sectorflow.Trainable` over one branch's messages (see the module docstring)."""

    def __init__(self, partition: Mapping[str, Any]) -> None:
        bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
        self.labels = list(bundle.read_json("labels.json")[HEAD])
        index = {label: i for i, label in enumerate(self.labels)}
        init = partition.get("init", "bundle")
        if init not in ("bundle", "zeros"):
            raise InvalidInputError(f"init={init!r}: give 'bundle' (the shipped head) or 'zeros'.")
        train, val, self.data_sha256 = _rows(partition, index)
        encoder = PooledEncoder(bundle)
        # cached per machine (a SuperNode starts a fresh process for every message: encode once, not every round)
        self.x_train = encode_cached(encoder, [t for t, _ in train])
        self.y_train = np.array([index[lab] for _, lab in train], dtype=np.int64)
        self.x_val = encode_cached(encoder, [t for t, _ in val])
        self.y_val = np.array([index[lab] for _, lab in val], dtype=np.int64)
        if init == "bundle":
            self.weight, self.bias = shipped_head(bundle)
        else:
            self.weight = np.zeros((self.x_train.shape[1], len(self.labels)), np.float32)
            self.bias = np.zeros(len(self.labels), np.float32)
        self.seed = int(partition.get("seed", 0))

    def get_weights(self) -> dict[str, np.ndarray]:
        return {"weight": self.weight.copy(), "bias": self.bias.copy()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        if set(weights) != {"weight", "bias"}:
            raise ValueError(f"expected weights 'weight' and 'bias', got {sorted(weights)}")
        for name, current in (("weight", self.weight), ("bias", self.bias)):
            if tuple(np.shape(weights[name])) != current.shape:
                raise ValueError(f"{name}: shape {tuple(np.shape(weights[name]))} != {current.shape}")
        self.weight = np.asarray(weights["weight"], np.float32).copy()
        self.bias = np.asarray(weights["bias"], np.float32).copy()

    def _loss(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        p = _softmax(x @ self.weight + self.bias)
        return float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12))), p

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        lr, batch = float(config.get("lr", 0.01)), int(config.get("batch_size", 64))
        rng = np.random.default_rng(self.seed + int(config.get("server_round", 0)))
        for _ in range(int(epochs)):
            order = rng.permutation(len(self.y_train))
            for start in range(0, len(order), batch):
                rows = order[start:start + batch]
                x, y = self.x_train[rows], self.y_train[rows]
                p = _softmax(x @ self.weight + self.bias)
                p[np.arange(len(y)), y] -= 1.0
                self.weight -= (lr * (x.T @ p) / len(y)).astype(np.float32)
                self.bias -= (lr * p.mean(axis=0)).astype(np.float32)
        loss, p = self._loss(self.x_train, self.y_train)
        return len(self.y_train), {"loss": loss, "accuracy": float(np.mean(p.argmax(1) == self.y_train)),
                                   "data_sha256": self.data_sha256}

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        loss, p = self._loss(self.x_val, self.y_val)
        return len(self.y_val), loss, {"accuracy": float(np.mean(p.argmax(1) == self.y_val))}


def check(partition: Mapping[str, Any]) -> None:
    """Cheap checks before Flower starts: the branch's file or the banking77 folder exists, labels are banking77's.

    Raises:
        ConfigError: a missing file or folder; InvalidInputError: labels outside banking77, a bad partition id.
    """
    if "data" in partition:
        path = Path(partition["data"])
        if not path.is_file():
            raise ConfigError(f"messages file {path} not found")
        bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
        known = set(bundle.read_json("labels.json")[HEAD])
        unknown = sorted({lab for _, lab in read_examples(path) if lab not in known})
        if unknown:
            raise InvalidInputError(f"{path}: labels {unknown[:5]} are not banking77 intents.")
        return
    if "banking77" not in partition:
        raise ConfigError("give 'data' (the branch's messages file) or 'banking77' (the folder with train.csv)")
    if not (Path(partition["banking77"]) / "train.csv").is_file():
        raise ConfigError(f"{partition['banking77']} has no train.csv (banking77)")


def export(arrays: list[np.ndarray], run: dict[str, Any], out: Path) -> Path:
    """Write a federated run's kept head as a bundle of the shipped layout (format ``sectorflow-cs-int8``) that
    ``Taskflow("customer_service", task_path=out)``, ``sectorflow serve`` and hot reload load: the shipped bundle's
    files, with ``weights.safetensors``'s banking77 head ``heads.<i>`` replaced by ``arrays`` (``[bias [77], weight
    [384, 77]]``, weight-name order), stored as float16 (``heads.<i>.weight.f16``, ``.bias.f16``: the format's
    storage of small matrices; at most 2^-11 relative rounding), and ``manifest.json`` with the sha256 of every
    file, ``metrics.validation`` of the kept round (``run["selection"]``, else the last) and
    ``provenance.federation = run``. The encoder, the CLINC150 head, the e5 heads, the out-of-scope detectors and
    ``calibration.json`` stay the shipped bundle's (the thresholds were calibrated on the shipped head). Returns the
    manifest path.

    An existing bundle folder at ``out`` is replaced.

    Raises:
        ConfigError: ``out`` exists and is neither empty nor a bundle folder, or is the shipped bundle; arrays of
            another head.
    """
    from safetensors.numpy import load_file, save_file

    out = Path(out)
    if out.exists() and (out.is_file() or any(out.iterdir())) and not (out / "manifest.json").is_file():
        raise ConfigError(f"--out / bundle = {out} exists and is not a bundle folder: give a new or empty folder.")
    if out.resolve() == BUNDLE_DIR.resolve():
        raise ConfigError(f"--out / bundle = {out} is the shipped bundle: give another folder.")
    bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
    shipped_w, shipped_b = shipped_head(bundle)
    if len(arrays) != 2 or tuple(np.shape(arrays[0])) != shipped_b.shape \
            or tuple(np.shape(arrays[1])) != shipped_w.shape:
        raise ConfigError(f"The run's arrays {[tuple(np.shape(a)) for a in arrays]} are not the {HEAD} head's "
                          f"[bias {shipped_b.shape}, weight {shipped_w.shape}].")
    i = head_index(bundle)
    stored = load_file(str(bundle.file("weights.safetensors")))
    stored = {k: v for k, v in stored.items() if not k.startswith((f"heads.{i}.weight.", f"heads.{i}.bias."))}
    stored[f"heads.{i}.bias.f16"] = np.asarray(arrays[0], np.float32).astype(np.float16)
    stored[f"heads.{i}.weight.f16"] = np.ascontiguousarray(arrays[1], np.float32).astype(np.float16)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in bundle.manifest["files"]:
        if name != "weights.safetensors":
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundle.file(name), out / name)
    save_file(stored, str(out / "weights.safetensors"))
    manifest = {k: v for k, v in bundle.manifest.items() if k != "files"}
    evaluated = [r for r in run.get("rounds", []) if r.get("eval_metrics")]
    chosen = (run.get("selection") or {}).get("round")
    kept = next((r for r in evaluated if r["round"] == chosen), evaluated[-1] if evaluated else None)
    manifest.update(name=f"{bundle.name}-federated", metrics={
        "validation": {**kept["eval_metrics"], "round": kept["round"],
                       "by_institution": kept.get("eval_by_institution", [])} if kept else {},
        "validation_is": f"{HEAD} head accuracy on the institutions' own held-out messages (example-weighted "
                         "mean), MiniLM head alone, of the round the bundle holds",
        "history": [{"round": r["round"], **r["eval_metrics"]} for r in evaluated],
        "shipped": bundle.manifest.get("metrics", {})})
    manifest["provenance"] = {
        **bundle.manifest.get("provenance", {}), "federation": run,
        "command": run.get("command", "sectorflow federate customer_service"),
        "federated_head": f"heads.{i} ({HEAD}) is the federated run's head (float16); the encoder, the other heads, "
                          f"e5 heads, out-of-scope detectors and calibration.json are those of the shipped bundle "
                          f"{bundle.name} {bundle.version} ({bundle.sha256[:16]}), not refit"}
    return write_manifest(out, **manifest)


KEYS = ("data", "banking77", "max_examples", "seed", "init")
"""The partition keys ``build`` reads (module docstring); ``sectorflow federate`` refuses any other
(``partition_id``, ``num_partitions``, ``name`` and ``institution`` are always accepted)."""


def trainable_spec() -> TrainableSpec:
    """The spec the plugin registers through ``sectorflow_register_trainables``."""
    return TrainableSpec(task="customer_service", name="intent-head", build=IntentHeadTrainable, check=check,
                         export=export, keys=KEYS, path_keys=("data", "banking77"),
                         description="the shipped bundle's banking77 head over the frozen MiniLM pooled vectors; "
                                     "partitions: a branch's labelled messages (jsonl/csv) or a slice of banking77 "
                                     "train; ends in a servable bundle")
