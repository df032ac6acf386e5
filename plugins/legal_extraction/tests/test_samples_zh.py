"""The project-written Chinese contracts under samples/legal_extraction and their expected output."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("name", ["lease_zh", "purchase_zh", "license_zh"])
def test_sample_matches_expected_output(name, taskflow_factory, samples, compact):
    expected = json.loads((samples / f"{name}.expected.json").read_text(encoding="utf-8"))
    text = (samples / f"{name}.txt").read_text(encoding="utf-8")
    result = taskflow_factory(expected["schema"])(text)
    got = compact(result)
    assert got == {k: v for k, v in expected.items() if k != "schema"}
    for found in result.fields.values():
        for e in found:
            assert text[e.start:e.end] == e.text  # offsets point at the text
            assert 0 < e.confidence <= 1


def test_each_party_keeps_its_own_address_and_contacts(taskflow_factory, samples):
    text = (samples / "lease_zh.txt").read_text(encoding="utf-8")
    result = taskflow_factory(["出租方", "承租方"])(text)
    (lessor,), (lessee,) = result.fields["出租方"], result.fields["承租方"]
    assert lessor.relations["address"][0].value == "上海市徐汇区漕溪北路88号18楼"
    assert lessee.relations["address"][0].value == "浙江省杭州市西湖区文三路259号"
    assert "email" not in lessor.relations and lessee.relations["email"][0].value == "chenjing@qinghe.example.cn"
    assert "id_number" not in lessee.relations  # only the lessor's block has a credit code


def test_disagreeing_amount_is_a_warning(taskflow_factory, samples):
    text = (samples / "license_zh.txt").read_text(encoding="utf-8")
    result = taskflow_factory(["合同金额"])(text)
    (amount,) = result.fields["合同金额"]
    assert amount.value["amount"] is None and amount.value["words"] == "300000.00"
    assert amount.value["figures"] == "350000.00" and len(result.warnings) == 1


@pytest.mark.parametrize("text, span", [
    ("第二条 合同总金额为人民币壹佰万元整（¥1,000,000.00）。", "人民币壹佰万元整（¥1,000,000.00）"),
    ("第二条 合同总价款：¥1,000,000.00（人民币壹佰万元整），分两期支付。", "¥1,000,000.00（人民币壹佰万元整）"),
    ("第二条 合同总金额为人民币（大写）壹佰万元整 (¥1,000,000.00) 。", "人民币（大写）壹佰万元整 (¥1,000,000.00)"),
    ("第二条 合同总金额为人民币壹佰万元整。", "人民币壹佰万元整"),
])
def test_amount_span_keeps_its_brackets_balanced(taskflow_factory, text, span):
    (amount,) = taskflow_factory(["合同金额"])(text).fields["合同金额"]
    assert amount.text == span and text[amount.start:amount.end] == span
    assert amount.value["amount"] == "1000000.00" and amount.value.get("words_and_figures_agree", True)
