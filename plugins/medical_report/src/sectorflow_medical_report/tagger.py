"""Character BiGRU span tagger (BIO over ANAT and FIND) in Paddle: model, vocabulary, encoding, training, metrics.

Shapes: ``chars`` int64 ``[batch, time]`` (0 = padding, 1 = unknown), ``lengths`` int64 ``[batch]``; output
``probs`` float32 ``[batch, time, 5]`` over :data:`TAGS`. Latin letters are lower-cased; every other character is
its own symbol. Used by ``scripts/train_tagger.py`` (training, export), :mod:`.trainable` (federated fine-tuning)
and the pipeline (served through a ``paddle.inference`` predictor from the exported bundle, never eager).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sectorflow import import_paddle, paddle_notes_filtered

TAGS = ("O", "B-ANAT", "I-ANAT", "B-FIND", "I-FIND")
EMBED, HIDDEN = 64, 64
MAX_LEN = 256
"""Texts are tagged in windows of at most this many characters."""


def build_vocab(texts: Iterable[str]) -> list[str]:
    """Sorted characters of ``texts`` (lower-cased), after the two reserved symbols ``<pad>`` and ``<unk>``."""
    chars = sorted({c.lower() for t in texts for c in t})
    return ["<pad>", "<unk>"] + chars


def encode(text: str, index: dict[str, int]) -> np.ndarray:
    """Character ids of ``text`` (int64 ``[len(text)]``)."""
    return np.asarray([index.get(c.lower(), 1) for c in text], dtype=np.int64)


def bio(text: str, spans: Sequence[Sequence[Any]]) -> np.ndarray:
    """Tag ids (int64 ``[len(text)]``) from ``[start, end, label]`` spans."""
    tags = np.zeros(len(text), dtype=np.int64)
    for start, end, label in spans:
        tags[start] = TAGS.index(f"B-{label}")
        tags[start + 1:end] = TAGS.index(f"I-{label}")
    return tags


def decode(tags: Sequence[int], offset: int = 0) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, label)`` from tag ids; an I- without a B- starts a span."""
    spans, cur = [], None
    for i, t in enumerate(list(tags) + [0]):
        name = TAGS[int(t)]
        if cur and (name == "O" or name.startswith("B-") or name[2:] != cur[2]):
            spans.append((cur[0] + offset, i + offset, cur[2]))
            cur = None
        if name != "O" and cur is None:
            cur = [i, i + 1, name[2:]]
    return spans


def windows(text: str, size: int = MAX_LEN) -> list[tuple[int, str]]:
    """``(offset, piece)`` windows of at most ``size`` characters (cut at a sentence end when possible)."""
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = max(text.rfind(ch, start, end) for ch in "。.;；\n")
            end = cut + 1 if cut > start else end
        out.append((start, text[start:end]))
        start = end
    return out


