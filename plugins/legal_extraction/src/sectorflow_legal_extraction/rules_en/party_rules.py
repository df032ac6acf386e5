"""Parties of English contracts: the preamble's defined terms (``Name, a Delaware corporation ... ("Company")``),
``between X and Y``, ``Party A: X`` lines, and the signature blocks when the preamble gives fewer than two.

Returns ``list[Extraction]`` whose ``value`` is ``{"name", "role", "defined_term"}`` (empty when nothing is found:
nothing is guessed). Developed on CUAD train and validation contracts only; ``benchmarks/legal_eval.py`` measures
them on the test contracts.
"""

from __future__ import annotations

import re

from .law import known_place as _known_place
from .lines import ROLE_LINE, ROLE_WORDS, attach_line_attributes
from .signatures import signature_parties
from ..schema import Extraction

PREAMBLE_CHARS = 4000

_LEGAL_FORM = (r"Inc|Incorporated|Corp|Corporation|Company|Co|LLC|L\.L\.C|Ltd|Limited|LP|L\.P|LLP|PLC|plc|GmbH|AG|"
               r"S\.A|SA|B\.V|N\.V|BV|NV|Pty|Pte|Bhd|KG|A/S|ApS|AB|Oy|Oyj|S\.p\.A|SpA|S\.r\.l|a\.s|s\.r\.o|SARL|"
               r"S\.A\.R\.L|S\.A\.S|S\.L|Ltda|Trust|Bank|Group|Holdings|Partners|Partnership|University|Association|"
               r"Foundation|Institute")
_LEGAL_FORM += "|" + _LEGAL_FORM.upper()  # names are often written in capitals: "ACME CORPORATION"
_NOT_ROLES = {"agreement", "effective date", "parties", "party", "term", "amendment", "the agreement", "contract",
              "exhibit", "schedule", "recitals", "services", "products", "product", "territory", "confidential"
              " information", "commencement date", "execution date", "closing date", "joint venture", "program",
              "marks", "trademarks", "licensed products", "property", "premises", "work", "plan", "fee", "fees",
              "license", "software", "documentation", "system", "project", "purchase price", "content", "site",
              "field", "brand", "materials", "deliverables", "collectively", "each a party", "both", "we", "us",
              "you", "either", "together"}
_ROLE_NAMES = {"licensor": "licensor", "licensee": "licensee", "lessor": "lessor", "landlord": "lessor",
               "lessee": "lessee", "tenant": "lessee", "seller": "seller", "supplier": "seller", "vendor": "seller",
               "buyer": "buyer", "purchaser": "buyer", "customer": "buyer", "party a": "party_a",
               "party b": "party_b", "party c": "party_c", "lender": "lender", "borrower": "borrower",
               "client": "client", "employer": "employer", "contractor": "contractor", "assignor": "assignor",
               "assignee": "assignee"}

_DEFINED = re.compile(r"\((?:[^()]{0,80}?)[\"“”'‘’]{1,2}([A-Za-z0-9][^\"“”()]{0,60}?)[\"“”'‘’]{1,2}(?:[^()]{0,80}?)\)|"
                      r"(?<=\s)[\"“]([A-Z][^\"“”()]{0,40}?)[\"”](?=\s*(?:[-,;.)]|and\b|of\b|$))|"
                      # unquoted: "(hereinafter referred to as Party A)", "— hereinafter referred to as Acme —"
                      r"(?:\(|[—–]\s*)(?:hereinafter|hereafter)\s+(?:referred\s+to\s+as|called)\s+(?:the\s+)?"
                      r"([A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,2})\s*(?:\)|[—–])|"
                      r"\((?i:the)\s+([A-Z][A-Z\-]{2,20})\)|"  # "(the COMPANY)"
                      r"\((?:the\s+)?((?:Transporter|Shipper|Licensor|Licensee|Company|Customer|Client|Supplier|"
                      r"Distributor|Seller|Buyer|Purchaser|Vendor|Consultant|Contractor|Agent|Sponsor|Manufacturer|"
                      r"Reseller|Franchisor|Franchisee|Lessor|Lessee|Landlord|Tenant|Provider|Publisher|Developer)s?)\)|"
                      # "Acme Widgets, Inc. (Acme) and Beta LLC (BETA)": a short capitalised term in brackets, then
                      # a comma, "and", a description or the sentence's end (not "SHBV (HONG KONG) LTD")
                      r"(?<=[\w.,])\s*\((?:the\s+)?([A-Z][\w&\-]*(?:\s+[A-Z][\w&\-]*){0,2})\)(?=\s*(?:[,;.]|(?i:and|or|having|"
                      r"with|located|whose|hereinafter|hereto|each|both|collectively|as|a|an)\b|$))|"
                      # an acronym before a verb: "COMWARE SERVICES OF 12 PARK ROAD (COMWARE) certifies that ..."
                      r"(?<=[\w.,])\s*\((?!LOGO\)|SEAL\)|TM\)|SM\))([A-Z][A-Z0-9&\-]{1,9})\)(?=\s+[a-z])",
                      re.M)  # "X Partnership (Transporter) and Y COMPANY (Shipper)"
