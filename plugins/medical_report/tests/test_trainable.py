"""The span tagger as a federated Trainable, the generated corpus and the BIO helpers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sectorflow import InvalidInputError, Trainable, plugins
from sectorflow_medical_report import corpus, tagger
from sectorflow_medical_report.lexicon import ANATOMY, FINDINGS
from sectorflow_medical_report.trainable import TaggerTrainable


def test_corpus_is_seeded_and_its_spans_are_lexicon_forms():
    a, b = corpus.generate(40, 5), corpus.generate(40, 5)
    assert a == b and a != corpus.generate(40, 6)
    assert [d["style"] for d in a[:5]] == [0, 1, 2, 3, 0]
    find_forms = {f.lower() for v in FINDINGS.values() for f in v[0] + v[1]}
    anat_forms = {f.lower() for v in ANATOMY.values() for f in v[0] + v[1]}
    for d in a:
        for s, e, label in d["spans"]:
            assert d["text"][s:e].lower() in (find_forms if label == "FIND" else anat_forms)


def test_bio_and_decode_round_trip():
    text = "右肺下叶见结节"
    spans = [[0, 4, "ANAT"], [5, 7, "FIND"]]
    tags = tagger.bio(text, spans)
    assert tags.tolist() == [1, 2, 2, 2, 0, 3, 4]
    assert tagger.decode(tags, offset=10) == [(10, 14, "ANAT"), (15, 17, "FIND")]


def test_the_plugin_offers_the_tagger_to_the_federated_layer():
    specs = [s for s in plugins.registered_trainables() if s.task == "medical_report"]
    assert [(s.name, s.plugin) for s in specs] == [("span-tagger", "medical_report")]


@pytest.fixture(scope="module")
def hospital():
    return TaggerTrainable({"partition_id": 2, "num_partitions": 4, "n_reports": 40})


def test_trainable_protocol_weights_fit_and_evaluate(hospital):
    assert isinstance(hospital, Trainable)
    weights = hospital.get_weights()
    assert all(v.dtype == np.float32 for v in weights.values())
    assert {"embed.weight", "out.weight", "out.bias"} <= set(weights)
    n, loss, metrics = hospital.evaluate()
    assert n == 20 and loss > 0 and metrics["f1"] > 0.8  # starts from the shipped bundle's weights
    weights["out.bias"] += 1.0
    hospital.set_weights(weights)
    assert np.allclose(hospital.get_weights()["out.bias"], weights["out.bias"])
    n_train, fit_metrics = hospital.fit(epochs=1, lr=1e-3)
    assert n_train == 40 and fit_metrics["loss"] > 0
    assert not np.allclose(hospital.get_weights()["out.bias"], weights["out.bias"])


def test_set_weights_refuses_other_names_or_shapes(hospital):
    weights = hospital.get_weights()
    with pytest.raises(ValueError, match="names differ"):
        hospital.set_weights({k: v for k, v in weights.items() if k != "out.bias"})
    weights["out.bias"] = np.zeros(3, dtype=np.float32)
    with pytest.raises(ValueError, match="out.bias"):
        hospital.set_weights(weights)


def test_partitions_are_one_style_each_and_checked():
    zh = TaggerTrainable({"partition_id": 3, "num_partitions": 4, "n_reports": 8, "init": "random"})
    en = TaggerTrainable({"partition_id": 0, "num_partitions": 4, "n_reports": 8, "init": "random"})
    assert len(zh.train_data) == 8 and len(en.train_data) == 8
    with pytest.raises(InvalidInputError, match="partition_id"):
        TaggerTrainable({"partition_id": 4, "num_partitions": 4})


def test_a_hospitals_own_jsonl(tmp_path):
    path = tmp_path / "reports.jsonl"
    rows = [{"text": "右肺下叶见结节", "spans": [[0, 4, "ANAT"], [5, 7, "FIND"]]}] * 5
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    t = TaggerTrainable({"data": str(path)})
    assert (len(t.train_data), len(t.val_data)) == (4, 1)
    path.write_text(json.dumps({"text": "abc", "spans": [[0, 9, "FIND"]]}), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="line 1"):
        TaggerTrainable({"data": str(path)})
