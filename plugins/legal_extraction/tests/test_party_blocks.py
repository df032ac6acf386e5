"""A party's address or contact line after a blank line inside its own block (before the next party line or the
body) belongs to that party, and never to another one. Every contract here is project-written."""

from __future__ import annotations

import re

from sectorflow_legal_extraction import rules_en, rules_zh
from sectorflow_legal_extraction.text import party_block_end


def _relations(parties) -> dict[str, dict[str, list[str]]]:
    return {p.value["name"]: {k: [r.value for r in v] for k, v in p.relations.items()} for p in parties}


LEASE_ZH = """房屋租赁合同

出租方（甲方）：上海明远置业有限公司

地址：上海市徐汇区漕溪北路88号
联系人：王明

承租方（乙方）：李华


  地址：上海市闵行区莘庄镇1号

电话：13800000000

第一条 租赁房屋
地址：上海市静安区南京西路1号
"""


def test_chinese_address_after_a_blank_line_stays_with_its_party():
    found = rules_zh.parties(LEASE_ZH)
    assert _relations(found) == {
        "上海明远置业有限公司": {"address": ["上海市徐汇区漕溪北路88号"], "contact": ["王明"]},
        "李华": {"address": ["上海市闵行区莘庄镇1号"], "phone": ["13800000000"]},  # not the leased flat's 地址 in 第一条
    }
    for party in found:
        for rel in party.relations["address"]:
            assert LEASE_ZH[rel.start:rel.end] == rel.text


def test_chinese_blank_line_before_the_next_party_line_does_not_carry_its_address_back():
    text = "甲方：A科技有限公司\n\n乙方：B贸易有限公司\n\n地址：上海市浦东新区2号\n联系人：赵六\n"
    assert _relations(rules_zh.parties(text)) == {
        "A科技有限公司": {}, "B贸易有限公司": {"address": ["上海市浦东新区2号"], "contact": ["赵六"]}}


def test_chinese_body_after_the_blank_line_ends_the_block():
    text = "甲方：A科技有限公司\n乙方：B贸易有限公司\n\n鉴于甲方拟采购设备，双方协商一致。\n地址：北京市海淀区1号\n"
    assert _relations(rules_zh.parties(text)) == {"A科技有限公司": {}, "B贸易有限公司": {}}


def test_chinese_relations_asked_in_the_schema(taskflow_factory):
    result = taskflow_factory([{"甲方": ["地址", "联系人"]}, {"乙方": ["地址"]}])(LEASE_ZH)
    (a,), (b,) = result.fields["甲方"], result.fields["乙方"]
    assert [r.value for r in a.relations["地址"]] == ["上海市徐汇区漕溪北路88号"]
    assert [r.value for r in a.relations["联系人"]] == ["王明"]
    assert [r.value for r in b.relations["地址"]] == ["上海市闵行区莘庄镇1号"]


LEASE_EN = """LEASE AGREEMENT

Landlord: Greenfield Properties Ltd.

Address: 12 King Street, London EC2V 8AU
Contact: Peter Brown

Tenant: Harbor Coffee Company

Address: 88 Queen Street, London EC4N 1SP

Email: ops@harborcoffee.example.com

1. PREMISES
Address: 5 Station Road, Leeds LS1 4DY
"""


def test_english_address_after_a_blank_line_stays_with_its_party():
    found = rules_en.parties(LEASE_EN)
    assert _relations(found) == {
        "Greenfield Properties Ltd.": {"address": ["12 King Street, London EC2V 8AU"], "contact": ["Peter Brown"]},
        "Harbor Coffee Company": {"address": ["88 Queen Street, London EC4N 1SP"],
                                  "email": ["ops@harborcoffee.example.com"]},  # not the premises' address in 1.
    }
    for party in found:
        for rel in party.relations["address"]:
            assert LEASE_EN[rel.start:rel.end] == rel.text


def test_english_party_a_lines_with_blank_lines_in_their_blocks():
    text = ("SUPPLY AGREEMENT\n\nParty A: Shenzhen Brightway Electronics Co., Ltd.\n\nAddress: No. 8 Keji Road, "
            "Shenzhen\n\nParty B: Nordic Retail AB\n\nContact: Anna Berg\n\n1. PURCHASE PRICE. The total contract "
            "price is USD 250,000.\n")
    assert _relations(rules_en.parties(text)) == {
        "Shenzhen Brightway Electronics Co., Ltd.": {"address": ["No. 8 Keji Road, Shenzhen"]},
        "Nordic Retail AB": {"contact": ["Anna Berg"]},  # Party A's address is not copied to Party B
    }


def test_party_block_end_offsets():
    label = re.compile(r"[ \t]*Address[ \t]*:")
    text = "Tenant: X\n\nAddress: 1 Road\n\nBody text.\nAddress: 2 Road\n"
    start = text.index("X") + 1
    assert text[start:party_block_end(text, start, len(text), label)] == "\n\nAddress: 1 Road"
    assert party_block_end(text, start, text.index("Address: 1"), label) == text.index("\n\nAddress: 1")
    tight = "Tenant: X\nAddress: 1 Road"  # no blank line: the whole text up to the limit, as before
    assert tight[start:party_block_end(tight, start, len(tight), label)] == "\nAddress: 1 Road"
