"""Schema names (zh and en), the standard schema, and the errors for what is not supported."""

from __future__ import annotations

import pytest

from sectorflow import ConfigError, InvalidInputError, Taskflow
from sectorflow_legal_extraction.schema import STANDARD_SCHEMA, resolve_schema, supported_names


def test_zh_and_en_names_resolve_to_the_same_fields():
    resolved = resolve_schema(["甲方", "party a", "合同金额", "Contract Amount", "签订日期", "agreement_date"])
    assert [f.key for _, f, _ in resolved] == ["party_a", "party_a", "contract_amount", "contract_amount",
                                             "signing_date", "signing_date"]
    assert [n for n, _, _ in resolved][1] == "party a"  # results are keyed by the name as written


def test_uie_style_relations(taskflow_factory):
    tf = taskflow_factory([{"甲方": ["地址", "联系人", "邮箱"]}, "乙方"])
    result = tf("甲方：上海明远置业有限公司\n地址：上海市徐汇区漕溪北路88号\n联系人：王明\n\n乙方：李华\n邮箱：li@example.cn\n")
    (a,), (b,) = result.fields["甲方"], result.fields["乙方"]
    assert {k: [r.value for r in v] for k, v in a.relations.items()} == {
        "地址": ["上海市徐汇区漕溪北路88号"], "联系人": ["王明"], "邮箱": []}  # 乙方's e-mail is not 甲方's
    assert b.relations["email"][0].value == "li@example.cn"
    with pytest.raises(ConfigError, match="party fields only"):
        Taskflow("legal_extraction", schema=[{"合同金额": ["地址"]}])
    # a relation the party rules do not know is read as a "<name>：<value>" line of the party's own block
    tf = taskflow_factory([{"甲方": ["开户名称", "血型"]}])
    (a,) = tf("甲方：上海明远置业有限公司\n开户名称：上海明远置业有限公司徐汇分部\n\n乙方：李华\n血型：A\n").fields["甲方"]
    assert {k: [r.value for r in v] for k, v in a.relations.items()} == {
        "开户名称": ["上海明远置业有限公司徐汇分部"], "血型": []}  # 乙方's line is not 甲方's


def test_names_the_rules_do_not_know_are_open_fields():
    resolved = resolve_schema(["甲方", "丁方", "Favourite colour", "租金", "Penalty Rate", "保修期", "交付日期"])
    assert [(f.open, f.type) for _, f, _ in resolved] == [
        (False, "text"), (True, "party"), (True, "text"), (True, "amount"), (True, "percentage"),
        (True, "duration"), (True, "date")]
    (_, rent, _), = resolve_schema({"租金": {"type": "amount", "aliases": ["月租金"]}})
    assert rent.names == ("租金", "月租金") and rent.key == "open:租金"
    with pytest.raises(ConfigError, match="type"):
        resolve_schema({"租金": {"type": "money"}})
    with pytest.raises(ConfigError, match="known field of type 'date'"):
        resolve_schema({"签订日期": {"type": "amount"}})
    with pytest.raises(ConfigError, match="party fields only"):
        resolve_schema([{"租金": ["地址"]}])
    with pytest.raises(ConfigError):
        Taskflow("legal_extraction", schema=[])
    with pytest.raises(ConfigError):
        Taskflow("legal_extraction", schema=["  "])
    with pytest.raises(ConfigError):
        Taskflow("legal_extraction", language="fr")


def test_standard_schema_and_bad_input(taskflow_factory):
    tf = taskflow_factory()
    result = tf("甲方：上海明远置业有限公司\n乙方：李华\n本合同适用中华人民共和国法律。")
    assert list(result.fields) == list(STANDARD_SCHEMA)
    assert set(result.absent) == set(STANDARD_SCHEMA) - {"Parties", "Governing Law"}
    assert all(result.fields[name] == [] for name in result.absent)  # absent, not guessed
    assert len(supported_names()) > 40
    with pytest.raises(InvalidInputError):
        tf({"text": ""})
    with pytest.raises(InvalidInputError):
        tf({"text": "x", "language": "fr"})


@pytest.mark.parametrize("relations", [3, b"address", {"地址": 1}, 2.5])
def test_relations_that_are_no_names_are_a_config_error(relations):
    # {'甲方': 3} crashed the model load with "TypeError: 'int' object is not iterable" (core fresh-user check)
    with pytest.raises(ConfigError, match=r"give the relations as a name or a list of names") as caught:
        resolve_schema([{"甲方": relations}])
    assert "地址" in caught.value.details["supported_relations"]
    assert [(n, f.key, r) for n, f, r in resolve_schema([{"甲方": "地址"}])][0][2] == {"地址": "address"}