_BETWEEN = re.compile(r"\b(?:by\s+and\s+between|between|among|amongst|by\s+and\s+among|(?:entered\s+into|made|"
                      r"executed)\s+(?:\w+\s+){0,3}?by)\b\s*[:,]?\s*(?:the\s+)?",
                      re.IGNORECASE)
_AND = re.compile(r"^[\s,;.]*(?:-+\s*)?(?:and|&)\s*(?:-+\s*)?:?\s*(?:the\s+)?|^[\s,;.]+", re.IGNORECASE)
_BAD_ROLE = re.compile(r"agreement|addendum|amendment|\bdate\b|schedule|exhibit|section|^programs?$|^products?$|"
                       r"^services?$|territory|^station$|property|premises|information|material|^marks?$|\bact$|"
                       r"rules?$|^fund$|^plan$|^the$|^this$|^term|^party$|^parties$|collectively|^each|^an?$|"
                       r"^licensed?\b|^software|price$|^fees?$|^(?:FCC|SEC|IBOC)$", re.IGNORECASE)
_PLACE_LIKE = re.compile(r"(?:\b[A-Z]{2}\s+\d{5}|\d{4,}|^(?:USA|U\.S\.A|P\.R\.C|PRC|India|China|Korea|Japan|Israel|"
                         r"Canada|Hong Kong|United States(?: of America)?)$)")


def _clean_name(raw: str) -> str:
    raw = raw.strip()
    raw = re.split(r"\s+of\s+\[|,\s+not\s+individually|\s+and/or\s+(?:its\s+)?assigns|,?\s+(?:listed|set\s+forth|"
                   r"identified|named)\s+(?:on|in)\s", raw, maxsplit=1)[0]  # "Jane Roe of [address removed]"
    raw = re.sub(r"^.*\b(?:From|To)\s*:\s*|^\([^()]*\)\s*(?:and|&)\s+", "", raw, flags=re.I | re.S)
    name = re.split(r",?\s+(?:a|an)\s+(?:[A-Z][\w.\-]*\s+){0,4}(?:corporation|company|limited|partnership|"
                    r"association|bank|trust|organi[sz]ation|entity|institution|individual|resident|citizen|"
                    r"business|national|[a-z]+\s+(?:corporation|company|partnership))\b|,?\s+(?:having|with|located|registration|"
                    r"registered|represented|individual\b|(?<=,\s)the\s+(?=[a-z])|"
                    r"whose|who|residing|organized|incorporated|acting|doing|on\s+(?:\w+\s+){0,2}behalf|hereinafter|its|address|"
                    r"is\s+a|"
                    r"of\s+(?=\[|\d)|in\s+person|"
                    r"\(hereinafter)\b|,\s*(?:a|an)\s+\w+|\s*,\s*(?:a|an)\s*$|\s+\(\s*$|,\s*$", raw, maxsplit=1, flags=re.IGNORECASE)[0]
    name = re.sub(r"\s*\((?:registered|registration|company|incorporated|reg\.)\b[^()]*\)", "", name, flags=re.I)
    name = re.sub(r"\s+", " ", name).strip(" ,.;:\"“”'‘’\n\t-")
    name = re.sub(r"\s+of$", "", name)  # "NIGEL CROCKETT of (the Employee)": the address left blank
    for _ in range(2):
        name = re.sub(r"^(?:\(\w{1,3}\)\s*|\w\)\s*|\d+\.\s*PARTIES:?\s*|(?i:party)\s+[A-C]\s*[:：]\s*|(?:by\s+and\s+)?(?:between|among)\s+|"
                      r"the\s+following\s+parties:?\s*|and\s*:?\s+(?:the\s+)?|in\s+addition,\s*|"
                      r"parties(?:\s+to\s+this\s+agreement)?\s*:?\s+)", "", name, flags=re.I)
    # "Ivan Petrov, director of CookWell": the company, not its signatory
    name = re.sub(r"^[A-Z][\w.]*(?:\s+[A-Z][\w.]*){1,3},\s*(?:director|president|officer|owner)\s+of\s+", "", name)
    return _trim_name(name)


