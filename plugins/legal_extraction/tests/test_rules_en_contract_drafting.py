"""English contracts as a law firm writes them (project-written text, fresh-user checks): Landlord/Tenant lines
with each party's own address and contacts, legal forms keeping their full stop, amounts in figures and words
that disagree, and a heading that is not the clause."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import normalize as nz

LEASE = """LEASE AGREEMENT

This Lease is made on Sept 1st, 2005 between:

Landlord: Greenfield Properties Ltd.
Address: 12 King Street, London EC2V 8AU
Contact: Peter Brown
Phone: +44 20 7000 0000

Tenant: Harbor Coffee Company
Address: 88 Queen Street, London EC4N 1SP
Email: ops@harborcoffee.example.com

1. Rent. The Tenant shall pay a total rent of GBP 120.000 for the term, payable monthly in advance.
"""

SUPPLY = """SUPPLY AGREEMENT

Party A: Shenzhen Brightway Electronics Co., Ltd.
Address: No. 8 Keji Road, Nanshan District, Shenzhen, China
Contact: Mr. Li Qiang

Party B: Nordic Retail AB
Address: Storgatan 1, 111 22 Stockholm, Sweden

1. PURCHASE PRICE. The total contract price is USD 250,000 (Two Hundred Thousand US Dollars).

