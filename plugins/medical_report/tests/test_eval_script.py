"""benchmarks/medical_eval.py (the figures of docs/benchmarks/medical.md) still runs, on a few reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data"


@pytest.mark.skipif(not (DATA / "iu_xray").is_dir() or not (DATA / "cmeee").is_dir(),
                    reason="needs ../shared/data/iu_xray and ../shared/data/cmeee (evaluation fixtures)")
def test_medical_eval_runs_on_a_few_reports(tmp_path):
    out = tmp_path / "eval.json"
    env = {**os.environ, "SECTORFLOW_AUDIT": "off"}
    # --part dev: the suite never feeds the held-out test part's reports through the plugin
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "medical_eval.py"), "--limit", "40",
                           "--part", "dev", "--json", str(out), "--errors", str(tmp_path / "dev_errors.jsonl")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["iu_xray"]["n_reports"] == 40 and result["cmeee"]["n_sentences"] == 40
    assert set(result["cmeee"]["per_type"]) == {"bod", "sym", "dis", "pro"}
    assert 0.0 <= result["iu_xray"]["tagger_agreement"] <= 1.0
    parts = result["iu_xray"]
    assert (parts["dev"]["n_reports"], parts["test"]["n_reports"], parts["all"]["n_reports"]) == (40, 0, 40)
    for name in ("nodule", "sizes"):  # the development part is all that was scored
        assert all(parts["dev"][name][k] == parts["all"][name][k] for k in ("tp", "fp", "fn"))
        assert not any(parts["test"][name][k] for k in ("tp", "fp", "fn"))
    errors = [json.loads(line) for line in (tmp_path / "dev_errors.jsonl").read_text(encoding="utf-8").splitlines()]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from medical_eval import part_of

    assert all(part_of(e["uid"]) == "dev" for e in errors)  # test-part errors are never written


def test_the_split_is_fixed_and_about_one_third():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from medical_eval import SPLIT_SALT, part_of

    assert SPLIT_SALT == "sectorflow-iu-xray-dev-v1"
    parts = [part_of(str(uid)) for uid in range(1, 3001)]
    assert 0.30 < parts.count("dev") / len(parts) < 0.37
    # pinned: a changed salt or rule would move reports between the parts
    assert [part_of(str(u)) for u in range(1, 9)] == ["dev", "dev", "test", "test", "test", "test", "test", "test"]


def test_findings_and_impression_are_joined_as_two_sections():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from medical_eval import report_text
    from sectorflow_medical_report.extract import extract

    text = report_text({"findings": "Heart size is normal. There is no effusion", "impression": "Right apical nodule."})
    assert text == "Heart size is normal. There is no effusion\nRight apical nodule."
    assert [(f.type, f.assertion) for f in extract(text).findings] == [("effusion", "absent"), ("nodule", "present")]
    assert report_text({"findings": "", "impression": "No acute disease."}) == "No acute disease."
    assert report_text({"findings": "", "impression": ""}) == "(empty)"


def test_the_development_only_run_drops_test_part_rows_as_it_reads(tmp_path, monkeypatch):
    # medical_eval.iu(only="dev") (`--part dev`, scripts/eval_dev.py): test-part rows never reach the plugin
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import medical_eval

    iu_dir = tmp_path / "iu_xray"
    iu_dir.mkdir()
    (iu_dir / "indiana_reports.csv").write_text(
        "uid,findings,impression,Problems\n" + "".join(f"{u},Heart size is normal {u}.,No nodule.,normal\n"
                                                       for u in range(1, 9)), encoding="utf-8")
    monkeypatch.setattr(medical_eval, "DATA", tmp_path)
    monkeypatch.setattr(medical_eval, "GOLD", tmp_path / "gold.json")
    (tmp_path / "gold.json").write_text('{"mentions": {}}', encoding="utf-8")
    seen: list[str] = []

    def tf(items):
        seen.extend(item["text"] for item in items)
        return [types.SimpleNamespace(findings=[]) for _ in items]

    result = medical_eval.iu(tf, None, [], only="dev")
    # the pinned split above: uids 1 and 2 are dev, 3-8 test
    assert seen == ["Heart size is normal 1.\nNo nodule.", "Heart size is normal 2.\nNo nodule."]
    assert (result["dev"]["n_reports"], result["test"]["n_reports"], result["all"]["n_reports"]) == (2, 0, 2)
    assert "test part" not in medical_eval.markdown({"iu_xray": result, "cmeee": {"per_type": {},
        "micro_over_plugin_types": medical_eval.prf(0, 0, 0), "over_all_gold_types": medical_eval.prf(0, 0, 0)}})
    with pytest.raises(ValueError, match="only='test'"):
        medical_eval.iu(tf, None, None, only="test")
