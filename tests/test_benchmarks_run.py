"""The benchmark scripts quoted in docs/ still run (tiny sizes; the figures themselves are not checked here).

A benchmark is not a test, but one that no longer starts makes a docs figure unreproducible: a refactor once broke
benchmarks/aml_throughput.py without any test noticing.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core_support import REPO_ROOT

SHARED = REPO_ROOT.parent / "shared" / "data"

SCRIPTS = [
    ("aml_throughput.py", ["--n", "2500", "--n-stream", "300", "--stream-after", "2500"], "tx/s"),
    ("audit_bench.py", ["--calls", "3", "--appends", "20", "--verify-records", "200"], "verif"),
    ("aml_everyday.py", ["--customers", "20", "--days", "30"], "flagged"),
    # one fold, model only (the ablation path with nothing zeroed): its everyday-bank imports once went missing
    ("aml_eval.py", ["--runs", "20K_cycle200", "--ablate", "--everyday", "101"], "precision"),
    ("aml_frozen_gc.py", ["--frozen", "1000", "--calls", "60"], "median"),
    ("aml_busy_accounts.py", ["nomodel", "shop,reactivated", "200"], "flagged"),
    ("aml_report_hub.py", ["us", "1"], "ids_carried"),
    ("aml_state.py", ["--n", "2000", "--stream-after", "500", "--n-stream", "150", "--no-model"],
     "bytes per windowed transaction"),
    ("aml_learning.py", ["--only", "amlgentex", "--only", "baseline", "--max-rows", "30000"], "window-exact"),
    ("aml_model_vs_baseline.py", ["--quick", "--boot", "20"], "ap - model [95%]"),
    ("aml_month_close.py", ["--max-rows", "30000", "--boot", "20"], "ap diff"),
    ("aml_amlsim_ceiling.py", ["--max-rows", "20000"], "oracle"),
    ("aml_equality.py", ["--rev", "HEAD", "--runs", "20K_cycle200", "--n", "400", "--chunk", "150"], "all equal"),
    ("faq_search.py", ["--sizes", "500", "--dims", "16", "--queries", "70", "--repeats", "1"], "ms/query"),
    # a 20-answer cap on a 1 s point: the cap binds, and the point must say so (its clock stops with the last answer)
    ("serve_load.py", ["--clients", "1", "--seconds", "1", "--warmup", "0.2", "--max-requests", "20", "--modes", "off",
                       "--hidden", "64"], "cap bound"),
    ("aml_audit_stream.py", ["--n", "1500", "--stream-after", "1500", "--n-stream", "60", "--block", "30"],
     "disk floor: fdatasync"),
    ("legal_eval.py", ["--split", "train", "--limit", "3"], "effective_date_exact"),
]


@pytest.mark.parametrize(("script", "args", "expected"), SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_benchmark_script_runs_and_prints_its_figures(script, args, expected, tmp_path):
    if script.startswith("aml") and not SHARED.is_dir():
        pytest.skip("needs ../shared/data (AMLSim runs)")
    if script.startswith("legal") and not (SHARED / "cuad" / "master_clauses.csv").is_file():
        pytest.skip("needs ../shared/data/cuad")
    env = {**os.environ, "SECTORFLOW_AUDIT": "off", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / script), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout.lower()