2. LIQUIDATED DAMAGES.
For each day of delay Party A shall pay liquidated damages of One Thousand Dollars ($1,000).
"""


def test_landlord_and_tenant_lines_each_with_their_own_block(taskflow_factory):
    result = taskflow_factory(["Landlord", "Tenant"])(LEASE)
    (landlord,), (tenant,) = result.fields["Landlord"], result.fields["Tenant"]
    assert landlord.value == {"name": "Greenfield Properties Ltd.", "role": "lessor", "defined_term": "Landlord"}
    assert LEASE[landlord.start:landlord.end] == "Greenfield Properties Ltd."
    assert {k: [r.value for r in v] for k, v in landlord.relations.items()} == {
        "address": ["12 King Street, London EC2V 8AU"], "contact": ["Peter Brown"], "phone": ["+44 20 7000 0000"]}
    assert {k: [r.value for r in v] for k, v in tenant.relations.items()} == {
        "address": ["88 Queen Street, London EC4N 1SP"], "email": ["ops@harborcoffee.example.com"]}
    for rel in (*landlord.relations["address"], *tenant.relations["email"]):
        assert LEASE[rel.start:rel.end] == rel.text


def test_one_role_line_alone_is_no_party_list():
    from sectorflow_legal_extraction.rules_en.party_rules import _party_lines

    assert _party_lines("Licensor: ACME ENTERTAINMENT Licensee BETA FILM CORPORATION\n") == []


def test_party_a_lines_get_their_address_and_contact(taskflow_factory):
    result = taskflow_factory(["Party A", "Party B", "Contract Amount", "Liquidated Damages"])(SUPPLY)
    (a,), (b,) = result.fields["Party A"], result.fields["Party B"]
    assert a.value["name"] == "Shenzhen Brightway Electronics Co., Ltd."
    assert [r.value for r in a.relations["address"]] == ["No. 8 Keji Road, Nanshan District, Shenzhen, China"]
    assert [r.value for r in a.relations["contact"]] == ["Mr. Li Qiang"]
    assert [r.value for r in b.relations["address"]] == ["Storgatan 1, 111 22 Stockholm, Sweden"]
    assert "contact" not in b.relations  # Party A's contact is not copied to Party B


def test_figures_and_words_that_disagree_give_no_amount(taskflow_factory):
    result = taskflow_factory(["Contract Amount", "Liquidated Damages"])(SUPPLY)
    (amount,) = result.fields["Contract Amount"]
    assert amount.text == "USD 250,000 (Two Hundred Thousand US Dollars)"
    assert amount.value == {"amount": None, "currency": "USD", "words_and_figures_agree": False,
                            "words": "200000.00", "figures": "250000.00"}
    assert amount.warnings and result.warnings
    (damages,) = result.fields["Liquidated Damages"]  # the sentence, not the heading "2. LIQUIDATED DAMAGES."
    assert damages.text.startswith("For each day of delay")
    assert damages.value["amount"] == {"amount": "1000.00", "currency": "USD", "words_and_figures_agree": True}


def test_english_amounts_in_words():
    found = [(a[2], a[3]) for a in nz.amounts_in("a fee of One Thousand and 50/100 Dollars, or one million euros")]
    assert found == [("One Thousand and 50/100 Dollars", {"amount": "1000.50", "currency": "USD"}),
                     ("one million euros", {"amount": "1000000.00", "currency": "EUR"})]
    assert nz.amounts_in("within thirty (30) days") == []  # a number in words without a currency is no amount


PREAMBLE = ('This Agreement is made as of March 1, 2023 by and between Acme Corp., a Delaware corporation '
            '("Licensor"), and Beta LLC, a Texas limited liability company ("Licensee").\n\n')


def test_a_renewal_sentence_is_not_the_termination_clause(taskflow_factory):
    text = PREAMBLE + ("The term of this Agreement shall be one (1) year, and shall automatically renew for successive "
                       "one (1) year periods unless either party notifies the other in writing at least sixty (60) "
                       "days prior to expiration.")
    result = taskflow_factory(["Termination", "Renewal Term"])(text)
    assert result.fields["Termination"] == [] and result.fields["Renewal Term"][0].value["iso"] == "P1Y"


def test_courts_named_without_the_word_jurisdiction(taskflow_factory):
    text = PREAMBLE + ("This Agreement shall be governed by the laws of the State of Delaware. Any action shall be "
                       "brought exclusively in the state or federal courts located in Wilmington, Delaware.")
    (found,) = taskflow_factory(["Dispute Resolution"])(text).fields["Dispute Resolution"]
    assert found.value == {"method": "litigation", "body": "courts located in Wilmington, Delaware"}


def test_hold_in_strict_confidence(taskflow_factory):
    text = PREAMBLE + "Each party agrees to hold the Confidential Information of the other party in strict confidence."
    (found,) = taskflow_factory(["Confidentiality"])(text).fields["Confidentiality"]
    assert found.text == "Each party agrees to hold the Confidential Information of the other party in strict confidence."


def test_liquidated_damages_rate_per_day(taskflow_factory):
    text = PREAMBLE + ("For each day of delay in payment, Licensee must pay Licensor liquidated damages at 0.5 percent "
                       "(0.5%) of the fee that is due and unpaid.")
    (found,) = taskflow_factory(["Liquidated Damages"])(text).fields["Liquidated Damages"]
    assert found.value == {"rate": "0.005", "per_day": True}


def test_party_lines_without_their_label_or_defined_term_and_no_blank_to_fill_in():
    from sectorflow_legal_extraction import rules_en

    text = ("This Service Agreement is entered into as of [Date] in Beijing, China, by and between:\n\n"
            "Party A: Rise Widgets (Tianjin) Consulting Co., Ltd. (\"Service Provider\")\n\n"
            "Address: Room C209, Tianjin, China\n\nParty B: [•] (\"Service Recipient\")\n\nAddress: [•]\n")
    assert [(p.value["name"], p.text) for p in rules_en.parties(text)] == [
        ("Rise Widgets (Tianjin) Consulting Co., Ltd.", "Rise Widgets (Tianjin) Consulting Co., Ltd.")]
    two = text.replace("Party B: [•]", "Party B: Acme Learning Ltd.")
    assert [p.value["name"] for p in rules_en.parties(two)] == ["Rise Widgets (Tianjin) Consulting Co., Ltd.",
                                                               "Acme Learning Ltd."]


@pytest.mark.parametrize("text", [
    "LEASE\n\nLandlord: Greenfield Properties Ltd.\nTenant: Harbor Coffee Company\n\n1. The first rent payment is due "
    "on March 1, 2024.\n",
    'CONSULTING AGREEMENT\n\nAcme Corp. ("Company") and Jo Roe ("Consultant") agree as follows.\n\n1. Services begin '
    "January 15, 2021 and end June 30, 2021.\n",
    'SERVICES AGREEMENT\n\nAcme Corp. ("Company") and Jo Roe ("Consultant") agree as follows.\n\n1. Consultant shall '
    "deliver the report no later than May 5, 2021.\n",
])
def test_a_payment_delivery_or_service_date_is_not_guessed_as_the_agreement_date(text):
    from sectorflow_legal_extraction import rules_en

    assert rules_en.agreement_date(text) == []


def test_an_undescribed_early_date_is_still_the_agreement_date():
    from sectorflow_legal_extraction import rules_en

    text = 'CONSULTING AGREEMENT\n\nMarch 3, 2021\n\nAcme Corp. ("Company") and Jo Roe ("Consultant") agree as follows.'
    assert [d.value for d in rules_en.agreement_date(text)] == ["2021-03-03"]


@pytest.mark.parametrize("sentence, body", [
    ("Any dispute shall be finally resolved by arbitration administered by the HKIAC in Hong Kong.", "HKIAC"),
    ("Any dispute shall be finally resolved by arbitration in Singapore under the rules of the Singapore "
     "International Arbitration Centre.", "Singapore International Arbitration Centre"),  # was from "Singapore under"
    ("Disputes shall be submitted to arbitration under the ICC Rules in Paris.", "ICC"),
])
def test_arbitration_institutions(sentence, body):
    from sectorflow_legal_extraction import rules_en
    from sectorflow_legal_extraction.text import segments

    assert [e.value for e in rules_en.dispute_resolution(sentence, segments(sentence, "en"))] == [
        {"method": "arbitration", "body": body}]
