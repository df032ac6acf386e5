"""Hook implementations of the echo test plugin: two tasks on one tiny Paddle classifier.

* ``echo`` (alias ``parrot``), stateless: returns the text (upper-cased with ``uppercase=True``), the classifier's
  label and softmax scores over 4 text features.
* ``echo_counter``, stateful: like ``echo`` but numbers the items it has seen (``seq``) and keeps a running count of
  characters (``chars_so_far``); the state is read in ``preprocess`` and written in ``postprocess``, so calls that
  ran concurrently would hand out one ``seq`` twice. The runtime serialises stateful calls.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from sectorflow import Pipeline, TaskResult, TaskSpec, hookimpl, input_formats

from . import __version__

PACKAGE_DIR = Path(__file__).resolve().parent


class EchoInput(BaseModel):
    """One text to echo."""

    text: str = Field(min_length=1, max_length=10_000, description="Any non-empty text.")


class EchoResult(TaskResult):
    """The echoed text with the tiny classifier's output."""

    text: str
    label: str = Field(description="Label with the highest score (meaningless: random weights).")
    scores: list[float] = Field(description="Softmax scores, in the bundle's label order.")


class CounterResult(EchoResult):
    """An echo numbered in the order the Taskflow saw it."""

    seq: int = Field(ge=1, description="1-based number of this item among all items this Taskflow has seen.")
    chars_so_far: int = Field(ge=1, description="Characters in all items seen so far, this one included.")


def features(text: str) -> np.ndarray:
    """4 float32 features of a text: length / 32, and the fractions of letters, digits and spaces."""
    n = len(text)
    return np.array([n / 32.0, sum(c.isalpha() for c in text) / n, sum(c.isdigit() for c in text) / n,
                     sum(c.isspace() for c in text) / n], dtype=np.float32)


def read_lines(source: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """``--format lines``: one text per line (blank lines skipped but counted)."""
    handle = sys.stdin if str(source) == "-" else open(source, encoding="utf-8")
    try:
        for row, line in enumerate(handle, start=1):
            if line.strip():
                yield row, {"text": line.rstrip("\n")}
    finally:
        if handle is not sys.stdin:
            handle.close()


class EchoPipeline(Pipeline[EchoInput, EchoResult]):
    """preprocess: text features; forward: the Paddle predictor on a batch; postprocess: label and scores."""

    def load(self) -> None:
        self.pool = self.predictor_pool()
        self.labels = self.bundle.labels

    def preprocess(self, items: Sequence[EchoInput]) -> list[Any]:
        return [features(item.text) for item in items]

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        (scores,) = self.pool.run({"x": np.stack(list(batch))})
        return list(scores)

    def _echo(self, item: EchoInput, scores: np.ndarray) -> dict[str, Any]:
        text = item.text.upper() if self.options.get("uppercase") else item.text
        return {"text": text, "label": self.labels[int(np.argmax(scores))], "scores": [float(s) for s in scores]}

    def postprocess(self, items: Sequence[EchoInput], raw: Sequence[Any]) -> list[EchoResult]:
        return [EchoResult(**self._echo(item, scores)) for item, scores in zip(items, raw)]


class CounterPipeline(EchoPipeline):
    """State: items seen and characters seen, read in preprocess and written back in postprocess."""

    def load(self) -> None:
        super().load()
        self.reset_state()

    def reset_state(self) -> None:
        self.seen = 0
        self.chars = 0

    def adopt_state(self, previous: Pipeline) -> None:
        """A reloaded model keeps counting where the old one stopped."""
        self.seen, self.chars = previous.seen, previous.chars

    def preprocess(self, items: Sequence[EchoInput]) -> list[Any]:
        seen, chars, out = self.seen, self.chars, []
        for item in items:
            seen, chars = seen + 1, chars + len(item.text)
            out.append((features(item.text), seen, chars))
        return out

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        scores = super().forward([vector for vector, _, _ in batch])
        return [(s, seq, chars) for s, (_, seq, chars) in zip(scores, batch)]

    def postprocess(self, items: Sequence[EchoInput], raw: Sequence[Any]) -> list[CounterResult]:
        results = [CounterResult(**self._echo(item, scores), seq=seq, chars_so_far=chars)
                   for item, (scores, seq, chars) in zip(items, raw)]
        if results:
            self.seen, self.chars = results[-1].seq, results[-1].chars_so_far
        return results


EXAMPLES = ({"text": "hello world"}, {"text": "Ship 42 crates to Rotterdam"})


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register ``echo`` (alias ``parrot``) and ``echo_counter``."""
    common = dict(input_model=EchoInput, version=__version__, devices=("cpu", "gpu", "npu", "mlu", "xpu"),
                  precisions=("fp32", "fp16", "bf16"), languages=("en",),
                  options={"uppercase": "echo the text in upper case (bool)"}, examples=EXAMPLES)
    register(TaskSpec(name="echo", output_model=EchoResult, pipeline=EchoPipeline, aliases=("parrot",),
                      description="Echo text with a tiny random-weight classifier (test plugin).",
                      default_bundle=PACKAGE_DIR / "bundle", formats=input_formats({"lines": read_lines}), **common))
    register(TaskSpec(name="echo_counter", output_model=CounterResult, pipeline=CounterPipeline, stateful=True,
                      description="Echo text numbered in arrival order (stateful test task).",
                      default_bundle=PACKAGE_DIR / "bundle_counter", **common))
