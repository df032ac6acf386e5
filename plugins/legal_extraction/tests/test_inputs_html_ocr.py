"""HTML and OCR-damaged contracts (project-written text): what is found, and offsets that point into the input."""

from __future__ import annotations

from sectorflow_legal_extraction import rules_zh
from sectorflow_legal_extraction.markup import html_text

HTML_ZH = """<html><body><h1>房屋租赁合同</h1>
  <p>出租方（甲方）：上海明远置业有限公司</p>
  <p>地址：上海市徐汇区漕溪北路88号</p>
  <table><tr><td>承租方（乙方）：</td><td>李华</td></tr></table>
  <p>合同总金额为人民币（大写）壹拾贰万元整（&yen;120,000.00）。</p>
</body></html>"""

HTML_EN = ("<p>This Agreement is made as of March 1, 2023 by and between Acme Corp., a Delaware corporation "
           "(&quot;Company&quot;), and Beta&nbsp;LLC (&quot;Consultant&quot;).</p><p>This Agreement shall be governed "
           "by the laws of the State of New York.</p>")


def test_html_contract_is_read_and_offsets_point_into_the_html(taskflow_factory):
    result = taskflow_factory(["甲方", "乙方", "合同金额"])(HTML_ZH)
    (a,), (b,), (amount,) = result.fields["甲方"], result.fields["乙方"], result.fields["合同金额"]
    assert a.value["name"] == "上海明远置业有限公司" and [r.value for r in a.relations["address"]] == ["上海市徐汇区漕溪北路88号"]
    assert b.value["name"] == "李华" and "address" not in b.relations  # 甲方's address is not 乙方's
    assert amount.value["amount"] == "120000.00" and amount.value["words_and_figures_agree"]
    assert amount.text == "人民币（大写）壹拾贰万元整（&yen;120,000.00）"  # the HTML as given, entity included
    for e in (a, b, amount, *a.relations["address"]):
        assert HTML_ZH[e.start:e.end] == e.text
    assert any("read as HTML" in w for w in result.warnings)


def test_html_entities_in_english(taskflow_factory):
    result = taskflow_factory(["Parties", "Governing Law"])(HTML_EN)
    assert [(p.value["name"], p.value["role"]) for p in result.fields["Parties"]] == [
        ("Acme Corp.", "Company"), ("Beta LLC", "Consultant")]
    beta = result.fields["Parties"][1]
    assert beta.text == "Beta&nbsp;LLC" and HTML_EN[beta.start:beta.end] == beta.text
    assert result.fields["Governing Law"][0].value == "New York"


def test_plain_text_is_not_read_as_html(taskflow_factory):
    result = taskflow_factory(["甲方"])("甲方：A公司（注：x<y）\n")
    assert result.fields["甲方"][0].value["name"] == "A公司（注：x<y）" and not result.warnings


def test_html_text_keeps_paragraphs_as_single_lines():
    plain, starts, ends = html_text("<div>\n  <p>甲方：A公司</p>\n  <p>地址：上海</p>\n</div>")
    assert plain == "甲方：A公司\n地址：上海\n"
    assert len(plain) == len(starts) == len(ends)


def test_ocr_spaces_inside_attribute_labels():
    text = "出租方(甲方) : 上海明远置业有限公司\n地 址: 上海市徐汇区漕溪北路88号\n联 系 人：王明\n\n承租方：李华\n"
    (a, b) = rules_zh.parties(text)
    assert {k: [r.value for r in v] for k, v in a.relations.items()} == {"address": ["上海市徐汇区漕溪北路88号"],
                                                                        "contact": ["王明"]}
    assert b.relations == {}
