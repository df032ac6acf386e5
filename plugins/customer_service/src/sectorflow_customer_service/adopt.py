"""Turn a PaddleNLP ``save_pretrained`` folder (ERNIE 3.0, BERT ...) into a customer_service bundle in place.

The folder keeps its files (``config.json``, ``model_state.pdparams``, ``vocab.txt``, optional
``tokenizer_config.json``); :func:`adopt_checkpoint` checks that they load (restricted unpickler, names and shapes)
and writes ``manifest.json`` with their SHA-256, so that ``Taskflow("customer_service", task_path=folder,
intent_examples=...)`` verifies and serves it like any bundle. Command line: ``sectorflow customer-service adopt DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

from sectorflow import ConfigError, load_pdparams, write_manifest
from sectorflow_text_encoder import BertConfig, BertEncoder, load_bert_weights

from .runtime import CHECKPOINT_FORMAT


def adopt_checkpoint(folder: str | Path, name: str | None = None, version: str = "0.0.0") -> Path:
    """Check a PaddleNLP checkpoint folder and write its manifest. Returns the manifest path.

    Raises:
        ConfigError: a file is missing, the config is not a BERT/ERNIE encoder, or the weights do not match it.
        UnsafePickleError: ``model_state.pdparams`` holds anything but arrays.
    """
    folder = Path(folder)
    for needed in ("config.json", "model_state.pdparams", "vocab.txt"):
        if not (folder / needed).is_file():
            raise ConfigError(f"{folder} lacks {needed}: give a folder written by PaddleNLP's save_pretrained "
                              f"(config.json, model_state.pdparams, vocab.txt).")
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config = BertConfig.from_dict(raw)
    load_bert_weights(BertEncoder(config), load_pdparams(folder / "model_state.pdparams"), "paddlenlp")
    return write_manifest(folder, task="customer_service", name=name or folder.name, version=version,
                          format=CHECKPOINT_FORMAT, precision="fp32",
                          provenance={"source": "PaddleNLP save_pretrained checkpoint adopted by the operator",
                                      "model_type": raw.get("model_type"), "architectures": raw.get("architectures")})
