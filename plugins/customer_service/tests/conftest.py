"""Fixtures: tiny random bundles (both formats) written with the plugin's own code, and the data folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sectorflow import write_manifest

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
TINY = {"vocab_size": 0, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 128, "type_vocab_size": 2, "hidden_act": "gelu"}


def need_data(name: str) -> Path:
    folder = DATA / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared datasets live beside the repository in ../shared/data)")
    return folder


@pytest.fixture(scope="session")
def minilm_vocab() -> Path:
    """The WordPiece vocabulary shipped in the plugin's bundle (all-MiniLM-L6-v2's, uncased)."""
    from sectorflow_customer_service.plugin import BUNDLE_DIR

    return BUNDLE_DIR / "vocab.txt"


def _tiny_model(vocab: Path, heads):
    from sectorflow import import_paddle
    from sectorflow_text_encoder import BertConfig
    from sectorflow_customer_service.intent_model import IntentModel

    n = sum(1 for _ in vocab.open(encoding="utf-8"))
    config = dict(TINY, vocab_size=n)
    import_paddle().seed(7)
    return config, IntentModel(BertConfig.from_dict(config), heads)


@pytest.fixture(scope="session")
def tiny_shipped_bundle(tmp_path_factory, minilm_vocab) -> Path:
    """A shipped-format bundle (int8 storage) with a random 2-layer encoder and two random heads."""
    from safetensors.numpy import save_file

    from sectorflow_text_encoder import quantize_state_int8

    folder = tmp_path_factory.mktemp("tiny_shipped")
    heads = [("banking77", 3), ("clinc150", 3)]
    config, model = _tiny_model(minilm_vocab, heads)
    save_file(quantize_state_int8({k: v.numpy() for k, v in model.state_dict().items()}),
              str(folder / "weights.safetensors"))
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_bytes(minilm_vocab.read_bytes())
    (folder / "labels.json").write_text(json.dumps({"banking77": ["a", "b", "c"], "clinc150": ["x", "y", "oos"]}))
    (folder / "calibration.json").write_text(json.dumps({"banking77": {"threshold": 0.0},
                                                         "clinc150": {"threshold": 0.0}}))
    write_manifest(folder, task="customer_service", name="tiny", version="0.0.1", format="sectorflow-cs-int8",
                   heads=[list(h) for h in heads])
    return folder


def save_paddlenlp_checkpoint(folder: Path, vocab: Path, model_type: str = "ernie") -> dict:
    """A PaddleNLP-style save_pretrained folder: config.json, model_state.pdparams (PaddleNLP names), vocab.txt."""
    from sectorflow import import_paddle

    paddle = import_paddle()

    config, model = _tiny_model(vocab, [])
    enc = {k: v.numpy() for k, v in model.encoder.state_dict().items()}
    names = {"word.weight": "embeddings.word_embeddings.weight", "pos.weight": "embeddings.position_embeddings.weight",
             "token_type.weight": "embeddings.token_type_embeddings.weight", "ln.weight": "embeddings.layer_norm.weight",
             "ln.bias": "embeddings.layer_norm.bias"}
    parts = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.out_proj",
             "ln1": "norm1", "ff1": "linear1", "ff2": "linear2", "ln2": "norm2"}
    state = {}
    for key, value in enc.items():
        if key in names:
            state[f"{model_type}.{names[key]}"] = value
        else:
            _, i, part, kind = key.split(".")
            state[f"{model_type}.encoder.layers.{i}.{parts[part]}.{kind}"] = value
    state[f"{model_type}.pooler.dense.weight"] = np.zeros((32, 32), np.float32)  # ignored by the encoder
    folder.mkdir(parents=True, exist_ok=True)
    paddle.save(state, str(folder / "model_state.pdparams"))
    cfg = dict(config, model_type=model_type, architectures=["ErnieModel" if model_type == "ernie" else "BertModel"],
               layer_norm_eps=1e-12)
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "vocab.txt").write_bytes(vocab.read_bytes())
    return enc


@pytest.fixture(scope="session")
def paddlenlp_checkpoint(tmp_path_factory, minilm_vocab):
    """(folder, encoder weights by this plugin's names) of a tiny random ERNIE save_pretrained folder."""
    folder = tmp_path_factory.mktemp("ckpt") / "ernie-tiny"
    return folder, save_paddlenlp_checkpoint(folder, minilm_vocab)
