"""sectorflow_text_encoder: the BERT encoder against a numpy computation of the same layers, its padding mask, its
weight naming schemes (Hugging Face, PaddleNLP) and the int8 weight-only storage. Tiny random weights (seeded)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sectorflow
import sectorflow_text_encoder
from sectorflow import ConfigError, InvalidInputError, import_paddle
from sectorflow_text_encoder import (
    BertConfig,
    BertEncoder,
    convert_bert_weights,
    dequantize_state_int8,
    load_bert_weights,
    mean_pool,
    quantize_state_int8,
)

paddle = import_paddle()

TINY = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
        "intermediate_size": 24, "max_position_embeddings": 12, "type_vocab_size": 2}
IDS = np.array([[2, 7, 9, 3, 11, 5], [2, 5, 3, 0, 0, 0]], dtype=np.int64)  # row 2: three padding tokens


def encoder(seed: int = 0, **overrides) -> BertEncoder:
    """A tiny encoder in eval mode with random (non-default) LayerNorm weights, so every parameter matters."""
    paddle.seed(seed)
    model = BertEncoder(BertConfig(**{**TINY, **overrides}))
    rng = np.random.default_rng(seed)
    state = {}
    for key, value in model.state_dict().items():
        is_norm_scale = key.split(".")[-2].startswith("ln") and key.endswith(".weight")  # ln, ln1, ln2: around 1
        state[key] = rng.normal(1.0 if is_norm_scale else 0.0, 0.3, value.shape).astype(np.float32)
    model.set_state_dict(state)
    model.eval()
    return model


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def reference(state: dict[str, np.ndarray], ids: np.ndarray, c: BertConfig) -> np.ndarray:
    """BERT's forward pass (Devlin et al. 2019) in float64 numpy, one layer after another; Linear weights [in, out]."""
    s = {k: v.astype(np.float64) for k, v in state.items()}
    x = s["word.weight"][ids] + s["pos.weight"][np.arange(ids.shape[1])][None] + s["token_type.weight"][0]
    x = layer_norm(x, s["ln.weight"], s["ln.bias"], c.layer_norm_eps)
    pad = ids == c.pad_token_id
    heads, d = c.num_attention_heads, c.hidden_size // c.num_attention_heads
    for i in range(c.num_hidden_layers):
        p = f"layers.{i}."

        def lin(v, name, p=p):
            return v @ s[p + name + ".weight"] + s[p + name + ".bias"]

        def split(v):
            return v.reshape(v.shape[0], v.shape[1], heads, d).transpose(0, 2, 1, 3)

        q, k, v = split(lin(x, "q")), split(lin(x, "k")), split(lin(x, "v"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + np.where(pad, -1e4, 0.0)[:, None, None, :]
        att = np.exp(scores - scores.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(x.shape)
        x = layer_norm(x + lin(ctx, "o"), s[p + "ln1.weight"], s[p + "ln1.bias"], c.layer_norm_eps)
        h = lin(x, "ff1")
        if c.hidden_act == "relu":
            h = np.maximum(h, 0)
        elif c.hidden_act == "gelu_new":
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        else:
            h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
        x = layer_norm(x + lin(h, "ff2"), s[p + "ln2.weight"], s[p + "ln2.bias"], c.layer_norm_eps)
    return x


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_one_layer_matches_the_numpy_computation(act):
    model = encoder(hidden_act=act)
    with paddle.no_grad():
        hidden, mask = model(paddle.to_tensor(IDS))
    assert hidden.shape == [2, 6, 16] and hidden.dtype == paddle.float32
    np.testing.assert_array_equal(mask.numpy(), [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    expected = reference(state, IDS, model.config)
    np.testing.assert_allclose(hidden.numpy(), expected, atol=2e-5)


def test_two_layers_and_padding_does_not_change_the_tokens():
    model = encoder(num_hidden_layers=2)
    with paddle.no_grad():
        padded, _ = model(paddle.to_tensor(IDS[1:]))
        alone, _ = model(paddle.to_tensor(IDS[1:, :3]))
    np.testing.assert_allclose(padded.numpy()[:, :3], alone.numpy(), atol=1e-5)  # masked keys get weight ~e^-1e4
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    np.testing.assert_allclose(padded.numpy(), reference(state, IDS[1:], model.config), atol=2e-5)
    with paddle.no_grad():  # run_layers in two parts (what training with frozen lower layers does) = forward
        x, mask = model.embed(paddle.to_tensor(IDS))
        split = model.run_layers(model.run_layers(x, mask, 0, 1), mask, 1)
        whole, _ = model(paddle.to_tensor(IDS))
    np.testing.assert_array_equal(split.numpy(), whole.numpy())


def test_mean_pool_is_the_masked_mean_of_unit_length():
    hidden = np.random.default_rng(1).normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.float32)
    pooled = mean_pool(paddle.to_tensor(hidden), paddle.to_tensor(mask), normalize=False).numpy()
    np.testing.assert_allclose(pooled, [hidden[0, :2].mean(0), hidden[1].mean(0)], atol=1e-6)
    unit = mean_pool(paddle.to_tensor(hidden), paddle.to_tensor(mask)).numpy()
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(unit, pooled / np.linalg.norm(pooled, axis=1, keepdims=True), atol=1e-6)


def hf_names(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The encoder's state under Hugging Face BertModel names, Linear weights [out, in] (as in model.safetensors)."""
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
             "ff2": "output.dense", "ln2": "output.LayerNorm"}
    fixed = {"word.weight": "embeddings.word_embeddings.weight", "pos.weight": "embeddings.position_embeddings.weight",
             "token_type.weight": "embeddings.token_type_embeddings.weight", "ln.weight": "embeddings.LayerNorm.weight",
             "ln.bias": "embeddings.LayerNorm.bias"}
    out = {}
    for key, value in state.items():
        if key in fixed:
            out["bert." + fixed[key]] = value
        else:
            _, i, part, kind = key.split(".")
            out[f"bert.encoder.layer.{i}.{parts[part]}.{kind}"] = value.T if value.ndim == 2 else value
    out["bert.pooler.dense.weight"] = np.zeros((16, 16), np.float32)  # not an encoder weight: left out
    return out


def test_hugging_face_weights_load_transposed_and_give_the_same_outputs():
    source = encoder(seed=3, num_hidden_layers=2)
    state = {k: v.numpy() for k, v in source.state_dict().items()}
    converted = convert_bert_weights(hf_names(state), "hf")
    assert set(converted) == set(state)
    assert converted["layers.1.ff1.weight"].shape == (16, 24)  # [in, out] again
    target = encoder(seed=4, num_hidden_layers=2)
    load_bert_weights(target, hf_names(state), "hf")
    with paddle.no_grad():
        loaded, original = target(paddle.to_tensor(IDS))[0], source(paddle.to_tensor(IDS))[0]
    np.testing.assert_array_equal(loaded.numpy(), original.numpy())


def test_paddlenlp_names_are_not_transposed_and_bad_weights_are_named():
    weights = {"ernie.encoder.layers.0.linear1.weight": np.ones((16, 24), np.float32),
               "ernie.embeddings.layer_norm.bias": np.zeros(16, np.float32)}
    converted = convert_bert_weights(weights, "paddlenlp")
    assert {k: v.shape for k, v in converted.items()} == {"layers.0.ff1.weight": (16, 24), "ln.bias": (16,)}
    with pytest.raises(ConfigError, match="Unknown weight naming 'onnx'"):
        convert_bert_weights(weights, "onnx")
    model = encoder()
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    with pytest.raises(ConfigError, match="lacks 2 weights"):
        load_bert_weights(model, {k: v for k, v in hf_names(state).items() if ".0.output.dense." not in k}, "hf")
    wide = hf_names(state) | {"bert.embeddings.word_embeddings.weight": np.zeros((41, 16), np.float32)}
    with pytest.raises(ConfigError, match=r"word.weight has shape \[41, 16\], the config gives \[40, 16\]"):
        load_bert_weights(model, wide, "hf")


def test_config_from_dict_reads_bert_and_ernie_and_refuses_what_it_cannot_run():
    bert = BertConfig.from_dict({"hidden_size": 32, "num_attention_heads": 4, "model_type": "bert", "unused": 1,
                                 "intermediate_size": None})
    assert (bert.hidden_size, bert.layer_norm_eps, bert.intermediate_size) == (32, 1e-12, 1536)
    assert BertConfig.from_dict({"model_type": "ernie"}).layer_norm_eps == 1e-5
    assert BertConfig.from_dict({"architectures": ["ErnieModel"], "layer_norm_eps": 1e-7}).layer_norm_eps == 1e-7
    with pytest.raises(ConfigError, match="hidden_act='swish' is not supported"):
        BertConfig.from_dict({"hidden_act": "swish"})
    with pytest.raises(ConfigError, match="hidden_size 30 is not a multiple of num_attention_heads 4"):
        BertConfig.from_dict({"hidden_size": 30, "num_attention_heads": 4})


def test_input_ids_longer_than_the_positions_or_not_2d_are_refused():
    model = encoder()
    with pytest.raises(InvalidInputError, match="13 tokens per row; the encoder has 12 positions"):
        model(paddle.to_tensor(np.ones((1, 13), np.int64)))
    with pytest.raises(InvalidInputError, match=r"shape \[6\]"):
        model(paddle.to_tensor(IDS[0]))


def test_int8_storage_is_small_and_within_half_a_step():
    rng = np.random.default_rng(0)
    state = {"layers.0.q.weight": rng.normal(0, 0.05, (384, 384)).astype(np.float32),
             "word.weight": rng.normal(0, 0.05, (1000, 384)).astype(np.float32),
             "layers.0.q.bias": rng.normal(0, 0.05, 384).astype(np.float32),
             "small.weight": rng.normal(0, 0.05, (16, 16)).astype(np.float32)}  # < 4096 entries: fp16
    stored = quantize_state_int8(state)
    assert set(stored) == {"layers.0.q.weight.q8", "layers.0.q.weight.scale", "word.weight.q8", "word.weight.scale",
                           "layers.0.q.bias.f16", "small.weight.f16"}
    assert stored["layers.0.q.weight.q8"].dtype == np.int8
    assert stored["word.weight.scale"].shape == (1000, 1)  # one scale per embedding row
    assert stored["layers.0.q.weight.scale"].shape == (1, 384)  # one per output column of a Linear [in, out]
    np.testing.assert_allclose(stored["layers.0.q.weight.scale"][0], np.abs(state["layers.0.q.weight"]).max(0) / 127,
                               rtol=1e-6)
    back = dequantize_state_int8(stored)
    assert set(back) == set(state) and all(v.dtype == np.float32 for v in back.values())
    for name in ("layers.0.q.weight", "word.weight"):
        assert np.all(np.abs(back[name] - state[name]) <= stored[name + ".scale"] / 2 + 1e-7), name
    np.testing.assert_array_equal(back["small.weight"], state["small.weight"].astype(np.float16).astype(np.float32))
    assert sum(v.nbytes for v in stored.values()) < 0.27 * sum(v.nbytes for v in state.values())
    with pytest.raises(ConfigError, match="word.weight.scale"):
        dequantize_state_int8({k: v for k, v in stored.items() if k != "word.weight.scale"})


def test_the_encoder_names_are_this_library_s_public_api_not_the_core_s():
    assert {"BertConfig", "BertEncoder", "load_bert_weights", "quantize_state_int8"} <= set(
        sectorflow_text_encoder.__all__)
    assert not set(sectorflow_text_encoder.__all__) & set(sectorflow.__all__)
    assert sectorflow_text_encoder.BertEncoder is sectorflow_text_encoder.bert.BertEncoder
    with pytest.raises(AttributeError, match="no attribute 'BertEncoder'"):
        sectorflow.BertEncoder  # noqa: B018
