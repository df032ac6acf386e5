"""The span tagger's federated export: a run's global weights become a bundle in the shipped layout that Taskflow
loads; exporting the shipped weights gives the shipped bundle's results, with the federation in the manifest."""

from __future__ import annotations

import json

import pytest

from sectorflow import Taskflow
from sectorflow_medical_report.trainable import export, load_vocab_and_weights, trainable_spec

TEXTS = ["胸部CT示右肺上叶结节，大小约8mm。", "Chest CT: a 6 mm nodule in the left lower lobe. No pleural effusion."]


def test_exported_shipped_weights_serve_like_the_shipped_bundle(tmp_path):
    _, weights = load_vocab_and_weights()
    run = {"run_id": "r1", "rounds": [{"round": 1, "eval_metrics": {"f1": 0.97}}], "institutions": [
        {"institution": "0", "num_examples": 120}]}
    manifest = export([weights[k] for k in sorted(weights)], run, tmp_path / "b")
    written = json.loads(manifest.read_text())
    assert written["format"] == "paddle-inference" and written["provenance"]["federation"]["run_id"] == "r1"
    assert written["metrics"]["validation"] == {"f1": 0.97, "round": 1, "by_institution": []}
    assert written["name"].endswith("-federated")
    assert trainable_spec().export is export
    fed = Taskflow("medical_report", task_path=str(tmp_path / "b"))(TEXTS)
    shipped = Taskflow("medical_report")(TEXTS)
    assert [r.findings for r in fed] == [r.findings for r in shipped] and fed[0].findings


def test_a_missing_or_bad_reports_file_is_named_before_flower_starts(tmp_path):
    from sectorflow import ConfigError
    from sectorflow.federated import parse_config
    from sectorflow.federated.runner import preflight

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "abc", "spans": [[0, 9, "FIND"]]}\n', encoding="utf-8")
    institutions = [{"partition_id": 0, "num_partitions": 2}, {"data": str(tmp_path / "nope.jsonl")}]
    with pytest.raises(ConfigError, match=r"Institution 2 of 2 .* reports file .*nope.jsonl not found"):
        preflight(parse_config({"task": "medical_report", "institutions": institutions}), trainable_spec())
    with pytest.raises(ConfigError, match=r"Institution 1 of 1 .*line 1: expected"):
        preflight(parse_config({"task": "medical_report", "institutions": [{"data": str(bad)}]}), trainable_spec())
