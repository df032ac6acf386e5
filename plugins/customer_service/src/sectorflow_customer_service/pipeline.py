"""The ``customer_service`` pipeline: language -> encoder -> intent / out-of-scope -> FAQ answers; escalation rules.

Routing: each message's language (:mod:`.language`) picks its encoder. English (and messages with no letters)
go to the bundled fine-tuned MiniLM (Paddle Inference predictor), whose heads give banking77 or CLINC150 intents;
when the bundle carries e5 heads (manifest ``e5_heads``, :mod:`.ensemble`), the English messages MiniLM is unsure
of (top probability under ``calibration.json``'s ``ensemble_gate``, decided on validation by
``scripts/fit_ensemble_gate.py``) also go through multilingual-e5-small and get the two heads' ensemble;
Chinese goes to the Chinese encoder (:func:`.encoders.chinese_encoder`, else character n-grams) and gets intents
from the shipped Chinese examples (nearest prototype, labels from banking77's inventory). With a PaddleNLP
backbone bundle (``task_path``) both languages use that backbone when its vocabulary covers Chinese.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import BundleError, ConfigError, Pipeline

from .encoders import CharNgramEncoder, Encoder, LazyEncoder, chinese_encoder, encode_cached
from .ensemble import E5Heads
from .escalation import EscalationRules
from .prototypes import PACKAGE_DATA, PrototypeClassifier, read_examples
from .faq import FaqIndex
from .language import detect_language
from .oos import SCORERS, load_scorer
from .options import OPTIONS  # noqa: F401 - re-exported: the options are documented beside the pipeline
from .runtime import CHECKPOINT_FORMAT, PredictorEncoder, heads_of, inference_bundle, tokenizer_of
from .schema import CustomerServiceResult, FaqAnswer, IntentCandidate, Message

OUT_OF_SCOPE = "out_of_scope"

# Fallback thresholds when no calibration ran (English examples of an operator's file): best example similarity
# for out-of-scope, and FAQ score floors per encoder. Chinese thresholds are calibrated at load (see load()).
ZH_MIN_SIMILARITY = {"char-ngram-tfidf": 0.30}
FAQ_MIN_SCORE = {"char-ngram-tfidf": 0.30}


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


class CustomerServicePipeline(Pipeline[Message, CustomerServiceResult]):
    """See the module docstring. Options: :data:`OPTIONS`."""

    def load(self) -> None:
        o = self.options
        unknown = sorted(set(o) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"Unknown customer_service option(s) {unknown}; known: {sorted(OPTIONS)}.")
        self.top_k = self._int("top_k", 3, 1, 50)
        self.faq_top_k = self._int("faq_top_k", 3, 1, 50)
        # every option is checked here, before any model loads, not at the first message that reads it
        self._int("hnsw_threshold", 2000, 1, 10**9)  # no effect (exact FAQ search); still checked
        for key, low in (("oos_threshold", 0.0), ("zh_min_similarity", -1.0), ("faq_min_score", -1.0)):
            if key in o:
                self._float(key, 0.0, low, 1.0)
        for key in ("faq", "intent_examples"):
            if o.get(key, None) is not None and (not isinstance(o[key], (str, os.PathLike)) or not str(o[key]).strip()):
                raise ConfigError(f"{key}={o[key]!r}: give the path of a file (a str or pathlib.Path), or leave the "
                                  f"option out.")
        if not isinstance(o.get("intent_set", "banking77"), str):
            raise ConfigError(f"intent_set={o['intent_set']!r}: give 'banking77' or 'clinc150'.")
        self.rules = EscalationRules(o.get("escalation_terms"))
        assert self.bundle is not None
        self.heads = [name for name, _ in heads_of(self.bundle)]
        wanted = str(o.get("intent_set", "banking77"))
        if not o.get("intent_examples") and wanted not in self.heads:  # fail before loading any model
            raise ConfigError(f"intent_set={wanted!r} is not in this bundle (it has {self.heads}); a backbone "
                              f"bundle ({CHECKPOINT_FORMAT}) needs intent_examples=PATH with English examples.")
        infer = inference_bundle(self.bundle)
        shipped, self.bundle = self.bundle, infer  # predictor_pool() reads self.bundle
        try:
            pool = self.predictor_pool()
        finally:
            self.bundle = shipped
        self.tokenizer = tokenizer_of(shipped)
        self.main = PredictorEncoder(pool, self.tokenizer, shipped.name, batch_size=self.batch_size)
        self.calibration = shipped.read_json("calibration.json") if self.heads else {}
        self.labels = shipped.read_json("labels.json") if self.heads else {}
        # intent sets calibrated on a distance of the sentence vector: Mahalanobis (scripts/fit_oos.py) or the cosine
        # distance to the nearest training message (knn, scripts/fit_oos_operating_point.py); oos.py
        self.oos_scorers = {name: load_scorer(cal["method"], shipped.file(cal["statistics"]))
                            for name, cal in self.calibration.items()
                            if isinstance(cal, dict) and cal.get("method") in SCORERS}
        self.intent_set = str(o.get("intent_set", "banking77"))
        # English intents of bundle 0.3.0+: ensemble with linear heads over e5's sentence vector (ensemble.py); the
        # calibrated thresholds are the ensemble's, so e5 must load (it ships in this package).
        ensemble = o.get("english_ensemble", True)
        if not isinstance(ensemble, bool):
            raise ConfigError(f"english_ensemble={ensemble!r}: give True (MiniLM + e5 heads) or False (MiniLM alone, "
                              "faster).")
        e5_file = shipped.manifest.get("e5_heads") if self.heads and ensemble else None
        self.e5_heads: E5Heads | None = E5Heads.load(shipped.file(e5_file)) if e5_file else None
        # where e5 runs: messages whose MiniLM top probability (of the intent set's head) is under the gate
        cal_gate = self.calibration.get(self.intent_set, {}) if isinstance(self.calibration, dict) else {}
        default_gate = float(cal_gate.get("ensemble_gate", 1.01)) if isinstance(cal_gate, dict) else 1.01
        self.ensemble_gate = self._float("ensemble_gate", default_gate, 0.0, 1.01)
        self.e5: Encoder | None = None
        if self.e5_heads is not None:
            self.e5 = chinese_encoder(self.num_threads)
            if self.e5 is None:
                raise BundleError(f"Bundle {shipped.path} scores English intents with multilingual-e5-small "
                                  f"(e5_heads), which failed to load (see the warning above); reinstall "
                                  f"sectorflow-customer-service.")
        # The Chinese intent examples (and the Chinese encoder, unless e5 was loaded above for the English ensemble)
        # load with the first Chinese message, not here. A Chinese FAQ loads them now.
        self._zh_lock = threading.Lock()
        self.zh: Encoder = LazyEncoder(lambda: self._chinese_encoder(shipped))  # type: ignore[assignment]
        self.encoders: dict[str, Encoder] = {"en": self.main, "zh": self.zh}
        # Example-based intents: the operator's file (per language), else the shipped Chinese examples for zh.
        self.prototypes: dict[str, PrototypeClassifier] = {}
        self._zh_examples: list[tuple[str, str]] = read_examples(PACKAGE_DATA / "intents_zh.jsonl")
        self.zh_calibration: dict[str, float] | None = None  # set when the Chinese examples load
        if o.get("intent_examples"):
            rows = self._examples(Path(o["intent_examples"]), "en")
            if rows:
                self.prototypes["en"] = PrototypeClassifier(self.main, rows, encode=encode_cached)
            self._zh_examples = self._examples(Path(o["intent_examples"]), "zh") or self._zh_examples
        if "en" in self.prototypes:
            self.intent_set = "examples"
        elif self.intent_set not in self.heads:
            raise ConfigError(f"intent_set={self.intent_set!r} is not in this bundle (it has {self.heads}); "
                              f"a backbone bundle ({CHECKPOINT_FORMAT}) needs intent_examples=PATH with English "
                              f"examples.")
        self.faq = FaqIndex(o["faq"], self.encoders) if o.get("faq") else None

    # --- helpers -----------------------------------------------------------------------------------------------
    def _ensure_zh(self) -> None:
        """Build the Chinese intent examples' classifier and its out-of-scope threshold (leave-one-out on the
        examples + off-domain sentences) once, on the first Chinese message; thread-safe."""
        if "zh" in self.prototypes:
            return
        with self._zh_lock:
            if "zh" in self.prototypes:
                return
            clf = PrototypeClassifier(self.zh, self._zh_examples, encode=encode_cached)
            self.zh_calibration = clf.calibrate([t for t, _ in read_examples(PACKAGE_DATA / "oos_zh.jsonl")])
            self.prototypes["zh"] = clf  # last: other threads test for this key

    def _int(self, key: str, default: int, low: int, high: int) -> int:
        value = self.options.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ConfigError(f"{key} must be an integer in [{low}, {high}], got {value!r}.")
        return value

    def _float(self, key: str, default: float, low: float, high: float) -> float:
        value = self.options.get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not low <= value <= high:
            raise ConfigError(f"{key} must be a number in [{low}, {high}], got {value!r}.")
        return float(value)

    @staticmethod
    def _examples(path: Path, lang: str) -> list[tuple[str, str]]:
        try:
            return read_examples(path, lang)
        except ConfigError as exc:
            if "has no examples for" in str(exc):
                return []
            raise

    def _chinese_encoder(self, shipped: Any) -> Encoder:
        if shipped.format == CHECKPOINT_FORMAT and self.tokenizer.unknown_ratio("我的银行卡被冻结了怎么办") < 0.2:
            return self.main  # the user's backbone reads Chinese (ERNIE 3.0 zh, bert-base-chinese ...)
        found = self.e5 or chinese_encoder(self.num_threads)
        if found is not None:
            return found
        corpus = [t for t, _ in read_examples(PACKAGE_DATA / "intents_zh.jsonl")]
        if self.options.get("intent_examples"):
            corpus += [t for t, _ in self._examples(Path(self.options["intent_examples"]), "zh")]
        if self.options.get("faq"):
            from .faq import read_faq

            corpus += [e.question for e in read_faq(self.options["faq"]) if e.lang == "zh"]
        encoder = CharNgramEncoder().fit(corpus)
        encoder.cacheable = False  # type: ignore[attr-defined]  # fitted per corpus: never reuse cached vectors
        return encoder

    # --- pipeline ----------------------------------------------------------------------------------------------
    def preprocess(self, items: Sequence[Message]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            guess = detect_language(item.text)
            out.append({"text": item.text, "lang": guess.lang, "mixed": guess.mixed,
                        "route": "zh" if guess.lang == "zh" else "en"})
        return out

    def batch_key(self, feature: dict[str, Any]) -> tuple[str, int]:
        """Route, then length in characters: a large call is cut into batches of one encoder and similar lengths,
        which pad less (the core restores input order)."""
        return feature["route"], len(feature["text"])

    def forward(self, batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        raw: list[dict[str, Any]] = [{} for _ in batch]
        en = [i for i, f in enumerate(batch) if f["route"] == "en"]
        zh = [i for i, f in enumerate(batch) if f["route"] == "zh"]
        if en:
            texts = [batch[i]["text"] for i in en]
            outputs = self.main.run(texts)
            logits = outputs[1:]
            if self.e5_heads is not None and self.e5 is not None and "en" not in self.prototypes:
                logits = self._ensemble(texts, logits)
            for row, i in enumerate(en):
                raw[i] = {"embedding": outputs[0][row], "logits": [o[row] for o in logits],
                          "minilm_logits": [o[row] for o in outputs[1:]]}
        if zh:
            self._ensure_zh()
            vectors = self.zh.encode([batch[i]["text"] for i in zh])
            for row, i in enumerate(zh):
                raw[i] = {"embedding": vectors[row], "logits": []}
        return raw

    def _ensemble(self, texts: list[str], logits: list[np.ndarray]) -> list[np.ndarray]:
        """Scores ``[n, k]`` per head: the MiniLM logits, and for the messages whose MiniLM top probability of the
        intent set's head is under ``ensemble_gate`` the ensemble's (:meth:`.ensemble.E5Heads.combine`); e5 encodes
        those messages only. Each row is softmaxed on its own later, so the two kinds of rows mix."""
        assert self.e5_heads is not None and self.e5 is not None
        head = self.heads.index(self.intent_set) if self.intent_set in self.heads else 0
        unsure = np.flatnonzero(_softmax(logits[head].astype(np.float64)).max(axis=1) < self.ensemble_gate)
        if unsure.size == 0:
            return logits
        vectors = self.e5.encode([texts[i] for i in unsure])
        out = []
        for name, lg in zip(self.heads, logits):
            if name not in self.e5_heads:
                out.append(lg)
                continue
            mixed = lg.astype(np.float64)
            mixed[unsure] = self.e5_heads.combine(name, lg[unsure], vectors)
            out.append(mixed)
        return out

    def _intent(self, feature: dict[str, Any], raw: dict[str, Any]) -> tuple[str, list[IntentCandidate], bool, str]:
        route = feature["route"]
        if route in self.prototypes:
            clf = self.prototypes[route]
            probs, best = clf.predict(raw["embedding"][None, :])
            probs, best = probs[0], float(best[0])
            labels = clf.labels
            floor = clf.min_similarity if clf.min_similarity is not None else ZH_MIN_SIMILARITY.get(clf.encoder.name, 0.8)
            if route == "zh":
                floor = self._float("zh_min_similarity", floor, -1.0, 1.0)
            oos = best < floor
            intent_set = "examples"
        else:
            head = self.heads.index(self.intent_set)
            probs = _softmax(raw["logits"][head].astype(np.float64))
            labels = self.labels[self.intent_set]
            cal = self.calibration[self.intent_set]
            top = int(probs.argmax())
            scorer = self.oos_scorers.get(self.intent_set)
            if scorer is not None and "oos_threshold" not in self.options:  # distance to the nearest intent
                far = float(scorer.distance(raw["embedding"][None, :])[0]) > cal["distance_threshold"]
                oos = far or labels[top] == "oos"
            elif "oos_threshold" in self.options:  # the caller's threshold, on the probability shown
                oos = probs[top] < self._float("oos_threshold", 0.0, 0.0, 1.0) or labels[top] == "oos"
            else:  # calibrated on the MiniLM head's own probability when calibration.json says so (fit_e5_heads.py)
                signal = probs
                if cal.get("probabilities") == "minilm" and "minilm_logits" in raw:
                    signal = _softmax(raw["minilm_logits"][head].astype(np.float64))
                oos = float(signal.max()) < cal["threshold"] or labels[top] == "oos"
            if self.intent_set == "banking77" and "clinc150" in self.heads:  # off-domain per the CLINC150 head (weather ...)
                c = self.heads.index("clinc150")
                gate_logits = raw["logits"][c]
                if cal.get("probabilities") == "minilm" and "minilm_logits" in raw:
                    gate_logits = raw["minilm_logits"][c]
                cprobs = _softmax(gate_logits.astype(np.float64))
                clabel = self.labels["clinc150"][int(cprobs.argmax())]
                off_domain = clabel not in set(cal.get("clinc150_in_domain", ()))
                gate = float(cal.get("gate_min_probability", 2.0))
                # the CLINC150 head's own "oos" verdict counts at oos_label_min_probability or more (0.3.3; 0 before)
                oos_label = clabel == "oos" and float(cprobs.max()) >= float(cal.get("oos_label_min_probability", 0.0))
                oos = oos or oos_label or (off_domain and clabel != "oos" and float(cprobs.max()) >= gate)
            intent_set = self.intent_set
        order = [int(j) for j in np.argsort(-probs) if labels[int(j)] != "oos"][: self.top_k]
        top_k = [IntentCandidate(label=labels[j], probability=round(float(probs[j]), 6)) for j in order]
        if feature["lang"] == "und":
            oos = True  # digits/punctuation only: nothing to classify
        return (OUT_OF_SCOPE if oos else top_k[0].label), top_k, bool(oos), intent_set

    def postprocess(self, items: Sequence[Message], raw: Sequence[dict[str, Any]]) -> list[CustomerServiceResult]:
        features = self.preprocess(items)
        faq_hits: list[list[tuple[Any, float]]] = [[] for _ in items]
        if self.faq is not None:
            for lang in ("en", "zh"):
                idx = [i for i, f in enumerate(features) if f["route"] == lang]
                if not idx:
                    continue
                encoder = self.encoders[lang]
                floor = FAQ_MIN_SCORE.get(encoder.name, 0.5)
                if lang == "zh" and "zh" in self.prototypes and self.prototypes["zh"].min_similarity is not None:
                    floor = self.prototypes["zh"].min_similarity  # same scale: sentence-to-sentence similarity
                floor = self._float("faq_min_score", floor, -1.0, 1.0)
                queries = np.stack([raw[i]["embedding"] for i in idx]).astype(np.float32)
                for i, hits in zip(idx, self.faq.search(lang, queries, self.faq_top_k, floor)):
                    faq_hits[i] = hits
        results = []
        for item, feature, r, hits in zip(items, features, raw, faq_hits):
            intent, top_k, oos, intent_set = self._intent(feature, r)
            esc = self.rules.check(item.text)
            encoder = self.encoders[feature["route"]]
            results.append(CustomerServiceResult(
                id=item.id, language=feature["lang"], mixed_language=feature["mixed"], intent=intent,
                intent_probability=0.0 if not top_k else top_k[0].probability, top_k=top_k, out_of_scope=oos,
                intent_set=intent_set,
                faq=[FaqAnswer(id=e.id, question=e.question, answer=e.answer, score=round(s, 6)) for e, s in hits],
                escalate=esc.escalate, escalation_reasons=list(esc.reasons), escalation_matched=list(esc.matched),
                encoder=encoder.name))
        return results
