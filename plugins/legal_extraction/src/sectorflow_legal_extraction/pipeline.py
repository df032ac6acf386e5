"""The ``legal_extraction`` pipeline: rules per schema field (zh or en) and the CUAD clause classifier (en).

preprocess: language and segments of each contract. forward: the clause classifier's 41 CUAD category scores for
every segment of the English contracts of the batch (``paddle.inference`` predictor from the bundle, chunks of
:data:`SEGMENTS_PER_RUN` segments). postprocess: the schema's fields from the rules, clause fields taken from the
classifier's best segment when it clears the category's validation-tuned threshold, and the labelled clauses.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sectorflow import ConfigError, Pipeline

from . import normalize as nz
from . import open_fields, rules_en, rules_zh
from .amounts import find_amounts
from .clauses import batch_arrays
from .markup import html_text, looks_like_html, source_span
from .options import OPTIONS  # noqa: F401 - re-exported: the options are documented beside the pipeline
from .rules_en.party_candidates import PartyReranker
from .schema import ClauseLabel, Contract, ContractExtraction, Extraction, resolve_schema
from .text import detect_language, segments

SEGMENTS_PER_RUN = 256

DATE_FIELDS = ("signing_date", "effective_date", "term")
"""Fields whose value holds a date read from the contract (an ambiguous numeric one gets a warning)."""

CLASSIFIED_FIELDS = {"termination": "Termination For Convenience", "assignment": "Anti-Assignment",
                     "liquidated_damages": "Liquidated Damages"}
"""Clause fields of English contracts that the classifier may pick (its CUAD category)."""


Rule = Callable[[str, list[tuple[int, int]]], list[Extraction]]


def _rules(language: str, date_order: str = "MDY") -> dict[str, Rule]:
    """The rule of each field for ``language``; numeric dates are read in ``date_order`` (``"MDY"`` or ``"DMY"``)."""
    if language == "zh":
        return {
            "contract_amount": rules_zh.contract_amount,
            "signing_date": lambda t, s: rules_zh.signing_date(t, s, date_order),
            "effective_date": lambda t, s: rules_zh.effective_date(t, s, date_order),
            "term": lambda t, s: rules_zh.term(t, s, date_order), "renewal": rules_zh.renewal,
            "notice_period": rules_zh.notice_period, "liquidated_damages": rules_zh.liquidated_damages,
            "governing_law": rules_zh.governing_law, "dispute_resolution": rules_zh.dispute_resolution,
            **{k: (lambda t, s, k=k: rules_zh.clause(k, t, s)) for k in rules_zh.CLAUSE_PATTERNS},
        }
    return {
        "contract_amount": rules_en.contract_amount,
        "signing_date": lambda t, s: rules_en.agreement_date(t, date_order),
        "effective_date": lambda t, s: rules_en.effective_date(t, date_order, s),
        "term": lambda t, s: rules_en.term(t, s, date_order),
        "renewal": rules_en.renewal, "notice_period": rules_en.notice_period,
        "governing_law": rules_en.governing_law, "dispute_resolution": rules_en.dispute_resolution,
        **{k: (lambda t, s, k=k: rules_en.clause(k, t, s)) for k in rules_en.CLAUSE_PATTERNS},
    }


class LegalExtractionPipeline(Pipeline[Contract, ContractExtraction]):
    """Contract text in, :class:`ContractExtraction` out (see the module docstring)."""

    def load(self) -> None:
        self.schema = resolve_schema(self.options.get("schema"))
        language = self.options.get("language", "auto")
        if language not in ("auto", "zh", "en"):
            raise ConfigError(f"language={language!r}: give 'zh', 'en' or 'auto'.")
        self.language = language
        self.date_order = nz.check_date_order(self.options.get("date_order", "auto"))
        self.encoder = self.options.get("encoder")
        if self.encoder is not None and not (callable(self.encoder) or callable(getattr(self.encoder, "encode", None))):
            raise ConfigError(f"encoder={self.encoder!r}: give an object with encode(texts) -> float32 [n, d] (unit "
                              f"rows) or such a callable, e.g. sectorflow_customer_service.e5.E5Encoder().")
        reranker = self.options.get("party_reranker", True)
        if not isinstance(reranker, bool):
            raise ConfigError(f"party_reranker={reranker!r}: give True (default) or False.")
        self.reranker = PartyReranker() if reranker else None
        self.pool = None
        if self.bundle is not None:
            config = self.bundle.read_json("classifier.json")
            self.categories: list[str] = list(config["categories"])
            self.thresholds: dict[str, float | None] = dict(config["thresholds"])  # None: not calibrated
            self.buckets = int(config["buckets"])
            self.pool = self.predictor_pool()

    def preprocess(self, items: Sequence[Contract]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            text, source = item.text, None
            if looks_like_html(text):  # rules and classifier read the text; offsets are mapped back to the HTML
                text, starts, ends = html_text(text)
                source = (item.text, starts, ends)
            language = item.language or (self.language if self.language != "auto" else detect_language(text))
            out.append({"text": text, "language": language, "spans": segments(text, language), "source": source})
        return out

    def forward(self, batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        results = []
        for feature in batch:
            scores = None
            if self.pool is not None and feature["language"] == "en" and feature["spans"]:
                texts = [feature["text"][s:e] for s, e in feature["spans"]]
                chunks = [self.pool.run(batch_arrays(texts[i:i + SEGMENTS_PER_RUN], self.buckets))[0]
                          for i in range(0, len(texts), SEGMENTS_PER_RUN)]
                scores = np.concatenate(chunks)
            results.append({**feature, "scores": scores})
        return results

    def postprocess(self, items: Sequence[Contract], raw: Sequence[dict[str, Any]]) -> list[ContractExtraction]:
        out = []
        for feature in raw:
            result = self._extract(feature, feature["scores"])
            out.append(_to_source(result, *feature["source"]) if feature.get("source") else result)
        return out

    def _extract(self, feature: dict[str, Any], scores: np.ndarray | None) -> ContractExtraction:
        text, language, spans = feature["text"], feature["language"], feature["spans"]
        order = nz.contract_date_order(text) if self.date_order == "auto" else None
        rules = _rules(language, order["order"] if order else self.date_order)
        parties: list[Extraction] | None = None
        fields: dict[str, list[Extraction]] = {}
        date_order = order["order"] if order else self.date_order
        for name, field, relations in self.schema:
            if field.key == "parties" or field.role:
                if parties is None:
                    parties = rules_zh.parties(text) if language == "zh" else rules_en.parties(text)
                    if language == "en" and self.reranker is not None:
                        parties = self.reranker.add(text, parties)
                chosen = (list(parties) if field.key == "parties" else
                          [p for p in parties if field.role in p.value.get("roles", [p.value["role"]])])
                if relations is not None:  # UIE-style {"甲方": ["地址"]}: those relations, under the names asked
                    chosen = [_with_relations(p, relations, text, parties) for p in chosen]
                fields[name] = chosen
                continue
            if field.open:
                found = open_fields.extract(field, text, spans, self.encoder, date_order)
                if relations is not None:  # an open party's relations: "<name>：<value>" lines after its name
                    asked = {name: f"open:{name}" for name in relations}
                    found = [_with_relations(p, asked, text, found) for p in found]
                fields[name] = found
                continue
            found = self._classified(field.key, text, spans, scores) if scores is not None else []
            fields[name] = found or rules[field.key](text, spans) if field.key in rules else found
            if not fields[name] and field.aliases:  # the user's own labels for a known field
                labels = dataclasses.replace(field, names=(*field.aliases, *field.names))
                fields[name] = [hit for hit, _ in open_fields.label_value(labels, text, spans, date_order)][:1]
            if order is not None and field.key in DATE_FIELDS:
                fields[name] = [_warn_ambiguous(e, order) for e in fields[name]]
        clauses = []
        if scores is not None:
            for k, category in enumerate(self.categories):
                threshold = self.thresholds.get(category)
                if threshold is None:  # no calibrated threshold (validation F1 too low): never a predicted clause
                    continue
                for row in np.nonzero(scores[:, k] >= threshold)[0]:
                    s, e = spans[int(row)]
                    clauses.append(ClauseLabel(category=category, start=s, end=e, score=round(float(scores[row, k]), 4)))
            clauses.sort(key=lambda c: (c.start, -c.score))
        warnings = [w for found in fields.values() for x in found for w in x.warnings]
        return ContractExtraction(language=language, fields=fields, absent=[n for n, v in fields.items() if not v],
                                  clauses=clauses, amounts=find_amounts(text), warnings=list(dict.fromkeys(warnings)))

    def _classified(self, key: str, text: str, spans: list[tuple[int, int]], scores: np.ndarray) -> list[Extraction]:
        category = CLASSIFIED_FIELDS.get(key)
        if category is None or category not in self.categories:
            return []
        column = scores[:, self.categories.index(category)]
        row = int(np.argmax(column))
        threshold = self.thresholds.get(category)
        if threshold is None or column[row] < threshold:
            return []
        s, e = spans[row]
        if key == "termination" and not re.search(r"terminat|cancel", text[s:e], re.I):
            return []  # a renewal sentence scored as Termination For Convenience is no termination clause
        value: dict[str, Any] = {}
        duration = nz.parse_duration(text[s:e])
        if duration:
            value["duration"] = duration["iso"]
        return [Extraction(text=text[s:e], start=s, end=e, value=value or None,
                           confidence=round(float(column[row]), 4), source=f"classifier:{category}")]


_OPEN_RELATION_WINDOW = 600
"""How far after a party's name (characters) a relation the rules do not know is looked for, at most."""


