"""A test-only task with a real (small) neural model, for the INT8 and export tests.

``digits``: an MLP (64 -> 256 -> ReLU -> 10) trained here on scikit-learn's bundled handwritten digits (8x8
images, 1,797 samples, shipped inside scikit-learn: no download). Train/validation split seeded; trained to about 97%
validation accuracy in a second or two, then saved with ``paddle.jit.save`` as a ``paddle-inference`` bundle. The
task's :attr:`Int8Spec.validation` gives the validation split and argmax accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sectorflow import (
    Int8Spec,
    Pipeline,
    TaskResult,
    TaskSpec,
    ValidationSet,
    hookimpl,
    import_paddle,
    write_manifest,
)

TASK = "digits"
HIDDEN = 256


def digits_split(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_val, y_val)``: pixels scaled to [0, 1] (float32), two thirds for training."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) * 2 // 3
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def train_mlp(seed: int = 0, epochs: int = 150) -> Any:
    """The trained ``paddle.nn`` MLP (eager; only the test's bundle builder uses it)."""
    paddle = import_paddle()
    x_train, y_train, _, _ = digits_split()
    paddle.seed(seed)
    model = paddle.nn.Sequential(paddle.nn.Linear(64, HIDDEN), paddle.nn.ReLU(), paddle.nn.Linear(HIDDEN, 10))
    optimizer = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    xs, ys = paddle.to_tensor(x_train), paddle.to_tensor(y_train)
    for _ in range(epochs):
        loss = paddle.nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    model.eval()
    return model


def save_bundle(model: Any, folder: Path, *, version: str = "1.0.0") -> Path:
    """``paddle.jit.save`` the model (input ``x`` float32 ``[None, 64]``) into a ``digits`` bundle folder."""
    paddle = import_paddle()
    folder.mkdir(parents=True, exist_ok=True)
    paddle.jit.save(model, str(folder / "model"),
                    input_spec=[paddle.static.InputSpec([None, 64], "float32", "x")])
    (folder / "labels.txt").write_text("\n".join(str(d) for d in range(10)) + "\n", encoding="utf-8")
    write_manifest(folder, task=TASK, name="digits-mlp", version=version, format="paddle-inference",
                   precision="fp32", labels=[str(d) for d in range(10)],
                   provenance={"dataset": "scikit-learn load_digits (UCI optdigits test set)",
                               "script": "tests/quantize_support.py"})
    return folder


def add_outlier_row(model: Any, pixel: int = 0, value: float = 1e4) -> Any:
    """Give the first layer a huge weight on a pixel that is 0 in every image (pixel 0 of the 8x8 digits).

    The fp32 model's outputs do not change (that weight always multiplies 0), but per-channel INT8 scales every
    output channel by its largest weight, so every other weight of the layer rounds to 0: a model that INT8 ruins.
    """
    paddle = import_paddle()
    weight = model[0].weight.numpy()
    weight[pixel, :] = value
    model[0].weight.set_value(paddle.to_tensor(weight))
    return model


class DigitInput(BaseModel):
    """One 8x8 image, row by row, pixel values 0-1."""

    pixels: list[float] = Field(min_length=64, max_length=64)


class DigitResult(TaskResult):
    label: str
    scores: list[float]


class DigitsPipeline(Pipeline[DigitInput, DigitResult]):
    def load(self) -> None:
        self.pool = self.predictor_pool()

    def preprocess(self, items: Sequence[DigitInput]) -> list[Any]:
        return [np.asarray(item.pixels, dtype=np.float32) for item in items]

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        (logits,) = self.pool.run({"x": np.stack(list(batch))})
        return list(logits)

    def postprocess(self, items: Sequence[DigitInput], raw: Sequence[Any]) -> list[DigitResult]:
        labels = self.bundle.labels
        return [DigitResult(label=labels[int(np.argmax(r))], scores=[float(v) for v in r]) for r in raw]


def validation(bundle: Any) -> ValidationSet:
    """The held-out third of the digits, in batches of 128, scored by argmax accuracy."""
    _, _, x_val, y_val = digits_split()
    batches = [{"x": x_val[i:i + 128]} for i in range(0, len(x_val), 128)]
    return ValidationSet(batches=batches, labels=y_val, metric=ValidationSet.argmax_accuracy,
                         metric_name="accuracy", split="scikit-learn digits, seeded held-out third (599 images)")


def digits_spec(bundle: Path | None, *, with_validation: bool = True) -> TaskSpec:
    return TaskSpec(name=TASK, input_model=DigitInput, output_model=DigitResult, pipeline=DigitsPipeline,
                    default_bundle=bundle, precisions=("fp32", "int8"), devices=("cpu", "gpu"),
                    int8=Int8Spec(validation=validation if with_validation else None))


class DigitsPlugin:
    """A plugin object registering the ``digits`` task on a given bundle."""

    def __init__(self, bundle: Path | None, *, with_validation: bool = True) -> None:
        self.spec = digits_spec(bundle, with_validation=with_validation)

    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        register(self.spec)


# --- a tiny transformer (random weights) for the export checks -------------------------------------------------------

TEXT_TASK = "tiny_text"
VOCAB = 200


def text_ids(text: str, length: int = 12) -> np.ndarray:
    """Character ids (code point mod the vocabulary, 0 pads) of the first ``length`` characters: int64 ``[length]``."""
    ids = [1 + ord(c) % (VOCAB - 1) for c in text[:length]]
    return np.array(ids + [0] * (length - len(ids)), dtype=np.int64)


def save_tiny_transformer(folder: Path, seed: int = 0) -> Path:
    """One encoder layer (embedding 32, 4 heads, layer norm, GELU feed-forward), mean pooling, 3 logits; random
    weights. Input ``input_ids`` int64 ``[None, None]``."""
    paddle = import_paddle()
    nn = paddle.nn
    paddle.seed(seed)

    class TinyEncoder(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 32)
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu"), 1)
            self.head = nn.Linear(32, 3)

        def forward(self, input_ids):
            hidden = self.encoder(self.embed(input_ids))
            return self.head(hidden.mean(axis=1))

    model = TinyEncoder()
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    paddle.jit.save(model, str(folder / "model"),
                    input_spec=[paddle.static.InputSpec([None, None], "int64", "input_ids")])
    write_manifest(folder, task=TEXT_TASK, name="tiny-encoder", version="0.0.1", format="paddle-inference",
                   precision="fp32", labels=["a", "b", "c"],
                   provenance={"weights": "random (seed 0); a test model, not a trained one"})
    return folder


class TextInput(BaseModel):
    text: str = Field(min_length=1)


class TextPipeline(Pipeline[TextInput, DigitResult]):
    def load(self) -> None:
        self.pool = self.predictor_pool()

    def preprocess(self, items: Sequence[TextInput]) -> list[Any]:
        return [text_ids(item.text) for item in items]

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        (logits,) = self.pool.run({"input_ids": np.stack(list(batch))})
        return list(logits)

    def postprocess(self, items: Sequence[TextInput], raw: Sequence[Any]) -> list[DigitResult]:
        labels = self.bundle.labels
        return [DigitResult(label=labels[int(np.argmax(r))], scores=[float(v) for v in r]) for r in raw]


def agreement_validation(bundle: Any) -> ValidationSet:
    """For the random-weight encoder there is no ground truth: labels are the fp32 predictor's own argmax on 256
    generated texts, so the metric is the INT8 model's agreement with fp32 (fp32 scores 1.0)."""
    from sectorflow import PredictorPool
    from sectorflow.models.export import cpu_paddle_pool

    rng = np.random.default_rng(3)
    texts = ["".join(chr(int(c)) for c in rng.integers(97, 123, size=rng.integers(3, 12))) for _ in range(256)]
    batches = [{"input_ids": np.stack([text_ids(t) for t in texts[i:i + 64]])} for i in range(0, 256, 64)]
    pool: PredictorPool = cpu_paddle_pool(bundle)
    labels = np.concatenate([pool.run(b)[0].argmax(axis=-1) for b in batches])
    return ValidationSet(batches=batches, labels=labels, metric=ValidationSet.argmax_accuracy,
                         metric_name="agreement with fp32", split="256 generated texts (seed 3)")


class TextPlugin:
    """A plugin object registering ``tiny_text`` (no validation data unless asked: the export check then uses
    synthetic ids)."""

    def __init__(self, bundle: Path, *, with_validation: bool = False) -> None:
        self.spec = TaskSpec(name=TEXT_TASK, input_model=TextInput, output_model=DigitResult, pipeline=TextPipeline,
                             default_bundle=bundle, devices=("cpu", "gpu"), precisions=("fp32", "int8"),
                             int8=Int8Spec(validation=agreement_validation if with_validation else None))

    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        register(self.spec)


# --- a plugin whose shipped bundle has its own format (as customer_service): the pipeline builds the Paddle one ------

WRAPPED_TASK = "digits_wrapped"


def save_wrapped_bundle(paddle_bundle: Path, folder: Path) -> Path:
    """A ``digits-wrapped`` bundle: the digits ``paddle-inference`` bundle copied under ``inner/`` (standing in for a
    plugin's own weights format that its pipeline turns into a Paddle program at load time)."""
    import shutil

    shutil.copytree(paddle_bundle, folder / "inner")
    manifest = __import__("json").loads((folder / "inner" / "manifest.json").read_text())
    manifest = {k: v for k, v in manifest.items() if k != "files"}
    manifest["task"] = WRAPPED_TASK
    (folder / "inner" / "manifest.json").unlink()
    write_manifest(folder / "inner", **manifest)
    write_manifest(folder, task=WRAPPED_TASK, name="digits-wrapped", version="1.0.0", format="digits-wrapped",
                   precision="fp32", labels=manifest["labels"])
    return folder


class WrappedPipeline(DigitsPipeline):
    def load(self) -> None:
        from sectorflow import load_bundle

        shipped, self.bundle = self.bundle, load_bundle(self.bundle.path / "inner", expected_task=WRAPPED_TASK)
        try:
            self.pool = self.predictor_pool()
        finally:
            self.bundle = shipped


class WrappedPlugin:
    def __init__(self, bundle: Path) -> None:
        self.spec = TaskSpec(name=WRAPPED_TASK, input_model=DigitInput, output_model=DigitResult,
                             pipeline=WrappedPipeline, default_bundle=bundle, precisions=("fp32", "int8"),
                             int8=Int8Spec(validation=validation))

    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        register(self.spec)
