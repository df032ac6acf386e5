"""Language identification and escalation rules (no model)."""

import pytest
from sectorflow_customer_service.escalation import EscalationRules
from sectorflow_customer_service.language import detect_language


def test_language_by_cjk_share():
    assert detect_language("I am still waiting on my card?").lang == "en"
    assert detect_language("我的银行卡被冻结了怎么办").lang == "zh"
    mixed = detect_language("我的visa卡被冻结了")
    assert (mixed.lang, mixed.mixed) == ("zh", True)
    assert mixed.cjk_ratio == round(7 / 11, 4)
    assert detect_language("My 微信 account").lang == "en"  # 2 CJK of 11 letters
    assert detect_language("12345 ???").lang == "und"


def test_escalation_reasons_both_languages():
    rules = EscalationRules()
    human = rules.check("Can I speak to a human please")
    assert human.escalate and human.reasons == ("human_requested",)
    assert human.matched == ("speak to a human", "human please")
    assert rules.check("转人工").reasons == ("human_requested",)
    threat = rules.check("再不解决我就打12378投诉，去法院起诉你们")
    assert threat.reasons == ("regulator_or_legal_threat", "complaint")
    assert {"12378", "法院", "起诉", "投诉"} <= set(threat.matched)
    assert rules.check("I will report you to the CFPB").reasons == ("regulator_or_legal_threat",)
    angry = rules.check("This is RIDICULOUS, WORST SERVICE EVER!!!")
    assert angry.reasons == ("anger",) and "!!!" in angry.matched and "SHOUTING" in angry.matched


def test_no_escalation_for_ordinary_requests():
    rules = EscalationRules()
    for text in ("I am still waiting on my card?", "How do I change my PIN?", "我的银行卡被冻结了怎么办",
                 "What are the courtesy fees?", "Please send me the occupancy form"):
        assert not rules.check(text).escalate, text


def test_operator_phrases_extend_a_reason():
    rules = EscalationRules({"regulator_or_legal_threat": ["Finanzaufsicht"]})
    assert rules.check("ich gehe zur Finanzaufsicht").reasons == ("regulator_or_legal_threat",)


@pytest.mark.parametrize("text", ["我不是要投诉，只是问问", "I don't want to complain, just asking",
                                  "Not angry at all, thanks!", "I do not need to speak to a human"])
def test_a_negated_complaint_anger_or_human_request_does_not_escalate(text):
    assert EscalationRules().check(text).escalate is False


@pytest.mark.parametrize(("text", "reasons"), [
    ("再不处理我就向金融监管总局投诉，转人工", ("human_requested", "regulator_or_legal_threat", "complaint")),
    ("I'm not happy, I want to file a complaint", ("complaint",)),  # the negation is in another clause
    ("I do not want to go to court but I will", ("regulator_or_legal_threat",)),  # regulators/courts always count
    ("Why can't I speak to a human", ("human_requested",)),
    # negation words that do not negate the phrase (a re-check found these cancelled by a looser rule)
    ("I can't not complain", ("complaint",)),
    ("I have no choice but to complain", ("complaint",)),
    ("I have never been so angry", ("anger",)),
    ("I'm not kidding I am angry", ("anger",)),
    ("Why won't you let me talk to a person", ("human_requested",)),
    ("I will not stop until I complain", ("complaint",)),
])
def test_negation_elsewhere_or_of_a_court_keeps_the_escalation(text, reasons):
    assert EscalationRules().check(text).reasons == reasons


@pytest.mark.parametrize(("text", "reasons", "phrase"), [
    ("I am complaining about the fees again", ("complaint",), "complaining"),
    ("I complained twice already", ("complaint",), "complained"),
    ("Where do I send complaints?", ("complaint",), "complaints"),
    ("I want a human", ("human_requested",), "want a human"),
    ("Just get me a person now", ("human_requested",), "get me a person"),
    ("Agent please", ("human_requested",), "agent please"),
    ("再不处理我就找监管", ("regulator_or_legal_threat",), "找监管"),
    ("我要向监管反映这个问题", ("regulator_or_legal_threat",), "向监管"),
    ("I would like to speak with a person about my loan", ("human_requested",), "speak with a person"),
    ("Ｉ　ｗａｎｔ　ａ　ｈｕｍａｎ", ("human_requested",), "want a human"),  # full-width: NFKC first
    ("我要人工，马上", ("human_requested",), "要人工"),  # 要 shared with no negation: still a request
])
def test_inflections_and_short_forms_escalate(text, reasons, phrase):
    verdict = EscalationRules().check(text)
    assert verdict.reasons == reasons and phrase in verdict.matched


