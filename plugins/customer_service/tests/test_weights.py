"""The shared BERT encoder (``sectorflow_text_encoder.BertEncoder``) with the plugin's weights: all-MiniLM-L6-v2
against its published reference, and a PaddleNLP checkpoint by its names. The encoder itself and the int8 storage are
tested in plugins/text_encoder/tests/test_text_encoder.py."""

import json

import numpy as np
import pytest

from sectorflow import ConfigError, import_paddle
from sectorflow_text_encoder import BertConfig, BertEncoder, load_bert_weights, mean_pool

paddle = import_paddle()


def test_minilm_matches_the_sentence_transformers_reference():
    from safetensors.numpy import load_file

    from sectorflow_customer_service.minilm import minilm_folder
    from sectorflow_customer_service.wordpiece import WordPiece

    try:
        folder = minilm_folder()
    except ConfigError as exc:  # the weights package is a training-time dependency (installed --no-deps)
        pytest.skip(str(exc))
    model = BertEncoder(BertConfig.from_dict(json.loads((folder / "config.json").read_text())))
    load_bert_weights(model, load_file(str(folder / "model.safetensors")), "hf")
    model.eval()
    ids = WordPiece(folder / "vocab.txt").encode_batch(["This is an example sentence", "Each sentence is converted"])
    with paddle.no_grad():
        emb = mean_pool(*model(paddle.to_tensor(ids))).numpy()
    # all-MiniLM-L6-v2's published output for "This is an example sentence" (sentence-transformers), first 5 dims
    np.testing.assert_allclose(emb[0, :5], [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374481], atol=2e-5)
    assert abs(float(emb[0] @ emb[1]) - 0.405) < 0.01


def test_paddlenlp_checkpoint_loads_with_its_names(paddlenlp_checkpoint):
    from sectorflow import load_pdparams

    folder, enc = paddlenlp_checkpoint

    config = BertConfig.from_dict(json.loads((folder / "config.json").read_text()))
    model = BertEncoder(config)
    load_bert_weights(model, load_pdparams(folder / "model_state.pdparams"), "paddlenlp")
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), enc[key])
    broken = {k: v for k, v in load_pdparams(folder / "model_state.pdparams").items() if "norm2" not in k}
    with pytest.raises(ConfigError, match="lacks 4 weights"):
        load_bert_weights(BertEncoder(config), broken, "paddlenlp")
