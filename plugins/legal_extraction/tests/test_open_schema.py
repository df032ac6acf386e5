"""Open schema: any field name, typed from its name or as declared, found by label and value or by the most
similar clause; absent (never invented) when the contract does not hold it; and the open-field benchmark's data."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from sectorflow_legal_extraction import open_fields
from sectorflow_legal_extraction.schema import resolve_schema

REPO = Path(__file__).resolve().parents[3]
LEASE = ("房屋租赁合同\n出租方（甲方）：上海明远置业有限公司\n开户银行：中国建设银行上海漕河泾支行\n\n"
         "承租方（乙方）：李华\n\n第三条 租金及押金\n月租金：人民币陆仟伍佰元整（¥6,500.00），按季支付。\n"
         "乙方应于签约当日交付押金，押金为三个月租金，期满无息退还。\n第四条 其他\n免租期为十五日。")


def _one(tf, text, name):
    found = tf(text).fields[name]
    return found[0].value if found else None


def test_rent_and_deposit_of_the_shipped_lease_sample(taskflow_factory, samples):
    tf = taskflow_factory(["租金", "押金", "Security Deposit"])
    result = tf((samples / "lease_zh.txt").read_text(encoding="utf-8"))
    (rent,) = result.fields["租金"]
    assert rent.value["amount"] == "45000.00" and rent.value["currency"] == "CNY"
    assert rent.value["words_and_figures_agree"] is True
    assert result.absent == ["押金", "Security Deposit"]  # the sample names no deposit: nothing is invented


def test_label_values_tables_and_multiples(taskflow_factory):
    tf = taskflow_factory(["月租金", "押金", "免租期", "开户银行"])
    result = tf(LEASE)
    assert result.fields["月租金"][0].value["amount"] == "6500.00"
    assert result.fields["月租金"][0].source == "rule+similarity:label_value"  # (c): label and the most similar clause
    assert result.fields["押金"][0].value == {"amount": None, "multiple": "3", "of": "租金"}
    assert result.fields["免租期"][0].value == {"iso": "P15D", "business_days": False}
    assert result.fields["开户银行"][0].value == "中国建设银行上海漕河泾支行"
    table = "| 项目 | 金额 |\n| 月租金 | USD 1,200 |\n| 押金 | USD 2,400 |"
    assert _one(tf, table, "押金")["amount"] == "2400.00" and _one(tf, table, "押金")["currency"] == "USD"
    assert _one(tf, table, "月租金")["amount"] == "1200.00"


def test_declared_type_and_aliases(taskflow_factory):
    tf = taskflow_factory({"Rent": {"type": "amount", "aliases": ["Base Rent"]}, "Cure Period": {"type": "duration"}})
    text = ("3. Base Rent. Tenant shall pay Base Rent of $3,150 per month. Tenant shall have a cure period of "
            "ten (10) business days after written notice of any default.")
    result = tf(text)
    assert result.fields["Rent"][0].value["amount"] == "3150.00"
    assert result.fields["Cure Period"][0].value == {"iso": "P10D", "business_days": True}


def test_similar_clause_without_a_label_and_absent_without_the_field(taskflow_factory):
    tf = taskflow_factory(["质保期", "佣金比例", "保证金"])
    text = "卖方对设备提供质保，质保自验收合格之日起计算，为期二十四个月。居间方按成交价的1.5%收取佣金。"
    result = tf(text)
    assert result.fields["质保期"][0].value["iso"] == "P24M"
    assert result.fields["佣金比例"][0].value == {"rate": "0.015", "per": None}
    assert result.fields["佣金比例"][0].source.startswith("similarity:")
    assert result.absent == ["保证金"]
    assert tf("本合同适用中华人民共和国法律。").absent == ["质保期", "佣金比例", "保证金"]


def test_nested_relations_of_an_open_party_field(taskflow_factory):
    tf = taskflow_factory([{"保证人": ["地址", "联系电话"]}])
    text = ("出借人：张某\n借款人：李某\n保证人：广州某某融资担保有限公司\n地址：广州市天河区体育西路1号\n"
            "联系电话：020-88886666\n保证人承担连带责任。")
    (guarantor,) = tf(text).fields["保证人"]
    assert guarantor.value == "广州某某融资担保有限公司"
    assert {k: [r.value for r in v] for k, v in guarantor.relations.items()} == {
        "地址": ["广州市天河区体育西路1号"], "联系电话": ["020-88886666"]}


def test_a_known_field_reads_its_aliases_when_its_rule_finds_nothing(taskflow_factory):
    tf = taskflow_factory({"合同金额": {"aliases": ["项目总投资"]}})
    (amount,) = tf("本项目总投资约1.5亿元，由双方按比例出资。").fields["合同金额"]
    assert amount.value["amount"] == "150000000.00" and amount.value["approximate"] is True


def test_an_encoder_adds_its_similarity(taskflow_factory):
    calls = []

    def encode(texts):  # a stand-in encoder with real vectors: 1 for clauses about a warranty, else 0
        import numpy as np

        calls.append(list(texts))
        rows = np.array([[1.0, 0.0] if ("保修" in t or "warranty" in t.lower()) else [0.0, 1.0] for t in texts],
                        dtype=np.float32)
        return rows

    from sectorflow import Taskflow

    tf = Taskflow("legal_extraction", schema=[{"Warranty Term": {"type": "duration"}}], encoder=encode)
    found = tf("Seller gives a warranty on the goods. It lasts for twelve (12) months.").fields["Warranty Term"]
    assert calls and found == []  # the encoder sees the clauses; the sentence with the months is not about warranty
    found = tf("保修自交付起算，保修时长为十二个月。").fields["Warranty Term"]
    assert found[0].value["iso"] == "P12M" and "encoder" in found[0].source


def test_percentages_and_types():
    assert open_fields.percentage("按日万分之五计收")[2] == {"rate": "0.0005", "per": "day"}
    assert open_fields.percentage("年利率为4.35%")[2] == {"rate": "0.0435", "per": "year"}
    assert open_fields.percentage("5 percent per annum")[2] == {"rate": "0.05", "per": "year"}
    assert open_fields.percentage("百分之二十")[2]["rate"] == "0.2"
    assert open_fields.percentage("三十日") is None
    assert [f.type for _, f, _ in resolve_schema(["滞纳金", "履行地点", "收款账号", "Closing Date", "Notice Period "
                                                  "for Rent Review", "Broker"])] == [
        "amount", "place", "text", "date", "duration", "party"]
    assert resolve_schema(["利息"])[0][1].type == "amount"


def test_the_benchmark_reaches_its_targets():
    spec = importlib.util.spec_from_file_location("legal_open_fields", REPO / "benchmarks" / "legal_open_fields.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = [json.loads(line) for line in bench.DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 40 and {r["id"][:2] for r in rows} == {"zh", "en"}
    report = bench.evaluate(rows)
    hits, total = report["exact"]
    assert hits / total >= 0.85, report["misses"]
    assert report["invented"][0] == 0, report["misses"]
    assert bench.matches({"amount": "1.00", "currency": "CNY", "range": None}, {"amount": "1.00"})
    assert not bench.matches({"amount": "1.00"}, {"amount": "2.00"}) and not bench.matches(None, "x")


@pytest.mark.parametrize("schema", [{"租金": {"type": "amount", "alias": ["x"]}}, {"租金": {"aliases": "月租金"}},
                                    [{"租金": {"type": None, "aliases": [""]}}]])
def test_bad_field_options_are_config_errors(schema):
    from sectorflow import ConfigError

    with pytest.raises(ConfigError, match="options"):
        resolve_schema(schema)