@pytest.mark.parametrize("text", ["I don't want a human, the app is fine", "I never want to speak to a human",
                                  "I wouldn't want a human for this", "I wouldn\u2019t want a human",
                                  "I don\u2019t want to speak to a person", "I didn\u2018t mean to complain",
                                  "我没有在抱怨，监管要求的材料在哪里下载", "我不要人工", "不需要人工", "我不想转人工客服",
                                  "What are the regulatory requirements for opening an account?",
                                  "no human please", "No agent please, the app is fine",
                                  "I don`t want to talk to a human", "I don\u00b4t want a human"])
def test_short_forms_do_not_fire_when_negated_or_absent(text):
    assert EscalationRules().check(text).escalate is False


@pytest.mark.parametrize(("text", "reasons", "phrase"), [
    # traditional Chinese (Hong Kong, Taiwan) reads as simplified
    ("我要投訴你們", ("complaint",), "投诉"),
    ("轉人工", ("human_requested",), "转人工"),
    ("再不處理我就去銀保監會", ("regulator_or_legal_threat",), "银保监会"),
    ("問題到現在還沒解決", ("complaint",), "还没解决"),
    ("你們銀行真爛", ("anger",), "真烂"),
    ("我要發到小紅書上", ("media_threat",), "发到小红书"),
    ("我要去信訪", ("regulator_or_legal_threat",), "信访"),
    # threats to go to the press are their own reason
    ("我要找記者", ("media_threat",), "找记者"),
    ("再不解决我就找媒体曝光", ("media_threat",), "找媒体"),
    ("我要上热搜", ("media_threat",), "上热搜"),
    ("I'm going to the press with this", ("media_threat",), "going to the press"),
    ("I will post this on twitter", ("media_threat",), "post this on"),
    # asking for a person in other words
    ("Can I speak to your manager", ("human_requested",), "speak to your manager"),
    ("人工", ("human_requested",), "人工"),
    ("人工！！", ("human_requested",), "人工"),
    ("Agent", ("human_requested",), "agent"),
    ("我要找你们行长", ("human_requested",), "找你们行长"),
    # anger in words the table lacked, and emoji
    ("我很生气", ("anger",), "生气"),
    ("我对你们的服务很不满", ("anger",), "很不满"),
    ("This bank is a scam", ("anger",), "bank is a scam"),
    ("😡😡😡", ("anger",), "😡"),
    ("Why is my card blocked!!!", ("anger",), "!!!"),
    ("WHERE IS MY CARD I ORDERED IT WEEKS AGO", ("anger",), "SHOUTING"),
    ("我要去人行投诉", ("regulator_or_legal_threat", "complaint"), "去人行"),
    ("不得不投诉了", ("complaint",), "投诉"),  # 不得不: a double negation, still a complaint
    ("I'm so mad at you", ("anger",), "mad at you"),
    ("Thanks for nothing!!!", ("anger",), "thanks for nothing"),  # thanks that are not
    # complaints without the word
    ("I demand a refund now", ("complaint",), "demand a refund"),
    ("Nobody is helping me with my transfer", ("complaint",), "nobody is helping"),
    ("This is the third time I contact you about this", ("complaint",), "third time i"),
    ("问题到现在还没解决", ("complaint",), "还没解决"),
    ("你们必须给我一个说法", ("complaint",), "给我一个说法"),
    # Chinese requests, threats and anger in other words (a second fresh-user round)
    ("能不能帮我转一下人工", ("human_requested",), "转一下人工"),
    ("你们客服都是机器人吗，我要真人", ("human_requested",), "要真人"),
    ("叫你们的负责人来", ("human_requested",), "你们的负责人"),
    ("我要去银监局", ("regulator_or_legal_threat",), "银监局"),
    ("我已经报案了", ("regulator_or_legal_threat",), "报案"),
    ("我要发到小红书上", ("media_threat",), "发到小红书"),
    ("太坑了", ("anger",), "太坑"),
    ("你们银行真烂", ("anger",), "真烂"),
    ("等了一个小时都没人接", ("complaint",), "没人接"),
    # English in other words (a second fresh-user round)
    ("Escalate this please", ("human_requested",), "escalate this"),
    ("Put me through to customer service", ("human_requested",), "put me through to customer service"),
    ("I am reporting you to trading standards", ("regulator_or_legal_threat",), "trading standards"),
    ("I'll leave a one star review", ("media_threat",), "one star review"),
    ("I've been on hold for an hour", ("complaint",), "on hold for"),
    ("I'm closing my account and taking my business elsewhere", ("complaint",), "taking my business elsewhere"),
    ("This is a disgrace", ("anger",), "disgrace"),
    ("You have stolen my money", ("anger",), "stolen my money"),
    # A-not-A questions (是不是, 要不要, 有没有) are not negations
    ("这个理财产品是不是坑人", ("anger",), "坑人"),
    ("有没有人工客服", ("human_requested",), "人工客服"),
    ("我要不要投诉", ("complaint",), "投诉"),
    ("I will report you to the FDIC", ("regulator_or_legal_threat",), "fdic"),
    ("我要去人民银行投诉", ("regulator_or_legal_threat", "complaint"), "人民银行"),
    ("No. I want to complain", ("complaint",), "complain"),  # the "No" is another clause
    ("You won't let me speak to a human!", ("human_requested",), "speak to a human"),
])
def test_escalations_as_customers_write_them(text, reasons, phrase):
    verdict = EscalationRules().check(text)
    assert verdict.reasons == reasons and phrase in verdict.matched