def make_layer(vocab_size: int) -> Any:
    """The tagger layer (eager); ``forward(chars, lengths) -> probs``."""
    paddle = import_paddle()

    class SpanTagger(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.embed = paddle.nn.Embedding(vocab_size, EMBED, padding_idx=0)
            self.gru = paddle.nn.GRU(EMBED, HIDDEN, direction="bidirect")
            self.out = paddle.nn.Linear(2 * HIDDEN, len(TAGS))

        def forward(self, chars, lengths):  # jit.save needs the first argument to be named self
            h, _ = self.gru(self.embed(chars), sequence_length=lengths)
            return paddle.nn.functional.softmax(self.out(h), axis=-1)

    return SpanTagger()


def make_export_layer(layer: Any) -> Any:
    """The layer the bundle's program is saved from: the same function as ``layer`` (:func:`make_layer`, whose
    weights it shares by copy) without the GRU's ``sequence_length``, so that paddle2onnx's ONNX ``GRU`` agrees with
    Paddle on padded batches (with ``sequence_length`` its conversion differed by up to 0.8 inside the valid positions
    of rows shorter than their batch).

    Forward direction: a one-direction GRU over the padded rows (a position depends only on those before it). Backward
    direction: each row reversed within its length (``index[b, t] = lengths[b] - 1 - t`` for ``t < lengths[b]``, else
    ``t``), a one-direction GRU with the backward weights, reversed back by the same index. Positions at or after a
    row's length are zeroed before the output layer, as ``sequence_length`` does. Shapes as :func:`make_layer`.
    """
    paddle = import_paddle()

    class ExportSpanTagger(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.embed = paddle.nn.Embedding(layer.embed.weight.shape[0], EMBED, padding_idx=0)
            self.fw = paddle.nn.GRU(EMBED, HIDDEN)
            self.bw = paddle.nn.GRU(EMBED, HIDDEN)
            self.out = paddle.nn.Linear(2 * HIDDEN, len(TAGS))

        def forward(self, chars, lengths):
            x = self.embed(chars)
            steps = paddle.arange(paddle.shape(chars)[1], dtype="int64").unsqueeze(0)  # [1, time]
            ends = lengths.unsqueeze(1)  # [batch, 1]
            valid = steps < ends
            index = paddle.where(valid, ends - 1 - steps, steps + 0 * ends).unsqueeze(-1)  # [batch, time, 1]
            forward_h, _ = self.fw(x)
            reversed_h, _ = self.bw(paddle.take_along_axis(x, index.expand([-1, -1, EMBED]), axis=1))
            backward_h = paddle.take_along_axis(reversed_h, index.expand([-1, -1, HIDDEN]), axis=1)
            h = paddle.concat([forward_h, backward_h], axis=-1) * valid.astype("float32").unsqueeze(-1)
            return paddle.nn.functional.softmax(self.out(h), axis=-1)

    export = ExportSpanTagger()
    state = layer.state_dict()
    names = {"embed.weight": "embed.weight", "out.weight": "out.weight", "out.bias": "out.bias"}
    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        names[f"fw.{kind}_l0"] = f"gru.{kind}_l0"
        names[f"bw.{kind}_l0"] = f"gru.{kind}_l0_reverse"
        names[f"fw.0.cell.{kind}"] = f"gru.0.cell_fw.{kind}"  # Paddle lists each GRU weight under two names
        names[f"bw.0.cell.{kind}"] = f"gru.0.cell_bw.{kind}"
    # a GRU built while Paddle's static mode is on also lists a "_dropout_state" buffer (cuDNN's RNG state, no weight)
    own = [k for k in export.state_dict() if not k.endswith("_dropout_state")]
    if set(own) != set(names):
        raise RuntimeError(f"export layer parameters {sorted(own)} do not match the expected {sorted(names)}")
    export.set_state_dict({mine: state[theirs] for mine, theirs in names.items()})
    export.eval()
    return export


def save_inference(layer: Any, prefix: str) -> None:
    """``paddle.jit.save`` of :func:`make_export_layer` of ``layer`` to ``prefix`` (``.json`` + ``.pdiparams``),
    inputs ``chars`` int64 ``[batch, time]`` and ``lengths`` int64 ``[batch]``."""
    paddle = import_paddle()
    with paddle_notes_filtered():  # Paddle 3.3's tracing notes (see sectorflow._paddle)
        paddle.jit.save(make_export_layer(layer), prefix, input_spec=[
            paddle.static.InputSpec([None, None], "int64", name="chars"),
            paddle.static.InputSpec([None], "int64", name="lengths")])


def batches(data: list[tuple[np.ndarray, np.ndarray]], size: int, rng: np.random.Generator | None):
    """Padded ``(chars, lengths, tags)`` batches; shuffled when ``rng`` is given."""
    order = np.arange(len(data))
    if rng is not None:
        rng.shuffle(order)
    for i in range(0, len(order), size):
        part = [data[j] for j in order[i:i + size]]
        width = max(len(x) for x, _ in part)
        chars = np.zeros((len(part), width), dtype=np.int64)
        tags = np.full((len(part), width), -100, dtype=np.int64)
        for k, (x, y) in enumerate(part):
            chars[k, :len(x)] = x
            tags[k, :len(y)] = y
        yield chars, np.asarray([len(x) for x, _ in part], dtype=np.int64), tags


def examples(items: list[dict], index: dict[str, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Encoded ``(chars, tags)`` of annotated items, cut to :data:`MAX_LEN`."""
    out = []
    for item in items:
        x, y = encode(item["text"], index), bio(item["text"], item["spans"])
        out.append((x[:MAX_LEN], y[:MAX_LEN]))
    return [e for e in out if len(e[0])]


def train_epochs(layer: Any, data: list, epochs: int, lr: float = 3e-3, batch_size: int = 32, seed: int = 0) -> float:
    """Adam on masked cross-entropy; returns the last epoch's mean loss."""
    paddle = import_paddle()
    layer.train()
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=layer.parameters())
    rng = np.random.default_rng(seed)
    loss_value = 0.0
    for _ in range(epochs):
        total, count = 0.0, 0
        for chars, lengths, tags in batches(data, batch_size, rng):
            probs = layer(paddle.to_tensor(chars), paddle.to_tensor(lengths))
            loss = _loss(paddle, probs, tags)
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += float(loss) * len(chars)
            count += len(chars)
        loss_value = total / max(count, 1)
    layer.eval()
    return loss_value


def _loss(paddle: Any, probs: Any, tags: np.ndarray) -> Any:
    mask = paddle.to_tensor((tags >= 0).astype("float32"))
    target = paddle.to_tensor(np.maximum(tags, 0))
    logp = paddle.log(paddle.clip(probs, 1e-8, 1.0))
    picked = paddle.take_along_axis(logp, target.unsqueeze(-1), axis=-1).squeeze(-1)
    return -(picked * mask).sum() / mask.sum().clip(min=1.0)


def evaluate_layer(layer: Any, data: list, batch_size: int = 64) -> tuple[float, dict[str, float]]:
    """Masked loss and exact-span precision/recall/F1 (micro over ANAT and FIND) of an eager layer."""
    paddle = import_paddle()
    layer.eval()
    total, count, tp, fp, fn = 0.0, 0, 0, 0, 0
    with paddle.no_grad():
        for chars, lengths, tags in batches(data, batch_size, None):
            probs = layer(paddle.to_tensor(chars), paddle.to_tensor(lengths))
            total += float(_loss(paddle, probs, tags)) * len(chars)
            count += len(chars)
            pred = probs.numpy().argmax(-1)
            for k, n in enumerate(lengths):
                p = set(decode(pred[k, :n]))
                g = set(decode(tags[k, :n]))
                tp, fp, fn = tp + len(p & g), fp + len(p - g), fn + len(g - p)
    return total / max(count, 1), span_prf(tp, fp, fn)


def span_prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall and F1 from counts (0 where undefined)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}