def _trim_name(name: str) -> str:
    """Cut what follows a name and is no part of it: an address after the legal form ("Acme Ltd. 2nd Floor, ...",
    "Acme Inc Unit 5", "Acme GmbH, Hafenweg 3, ..."), an address after "of" ("Acme A/S of Harbour Road 12, ..."),
    an unclosed defined term ("Jo Roe ("Artist)"), and a lower-case description before it ("professional golfer, JO ROE")."""
    name = re.sub(rf"^(.*?\b(?i:{_LEGAL_FORM})\b\.?),?\s+(?:\d|(?i:Unit|Suite|Room|Floor|Level|Block|No\.)\s|(?<=,\s)[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){{0,3}}\s+\d).*$", r"\1",
                  name, flags=re.S)
    name = re.sub(rf"^(.*?\b(?:{_LEGAL_FORM})\b\.?),\s+[A-Z][^,()]{{0,30}}\b(?i:House|Street|Road|Avenue|Floor|Building|"
                  r"Tower|Centre|Center|Plaza|Drive|Lane|Boulevard|Square|Court|P\.?O\.?\s+Box)\b.*$", r"\1", name,
                  flags=re.S)  # "Acme Inc., Harbour House, Dock Street, ..."
    name = re.sub(r"\s+(?i:of)\s+(?![^,()]*\b(?i:agreement|dated|amendment)\b)[A-Z0-9][^,()]{0,40}?\d.*$", "", name,
                  flags=re.S)
    name = re.sub(r"(\b(?i:Ltd|LLC|PLC|Inc|AG|SA|KG|AB|Limited|GmbH)\.?)\s+(?i:of)\s+(?=[^()]{0,60}\d).*$", r"\1", name,
                  flags=re.S)  # "Acme UK Limited of Boston House, 69 Manor Road"
    name = re.sub(r"\s*\(\s*[\"“][^\"“”()]*\)?$", "", name)
    return re.sub(r"^(?:[a-z][\w\-]*\s+){1,3}[a-z][\w\-]*,\s+(?=[A-Z])", "", name).strip(" ,")


_NOT_A_NAME = re.compile(r"\b(?:is|are|was|were|has|have|had|may|shall|will|laws|under|whose|purpose|providing|issued|"
                         r"received|pursuant|relevant|and/or|website|referred|organized|formed|pursuant|collectively|"
                         r"individually|respectively|herein|hereinafter|hereto|hereunder|thereof)\b|"
                         r"\s(?:the|as|of|and|with|to|in|for|on|by|or)$", re.IGNORECASE)
_LEADING_WORD = re.compile(r"(?:each|any|such|said|other|all|years?)(?:\s|$)", re.IGNORECASE)
_LEADING_PHRASE = re.compile(r"(?:in|with|during|upon|as|at|unless|hereby|whereby|for|not|under|and)(?:\s|$)|(?:a|an)\s+(?:\S+\s+){0,3}(?:company|"
                             r"corporation|partnership|entity|organi[sz]ation)$", re.IGNORECASE)
"""Words that start a phrase, never a name, legal form or not: "AS ADMINISTRATOR FOR ACME CORPORATION", "A BEIJING
COMPANY", "AT ITS PRINCIPAL OFFICE"."""


def looks_like_party(name: str) -> bool:
    """A company or person name: a legal-form word, or a few words that are mostly capitalised, and no verb."""
    form_last = bool(re.search(rf"\b(?:{_LEGAL_FORM})\.?$", name.strip()))
    place_like = _PLACE_LIKE.search(name)
    if place_like and form_last and re.fullmatch(r"\d{4}", place_like.group()) and not re.search(r"\d{5,}|\b[A-Z]{2}\s+\d", name):
        place_like = None  # "WPP 2005 LIMITED": a year in a company's name, not a post code
    if not name or len(name) > 120 or place_like or (_known_place(name) or "").lower() == name.strip(" .").lower() or \
            re.match(r"(?i:whereas|recitals?|witnesseth|now,?\s+therefore|background)\b", name) or \
            re.search(r"\bagreement\b", name, re.I) or \
            re.search(r"\b(?i:address|tel|phone|fax|e-?mail|attn)\s*:|\[\s*[•·*_\s]*\]", name):
        return False  # an address line or a blank to fill in ("Party B: [•]") is no name
    words = re.findall(r"[A-Za-z][\w'’&.\-]*", name)
    if not words or len(words) > 12 or not (re.match(r"[A-Z0-9(]|[a-z]+[A-Z.]", name) or form_last and re.match(
            r"[a-z][a-z]*[\-.\d][\w\-.]*,?\s+[A-Z]", name)) or name.lower() == "and":  # "e-centives, Inc." starts lower case
        return False
    if re.search(r"\b(?:is|are|may|shall|will|under|laws|website|referred|organized|formed|pursuant)\b", name):
        return False
    city = re.fullmatch(r"[A-Za-z][\w.'\-]*(?:\s+[A-Za-z][\w.'\-]*)?,\s*([A-Za-z][\w .'\-]*)", name.strip(" ."))
    if city and _known_place(city.group(1)) and not re.search(rf"\b(?:{_LEGAL_FORM})\b", name):
        return False  # "DUBLIN, IRELAND": a place ("TOWN OF VINTON, VIRGINIA" is a party)
    leading = _LEADING_PHRASE.match(name)
    if leading and form_last and re.match(r"(?:At|In|With)\s+(?!(?:Its|The|A|An|His|Her|Their|Such|Any|All|This)\b)[A-Z][a-z]",
                                          name):
        leading = None  # "At Home Corporation", "In Touch Media Ltd": a name (not "AT ITS PRINCIPAL OFFICE")
    if _NOT_A_NAME.search(name) or leading or (
            _LEADING_WORD.match(name) and not re.search(rf"\b(?:{_LEGAL_FORM})\b", name)):
        return False  # the same checks in capitals: "COLLECTIVELY AS THE", "IN CONNECTION", "WITH"
    if re.search(rf"\b(?:{_LEGAL_FORM})\b", name):
        return True
    capital = sum(1 for w in words if w[0].isupper() or w.lower() in {"of", "and", "for", "de", "the", "&"}
                  or (w is words[-1] and w.lower() in {"corporation", "company", "limited", "inc", "corp", "ltd", "llc"}))
    return capital == len(words) and len(words) <= 8


