"""sectorflow-text-encoder: the BERT text encoder in plain ``paddle.nn`` that the customer_service plugin (its intent
model) and the legal_extraction plugin (its party-tagger training, ``scripts/party_model.py``) build on, its weight
loaders (Hugging Face and PaddleNLP names) and its int8 weight-only storage. Shapes, units and errors:
:mod:`.bert`.

A library distribution, not a plugin (no ``sectorflow`` entry point): plugins may depend on it, as on any library.
Importing it imports Paddle.
"""

from __future__ import annotations

from .bert import (BERT_WEIGHT_SOURCES, BertConfig, BertEncoder, BertLayer, convert_bert_weights, dequantize_state_int8,
                   load_bert_weights, mean_pool, quantize_state_int8)

__all__ = ["BertConfig", "BertEncoder", "BertLayer", "mean_pool", "convert_bert_weights", "load_bert_weights",
           "quantize_state_int8", "dequantize_state_int8", "BERT_WEIGHT_SOURCES"]
