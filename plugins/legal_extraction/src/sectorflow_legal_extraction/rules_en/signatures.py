"""Parties named in the signature blocks of English contracts: the company line above a ``By:`` line.

``APOLLO LIFE ASSET GP, LLC By: /s/ William B. Kuesel`` or ``D-Beta One EQ, Ltd.\\nBy: Delta Beta Advisors, LLC``
gives the party before ``By:``: the longest run of words ending in a legal form (Inc., LLC, L.P., Ltd., S.A., GmbH,
S.à r.l. ...) that is all capitals, or else capitalised and not a signatory's title ("Chief Compliance Officer").
Joint-filing agreements (Schedule 13D/13G) list their parties only there. Developed on CUAD train and validation
contracts only.
"""

from __future__ import annotations

import re

from .law import known_place
from ..schema import Extraction

_FORM = (r"(?:Inc|Incorporated|Corp|Corporation|Company|Co|LLC|L\.L\.C|Ltd|Limited|LP|L\.P|LLP|L\.L\.P|PLC|GmbH|AG|"
         r"S\.A|SA|N\.V|B\.V|S\.[AÀ]\.?\s*R\.L|S\.a\s*r\.l|KGaA|Trust|Fund|Bank|N\.A)\.?")
_BY = re.compile(r"\b(?:By|BY)\s*:?\s*(?=/s/|[A-Z_])")
_TOKEN = r"[^\s,]+,?"
_TITLES = {"officer", "president", "director", "signatory", "member", "partner", "manager", "secretary", "treasurer",
           "counsel", "chairman", "ceo", "cfo", "coo", "title", "name", "trustee", "esq", "esq.", "vice", "chief",
           "authorized", "attorney-in-fact", "its", "date", "dated", "executive", "senior", "principal", "witness",
           "/s/", "signature", "agreed", "accepted"}
_UPPER_NAME = re.compile(r"((?:\(?[A-Z0-9À-ÞĀ-Ž][A-Z0-9À-ÞĀ-Ž&.'’()\-/]*,?\s+){0,14}?"
                         r"(?:LLC|L\.L\.C\.?|INC\.?|INCORPORATED|CORP\.?|CORPORATION|COMPANY|CO\.|LTD\.?|LIMITED|L\.P\.?|LP|"
                         r"LLP|PLC|GMBH|AG|S\.A\.?|SA|N\.V\.?|B\.V\.?|S\.[AÀ]\.?\s*R\.L\.?|KGAA|TRUST|FUND|BANK|N\.A\.?))\s*$")


_UPPER_FORM_END = re.compile(r"(?<=\s)(?:LLC|L\.L\.C\.?|INC\.?|CORP\.?|CORPORATION|COMPANY|LTD\.?|LIMITED|L\.P\.?|LP|"
                             r"LLP|PLC|GMBH|S\.A\.?|SA|N\.V\.?|B\.V\.?|S\.[AÀ]\.?\s*R\.L\.?|KGAA|FUND)"
                             r"(?=\s+(?!(?:[IVXL]+(?:-[A-Z])?|L\.?P\.?|LLC|\([A-Z]+\)),?(?:\s|$))[A-Z(])")
"""Where two names run together: after a legal form, unless a fund's number or form follows ("FUND VI-A, L.P.",
"FUND XII (MASTER), L.P.", "FUND L.P.")."""


def _names_before(window: str) -> list[str]:
    """The party names that end just before a ``By:`` (two when two signature columns run together:
    ``UBS FUND L.P. ONCOLOGY FUND (CAYMAN) MANAGEMENT L.P.``)."""
    upper = _UPPER_NAME.search(window)
    if upper:
        name = upper.group(1).strip(" ,")
        words = name.split()
        while words and (words[0].lower().strip(":") in _TITLES or not re.search(r"[A-Z]", words[0])):
            words.pop(0)
        name = " ".join(words)
        if len(re.findall(r"[A-Z]{2,}|[A-Z]\.", name)) >= 1 and len(words) >= 2:
            cuts = [0, *(m.end() for m in _UPPER_FORM_END.finditer(name)), len(name)]
            parts = [name[a:b].strip(" ,").rstrip(".") for a, b in zip(cuts, cuts[1:])]
            return [p for p in parts if len(p.split()) >= 2]
    single = _name_before(window)
    return [single] if single else []


def _name_before(window: str) -> str | None:
    mixed = re.search(r"((?:[A-Z0-9][\w&.'’()\-/]*,?\s+|(?:of|and|the|de|&)\s+){0,8}?[\w.'’()\-]+,?\s+" + _FORM
                      + r")\s*$", window)
    if mixed:
        words = mixed.group(1).split()
        titles = [i for i, w in enumerate(words) if w.lower().strip(":,.") in _TITLES or w.lower().strip(":,") in
                  _TITLES]
        words = words[titles[-1] + 1:] if titles else words
        while words and not words[0][0].isupper():
            words.pop(0)
        if len(words) >= 2:
            return " ".join(words).rstrip(".")
    return None


def signature_parties(text: str) -> list[Extraction]:
    """Companies named just above a ``By:`` line, in order, each once (confidence 0.5)."""
    out: list[Extraction] = []
    seen: set[str] = set()
    for match in _BY.finditer(text):
        window = re.sub(r"[ \t]{2,}", " ", text[max(0, match.start() - 240):match.start()])[-160:]  # spacing varies
        last = re.split(r"\n[ \t]*\n", window)[-1]
        window = last if re.search(r"[A-Za-z]{2}", last) else window  # "DISTRIBUTOR\n\nACME LTD. By:": from ACME
        window = re.sub(r"(?:\s*/s/\s*[A-Z][\w.'’\-]*(?:\s+[A-Z][\w.'’\-]*){0,3})+\s*$", " ", window)  # "ACME S.A. /s/ Jo Roe By:"
        if re.search(r"\b(?:its|general\s+partner|manager|member)\s*$", window, re.I):
            continue
        for name in _names_before(window):
            if re.fullmatch(r"(?:[IVX]+|U?G\.?P\.?|[A-Z][a-z]+)(?:,?\s+\S+)?", name) or known_place(name.split()[0]):
                continue  # "GP, LLC" (a cut-off name), "Delaware Corporation" (a description)
            key = re.sub(r"\W", "", name.lower())
            # the name as written: its words may stand apart by several spaces or a line break
            spots = list(re.finditer(r"\s+".join(re.escape(w) for w in name.split()),
                                     text[max(0, match.start() - 240):match.start()]))
            if key in seen or not spots:
                continue
            begin = max(0, match.start() - 240) + spots[-1].start()
            end = max(0, match.start() - 240) + spots[-1].end()
            seen.add(key)
            out.append(Extraction(text=text[begin:end], start=begin, end=end,
                                  value={"name": name, "role": "signatory", "defined_term": None}, confidence=0.5,
                                  source="rule:en_signature_block"))
    return out