_ROLE_ONLY = re.compile(r"(?:(?:the|master|sub|prime|exclusive|authori[sz]ed|independent)\s+)*(?:client|customer|"
                        r"reseller|distributor|franchisor|franchisee|developer|consultant|company|contractor|"
                        r"subcontractor|licensor|licensee|supplier|vendor|agent|sponsor|manufacturer|purchaser|buyer|"
                        r"seller|provider|publisher|partner|member|owner|operator|affiliate)s?", re.I)
"""A defined role and nothing else ("Client", "Master Franchisee"): not a party's name ("between Developer and
Client" names no one; the signature blocks may)."""

_LAST_AND = re.compile(r"(?:^|[\s,;])(?:and|&)\s*[:,]?\s+(?:the\s+)?(?=\S)", re.IGNORECASE)


def _name_start(window: str, first: bool) -> int:
    """Offset in ``window`` where the party's name begins: after "between"/"among" for the first party, after the
    last "and" for the next ones (what lies before it describes the previous party), else at the paragraph start."""
    if not first:  # the first of: the window start, after each "and", that gives a party-like name
        numbered = [m.end() for m in re.finditer(r"(?<![\w)])\(\s*(?:\d{1,2}|[a-h]|[ivx]{1,4})\s*\)\s*(?=[A-Z])", window)]
        for start in [*numbered[-1:], 0, *(m.end() for m in _LAST_AND.finditer(window))]:  # "... (2) Beta PLC"
            if looks_like_party(_clean_name(window[start:])) and not re.match(r"[\s,;]*(?:a|an)\s", window[start:]):
                return start
        # "... to retain Jo Roe ("Consultant")": the name after retain / engage / hire / appoint / employ
        run = re.search(r"\b(?:retain|engage|hire|appoint|employ)s?\s+((?:[A-Z][\w.'’\-]*\s+){1,4}[A-Z][\w.'’\-]*)\s*$", window)
        return run.start(1) if run and looks_like_party(_clean_name(run.group(1))) else len(window)
    between = list(_BETWEEN.finditer(window))
    heading = list(re.finditer(r"\bPARTIES\b:?\s*(?:\(\w{1,3}\)|\d\.)?\s*", window))
    if between or heading:  # "PARTIES (1) Acme Ltd, ..." with no "between"
        return max(between[-1].end() if between else 0, heading[-1].end() if heading else 0)
    cut = 0
    for stop in re.finditer(r"\n\s*|[.:]\s+(?=[A-Z(])", window):
        before = window[max(0, stop.start() - 6):stop.start() + 1]
        line = window[window.rfind("\n", 0, stop.start()) + 1:stop.start()]
        if stop.group().startswith("\n") and "\n" not in stop.group()[1:] and len(line) >= 50 and \
                not re.search(r"[.:;]\s*$", line):
            continue  # a line break inside a wrapped paragraph (a long line that does not end a sentence)
        if not re.search(r"\b(?:Inc|Corp|Co|Ltd|No|Mr|Ms|Dr|St|L\.P|N\.A|S\.A|[A-Z])\.$", before):
            cut = stop.end()
    return cut


def _first_window(head: str, start: int, floor: int, end: int) -> int:
    """Where to look for the first party's name before its defined term at ``end``: from ``start`` (400 characters
    back), unless no name is found there and a "between" up to 1,000 characters back opens a long description
    ("between: X Pty Ltd, registration nr ..., represented by ... (hereinafter "the Customer")")."""
    window = head[start:end]
    if looks_like_party(_clean_name(window[_name_start(window, True):])):
        return start
    between = list(_BETWEEN.finditer(head, max(floor, end - 1000), end))
    return between[-1].start() if between else start


