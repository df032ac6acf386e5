"""benchmarks/medical_eval.py (the figures of docs/medical-report.md) still runs, on a few reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data"


@pytest.mark.skipif(not (DATA / "iu_xray").is_dir() or not (DATA / "cmeee").is_dir(),
                    reason="needs ../shared/data/iu_xray and ../shared/data/cmeee (evaluation fixtures)")
def test_medical_eval_runs_on_a_few_reports(tmp_path):
    out = tmp_path / "eval.json"
    env = {**os.environ, "SECTORFLOW_AUDIT": "off"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "medical_eval.py"), "--limit", "40",
                           "--json", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["iu_xray"]["n_reports"] == 40 and result["cmeee"]["n_sentences"] == 40
    assert set(result["cmeee"]["per_type"]) == {"bod", "sym", "dis", "pro"}
    assert 0.0 <= result["iu_xray"]["tagger_agreement"] <= 1.0
