"""The ``customer_service`` task's options (``Taskflow("customer_service", **options)``, ``sectorflow run -O``):
``{name: one-line help}``. A module of its own so that registering the task imports no encoder (see
:attr:`sectorflow.TaskSpec.pipeline`)."""

from __future__ import annotations

from .escalation import REASONS

OPTIONS = {
    "intent_set": "English intent inventory: 'banking77' (default) or 'clinc150' (150 intents, 10 domains).",
    "intent_examples": "A .jsonl/.csv of {text, label[, lang]}: your own intents by nearest example (both languages).",
    "faq": "Path of the FAQ file (.csv or .jsonl with question, answer[, lang, id]).",
    "faq_top_k": "FAQ answers per message (default 3).",
    "faq_min_score": "Lowest cosine similarity an FAQ answer may have (default per encoder, see docs).",
    "top_k": "Intents listed per message (default 3).",
    "oos_threshold": "Override the calibrated out-of-scope rule with a top intent probability threshold (0..1); "
                     "an intent set calibrated by distance (clinc150) then uses this instead of the distance.",
    "zh_min_similarity": "Override the Chinese out-of-scope threshold (best example similarity, -1..1).",
    "escalation_terms": "Extra escalation phrases: {reason: [phrase, ...]} (reasons: " + ", ".join(REASONS) + ").",
    "hnsw_threshold": "No effect since 1 Dec 2026 (FAQ search is exact at every size); accepted so that "
                      "configurations that set it still load.",
    "english_ensemble": "True (default): English intents from the ensemble of the MiniLM and e5 heads where "
                        "MiniLM is unsure (see ensemble_gate); False: the MiniLM head alone (the out-of-scope rules "
                        "read MiniLM either way).",
    "ensemble_gate": "Run the second encoder (e5) only for English messages whose MiniLM top probability is under "
                     "this (0..1.01; 1.01: every message). Default: the bundle's calibration.json ensemble_gate per "
                     "intent set, decided on validation (scripts/fit_ensemble_gate.py).",
}