def parties(text: str) -> list[Extraction]:
    """Parties of the preamble: ``Name, a Delaware corporation, with offices at ... ("Company")`` gives the party
    ``Name`` with role ``Company`` (a CUAD-style defined term); the role is mapped to ``licensor``, ``lessee``,
    ``party_a`` ... when it is one. The name runs from "between"/"and" (or the paragraph start) to the first
    description (", a Delaware corporation", "with offices at", "having"). Falls back to ``between X and Y`` without
    defined terms. Addresses between a party's name and the next party belong to that party only."""
    head = text[:PREAMBLE_CHARS]
    stop = next((m for m in re.finditer(r"\b(?:WHEREAS|RECITALS|BACKGROUND|W I T N E S S|NOW,? THEREFORE|WITNESSETH)\b",
                                        head) if m.start() > 300), None)
    head = head[:stop.start()] if stop else head
    found: list[Extraction] = []
    seen: set[str] = set()
    previous_end = floor = 0
    for match in _DEFINED.finditer(head):
        role = next((g for g in match.groups() if g), "").strip()
        window_start = previous_end if found and previous_end else max(floor, match.start() - 400)
        if not found and not _BETWEEN.search(head, window_start, match.start()):
            window_start = _first_window(head, window_start, floor, match.start())
        floor = match.end()
        window = head[window_start:match.start()]
        if _BAD_ROLE.search(role) or len(role) > 40 or len(window) > 1000:
            if not _BAD_ROLE.search(role):
                previous_end = match.end()
            continue
        if len(found) >= 2 and re.search(r"(?:[A-Za-z]{2}(?<!\b(?i:Co|No|St|Rd|LP|SA|AG|NV|BV|AB|KG))(?<!\b(?i:Inc|Ltd|Ave|Ste|LLC|PLC|LLP|Pte|Bhd))"
                                         r"(?<!(?i:Corp))|[)\"”])"
                                         r"\.\s+[A-Z]|\.\s*\n\s*\n", window) and not re.search(
                r"\(\s*(?:\d{1,2}|[a-h]|[ivx]{1,4})\s*\)", window):
            break  # the preamble's sentence has ended: later defined terms ("Racing Team", "JANA Nominees") are not parties
        start_in = _name_start(window, not found)
        name_raw = window[start_in:]
        if not found:  # "between iBio Inc., a corporation, with a location at ... and Beijing CC-Pharming Ltd. ("CC")"
            ands = list(_LAST_AND.finditer(name_raw))
            if ands and re.search(r",\s*(?:a|an)\s|located|address|offices|\d{3,}", name_raw[:ands[-1].start()]):
                other = _clean_name(name_raw[:ands[-1].start()])
                if looks_like_party(other):
                    b0 = window_start + start_in + max(name_raw.find(other[:12]), 0)
                    found.append(Extraction(text=text[b0:b0 + len(other)], start=b0, end=b0 + len(other),
                                            value={"name": other, "role": "party_a", "defined_term": None},
                                            confidence=0.6, source="rule:en_between"))
                    seen.add(_party_key(other))
                start_in += ands[-1].end()
                name_raw = window[start_in:]
        if re.match(r"[\s,;]*(?:a|an)\s", name_raw):  # a second defined term of the previous party
            continue
        name = _clean_name(name_raw)
        if not looks_like_party(name):
            continue
        if re.match(r"(?:this|the|such|each|said|exhibit)\b", name, re.I) and not re.search(
                rf"\b(?:{_LEGAL_FORM})\b", name):
            continue
        previous_end = match.end()
        key = _party_key(name)
        if key in seen:
            continue
        seen.add(key)
        offset = name_raw.find(name[:12])
        begin = window_start + start_in + max(offset, 0)
        end = begin + len(name)
        canonical = _ROLE_NAMES.get(role.lower())
        found.append(Extraction(text=text[begin:end], start=begin, end=end,
                                value={"name": name, "role": canonical or role, "defined_term": role},
                                confidence=0.85, source="rule:en_defined_term"))
    if len(found) == 1:  # "between A, Inc. ("A") located at ... and B Corporation located at ...": B has no term
        tail = head[found[0].end:found[0].end + 400]
        other = re.search(r"\)\s*(?:[,\s][^()]{0,200}?)?\s+and\s+(?:the\s+)?([A-Z][^,;()]{2,80}?(?:,\s*)?\b(?:"
                          + _LEGAL_FORM + r")\b\.?)", tail)
        if other and looks_like_party(_clean_name(other.group(1))):
            name = _clean_name(other.group(1))
            b = found[0].end + other.start(1)
            found.append(Extraction(text=text[b:b + len(name)], start=b, end=b + len(name),
                                    value={"name": name, "role": "party_b", "defined_term": None}, confidence=0.5,
                                    source="rule:en_second_party"))
    lines = _party_lines(head)
    if not found or len(lines) >= 2:  # "Party A: X ... Party B: Y" lines name the parties outright
        found = lines
    if not found:
        found = _between_parties(text, head)
    elif len(found) == 1:  # the other party has no defined term
        key = _party_key(found[0].value["name"])
        found += [p for p in _between_parties(text, head, found[0].start)[:2] if _party_key(p.value["name"]) not in key
                  and key not in _party_key(p.value["name"]) and p.start > found[0].start][:1]
    _attach_addresses(text, head, found)
    addressee = _letter_addressee(text)
    if addressee is not None and not any(_party_key(addressee.value["name"]) in _party_key(p.value["name"]) or
                                         _party_key(p.value["name"]) in _party_key(addressee.value["name"])
                                         for p in found):
        found.append(addressee)
    if len(found) < 2 or re.search(r"joint\s+filing|schedule\s+13[dg]|\b13[dg]\b", text[:1500], re.I):  # the signature blocks name the rest
        keys = [_party_key(p.value["name"]) for p in found]
        added: set[str] = set()
        for party in signature_parties(text):
            key = _party_key(party.value["name"])
            if key and key not in added and not any(key in k or k in key for k in keys if k):
                found.append(party)
                added.add(key)
    return [_with_abbreviation_dot(text, p) for p in found]


