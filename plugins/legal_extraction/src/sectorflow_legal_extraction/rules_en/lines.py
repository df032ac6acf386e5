"""Attribute lines under an English party line: ``Landlord: Acme Ltd.`` followed by ``Address: ...``,
``Contact: ...``, ``Tel: ...``, ``Email: ...`` lines (or the same labels later on the party's own line).

A party's attributes are read only from its own block: from the end of its name to the next party line or the
first blank line that the body follows (a blank line followed by an ``Address:`` line is inside the block:
:func:`text.party_block_end`), so one party's address or contact is never reported for another (as for Chinese
party blocks).
"""

from __future__ import annotations

import re

from ..schema import Extraction
from ..text import party_block_end

ROLE_WORDS = {"landlord": "lessor", "lessor": "lessor", "tenant": "lessee", "lessee": "lessee",
              "licensor": "licensor", "licensee": "licensee", "seller": "seller", "supplier": "seller",
              "vendor": "seller", "buyer": "buyer", "purchaser": "buyer", "customer": "buyer", "borrower": "borrower",
              "lender": "lender", "employer": "employer", "contractor": "contractor", "client": "client",
              "consultant": "consultant", "distributor": "distributor", "franchisor": "franchisor",
              "franchisee": "franchisee", "assignor": "assignor", "assignee": "assignee"}
"""Role words that start a party line (``Tenant: Harbor Coffee Company``) and the canonical role each gives."""

ROLE_LINE = re.compile(r"^[ \t]*(?P<w>" + "|".join(ROLE_WORDS) + r")[ \t]*(?:\([^()\n]{1,30}\))?[ \t]*[:：][ \t]*"
                       r"(?P<n>[^\n]{3,120}?)[ \t]*$", re.M | re.I)
"""``Landlord: Greenfield Properties Ltd.``: a role word alone at the start of a line, a colon and a name."""

_ATTRS = (
    ("address", r"(?:Registered\s+|Business\s+|Mailing\s+|Notice\s+)?Address|Registered\s+Office"),
    ("contact", r"Contact(?:\s+Person)?|Attn\.?|Attention|Legal\s+Representative|Representative"),
    ("phone", r"Tel(?:ephone)?\.?|Phone|Mobile|Fax"),
    ("email", r"E-?mail"),
    ("id_number", r"(?:Company|Registration|Business\s+Registration|Tax\s+ID|Passport|ID)\s+(?:No\.?|Number)"),
    ("bank_account", r"(?:Bank\s+)?Account(?:\s+(?:No\.?|Number))?|Bank"),
)
_ATTR = re.compile(r"(?:^|(?<=\s))(?P<label>" + "|".join(p for _, p in _ATTRS) + r")[ \t]*[:：][ \t]*"
                   r"(?P<value>[^\n]*?)(?=[ \t]+(?:" + "|".join(p for _, p in _ATTRS) + r")[ \t]*[:：]|[ \t]*$)",
                   re.M | re.I)
_ATTR_START = re.compile(r"[ \t]*(?:" + "|".join(p for _, p in _ATTRS) + r")[ \t]*[:：]", re.I)
"""A line that starts with an attribute label (``Address:``): after a blank line, the party's block goes on."""


def attach_line_attributes(text: str, parties: list[Extraction], limit: int) -> None:
    """Add ``address``, ``contact``, ``phone``, ``email``, ``id_number``, ``bank_account`` relations to party-line
    parties from the labelled lines of their own block (``party.end`` to the next party's start, the first blank
    line not followed by a labelled line, or ``limit``). Parties are changed in place; a party with no such lines gets nothing."""
    ordered = sorted(parties, key=lambda p: p.start)
    for n, party in enumerate(ordered):
        end = ordered[n + 1].start if n + 1 < len(ordered) else limit
        next_line = ROLE_LINE.search(text, party.end, end)
        if next_line:
            end = next_line.start()
        end = party_block_end(text, party.end, end, _ATTR_START)  # "Address:" after a blank line: still its block
        for attr in _ATTR.finditer(text, party.end, end):
            value = attr.group("value")
            if not value.strip(" \t,;"):
                continue
            key = next(k for k, p in _ATTRS if re.fullmatch(p, attr.group("label"), re.I))
            b = attr.start("value")
            party.relations.setdefault(key, []).append(Extraction(
                text=value, start=b, end=b + len(value), value=value.strip(" \t,;"), confidence=0.85,
                source=f"rule:en_party_{key}"))
