"""How contracts come in: a text file through the CLI, strict items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sectorflow import InvalidInputError, Taskflow

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "legal_extraction" / "lease_zh.txt"


def test_a_contract_text_file_runs_from_the_cli_without_a_format(tmp_path):
    exe = Path(sys.executable).with_name("sectorflow")
    out = subprocess.run([str(exe), "run", "legal_extraction", str(SAMPLE), "-O", 'schema=["甲方", "合同金额"]'],
                         capture_output=True, text=True, env={**os.environ, "SECTORFLOW_AUDIT": "off"}, timeout=300)
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.strip().splitlines()
    fields = json.loads(line)["fields"]
    assert fields["甲方"][0]["value"]["name"] == "上海明远置业有限公司"
    assert fields["合同金额"][0]["value"]["amount"] == "1080000.00"


@pytest.mark.parametrize(("item", "fragment"), [
    ({"text": "甲方：张三", "schema": ["甲方"]}, "Extra inputs are not permitted"),
    ("   \n ", "only white space"),
])
def test_unknown_keys_and_blank_text_are_refused(item, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        Taskflow("legal_extraction")(item)


def test_html_file_and_comma_separated_schema_from_the_cli(tmp_path):
    page = tmp_path / "contract.html"
    page.write_text("<p>出租方（甲方）：上海明远置业有限公司</p><p>地址：上海市徐汇区漕溪北路88号</p>"
                    "<p>承租方（乙方）：李华</p>", encoding="utf-8")
    exe = Path(sys.executable).with_name("sectorflow")
    out = subprocess.run([str(exe), "run", "legal_extraction", str(page), "-O", "schema=甲方,乙方"],
                         capture_output=True, text=True, env={**os.environ, "SECTORFLOW_AUDIT": "off"}, timeout=300)
    assert out.returncode == 0, out.stderr
    fields = json.loads(out.stdout.strip().splitlines()[0])["fields"]
    assert [p["value"]["name"] for p in fields["甲方"]] == ["上海明远置业有限公司"]
    assert [p["value"]["name"] for p in fields["乙方"]] == ["李华"]
    assert fields["甲方"][0]["relations"]["address"][0]["value"] == "上海市徐汇区漕溪北路88号"