def _open_relation(text: str, party: Extraction, label: str, others: Sequence[Extraction]) -> list[Extraction]:
    """A relation the party rules do not know (``{"甲方": ["开户名称"]}``): the first ``<label>：<value>`` after the
    party's name, before the next party's and within :data:`_OPEN_RELATION_WINDOW` characters; ``[]`` if none."""
    limit = min([o.start for o in others if o.start > party.start] + [party.end + _OPEN_RELATION_WINDOW, len(text)])
    pattern = open_fields._label_pattern(label)
    for match in pattern.finditer(text, party.end, limit):
        value = re.match(r"[ \t　]*[：:][ \t　]*([^\n，,；;。]*)", text[match.end():limit])
        if value and value.group(1).strip():
            b = match.end() + value.start(1)
            raw = value.group(1).rstrip()
            return [Extraction(text=raw, start=b, end=b + len(raw), value=raw.strip(), confidence=0.8,
                               source="rule:label_value")]
    return []


def _with_relations(party: Extraction, relations: dict[str, str], text: str,
                    others: Sequence[Extraction]) -> Extraction:
    """``party`` carrying only the relations asked for, under the names asked (known ones from the party rules,
    open ones (key ``open:<name>``) by :func:`_open_relation`)."""
    return party.model_copy(update={"relations": {
        asked: party.relations.get(key, []) if not key.startswith("open:") else
        _open_relation(text, party, key[5:], others) for asked, key in relations.items()}})