@pytest.mark.parametrize("text", [
    # plain banking questions that contained a listed word
    "How do I set up a power of attorney on my account?", "Is this text message a scam?",
    "I got a scam call pretending to be you", "Can you connect me to Apple Pay?", "I need a real-time notification",
    "Is my IBAN SWIFT BIC code correct for SEPA transfers?", "Is your bank going public?",
    "I saw your ad in the newspaper", "如何防范电信欺诈", "我收到很多垃圾短信", "利息是不是利滚利", "本人行动不便能否代办",
    "存款不满一年可以取出吗", "我妈的银行卡丢了", "告诉你们一个好消息", "12345 ???",
    # thanks, and negated feelings
    "Thank you so much!!!", "我不生气，只是问问", "我一点都不生气", "I am not frustrated at all", "我沒有要投訴",
    "This is not a complaint", "This isn't a complaint, just a question", "Not a complaint but where is my card",
    "I'm not trying to complain", "I'm not upset or angry", "I am not angry nor frustrated", "我不是来投诉的",
    "我不打算投诉", "I won't complain, where is my card?", "This isn't ridiculous",
    # everyday questions naming a regulator or a lawyer
    "Is this account FDIC insured?", "Is my money protected by the FDIC?", "What is the FCA number of your bank?",
    "人民银行的征信报告怎么查", "律师费可以用信用卡支付吗", "律师事务所开对公账户需要什么材料",
    "Is there compensation for the outage?", "Who answers the phone on Sundays?", "我的转账问题解决了吗",
    "公司负责人需要到场吗", "开户需要法定代表人或负责人到场吗", "监管机构要求的材料是什么", "我不要真人",
    "Unbelievable rates, how do I sign up?", "How do I leave a review of the app?",
    "My card was stolen, is my money safe?", "I'm not unhappy",
])
def test_plain_messages_do_not_escalate(text):
    verdict = EscalationRules().check(text)
    assert verdict.escalate is False, verdict


def test_operator_phrases_are_case_and_script_insensitive():
    rules = EscalationRules({"complaint": ["Überweisung storniert", "申訴"], "media_threat": ["Watchdog"]})
    assert rules.check("ÜBERWEISUNG STORNIERT, schon wieder").reasons == ("complaint",)
    assert rules.check("我要申诉").matched == ("申訴",)  # the operator's traditional phrase matches simplified text
    assert rules.check("I'm calling the BBC Watchdog team").reasons == ("media_threat",)
    assert rules.check("watchdogs").escalate is False  # whole words


@pytest.mark.parametrize(("extra", "message"), [
    ("refund", "give a mapping of reason to a list of phrases"),
    ({"complain": ["refund"]}, r"unknown reason\(s\) \['complain'\]; the reasons are"),
    ({"complaint": "refund now"}, r"give a list of phrases \(a single phrase as \['refund now'\]\)"),
    ({"complaint": ["refund", ""]}, "every phrase must be a non-empty string"),
    ({"complaint": [5]}, "every phrase must be a non-empty string"),
])
def test_bad_operator_phrases_are_refused(extra, message):
    from sectorflow import ConfigError

    with pytest.raises(ConfigError, match=message):
        EscalationRules(extra)
