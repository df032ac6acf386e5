"""Every monetary amount of a contract, wherever it stands (the result's ``amounts``), and party lines that PDF
text extraction runs together."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_zh
from sectorflow_legal_extraction.amounts import find_amounts


def _values(text):
    return [(a.text, a.value["amount"], a.value["currency"], a.value["approximate"], a.value["bound"],
             a.value["range"]) for a in find_amounts(text)]


@pytest.mark.parametrize("text, expected", [
    ("项目总投资约1.5亿元。", [("1.5亿元", "150000000.00", "CNY", True, None, None)]),
    ("服务费为3.2万美元。", [("3.2万美元", "32000.00", "USD", False, None, None)]),
    ("价款为１２３，４５６．７８元", [("１２３，４５６．７８元", "123456.78", "CNY", False, None, None)]),
    ("预算为5万至8万元", [("5万至8万元", "50000.00", "CNY", False, None, {"low": "50000.00", "high": "80000.00"})]),
    ("报价人民币5-8万元左右", [("人民币5-8万元", "50000.00", "CNY", True, None,
                          {"low": "50000.00", "high": "80000.00"})]),
    ("fees of USD 10,000 to USD 20,000", [("USD 10,000 to USD 20,000", "10000.00", "USD", False, None,
                                           {"low": "10000.00", "high": "20000.00"})]),
    ("approximately $2.5 million", [("$2.5 million", "2500000.00", "USD", True, None, None)]),
    ("赔偿总额不超过人民币50万元", [("人民币50万元", "500000.00", "CNY", False, "max", None)]),
    ("not less than $2,000,000 per occurrence", [("$2,000,000", "2000000.00", "USD", False, "min", None)]),
    ("面积10万平方米，共100,000股，期限2023-2024年", []),  # no money
])
def test_amounts_are_found_and_normalised_wherever_they_stand(text, expected):
    assert _values(text) == expected


def test_words_and_figures_side_by_side_are_one_amount():
    (one,) = find_amounts("合同总金额为人民币（大写）壹拾贰万元整（¥120,000.00）。")
    assert one.text == "人民币（大写）壹拾贰万元整（¥120,000.00）"
    assert one.value["amount"] == "120000.00" and one.value["words_and_figures_agree"] is True
    (bad,) = find_amounts("价款人民币叁拾万元整（¥350,000.00）")
    assert bad.value["amount"] is None and bad.value["words"] == "300000.00" and bad.warnings


def test_the_result_lists_every_amount_and_the_price_keeps_its_rule(taskflow_factory):
    tf = taskflow_factory()
    text = "本项目总投资约1.5亿元。合同总价为人民币800万元，其中预付款为合同总价的30%即人民币240万元。"
    result = tf({"text": text, "language": "zh"})
    assert [(a.value["amount"], a.value["approximate"]) for a in result.amounts] == [
        ("150000000.00", True), ("8000000.00", False), ("2400000.00", False)]
    assert all(text[a.start:a.end] == a.text for a in result.amounts)
    assert result.fields["Contract Amount"][0].value["amount"] == "8000000.00"


@pytest.mark.parametrize("text", [
    "甲方：北京某某科技有限公司。乙方：上海某某贸易有限公司。本合同由双方协商一致签订。",
    "甲方：北京某某科技有限公司 乙方：上海某某贸易有限公司 第一条 合同标的",
    "甲方：北京某某科技有限公司，乙方：上海某某贸易有限公司，双方经协商一致，订立本合同。",
])
def test_party_lines_run_together_are_split_at_their_labels(text):
    found = rules_zh.parties(text)
    assert [(p.value["name"], p.value["role"]) for p in found] == [
        ("北京某某科技有限公司", "party_a"), ("上海某某贸易有限公司", "party_b")]
    assert all(text[p.start:p.end] == p.text for p in found)


def test_a_long_one_line_contract_keeps_its_parties_and_attributes():
    text = ("甲方：北京某某科技有限公司。地址：北京市海淀区中关村大街1号。乙方：上海某某贸易有限公司。联系人：张三。"
            + "本合同由双方协商一致签订，乙方应按约定履行义务。" * 900 + "本合同适用中华人民共和国法律。")
    assert len(text) > 20_000 and "\n" not in text
    found = rules_zh.parties(text)
    assert [p.value["name"] for p in found] == ["北京某某科技有限公司", "上海某某贸易有限公司"]
    assert found[0].relations["address"][0].value == "北京市海淀区中关村大街1号"
    assert found[1].relations["contact"][0].value == "张三"


def test_the_long_contract_benchmark_runs_and_finds_every_field(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "legal_long_contract.py"
    spec = importlib.util.spec_from_file_location("legal_long_contract", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = bench.build("zh", 30_000)
    assert abs(len(text) - 30_000) <= len(bench.ZH_BODY) and "\n" not in text  # one line, as from a PDF
    assert bench.main(["--sizes", "30000", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("absent []") == 2 and "'押金': '2'" in out and "'Governing Law': 'New York'" in out
