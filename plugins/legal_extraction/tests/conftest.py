"""Shared fixtures of the legal_extraction tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "samples" / "legal_extraction"
CUAD = REPO.parent / "shared" / "data" / "cuad"


def _compact(result) -> dict:
    """The checked part of a result: every field's text, offsets, value and relations; absent names; warnings."""

    def one(e):
        out = {"text": e.text, "start": e.start, "end": e.end, "value": e.value}
        if e.relations:
            out["relations"] = {k: [r.value for r in v] for k, v in e.relations.items()}
        return out

    return {"language": result.language, "fields": {k: [one(e) for e in v] for k, v in result.fields.items()},
            "absent": result.absent, "warnings": result.warnings}


@pytest.fixture(scope="session")
def taskflow_factory():
    from sectorflow import Taskflow

    cache: dict = {}

    def make(schema=None):
        key = json.dumps(schema, ensure_ascii=False)
        if key not in cache:
            cache[key] = Taskflow("legal_extraction", schema=schema) if schema else Taskflow("legal_extraction")
        return cache[key]

    return make


@pytest.fixture(scope="session")
def compact():
    """:func:`_compact`, for the tests (conftest is not importable under --import-mode=importlib)."""
    return _compact


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES
