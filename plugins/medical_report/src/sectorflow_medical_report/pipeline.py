"""The ``medical_report`` pipeline: rules extract, the Paddle tagger proposes spans, the report is assembled.

How model spans and rule spans combine (the rules stay authoritative):

- A finding exists only when the rule lexicon names it; its assertion comes only from the ConText rules and its
  recommendations only from the guideline engine. The tagger can neither add, remove nor negate a finding.
- ``finding.model_agrees`` says whether a tagger FIND span overlaps the rule finding (a disagreement is a review
  hint, not a change).
- A tagger FIND span that overlaps no rule finding is returned in ``model_spans`` (``finding_id`` none) with an
  ``unrecognised_span`` warning: a term the lexicon may lack, for a person to look at.
- A tagger ANAT span that overlaps no rule anatomy (nor an exam word: 胸部 of "胸部CT") is added as the anatomy of a
  finding in the same clause that has none from the text (``source="model"``); it never changes laterality set by
  the rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sectorflow import ConfigError, Pipeline

from . import tagger
from .extract import Extraction, extract
from .report import build_report
from .schema import Anatomy, MedicalReport, ModelSpan, ReportInput
from .text import clauses, span_index
from .options import OPTIONS  # noqa: F401 - re-exported: the options are documented beside the pipeline



class MedicalReportPipeline(Pipeline[ReportInput, MedicalReport]):
    """preprocess: rule extraction + character windows; forward: the tagger predictor; postprocess: the report."""

    def load(self) -> None:
        use = self.options.get("use_model", True)
        if not isinstance(use, bool):
            raise ConfigError(f"use_model must be true or false, not {use!r}")
        self.use_model = use and self.bundle is not None
        if self.use_model:
            vocab = self.bundle.read_json("vocab.json")  # type: ignore[union-attr]
            self.index = {c: i for i, c in enumerate(vocab)}
            self.pool = self.predictor_pool()

    def preprocess(self, items: Sequence[ReportInput]) -> list[Any]:
        out = []
        for item in items:
            ex = extract(item.text)
            wins = [(off, tagger.encode(piece, self.index)) for off, piece in tagger.windows(item.text)] \
                if self.use_model else []
            out.append((ex, wins))
        return out

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        flat = [(k, off, ids) for k, (_, wins) in enumerate(batch) for off, ids in wins]
        spans: list[list[tuple[int, int, str]]] = [[] for _ in batch]
        if not flat:
            return [(ex, s) for (ex, _), s in zip(batch, spans)]
        width = max(len(ids) for _, _, ids in flat)
        chars = np.zeros((len(flat), width), dtype=np.int64)
        for row, (_, _, ids) in enumerate(flat):
            chars[row, :len(ids)] = ids
        lengths = np.asarray([len(ids) for _, _, ids in flat], dtype=np.int64)
        (probs,) = self.pool.run({"chars": chars, "lengths": lengths})
        tags = probs.argmax(-1)
        for row, (k, off, ids) in enumerate(flat):
            spans[k].extend(tagger.decode(tags[row, :len(ids)], offset=off))
        return [(ex, s) for (ex, _), s in zip(batch, spans)]

    def postprocess(self, items: Sequence[ReportInput], raw: Sequence[Any]) -> list[MedicalReport]:
        results = []
        for item, (ex, spans) in zip(items, raw):
            model_spans = combine(item.text, ex, spans) if self.use_model else None
            results.append(build_report(item, ex, model_spans))
        return results


def combine(text: str, ex: Extraction, spans: list[tuple[int, int, str]]) -> list[ModelSpan]:
    """Merge tagger spans into the rule extraction as the module docstring says; returns the model spans."""
    out = []
    claus = clauses(text)
    spans = [(s, e, label) for s, e, label in spans if _plausible_span(text, s, e)]
    for f in ex.findings:
        f.model_agrees = any(lab == "FIND" and s < f.end and f.start < e for s, e, lab in spans)
    for s, e, label in spans:
        owner = next((f.id for f in ex.findings if s < f.end and f.start < e), None) if label == "FIND" else None
        out.append(ModelSpan(label=label, text=text[s:e], start=s, end=e, finding_id=owner))  # type: ignore[arg-type]
        if label != "ANAT" or any(s < a.end and a.start < e for a in ex.anatomy_mentions if a.start is not None):
            continue
        if any(s < me and ms < e for ms, me in ex.modality_spans):  # 胸部 of "胸部CT": the exam, not a site
            continue
        if any(s < f.end and f.start < e for f in ex.findings):
            continue
        clause = span_index(claus, s)
        for f in ex.findings:
            if span_index(claus, f.start) == clause and not any(a.source == "rules" for a in f.anatomy):
                f.anatomy = [a for a in f.anatomy if a.source != "implied"] + [
                    Anatomy(key="model_span", text=text[s:e], start=s, end=e, source="model")]
                break
    return out


def _plausible_span(text: str, start: int, end: int) -> bool:
    """Whether a tagger span can be shown: not blank, not a de-identification token (``XXXX``), and in Latin script
    whole words of at least two letters (the character tagger can cut words: "cal consolidation", "a" inside
    "heart"; such fragments are dropped, never extended: the rules stay authoritative)."""
    piece = text[start:end].strip()
    if not piece or set(piece.upper()) <= {"X"}:
        return False
    if not any("a" <= ch.lower() <= "z" for ch in piece):
        return True  # Chinese spans: no word boundaries to check
    starts_word = start == 0 or not text[start - 1].isalnum()
    ends_word = end >= len(text) or not text[end].isalnum()
    return starts_word and ends_word and len(piece) >= 2
