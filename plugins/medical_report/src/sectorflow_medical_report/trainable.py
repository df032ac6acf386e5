"""The span tagger as a federated :class:`sectorflow.Trainable`: one hospital fine-tunes it on its own reports.

``build(partition)`` accepts:

- ``{"data": "/path/reports.jsonl"}``: the hospital's own annotated reports, one JSON object a line,
  ``{"text": ..., "spans": [[start, end, "ANAT"|"FIND"], ...]}`` (``end`` exclusive); a seeded 20 % is held out
  for :meth:`TaggerTrainable.evaluate`.
- ``{"partition_id": i, "num_partitions": n}``: partition ``i`` of the project's generated corpus
  (:mod:`.corpus`), one writing style per hospital (style ``i % 4``; with more than four partitions, hospitals that
  share a style get disjoint seeds). Optional ``n_reports`` (default 400), ``seed`` (default 0).
- optional ``init``: ``"bundle"`` (default: start from the shipped bundle's weights) or ``"random"``.

Weights travel as named float32 arrays (the Paddle ``state_dict`` names); the vocabulary is the shipped bundle's,
so every hospital's arrays have the same names and shapes. :meth:`TaggerTrainable.fit` also reports
``data_sha256``, the SHA-256 of the hospital's reports as read (the file's bytes; for a generated partition, its
reports as canonical JSON), which the federated layer records per institution in the bundle's manifest.

:func:`export` writes the run's kept global model as a bundle of the shipped layout
(``sectorflow federate medical_report -c federation.toml --out DIR``; ``bundle = "DIR"`` in deployment).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sectorflow import InvalidInputError, TrainableSpec, import_paddle

from . import corpus, tagger

BUNDLE_DIR = Path(__file__).resolve().parent / "bundle"


def load_vocab_and_weights(bundle_dir: Path = BUNDLE_DIR) -> tuple[list[str], dict[str, np.ndarray] | None]:
    """The shipped vocabulary and float32 weights (``weights.safetensors``); built from the corpus when absent."""
    vocab_file = bundle_dir / "vocab.json"
    if vocab_file.is_file():
        vocab = json.loads(vocab_file.read_text(encoding="utf-8"))
        weights = None
        if (bundle_dir / "weights.safetensors").is_file():
            from safetensors.numpy import load_file

            weights = {k: v.astype(np.float32) for k, v in load_file(str(bundle_dir / "weights.safetensors")).items()}
        return vocab, weights
    return tagger.build_vocab(d["text"] for d in corpus.generate(4000, 0)), None


def _read_jsonl(path: Path) -> list[dict]:
    items = []
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                text, spans = item["text"], item["spans"]
                for s, e, label in spans:
                    if not (0 <= s < e <= len(text)) or label not in ("ANAT", "FIND"):
                        raise ValueError(f"bad span {[s, e, label]}")
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInputError(f"{path} line {n}: expected {{'text', 'spans': [[start, end, 'ANAT'|'FIND']]}} "
                                        f"({exc})") from exc
            items.append({"text": text, "spans": spans})
    return items


class TaggerTrainable:
    """A :class:`sectorflow.Trainable` over one partition (see the module docstring)."""

    def __init__(self, partition: Mapping[str, Any]) -> None:
        paddle = import_paddle()
        seed = int(partition.get("seed", 0))
        vocab, weights = load_vocab_and_weights()
        self.index = {c: i for i, c in enumerate(vocab)}
        if "data" in partition:
            items = _read_jsonl(Path(partition["data"]))
            self.data_sha256 = hashlib.sha256(Path(partition["data"]).read_bytes()).hexdigest()
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(items))
            cut = max(1, round(len(items) * 0.2)) if len(items) > 1 else 0
            val = [items[i] for i in order[:cut]]
            train = [items[i] for i in order[cut:]]
        else:
            pid, n = int(partition.get("partition_id", 0)), int(partition.get("num_partitions", 1))
            if not 0 <= pid < n:
                raise InvalidInputError(f"partition_id {pid} must be in [0, num_partitions={n})")
            style = pid % len(corpus.STYLES)
            n_reports = int(partition.get("n_reports", 400))
            base = 1000 + 97 * pid + seed  # disjoint from the bundle's training seeds (1, 2, 3)
            train = corpus.generate(n_reports, base, styles=(style,))
            val = corpus.generate(max(20, n_reports // 5), base + 50_000, styles=(style,))
            self.data_sha256 = hashlib.sha256(json.dumps([train, val], sort_keys=True, ensure_ascii=False)
                                              .encode("utf-8")).hexdigest()
        self.train_data = tagger.examples(train, self.index)
        self.val_data = tagger.examples(val, self.index)
        paddle.seed(seed)
        self.layer = tagger.make_layer(len(vocab))
        if weights is not None and partition.get("init", "bundle") == "bundle":
            self.set_weights(weights)
        self.layer.eval()

    def get_weights(self) -> dict[str, np.ndarray]:
        return {k: np.array(v.numpy(), dtype=np.float32, copy=True) for k, v in self.layer.state_dict().items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        paddle = import_paddle()
        current = self.layer.state_dict()
        if set(weights) != set(current):
            raise ValueError(f"weight names differ: missing {sorted(set(current) - set(weights))[:3]}, "
                             f"unexpected {sorted(set(weights) - set(current))[:3]}")
        for k, v in weights.items():
            if tuple(np.shape(v)) != tuple(current[k].shape):
                raise ValueError(f"{k}: shape {tuple(np.shape(v))} != {tuple(current[k].shape)}")
        self.layer.set_state_dict({k: paddle.to_tensor(np.asarray(v, dtype=np.float32)) for k, v in weights.items()})

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        loss = tagger.train_epochs(self.layer, self.train_data, int(epochs), lr=float(config.get("lr", 3e-3)),
                                   batch_size=int(config.get("batch_size", 32)), seed=int(config.get("seed", 0)))
        return len(self.train_data), {"loss": float(loss), "data_sha256": self.data_sha256}

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        loss, metrics = tagger.evaluate_layer(self.layer, self.val_data)
        return len(self.val_data), float(loss), {k: float(v) for k, v in metrics.items()}


def export(arrays: list[np.ndarray], run: dict[str, Any], out: Path) -> Path:
    """Write a federated run's global tagger as a bundle in the shipped bundle's layout (``model.json`` +
    ``model.pdiparams`` from ``paddle.jit.save``, ``weights.safetensors``, ``vocab.json``, ``manifest.json`` with
    the sha256 of every file) that ``Taskflow("medical_report", task_path=out)`` loads; ``arrays`` in weight-name
    order (the round ``run["selection"]`` names, else the last), ``run`` (the federation's record: rounds, strategy,
    SecAgg+/DP and budget, institutions' digests and example counts, audit event ids) goes to
    ``provenance.federation``; ``metrics.validation`` is of the kept round (with ``round``). Returns the manifest
    path.

    Raises:
        ConfigError: ``out`` exists and is not empty or a bundle folder, or is the shipped bundle; arrays of
            another layer.
    """
    import shutil

    from safetensors.numpy import save_file

    from sectorflow import ConfigError, write_manifest

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / "manifest.json").is_file():
        raise ConfigError(f"--out / bundle = {out} exists and is not a bundle folder: give a new or empty folder.")
    if out.resolve() == BUNDLE_DIR.resolve():
        raise ConfigError(f"--out / bundle = {out} is the shipped bundle: give another folder.")
    paddle = import_paddle()
    vocab, _ = load_vocab_and_weights()
    layer = tagger.make_layer(len(vocab))
    names = sorted(layer.state_dict())
    if len(arrays) != len(names):
        raise ConfigError(f"{len(arrays)} arrays for the tagger's {len(names)} weights.")
    weights = {k: np.asarray(a, dtype=np.float32) for k, a in zip(names, arrays)}
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    layer.eval()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(BUNDLE_DIR / "vocab.json", out / "vocab.json")
    save_file(weights, str(out / "weights.safetensors"))
    tagger.save_inference(layer, str(out / "model"))
    shipped = json.loads((BUNDLE_DIR / "manifest.json").read_text(encoding="utf-8"))
    shipped.pop("files", None)
    evaluated = [r for r in run.get("rounds", []) if r.get("eval_metrics")]
    chosen = (run.get("selection") or {}).get("round")
    kept = next((r for r in evaluated if r["round"] == chosen), evaluated[-1] if evaluated else None)
    validation = {**kept["eval_metrics"], "round": kept["round"],
                  "by_institution": kept.get("eval_by_institution", [])} if kept else {}
    shipped.update(name=f"{shipped.get('name', 'span-tagger')}-federated", metrics={
        "validation": validation, "validation_is": "span F1 etc. over the institutions' own validation reports "
                                                   "(example-weighted mean), of the round the bundle holds",
        "history": [{"round": r["round"], **r["eval_metrics"]} for r in evaluated]})
    shipped["provenance"] = {**shipped.get("provenance", {}), "federation": run,
                             "command": run.get("command", "sectorflow federate medical_report")}
    return write_manifest(out, **shipped)


def check(partition: Mapping[str, Any]) -> None:
    """Cheap checks before Flower starts: the hospital's reports file exists and reads (every line a report with
    valid spans), or the generated partition's number is in range.

    Raises:
        ConfigError: a missing file; InvalidInputError: a line that is not a report, a bad partition id.
    """
    from sectorflow import ConfigError

    if "data" in partition:
        path = Path(partition["data"])
        if not path.is_file():
            raise ConfigError(f"reports file {path} not found")
        if not _read_jsonl(path):
            raise InvalidInputError(f"{path} holds no reports")
        return
    pid, n = int(partition.get("partition_id", 0)), int(partition.get("num_partitions", 1))
    if not 0 <= pid < n:
        raise InvalidInputError(f"partition_id {pid} must be in [0, num_partitions={n})")


KEYS = ("data", "n_reports", "seed", "init")
"""The partition keys ``build`` reads (module docstring); ``sectorflow federate`` refuses any other
(``partition_id``, ``num_partitions``, ``name`` and ``institution`` are always accepted)."""


def trainable_spec() -> TrainableSpec:
    """The spec the plugin registers through ``sectorflow_register_trainables``."""
    return TrainableSpec(task="medical_report", name="span-tagger", build=TaggerTrainable, check=check, export=export,
                         keys=KEYS, path_keys=("data",),
                         description="Character BiGRU tagger of anatomy and finding spans in radiology reports "
                                     "(zh + en); partitions: a hospital's jsonl or one generated writing style.")
