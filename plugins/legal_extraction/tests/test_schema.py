"""Schema names (zh and en), the standard schema, and the errors for what is not supported."""

from __future__ import annotations

import pytest

from sectorflow import ConfigError, InvalidInputError, Taskflow
from sectorflow_legal_extraction.schema import STANDARD_SCHEMA, resolve_schema, supported_names


def test_zh_and_en_names_resolve_to_the_same_fields():
    resolved = resolve_schema(["甲方", "party a", "合同金额", "Contract Amount", "签订日期", "agreement_date"])
    assert [f.key for _, f in resolved] == ["party_a", "party_a", "contract_amount", "contract_amount",
                                             "signing_date", "signing_date"]
    assert [n for n, _ in resolved][1] == "party a"  # results are keyed by the name as written


def test_unknown_names_raise_a_config_error_listing_the_supported_ones():
    with pytest.raises(ConfigError) as err:
        Taskflow("legal_extraction", schema=["甲方", "丁方", "Favourite colour"])
    assert "丁方" in str(err.value) and "Favourite colour" in str(err.value)
    assert "甲方" in str(err.value) and "Governing Law" in str(err.value) and "违约金" in str(err.value)
    assert err.value.details["unknown"] == ["丁方", "Favourite colour"]
    with pytest.raises(ConfigError):
        Taskflow("legal_extraction", schema=[])
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
