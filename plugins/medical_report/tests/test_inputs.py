"""How users hand text in: a bare string, blank or over-long text (typed errors), plain-text files for the CLI,
and concurrent calls on one Taskflow (same results as serial calls)."""

from __future__ import annotations

import concurrent.futures as cf
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sectorflow import InvalidInputError, Taskflow
from sectorflow_medical_report.readers import read_lines, read_txt


@pytest.fixture(scope="module")
def tf():
    return Taskflow("medical_report", use_model=False)


def test_a_bare_string_is_the_report_text(tf):
    rep = tf("胸片显示右肺结节，直径约8mm")
    assert rep.findings[0].size.mm == 8.0 and rep.recommendations[0].text == "建议行胸部CT进一步检查。"
    a, b = tf(["8 mm nodule.", {"text": "No pneumothorax."}])
    assert a.findings[0].assertion == "present" and b.findings[0].assertion == "absent"


@pytest.mark.parametrize("bad", ["", "   ", "\n\t ", "x" * 20001, 5, {"txt": "nodule"}])
def test_blank_long_or_wrong_input_is_a_typed_error(tf, bad):
    with pytest.raises(InvalidInputError) as err:
        tf(bad)
    assert err.value.details and err.value.details[0]["row"] == 1


def test_long_report_within_the_limit_runs(tf):
    text = "No pneumothorax. " * 1000 + "8 mm nodule in the right upper lobe."
    rep = tf({"text": text, "modality": "CT"})
    assert len(rep.findings) == 1001 and rep.findings[-1].assertion == "present"
    assert [r.category for r in rep.recommendations][:1] == ["solid single 6-8 mm"]


def test_txt_and_lines_readers(tmp_path: Path):
    one = tmp_path / "report.txt"
    one.write_text("There is an 8 mm nodule in the left lower lobe.\nNo pleural effusion.\n", encoding="utf-8")
    assert list(read_txt(one)) == [(1, {"text": one.read_text(encoding="utf-8")})]
    many = tmp_path / "reports.txt.gz"
    with gzip.open(many, "wt", encoding="utf-8") as fh:
        fh.write("右肺结节，约8mm。\n\nNo effusion.\r\n")
    assert list(read_lines(many)) == [(1, {"text": "右肺结节，约8mm。"}), (3, {"text": "No effusion."})]
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    ((row, problem),) = read_txt(empty)
    assert row == 1 and isinstance(problem, InvalidInputError)


def test_cli_runs_a_plain_text_report(tmp_path: Path):
    src = tmp_path / "report.txt"
    src.write_text("CT chest: 7 mm solid nodule in the right upper lobe.\nNo pneumothorax.\n", encoding="utf-8")
    exe = Path(sys.executable).with_name("sectorflow")
    cmd = [str(exe), "run", "medical_report", str(src), "--format", "txt", "-O", "use_model=false"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env={**os.environ, "SECTORFLOW_AUDIT": "off"}, timeout=120)
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.strip().splitlines()
    assert '"category":"solid single 6-8 mm"' in line and '"type":"pneumothorax"' in line


def test_concurrent_calls_give_the_serial_results():
    tf = Taskflow("medical_report")
    texts = ["There is an 8 mm nodule in the left lower lobe. No pleural effusion.",
             "右肺上叶结节，约0.8cm，但未见胸腔积液。", "No pneumothorax. 6 mm ground-glass nodule.",
             "双肺多发结节，最大者约7mm。"] * 4
    serial = [tf({"text": t, "modality": "CT"}).model_dump(exclude={"meta"}) for t in texts]
    with cf.ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda t: tf({"text": t, "modality": "CT"}).model_dump(exclude={"meta"}), texts))
    assert parallel == serial
