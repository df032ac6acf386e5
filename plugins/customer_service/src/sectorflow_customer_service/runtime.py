"""Turn a customer-service bundle into a Paddle Inference predictor, and wrap it as a batched sentence encoder.

Two bundle formats (manifest ``format``):

- ``sectorflow-cs-int8`` (the shipped one, made by ``scripts/build_bundle.py``): ``config.json``, ``vocab.txt``,
  ``weights.safetensors`` (int8 weight-only, ``sectorflow_text_encoder.quantize_state_int8``), ``labels.json`` and
  ``calibration.json``; manifest ``heads`` lists ``[name, n_labels]``.
- ``paddlenlp-checkpoint``: a BERT/ERNIE folder saved by PaddleNLP's ``save_pretrained`` (``config.json``,
  ``model_state.pdparams``, ``vocab.txt``) plus a manifest (``sectorflow customer-service adopt DIR`` writes it):
  an encoder without intent heads; intents then come from example sentences (``intent_examples``).

Both are rebuilt once per bundle SHA-256 into ``$SECTORFLOW_HOME/customer_service/inference/<sha>/`` (a
``paddle-inference`` bundle with its own manifest: ``model.json`` + ``model.pdiparams``) and served from there.
Inputs of the program: ``input_ids`` int64 ``[batch, seq]`` (0 = padding); outputs: ``embedding``
``[batch, hidden]`` (L2-normalised) then one ``[batch, n_labels]`` logits array per head.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import (Bundle, BundleError, ConfigError, import_paddle, load_bundle, load_pdparams, paddle_notes_filtered,
                        write_manifest)
from sectorflow_text_encoder import BertConfig, dequantize_state_int8, load_bert_weights

from .intent_model import IntentModel
from .wordpiece import WordPiece
from .cache import home

paddle = import_paddle()

SHIPPED_FORMAT = "sectorflow-cs-int8"
CHECKPOINT_FORMAT = "paddlenlp-checkpoint"


def heads_of(bundle: Bundle) -> list[tuple[str, int]]:
    return [(str(n), int(k)) for n, k in bundle.manifest.get("heads", [])] if bundle.format == SHIPPED_FORMAT else []


def build_layer(bundle: Bundle) -> IntentModel:
    """The eager Paddle layer with the bundle's weights (fp32)."""
    try:
        config = BertConfig.from_dict(bundle.read_json("config.json"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"Bundle {bundle.path}: config.json unreadable ({exc}).") from exc
    model = IntentModel(config, heads_of(bundle))
    if bundle.format == SHIPPED_FORMAT:
        from safetensors.numpy import load_file

        state = dequantize_state_int8(load_file(str(bundle.file("weights.safetensors"))))
        wanted = model.state_dict()
        missing = [k for k in wanted if k not in state]
        if missing:
            raise BundleError(f"Bundle {bundle.path}: weights.safetensors lacks {missing[:3]}.")
        model.set_state_dict({k: state[k] for k in wanted})
    elif bundle.format == CHECKPOINT_FORMAT:
        load_bert_weights(model.encoder, load_pdparams(bundle.file("model_state.pdparams")), "paddlenlp")
    else:
        raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}; customer_service reads "
                          f"{SHIPPED_FORMAT!r} or {CHECKPOINT_FORMAT!r}.")
    model.eval()
    return model


def inference_bundle(bundle: Bundle) -> Bundle:
    """The ``paddle-inference`` bundle rebuilt from ``bundle`` (cached by its SHA-256; built on first use)."""
    target = home() / "customer_service" / "inference" / bundle.sha256[:24]
    if (target / "manifest.json").is_file():
        try:
            return load_bundle(target, expected_task="customer_service")
        except BundleError:
            shutil.rmtree(target, ignore_errors=True)  # a half-written or altered cache: rebuild it
    model = build_layer(bundle)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        with paddle_notes_filtered():  # Paddle 3.3's tracing notes (see sectorflow._paddle)
            paddle.jit.save(model, str(tmp / "model"),
                            input_spec=[paddle.static.InputSpec([None, None], "int64", name="input_ids")])
        write_manifest(tmp, task="customer_service", name=f"{bundle.name}-inference", version=bundle.version,
                       format="paddle-inference", precision="fp32", source_bundle_sha256=bundle.sha256,
                       outputs=["embedding"] + [name for name, _ in heads_of(bundle)])
        try:
            tmp.rename(target)
        except OSError:  # another process built it first
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return load_bundle(target, expected_task="customer_service")


def tokenizer_of(bundle: Bundle) -> WordPiece:
    lowercase = True
    try:
        lowercase = bool(bundle.read_json("tokenizer_config.json").get("do_lower_case", True))
    except (BundleError, OSError, json.JSONDecodeError, KeyError):
        pass
    return WordPiece(bundle.file("vocab.txt"), lowercase=lowercase)


LENGTH_BUCKET = 8
"""Batch widths are rounded up to a multiple of this many tokens (at most ``max_len``): the Paddle predictor keeps
work buffers (oneDNN primitives and memory) per input shape, so exact lengths made resident memory grow 7.1 % over
10,000 batch-1 calls of varied messages (one repeated message: +0.1 %); with buckets a batch size meets at most
``max_len / 8`` widths (``benchmarks/int8_bench.py --memory-only``). Padding is masked, so results are the same."""


class PredictorEncoder:
    """Batched runs of the exported program; also an :class:`~.encoders.Encoder` (``encode`` -> embeddings).

    ``run(texts)`` returns ``[embedding [n, d], logits_head_0 [n, L0], ...]`` in input order; texts are sorted by
    length into batches of at most ``batch_size`` so that padding stays short, each padded to a multiple of
    :data:`LENGTH_BUCKET` tokens (a bounded set of input shapes).
    """

    def __init__(self, pool: Any, tokenizer: WordPiece, name: str, batch_size: int = 32, max_len: int = 64) -> None:
        self.pool, self.tokenizer, self.name = pool, tokenizer, name
        self.batch_size, self.max_len = batch_size, max_len

    def run(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        ids = self.tokenizer.encode_batch(texts, self.max_len)
        lengths = (ids != self.tokenizer.pad_id).sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        parts: list[list[np.ndarray]] = []
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            longest = int(lengths[rows].max())
            width = max(longest, min(self.max_len, -(-longest // LENGTH_BUCKET) * LENGTH_BUCKET))
            batch = ids[rows, :width]
            if batch.shape[1] < width:  # encode_batch pads to the call's longest message only
                batch = np.pad(batch, ((0, 0), (0, width - batch.shape[1])), constant_values=self.tokenizer.pad_id)
            parts.append(self.pool.run({"input_ids": batch}))
        outputs = []
        for k in range(len(parts[0])):
            merged = np.concatenate([p[k] for p in parts])
            out = np.empty_like(merged)
            out[order] = merged
            outputs.append(out)
        return outputs

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.run(texts)[0] if texts else np.zeros((0, 1), dtype=np.float32)
