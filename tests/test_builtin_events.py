"""The built-in event logger warns only about failures the caller did not cause."""

from __future__ import annotations

import logging

import pytest
from sectorflow import CallContext, TaskEvent
from sectorflow.builtin import sectorflow_task_event


@pytest.mark.parametrize(("error", "level"), [
    ("ConfigError: Unknown schema name(s) ['x']", logging.DEBUG),
    ("UnsupportedPrecisionError: precision='int8' needs an INT8 bundle", logging.DEBUG),
    ("InvalidInputError: row 1: text: missing or empty: a value is required", logging.DEBUG),
    ("BundleIntegrityError: model.pdiparams: SHA-256 mismatch", logging.WARNING),
    ("RuntimeError: predictor failed", logging.WARNING),
])
def test_failures_warn_unless_the_caller_caused_them(caplog, error, level):
    event = TaskEvent(kind="model_load_failed", task="t", context=CallContext(), error=error)
    with caplog.at_level(logging.DEBUG, logger="sectorflow.events"):
        sectorflow_task_event(event=event)
    assert [(r.levelno, r.getMessage().split()[0]) for r in caplog.records] == [(level, "model_load_failed")]
