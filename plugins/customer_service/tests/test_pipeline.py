"""The customer_service task end to end with the shipped bundle (real model, real predictor)."""

import json
from pathlib import Path

import pytest

from sectorflow import BundleError, ConfigError, Taskflow

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "customer_service"


@pytest.fixture(scope="module")
def tf(tmp_path_factory):
    faq = tmp_path_factory.mktemp("faq") / "faq_bank.csv"
    faq.write_bytes((SAMPLES / "faq_bank.csv").read_bytes())
    return Taskflow("customer_service", faq=str(faq))


def test_issue_example_both_languages(tf):
    en, zh = tf(["I am still waiting on my card?", "我的银行卡被冻结了怎么办"])
    assert (en.language, en.intent, en.out_of_scope, en.intent_set) == ("en", "card_arrival", False, "banking77")
    assert en.intent_probability > 0.5 and en.top_k[0].label == "card_arrival" and len(en.top_k) == 3
    assert en.faq and en.faq[0].id == "en-1" and not en.escalate
    assert (zh.language, zh.intent, zh.out_of_scope) == ("zh", "card_not_working", False)
    assert zh.encoder == "multilingual-e5-small-q4" and zh.faq[0].id == "zh-1"
    assert en.meta.model_name == "minilm-l6-intents-banking77-clinc150"


def test_a_call_cut_into_batches_by_route_and_length_answers_as_one_batch(tf):
    texts = ["I am still waiting on my card?", "我的银行卡被冻结了怎么办", "Hi",
             "My card payment was declined twice today at the supermarket, why?", "转账失败", "top up failed"]
    small = Taskflow("customer_service", batch_size=2)
    seen = []
    forward = small.pipeline.forward
    small.pipeline.forward = lambda batch: seen.append([f["route"] for f in batch]) or forward(batch)
    got = small(texts)
    want = tf(texts)
    assert [(r.intent, r.out_of_scope, r.language, r.escalate) for r in got] == \
        [(r.intent, r.out_of_scope, r.language, r.escalate) for r in want]
    # other padding, same numbers up to float noise
    assert [r.intent_probability for r in got] == pytest.approx([r.intent_probability for r in want], abs=1e-4)
    assert seen == [["en", "en"], ["en", "en"], ["zh", "zh"]]  # one encoder per batch, shortest first


def test_the_chinese_examples_load_with_the_first_chinese_message_only():
    fresh = Taskflow("customer_service")
    assert not fresh.pipeline.zh.loaded and "zh" not in fresh.pipeline.prototypes
    assert fresh("I am still waiting on my card?").intent == "card_arrival"
    assert not fresh.pipeline.zh.loaded and "zh" not in fresh.pipeline.prototypes  # English only: never built
    zh = fresh("我的银行卡被冻结了怎么办")
    assert fresh.pipeline.zh.loaded and (zh.intent, zh.encoder) == ("card_not_working", "multilingual-e5-small-q4")
    assert fresh.pipeline.zh.get() is fresh.pipeline.e5  # e5 (loaded for the English ensemble) is shared, not rebuilt
    assert fresh.pipeline.zh_calibration["min_similarity"] > 0.5


def test_gibberish_and_off_domain_get_the_fallback(tf):
    # (bundle 0.3.3's banking77 operating point lets "What's the weather like in Paris tomorrow?" through, with a
    # low-probability banking intent; a weather question the CLINC150 head is sure of is still caught)
    results = tf(["asdf qwerty zxcvb", "what is the weather going to be like this weekend", "12345 ???",
                  "红烧肉怎么做"])
    assert [r.out_of_scope for r in results] == [True, True, True, True]
    assert all(r.intent == "out_of_scope" for r in results)
    assert results[2].language == "und"


def test_escalation_is_reported_with_reasons(tf):
    r1, r2 = tf(["This is ridiculous, I want to speak to a human or I'm going to the CFPB",
                 "再不处理我就向金融监管总局投诉，转人工"])
    assert r1.escalate and r1.escalation_reasons == ["human_requested", "regulator_or_legal_threat", "anger"]
    assert r2.escalation_reasons == ["human_requested", "regulator_or_legal_threat", "complaint"]
    assert "转人工" in r2.escalation_matched


def test_full_width_english_reads_as_ascii(tf):
    """Chinese input methods type full-width Latin letters; MiniLM's vocabulary had no pieces for them ([UNK])."""
    wide, plain = tf(["ＨＯＷ　ＤＯ　Ｉ　ＣＨＡＮＧＥ　ＭＹ　ＰＩＮ？", "HOW DO I CHANGE MY PIN?"])
    assert (wide.language, wide.intent, wide.out_of_scope) == ("en", "change_pin", False)
    assert wide.intent_probability == pytest.approx(plain.intent_probability, abs=1e-6)
    assert [a.id for a in wide.faq] == [a.id for a in plain.faq] == ["en-4"]


def test_clinc150_inventory():
    tfc = Taskflow("customer_service", intent_set="clinc150")
    alarm, pay = tfc(["set an alarm for 7 am tomorrow", "I need to pay my electricity bill"])
    assert alarm.intent == "alarm" and alarm.intent_set == "clinc150"
    assert pay.intent == "pay_bill"


@pytest.mark.parametrize("options,message", [
    ({"colour": "red"}, "has no option"),
    ({"top_k": 0}, "top_k must be an integer"),
    ({"intent_set": "atis"}, "intent_set='atis' is not in this bundle"),
    # refused when the pipeline is built, not at the first message that reads them (fresh-user check)
    ({"oos_threshold": 2}, r"oos_threshold must be a number in \[0.0, 1.0\], got 2"),
    ({"zh_min_similarity": "0.9"}, "zh_min_similarity must be a number"),
    ({"faq_min_score": 7}, "faq_min_score must be a number"),
    ({"hnsw_threshold": 0}, "hnsw_threshold must be an integer"),
    ({"faq": 5}, "faq=5: give the path of a file"),
    ({"faq": ""}, "faq='': give the path of a file"),  # an unset variable: was read as no FAQ at all
    ({"escalation_terms": "refund"}, "escalation_terms='refund': give a mapping"),
    ({"escalation_terms": {"complaint": "refund"}}, "give a list of phrases"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ConfigError, match=message):
        Taskflow("customer_service", **options)


def test_paddlenlp_checkpoint_as_backbone(paddlenlp_checkpoint, tmp_path):
    from sectorflow_customer_service.adopt import adopt_checkpoint

    folder, _ = paddlenlp_checkpoint
    with pytest.raises(BundleError, match="no manifest.json"):
        Taskflow("customer_service", task_path=folder)
    adopt_checkpoint(folder, name="ernie-tiny")
    with pytest.raises(ConfigError, match="needs intent_examples"):
        Taskflow("customer_service", task_path=folder)
    examples = tmp_path / "intents.jsonl"
    examples.write_text("\n".join(json.dumps(r) for r in [
        {"text": "where is my card", "label": "card_arrival", "lang": "en"},
        {"text": "my card has not arrived", "label": "card_arrival", "lang": "en"},
        {"text": "close my account", "label": "terminate_account", "lang": "en"},
        {"text": "I want to close my account", "label": "terminate_account", "lang": "en"}]) + "\n")
    tf = Taskflow("customer_service", task_path=folder, intent_examples=str(examples))
    (r,) = tf(["I want to close my account"])  # the example itself: similarity 1 whatever the random weights
    assert r.intent == "terminate_account" and r.intent_set == "examples" and r.encoder == "ernie-tiny"
    assert r.meta.model_name == "ernie-tiny"


def test_clinc150_out_of_scope_by_distance_to_the_nearest_intent():
    """The shipped bundle calibrates CLINC150's out-of-scope rule on a distance of the sentence vector: since 0.3.1 the
    cosine distance to the nearest train message (scripts/fit_oos_operating_point.py; 0.2.1-0.3.0: Mahalanobis,
    scripts/fit_oos.py); oos_threshold= switches back to the top-probability rule."""
    tfc = Taskflow("customer_service", intent_set="clinc150")
    pipe = tfc._current[0]
    cal = pipe.calibration["clinc150"]
    assert cal["method"] == "knn" and cal["val_oos_recall_wilson_lower"] >= 0.75
    texts = ["set an alarm for 7 am tomorrow", "asdf qwerty zxcvb", "what is the capital of peru"]
    alarm, gibberish, capital = tfc(texts)
    assert (alarm.intent, alarm.out_of_scope) == ("alarm", False)
    assert gibberish.out_of_scope and capital.out_of_scope and gibberish.intent == "out_of_scope"
    distances = pipe.oos_scorers["clinc150"].distance(pipe.main.encode(texts))
    assert distances[0] <= cal["distance_threshold"] < min(distances[1], distances[2])
    by_probability = Taskflow("customer_service", intent_set="clinc150", oos_threshold=0.0)
    (r,) = by_probability(["asdf qwerty zxcvb"])
    assert not r.out_of_scope and r.intent != "out_of_scope"  # threshold 0: only the head's 'oos' class remains