def _warn_ambiguous(extraction: Extraction, order: dict[str, Any]) -> Extraction:
    """``extraction`` with a warning for each numeric date in its text that reads both ways (``01/03/2024``), saying
    which order was used and why (``order``: :func:`normalize.contract_date_order`); unchanged when there is none."""
    raw = [m.group() for m in re.finditer(r"(?<![\w./\-])\d{1,2}([/.\-])\d{1,2}\1\d{2,4}(?![\w/])",
                                          nz.half_width(extraction.text)) if nz.ambiguous_numeric_date(m.group())]
    if not raw:
        return extraction
    if order["order"] == "DMY":
        why = f"day first, as the contract writes {order['day_first']!r}" + (
            " (a date with dots: the European form)" if "." in order["day_first"] else "")
        if order["month_first"]:
            why += f" (it also writes {order['month_first']!r} month first: check)"
    else:
        why = "month first (US order): no date in the contract can only be read day first or is written with dots"
    notes = [f"date {r!r} reads both ways (day and month are both 12 or less): read {why}; give the option "
             f"date_order='DMY' or 'MDY' to choose" for r in raw]
    return extraction.model_copy(update={"warnings": [*extraction.warnings, *notes]})


def _to_source(result: ContractExtraction, source: str, starts: list[int], ends: list[int]) -> ContractExtraction:
    """``result`` (found in the text of an HTML contract) with every offset moved to the HTML as given, so that
    ``text == contract[start:end]`` still holds for the caller's string (the span may hold tags or entities), and a
    warning that the input was read as HTML."""

    def move(e: Extraction) -> Extraction:
        start, end = source_span(starts, ends, e.start, e.end)
        value = e.value
        if isinstance(value, dict) and isinstance(value.get("clause"), list):  # the renewal clause's offsets
            value = {**value, "clause": list(source_span(starts, ends, *value["clause"]))}
        return e.model_copy(update={"start": start, "end": end, "text": source[start:end], "value": value,
                                    "relations": {k: [move(r) for r in v] for k, v in e.relations.items()}})

    clauses = []
    for c in result.clauses:
        start, end = source_span(starts, ends, c.start, c.end)
        clauses.append(c.model_copy(update={"start": start, "end": end}))
    note = ("the contract was read as HTML: tags and entities were removed before extraction, and every start/end "
            "points into the HTML as given")
    return result.model_copy(update={"fields": {k: [move(e) for e in v] for k, v in result.fields.items()},
                                     "clauses": clauses, "warnings": [*result.warnings, note]})