_SALUTATION = re.compile(r"\b(?:Ladies\s+and\s+Gentlemen|Dear\s+(?:Sirs?\b|Madam\b|(?:Mr|Ms|Mrs|Dr)\.?\s+[A-Z][\w\-]+|"
                         r"(?P<first>[A-Z][a-z]+))\s*[:,])")
_ADDRESSEE = re.compile(rf"[A-Z][\w'’.&\-]*(?:,?\s+(?:&\s+)?[A-Z][\w'’.&\-]*){{0,7}}?,?\s+(?:{_LEGAL_FORM})\b\.?")


def _letter_addressee(text: str) -> Extraction | None:
    """The addressee of a letter agreement: the first company name (one with a legal form) between the letter's
    date and its salutation ("May 14, 2014 / Keefe, Bruyette & Woods, Inc. / 10 South Wacker Drive ... / Ladies
    and Gentlemen:"), or the person a "Dear Gianluca:" letter is addressed to (the line that starts with that first
    name); ``None`` when the text is no letter."""
    from .. import normalize as nz

    salutation = _SALUTATION.search(text, 0, 3000)
    if salutation is None:
        return None
    dates = [d for d in nz.dates_in(text[max(0, salutation.start() - 600):salutation.start()])]
    begin = max(0, salutation.start() - 600) + dates[-1][1] if dates else max(0, salutation.start() - 400)
    block = text[begin:salutation.start()]
    first = salutation.group("first")
    match = (re.search(rf"(?m)^[ \t]*({re.escape(first)}(?:\s+[A-Z][\w'’\-]+){{1,3}})[ \t]*$", block) if first
             else _ADDRESSEE.search(block))
    if match is None:
        return None
    raw = match.group(1) if first else match.group()
    name = _clean_name(raw)
    if not looks_like_party(name):
        return None
    b = begin + (match.start(1) if first else match.start()) + max(raw.find(name[:12]), 0)
    return Extraction(text=text[b:b + len(name)], start=b, end=b + len(name),
                      value={"name": name, "role": "addressee", "defined_term": None}, confidence=0.6,
                      source="rule:en_letter_addressee")


_ABBREVIATED_FORM = re.compile(r"\b(?:Inc|Corp|Co|Ltd|Bhd|Pte|Pty|Ltda|L\.P|N\.A|S\.A|B\.V|N\.V|S\.p\.A|S\.r\.l|"
                               r"L\.L\.C|P\.C|a\.s|s\.r\.o|S\.L|S\.A\.R\.L|S\.A\.S|Jr|Sr)$", re.I)


def _with_abbreviation_dot(text: str, party: Extraction) -> Extraction:
    """The name with the full stop of its abbreviated legal form ("Acme, Inc." not "Acme, Inc"): the name rules
    strip trailing punctuation, which also took the dot that is part of the name."""
    name = party.value["name"]
    if party.text == name and text[party.end:party.end + 1] == "." and _ABBREVIATED_FORM.search(name):
        return party.model_copy(update={"text": name + ".", "end": party.end + 1,
                                        "value": {**party.value, "name": name + "."}})
    return party


_BETWEEN_WORD = re.compile(r"\b(?:by\s+and\s+)?(?:between|among|amongst)\b\s*[:,]?\s*(?:the\s+)?", re.IGNORECASE)
_TAIL = re.compile(r",\s+(?:for|in|on|to|under|as\s+of|relating|regarding|concerning)\s|"
                   r",?\s+(?:which|that|dated|effective|whereby|pursuant|shall|will|hereby|agrees?)\b")
"""What ends the last party of a "between" sentence: "..., and Beta Gadgets, for the supply of ..."."""
_DESCRIBED = re.compile(r",\s*(?:a|an)\s|\b(?:located|address|offices?|having|with|whose|residing|registered|"
                        r"organi[sz]ed|incorporated)\b|\d|\)", re.IGNORECASE)
