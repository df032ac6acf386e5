"""scripts/export_paddlenlp.py: the PaddleNLP task_path folders hold the bundle's model (no PaddleNLP needed here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "export_paddlenlp.py"


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_shipped_bundle):
    spec = importlib.util.spec_from_file_location("export_paddlenlp", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("pnlp") / "export"
    info = module.export(tiny_shipped_bundle, out)
    return out, info


def _layer(bundle_dir):
    from sectorflow import load_bundle
    from sectorflow_customer_service.runtime import build_layer

    return build_layer(load_bundle(bundle_dir))


def test_finetune_state_has_paddlenlp_names_and_the_bundle_weights(exported, tiny_shipped_bundle):
    from sectorflow import load_pdparams
    from sectorflow_text_encoder import BertConfig, BertEncoder, load_bert_weights

    out, info = exported
    state = load_pdparams(out / "finetune" / "model_state.pdparams")
    # the names and shapes PaddleNLP 3.0.0b4's BertForSequenceClassification has (2 layers, hidden 32, 3 labels)
    expected = {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.layer_norm.weight",
                "bert.embeddings.layer_norm.bias", "bert.pooler.dense.weight", "bert.pooler.dense.bias",
                "classifier.weight", "classifier.bias"}
    for i in range(2):
        for part in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj", "linear1",
                     "linear2", "norm1", "norm2"):
            expected |= {f"bert.encoder.layers.{i}.{part}.weight", f"bert.encoder.layers.{i}.{part}.bias"}
    assert set(state) == expected
    assert np.asarray(state["bert.encoder.layers.1.linear1.weight"]).shape == (32, 64)  # [in, out]
    assert np.asarray(state["classifier.weight"]).shape == (32, 3)
    np.testing.assert_array_equal(np.asarray(state["bert.pooler.dense.weight"]), np.eye(32, dtype=np.float32))

    model = _layer(tiny_shipped_bundle)
    np.testing.assert_array_equal(np.asarray(state["classifier.weight"]), model.heads[0].weight.numpy())
    config = json.loads((out / "finetune" / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {"0": "a", "1": "b", "2": "c"}
    # read back through the plugin's PaddleNLP loader: the encoder weights are the bundle's, exactly
    encoder = BertEncoder(BertConfig.from_dict(config))
    load_bert_weights(encoder, state, "paddlenlp")
    for key, value in model.encoder.state_dict().items():
        np.testing.assert_array_equal(encoder.state_dict()[key].numpy(), value.numpy(), err_msg=key)
    assert info["source_bundle"]["name"] == "tiny"


def test_meanpool_program_reproduces_the_bundle_logits(exported, tiny_shipped_bundle):
    from sectorflow import import_paddle
    from sectorflow_customer_service.wordpiece import WordPiece

    paddle = import_paddle()

    out, _ = exported
    folder = out / "meanpool"
    assert not (folder / "model_state.pdparams").exists()  # else PaddleNLP would re-convert from it
    assert json.loads((folder / "id2label.json").read_text()) == {"0": "a", "1": "b", "2": "c"}
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "BertTokenizer"
    ids = WordPiece(folder / "vocab.txt").encode_batch(["where is my card", "I want a refund for the fee now"])
    model = _layer(tiny_shipped_bundle)
    with paddle.no_grad():
        want = model(paddle.to_tensor(ids))[1].numpy()  # outputs: embedding, logits_banking77, logits_clinc150
    config = paddle.inference.Config(str(folder / "static" / "inference.json"),
                                     str(folder / "static" / "inference.pdiparams"))
    config.disable_gpu()
    predictor = paddle.inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(ids.shape)
    handle.copy_from_cpu(ids)
    predictor.run()
    got = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    assert predictor.get_input_names() == ["input_ids"]
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert np.abs(want).max() > 1e-3  # not a degenerate all-zero head
