"""The intent model: a BERT encoder (``sectorflow_text_encoder.BertEncoder``), mean pooling and one linear head per intent set
(multi-task).

One fine-tuned encoder is shared by every head (banking77, CLINC150 ...), so a message is encoded once and the
same sentence vector serves FAQ retrieval. Outputs of :class:`IntentModel` (the exported inference program):

- ``embedding``: float32 ``[batch, hidden]``, L2-normalised mean-pooled sentence vector;
- ``logits_<head>``: float32 ``[batch, n_labels]`` per head, in the order of ``heads``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sectorflow import import_paddle
from sectorflow_text_encoder import BertConfig, BertEncoder, mean_pool

paddle = import_paddle()

nn = paddle.nn


class IntentModel(nn.Layer):
    """Encoder + heads. ``heads`` is a list of (name, number of labels)."""

    def __init__(self, config: BertConfig, heads: Sequence[tuple[str, int]], dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = BertEncoder(config)
        self.head_names = [name for name, _ in heads]
        self.heads = nn.LayerList([nn.Linear(config.hidden_size, n) for _, n in heads])
        self.dropout = nn.Dropout(dropout)

    def pooled(self, input_ids):
        hidden, mask = self.encoder(input_ids)
        return mean_pool(hidden, mask, normalize=False)

    def logits(self, input_ids, head: int):
        return self.heads[head](self.dropout(self.pooled(input_ids)))

    def forward(self, input_ids):  # exported: embedding + every head's logits
        pooled = self.pooled(input_ids)
        embedding = paddle.nn.functional.normalize(pooled, axis=-1)
        return [embedding] + [head(pooled) for head in self.heads]