_SPLIT = re.compile(r"(?:,\s*|\s+)(?i:and|&)\s*:?\s+(?:(?i:the)\s+)?(?=[A-Z0-9])|;\s*(?:(?i:and)\s+)?(?=[A-Z])")


def _preamble_sentence(head: str, start: int) -> int:
    """End of the sentence that names the parties: a full stop before a capitalised word (not after Inc., Co.,
    an initial ...), a full stop before a blank line, or a recital heading; at most 1,200 characters."""
    limit = min(len(head), start + 1200)
    for stop in re.finditer(r"\.\s*\n\s*\n(?!\s*(?i:and)\b)|\.\s+(?=[A-Z][a-z])(?!(?i:hereinafter|hereafter|and)\b)|\b(?:WHEREAS|Whereas|RECITALS|Recitals|"
                            r"W\s?I\s?T\s?N\s?E\s?S\s?S|NOW,?\s+THEREFORE|BACKGROUND)\b", head[start:limit]):
        before = head[max(0, start + stop.start() - 6):start + stop.start()]
        if stop.group().startswith(".") and "\n" not in stop.group() and re.search(
                r"(?:\b(?i:Inc|Corp|Co|Ltd|No|Mr|Ms|Mrs|Dr|Prof|St|Jr|Sr|Ave|Blvd|Ste|L\.P|N\.A|S\.A|B\.V|N\.V)|\b[A-Z])$",
                before):
            continue
        return start + stop.start()
    return limit


def _listed(name: str) -> list[str]:
    """A list of companies written as one name, split after each legal form: "Alpha Inc., Beta Widgets LLC" -> both
    (a piece that is only a legal form or a place stays with the name before it: "Acme, Inc., Delaware")."""
    cuts = [m.end() for m in re.finditer(rf"\b(?:{_LEGAL_FORM})\b\.?(?=,\s+[A-Z])", name)]
    parts, start = [], 0
    for cut in cuts:
        rest = name[cut:].lstrip(" ,")
        end = re.search(rf"\b(?:{_LEGAL_FORM})\b\.?(?=,|$)", rest)
        piece = rest[:end.end()] if end else rest
        if re.match(rf"(?:{_LEGAL_FORM})\b", rest) or _known_place(rest.split(",")[0]) or not looks_like_party(piece) \
                or len(piece.split("(")[0].split()) < 2:  # "GUARANTY BANK, FSB": a one-word piece stays
            continue
        parts.append(name[start:cut].strip(" ,."))
        start = cut
    parts.append(name[start:].strip(" ,"))
    return [p for p in parts if p]


def _between_parties(text: str, head: str, before: int | None = None) -> list[Extraction]:
    """``between X[, description] and Y[, description]`` without defined terms: the sentence after the first
    "between"/"among" that gives two names is split at the "and" (or ";") that leaves a party-like name on both
    sides, preferring a split whose left side ends in a description (", a Delaware corporation", "located at",
    an address) and names with a legal form (only a "between" that starts in the first 2,500 characters, or before
    ``before``): "between Centre for Probe Development and Commercialization, a
    not-for-profit institution, and Fusion Inc." splits at the second "and"."""
    for n_between, between in enumerate(list(_BETWEEN_WORD.finditer(head))[:4]):
        if between.start() >= (2500 if before is None else before):
            break
        end = _preamble_sentence(head, between.end())
        sentence = head[between.end():end]
        best, best_score = None, -1.0
        for split in _SPLIT.finditer(sentence):
            left_raw, right_raw = sentence[:split.start()], _TAIL.split(sentence[split.end():], maxsplit=1)[0]
            left, right = _clean_name(left_raw), _clean_name(right_raw)
            if not (looks_like_party(left) and looks_like_party(right)) or _ROLE_ONLY.fullmatch(left) or \
                    _ROLE_ONLY.fullmatch(right) or _party_key(left) == _party_key(right):
                continue
            score = (2.0 * bool(_DESCRIBED.search(left_raw[len(left):] if left_raw.strip().startswith(left[:8])
                                                  else left_raw)) +
                     bool(re.search(rf"\b(?:{_LEGAL_FORM})\b", left)) + bool(re.search(rf"\b(?:{_LEGAL_FORM})\b", right))
                     + 0.5 * sentence[split.start():split.end()].lstrip().startswith((",", ";")))
            if score > best_score:
                best, best_score = (left_raw, left, split.end(), right_raw, right), score
        if best is None:  # "between Chase Bank USA, N.A. and you": the one side that is a name
            split = re.search(r"\s+(?i:and|&)\s+", sentence)
            if split is None or n_between:
                continue
            left_raw, right_raw = sentence[:split.start()], _TAIL.split(sentence[split.end():], maxsplit=1)[0]
            best = (left_raw, _clean_name(left_raw), split.end(), right_raw, _clean_name(right_raw))
        left_raw, left, right_at, right_raw, right = best
        out = []
        for n, (raw, whole, offset) in enumerate(((left_raw, left, 0), (right_raw, right, right_at))):
            if not looks_like_party(whole) or _ROLE_ONLY.fullmatch(whole):
                continue
            at = 0
            for name in _listed(whole):
                begin = between.end() + offset + max(raw.find(name[:12], at), 0)
                at = begin - between.end() - offset + len(name)
                out.append(Extraction(text=text[begin:begin + len(name)], start=begin, end=begin + len(name),
                                      value={"name": name, "role": "party_a" if n == 0 else "party_b",
                                             "defined_term": None}, confidence=0.6, source="rule:en_between"))
        if out:
            return out
    return []


