"""Chinese rules on clauses a law firm writes (project-written sentences, fresh-user checks)."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_zh
from sectorflow_legal_extraction.text import segments


def _dispute(text):
    return [e.value for e in rules_zh.dispute_resolution(text, segments(text, "zh"))]


@pytest.mark.parametrize("text, value", [
    ("第六条 本合同发生争议的，由甲方所在地人民法院管辖。", {"method": "litigation", "body": "甲方所在地人民法院"}),
    ("因本合同发生的争议，提交北京市朝阳区人民法院诉讼解决。", {"method": "litigation", "body": "北京市朝阳区人民法院"}),
    ("协商不成的，任何一方均可向有管辖权的人民法院起诉。", {"method": "litigation", "body": "有管辖权的人民法院"}),
    ("争议由上海金融法院管辖。", {"method": "litigation", "body": "上海金融法院"}),
    ("协商不成的，任何一方均可依法提起诉讼。", {"method": "litigation", "body": None}),  # no court named: none guessed
    ("争议提交中国（上海）自由贸易试验区仲裁院仲裁。", {"method": "arbitration", "body": "中国（上海）自由贸易试验区仲裁院"}),
    ("凡因本合同引起的争议，均应提交中国国际经济贸易仲裁委员会仲裁。",
     {"method": "arbitration", "body": "中国国际经济贸易仲裁委员会"}),
])
def test_courts_and_arbitration_bodies(text, value):
    assert _dispute(text) == [value]


def test_no_dispute_clause_is_absent():
    assert _dispute("本合同的履行地为甲方所在地。") == []


def test_a_chinese_numbered_heading_is_not_the_clause(taskflow_factory):
    text = ("许可方：北京智源软件有限公司\n\n被许可方：上海星辰网络科技有限公司\n\n四、保密\n"
            "被许可方对许可方提供的技术资料负有保密义务，保密期限为五年。\n（二）转让\n未经许可方书面同意，被许可方不得转让本合同项下的权利义务。\n")
    result = taskflow_factory(["保密", "转让"])(text)
    (secret,), (assign,) = result.fields["保密"], result.fields["转让"]
    assert secret.text == "被许可方对许可方提供的技术资料负有保密义务，保密期限为五年。" and secret.value == {"duration": "P5Y"}
    assert assign.text.startswith("未经许可方书面同意")


def test_loan_amount_and_disagreeing_amount_in_a_clause(taskflow_factory):
    text = ("甲方（出借人）：王建国\n\n乙方（借款人）：李小红\n\n第一条 借款金额：人民币壹佰万元整（¥1,000,000.00）。\n"
            "第二条 许可费总额为人民币叁拾万元整（¥350,000.00），乙方应于本合同生效之日起十五个工作日内支付。\n")
    result = taskflow_factory(["合同金额", "付款方式"])(text)
    (amount,) = result.fields["合同金额"]
    assert amount.text == "人民币壹佰万元整（¥1,000,000.00）" and amount.value["amount"] == "1000000.00"
    (payment,) = result.fields["付款方式"]
    # the clause's amount is not silently the words' reading when words and figures disagree
    assert payment.value["amount"] == {"amount": None, "currency": "CNY", "words_and_figures_agree": False,
                                       "words": "300000.00", "figures": "350000.00"}
    assert payment.warnings and "300000.00" in payment.warnings[0]


def test_full_width_contract(taskflow_factory):
    text = "甲方：ＡＢＣ贸易有限公司\n\n乙方：李华\n\n合同总价款为人民币１２３，４５６．７８元。\n签订日期：２０２３年３月１日\n"
    result = taskflow_factory(["合同金额", "签订日期"])(text)
    (amount,), (date,) = result.fields["合同金额"], result.fields["签订日期"]
    assert amount.text == "人民币１２３，４５６．７８元" and amount.value == {"amount": "123456.78", "currency": "CNY"}
    assert date.text == "２０２３年３月１日" and date.value == "2023-03-01"


@pytest.mark.parametrize("text, parties", [
    ("委托方（以下简称甲方）：广州南粤贸易有限公司\n\n受托方（以下简称“乙方”）：深圳前海律师事务所\n",
     [("广州南粤贸易有限公司", ["client", "party_a"]), ("深圳前海律师事务所", ["agent", "party_b"])]),
    ("出租方（以下称\"乙方\"）：A公司\n", [("A公司", ["lessor", "party_b"])]),
    ("甲方名称：上海明远置业有限公司\n地址：上海市徐汇区\n\n乙方（全称）：李华\n",
     [("上海明远置业有限公司", ["party_a"]), ("李华", ["party_b"])]),
    # 甲方 named again under another label: the first line stands, no second 甲方
    ("委托方（甲方）：A公司\n\n甲方名称：A公司（盖章）\n甲方名称：B公司\n", [("A公司", ["client", "party_a"])]),
])
def test_party_line_forms(text, parties):
    assert [(p.value["name"], p.value["roles"]) for p in rules_zh.parties(text)] == parties


def test_roles_beyond_a_and_b_are_schema_names(taskflow_factory):
    text = "出借人：王建国\n住所：北京市东城区东直门内大街5号\n\n借款人：李小红\n住所：上海市黄浦区南京东路300号\n"
    result = taskflow_factory([{"出借人": ["住所"]}, "Borrower"])(text)
    (lender,), (borrower,) = result.fields["出借人"], result.fields["Borrower"]
    assert lender.value["name"] == "王建国" and [r.value for r in lender.relations["住所"]] == ["北京市东城区东直门内大街5号"]
    assert borrower.value["name"] == "李小红"


def _field(taskflow_factory, name, sentence):
    return [(e.text, e.value) for e in taskflow_factory([name])("甲方：A公司\n乙方：B公司\n\n" + sentence + "\n").fields[name]]


@pytest.mark.parametrize("sentence, value", [
    ("适用法律：中华人民共和国法律。", "People's Republic of China"),       # was "法律：中华人民共和国"
    ("本合同的订立、效力、解释、履行均适用中华人民共和国大陆地区法律（不包括港澳台地区法律）。", "People's Republic of China"),
    ("本合同适用新加坡法律。", "Singapore"),
    ("本合同受香港特别行政区法律管辖。", "Hong Kong"),
])
def test_governing_law_places(taskflow_factory, sentence, value):
    assert [v for _, v in _field(taskflow_factory, "适用法律", sentence)] == [value]


def test_term_with_dates_after_a_colon(taskflow_factory):
    assert _field(taskflow_factory, "租赁期限", "租赁期限：2023年3月1日至2024年2月29日。") == [
        ("租赁期限：2023年3月1日至2024年2月29日。", {"start": "2023-03-01", "end": "2024-02-29"})]


def test_a_deadline_to_sign_something_else_is_not_the_signing_date(taskflow_factory):
    assert _field(taskflow_factory, "签订日期", "甲方应于2023年3月1日前签署验收确认书。") == []
    assert _field(taskflow_factory, "签订日期", "本合同于2023年2月20日在上海签订。") == [("2023年2月20日", "2023-02-20")]


@pytest.mark.parametrize("line", [
    "甲方：A科技有限公司，地址：北京市海淀区1号，联系人：张三，电话：13800000000\n乙方：B贸易有限公司，地址：上海市浦东新区2号\n",
    "甲方：A科技有限公司 地址：北京市海淀区1号 联系人：张三 电话：13800000000\n乙方：B贸易有限公司  地址：上海市浦东新区2号\n",
])
def test_attributes_on_the_party_line_itself(line):
    a, b = rules_zh.parties(line)
    assert a.value["name"] == "A科技有限公司" and line[a.start:a.end] == "A科技有限公司"
    assert {k: [r.value for r in v] for k, v in a.relations.items()} == {
        "address": ["北京市海淀区1号"], "contact": ["张三"], "phone": ["13800000000"]}
    assert b.value["name"] == "B贸易有限公司" and {k: [r.value for r in v] for k, v in b.relations.items()} == {
        "address": ["上海市浦东新区2号"]}
    for rel in (*a.relations["address"], *b.relations["address"]):
        assert line[rel.start:rel.end] == rel.text


@pytest.mark.parametrize("sentence, span", [
    ("合同总价款为人民币350,000.00元（大写：人民币叁拾万元整）。", "人民币350,000.00元（大写：人民币叁拾万元整）"),
    ("合同总价款（大写）：人民币叁拾万元整，（小写）：¥350,000.00。", "人民币叁拾万元整，（小写）：¥350,000.00"),
    ("合同总金额：大写人民币叁拾万元整；小写¥350,000.00。", "人民币叁拾万元整；小写¥350,000.00"),
])
def test_words_and_figures_with_labels_between_them_are_compared(taskflow_factory, sentence, span):
    # each gave 300000.00 or 350000.00 silently: the two forms were more than 3 characters apart
    (amount,) = taskflow_factory(["合同金额"])("甲方：A公司\n乙方：B公司\n\n" + sentence + "\n").fields["合同金额"]
    assert amount.text == span
    assert amount.value == {"amount": None, "currency": "CNY", "words_and_figures_agree": False,
                            "words": "300000.00", "figures": "350000.00"}
    assert amount.warnings


def test_a_second_amount_in_the_sentence_is_not_compared():
    from sectorflow_legal_extraction import normalize as nz

    sentence = "合同总价款为人民币叁拾万元整，其中首付款为¥100,000.00。"
    assert nz.check_consistency(nz.amounts_in(sentence), sentence) == []


@pytest.mark.parametrize("sentence, value", [
    ("本合同经双方签字盖章后生效。", {"anchor": "双方签字盖章", "offset": "P0D", "bound": "after"}),  # was absent
    ("本合同在甲方收到首期款时生效。", {"anchor": "甲方收到首期款", "offset": "P0D", "bound": "at"}),
    ("本合同自双方签字盖章之日起生效。", {"anchor": "双方签字盖章之日", "offset": "P0D", "bound": "at"}),
])
def test_effective_on_an_event(sentence, value):
    assert [e.value for e in rules_zh.effective_date(sentence, segments(sentence, "zh"))] == [value]


@pytest.mark.parametrize("sentence, value", [
    ("本合同有效期至2025年12月31日止。", {"end": "2025-12-31"}),                                   # was absent
    ("服务期限：2024年1月1日—2024年12月31日。", {"start": "2024-01-01", "end": "2024-12-31"}),    # was absent
    ("租赁期限为半年，自2023年3月1日起计算。", {"start": "2023-03-01", "duration": "P6M"}),
])
def test_term_forms(sentence, value):
    assert [e.value for e in rules_zh.term(sentence, segments(sentence, "zh"))] == [value]
