"""WordPiece tokenisation with the ``tokenizers`` library (the BERT uncased scheme of Devlin et al. 2019).

``encode_batch(texts, max_len)`` returns int64 ids ``[batch, longest]`` padded with 0 ([PAD]), each row
``[CLS] ... [SEP]`` truncated to ``max_len`` tokens. Full-width ASCII forms (U+FF01-U+FF5E, as Chinese input methods
type "ＨＯＷ ＤＯ Ｉ ＣＨＡＮＧＥ ＭＹ ＰＩＮ") and the ideographic space U+3000 are read as their ASCII characters first:
the vocabulary has no pieces for them (they were [UNK]). Only those characters are mapped, not all of NFKC, so no
banking77 or CLINC150 message reads differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import BertWordPieceTokenizer

from sectorflow import ConfigError

FULL_WIDTH = {0x3000: " ", **{code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)}}
"""Full-width ASCII forms and the ideographic space, as their ASCII characters (``str.translate`` table)."""


class WordPiece:
    """A BERT WordPiece tokenizer read from a ``vocab.txt`` (one token a line)."""

    def __init__(self, vocab_file: str | Path, lowercase: bool = True) -> None:
        path = Path(vocab_file)
        if not path.is_file():
            raise ConfigError(f"No vocabulary file {path}: a BERT/ERNIE folder needs vocab.txt.")
        self.tokenizer = BertWordPieceTokenizer(str(path), lowercase=lowercase, strip_accents=lowercase or None,
                                                clean_text=True, handle_chinese_chars=True)
        self.unk_id = self.tokenizer.token_to_id("[UNK]")
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0

    def encode_batch(self, texts: Sequence[str], max_len: int = 64) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([t.translate(FULL_WIDTH) for t in texts])
        rows = []
        for enc in encodings:
            ids = enc.ids
            if len(ids) > max_len:
                ids = ids[: max_len - 1] + [ids[-1]]
            rows.append(ids)
        width = max((len(r) for r in rows), default=2)
        out = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def unknown_ratio(self, text: str) -> float:
        """Share of word pieces that are [UNK] (0..1); high for scripts the vocabulary does not cover."""
        ids = self.tokenizer.encode(text.translate(FULL_WIDTH), add_special_tokens=False).ids
        return sum(i == self.unk_id for i in ids) / max(1, len(ids))