def _party_lines(head: str) -> list[Extraction]:
    """``Party A: X Address: ...`` / ``Party B (Shipper): Y Legal Representative: ...`` lines, several to a line, and
    ``Landlord: X`` / ``Tenant: Y`` / ``Licensor: X`` ... lines (a role word alone at a line's start); each party
    with the ``Address:`` / ``Contact:`` / ``Tel:`` / ``Email:`` lines of its own block
    (:func:`lines.attach_line_attributes`)."""
    found: list[Extraction] = []
    for line in re.finditer(r"(?:^|(?<=\s\s)|(?<=[a-z.;] ))\s*(?i:Party)\s+(?P<r>[A-Ca-c])\s*(?:\([^()\n]{1,30}\))?\s*"
                            r"[:：]\s*(?P<n>[^\n]{3,120}?)(?=\s+(?:[A-Z][a-z]+\s+)?(?:Address|address|Legal\s+"
                            r"(?i:representative))\s*:|\s{3,}|\s*$)", head, re.M):
        name = _clean_name(re.sub(r"\s*[(（][^()（）]*[\u4e00-\u9fff][^()]*[)）]?\s*$|\s*\(\s*(?:the\s+)?[\"“][^()]*\)\s*$",
                                  "", line.group("n")))  # a Chinese name or a defined term in brackets after it
        role = "party_" + line.group("r").lower()
        if looks_like_party(name) and role not in {p.value["role"] for p in found}:
            b = line.start("n")
            found.append(Extraction(text=head[b:b + len(name)], start=b, end=b + len(name),
                                    value={"name": name, "role": role, "defined_term": f"Party {line.group('r')}"},
                                    confidence=0.85, source="rule:en_party_line"))
    if not found:
        for line in ROLE_LINE.finditer(head):
            name = _clean_name(re.split(r"\s+(?:Address|Contact|Tel|Phone|E-?mail|Attn)\s*:|\s+(?:"
                                        + "|".join(ROLE_WORDS) + r")\b", line.group("n"), maxsplit=1, flags=re.I)[0])
            role = ROLE_WORDS[line.group("w").lower()]
            if looks_like_party(name) and not _ROLE_ONLY.fullmatch(name) and \
                    role not in {p.value["role"] for p in found}:
                b = line.start("n")
                found.append(Extraction(text=head[b:b + len(name)], start=b, end=b + len(name),
                                        value={"name": name, "role": role, "defined_term": line.group("w")},
                                        confidence=0.8, source="rule:en_party_line"))
        if len(found) < 2:  # one "Licensor: X" line alone is no party list ("Licensor: X Licensee Y" on one line)
            found = []
    attach_line_attributes(head, found, len(head))
    return found


_KEY_FORMS = {"inc", "incorporated", "corp", "corporation", "co", "company", "llc", "ltd", "limited", "lp", "llp",
              "plc", "the", "sa", "nv", "bv", "ag", "gmbh"}


def _party_key(name: str) -> str:
    return "".join(w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _KEY_FORMS)


def _attach_addresses(text: str, head: str, found: list[Extraction]) -> None:
    for n, party in enumerate(found):
        if "address" in party.relations:  # an Address: line of its own block
            continue
        limit = found[n + 1].start if n + 1 < len(found) else min(len(head), party.end + 400)
        segment = text[party.end:limit]
        match = re.search(r"(?:principal\s+(?:place\s+of\s+business|offices?|executive\s+offices?)|offices?|"
                          r"address|residing|located)\s+(?:is\s+)?(?:at|in)\s+(.{8,200}?)(?=\s*[(;]|\s*,?\s*\(|"
                          r"\s+and\s+[A-Z]|\.\s|$)", segment, re.IGNORECASE | re.DOTALL)
        if match:
            begin = party.end + match.start(1)
            raw = match.group(1).rstrip(" ,")
            party.relations["address"] = [Extraction(text=raw, start=begin, end=begin + len(raw),
                                                     value=re.sub(r"\s+", " ", raw), confidence=0.7,
                                                     source="rule:en_party_address")]
