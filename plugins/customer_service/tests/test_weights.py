"""int8 weight-only storage and the BERT encoder against its reference."""

import json

import numpy as np
import pytest

from sectorflow import ConfigError
from sectorflow_customer_service.bert import BertConfig, BertEncoder, load_weights, mean_pool, paddle
from sectorflow_customer_service.weights import dequantize, quantize


def test_int8_storage_is_small_and_close():
    rng = np.random.default_rng(0)
    state = {"layers.0.q.weight": rng.normal(0, 0.05, (384, 384)).astype(np.float32),
             "word.weight": rng.normal(0, 0.05, (1000, 384)).astype(np.float32),
             "ln.weight": np.ones(384, np.float32)}
    stored = quantize(state)
    assert stored["layers.0.q.weight.q8"].dtype == np.int8 and stored["ln.weight.f16"].dtype == np.float16
    assert stored["word.weight.scale"].shape == (1000, 1)  # one scale per embedding row
    assert stored["layers.0.q.weight.scale"].shape == (1, 384)  # one per output channel of a Linear
    back = dequantize(stored)
    for name, w in state.items():
        cos = float((w * back[name]).sum() / np.linalg.norm(w) / np.linalg.norm(back[name]))
        assert cos > 0.9999, name
    assert sum(v.nbytes for v in stored.values()) < 0.27 * sum(v.nbytes for v in state.values())


def test_minilm_matches_the_sentence_transformers_reference():
    from safetensors.numpy import load_file

    from sectorflow_customer_service.minilm import minilm_folder
    from sectorflow_customer_service.tokenize import WordPiece

    try:
        folder = minilm_folder()
    except ConfigError as exc:  # the weights package is a training-time dependency (installed --no-deps)
        pytest.skip(str(exc))
    model = BertEncoder(BertConfig.from_dict(json.loads((folder / "config.json").read_text())))
    load_weights(model, load_file(str(folder / "model.safetensors")), "hf")
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
    load_weights(model, load_pdparams(folder / "model_state.pdparams"), "paddlenlp")
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), enc[key])
    broken = {k: v for k, v in load_pdparams(folder / "model_state.pdparams").items() if "norm2" not in k}
    with pytest.raises(ConfigError, match="lacks 4 weights"):
        load_weights(BertEncoder(config), broken, "paddlenlp")
