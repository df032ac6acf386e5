"""Governing law of English contracts, normalised as CUAD's ``Governing Law-Answer`` column writes it.

Passes, first that finds a place wins: (1) a sentence that says the contract is governed / construed / interpreted
by "the laws of X" (several laws in one sentence give ``"X; Y"``, as CUAD writes them: ``laws of England and
Wales`` -> ``England; Wales``; "the laws thereof" / "of that State" read the state the sentence names);
(2) the adjective form ("governed by English law", "Ohio law", "PRC Laws"); (3) weaker phrasings ("controlled by /
subject to / pursuant to the laws of X", "the legislation of X shall apply", "in accordance with the laws of X" when
not about where a party is organised); (4) the dispute clause: the courts or arbitration place the contract sends
disputes to, when no sentence names a law. Developed on CUAD train and validation contracts and
contracts_more (the development pool) only, never the test split.
"""

from __future__ import annotations

import bisect
import re

from ..schema import Extraction

GOV_CUE = re.compile(r"\b(?:govern(?:ed|s|ing)?|construed|interpreted|determined\s+in\s+accordance|applicable\s+law\s+"
                     r"(?:is|shall\s+be))\b", re.I)
GOV_RE = re.compile(r"\b(?:laws?|legislation|regulations)\b(?:\s+and\s+(?:judicial\s+)?decisions)?(?:,[^,]{0,60},)?\s*(?:in\s+force\s+)?(?:(?:of|in)"
                    r"(?:\s+|(?=the\b|[A-Z]))(?:and\s+in\s+accordance\s+with\s+)?|(?=thereof\b))", re.IGNORECASE)
US_STATES = ("Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii Idaho "
             "Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota "
             "Mississippi Missouri Montana Nebraska Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah "
             "Vermont Virginia Washington Wisconsin Wyoming").split() + [
    "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Rhode Island",
    "South Carolina", "South Dakota", "West Virginia", "District of Columbia"]
PROVINCES = ("Ontario", "British Columbia", "Alberta", "Quebec", "Manitoba", "Saskatchewan", "Nova Scotia",
             "New Brunswick")
COUNTRIES = ("People's Republic of China", "Hong Kong", "Taiwan", "Singapore", "Japan", "Korea", "India", "Israel",
             "England", "Wales", "Scotland", "Ireland", "Germany", "France", "Italy", "Spain", "Switzerland",
             "Netherlands", "Sweden", "Canada", "Australia", "Mexico", "Brazil", "Cayman Islands", "Bermuda",
             "Luxembourg", "Kazakhstan", "China", "Denmark", "Norway", "Finland", "Belgium", "Austria")
_ALIASES = {"prc": "People's Republic of China", "p.r.c": "People's Republic of China",
            "people's republic of china": "People's Republic of China",
            "r.o.c": "Taiwan", "roc": "Taiwan", "republic of china": "Taiwan", "united kingdom": "England",
            "hong kong special administrative region": "Hong Kong", "the netherlands": "Netherlands"}
_ADJECTIVES = {"prc": "People's Republic of China", "chinese": "People's Republic of China", "english": "England",
               "israeli": "Israel", "italian": "Italy", "german": "Germany", "french": "France", "swiss": "Switzerland",
               "taiwanese": "Taiwan", "japanese": "Japan", "korean": "Korea", "indian": "India", "dutch": "Netherlands",
               "canadian": "Canada", "singapore": "Singapore", "hong kong": "Hong Kong", "spanish": "Spain",
               "swedish": "Sweden", "norwegian": "Norway", "danish": "Denmark", "finnish": "Finland",
               "belgian": "Belgium", "austrian": "Austria", "irish": "Ireland", "scottish": "Scotland",
               "australian": "Australia", "mexican": "Mexico", "brazilian": "Brazil"}
_PLACE = re.compile(r"(?:the\s*)?(?:(?:(?i:State|Commonwealth|Province)|Republic|Kingdom|Hong\s+Kong\s+Special\s+"
                    r"Administrative\s+Region)\s+of\s*)?((?:[A-Z][\w'’.\-]*|of|and|the)(?:\s+(?:[A-Z][\w'’.\-]*|of|"
                    r"and|the))*)")
_BACKREF = re.compile(r"(?:the\s+)?(?:thereof|that\s+(?:State|Commonwealth|jurisdiction|country)|such\s+(?:State|"
                      r"Commonwealth|jurisdiction)|said\s+(?:State|Commonwealth))\b", re.I)
_NOT_PLACES = {"any", "such", "its", "this", "the", "that", "each", "said", "which", "a", "all"}


def known_place(place: str) -> str | None:
    """The canonical jurisdiction ``place`` starts with (a US state, a Canadian province, a country), or None."""
    lower = re.sub(r"\s+", " ", place).replace("’", "'").lower().strip()
    lower = re.sub(r"^(?:the\s+)?(?:s\w?ate|commonwealth|province)\s+of\s*", "", lower)  # "Siate of Texas" (OCR)
    lower = re.sub(r"^the\s+", "", lower)
    for state in sorted(US_STATES, key=len, reverse=True):
        if re.match(re.escape(state.lower()) + r"\b(?!\s+(?:city|county))", lower):
            if state == "Washington" and lower.startswith("washington, d"):
                return "District of Columbia"
            return state
    for province in PROVINCES:
        if lower.startswith(province.lower()):
            return f"{province}, Canada"
    for alias, canonical in sorted(_ALIASES.items(), key=lambda a: -len(a[0])):
        if re.match(re.escape(alias) + r"(?![\w])", lower):
            return canonical
    for country in COUNTRIES:
        if re.match(re.escape(country.lower()) + r"\b", lower):
            return country
    return None


def jurisdiction(place: str) -> str:
    """CUAD's normal form of a governing-law place: a US state's name ("State of New York" -> "New York"), a
    province with its country ("Ontario, Canada"), a country's common name ("People's Republic of China");
    otherwise the place as written, up to the first word that is not part of it."""
    place = re.sub(r"\s+", " ", place).strip(" ,.;").replace("’", "'")
    known = known_place(place)
    if known:
        return known
    place = re.sub(r"^(?:the\s+)?(?:State|Commonwealth|Province)\s+of\s+", "", place, flags=re.I)
    place = re.sub(r"^the\s+", "", place, flags=re.I)
    return re.sub(r"\s+(?:and|without|excluding|applicable|as|in|including|except|which|that|exclusive|to|"
                  r"regardless|other|for|notwithstanding|with)\b.*$", "", place, flags=re.I)


_UNNAMED = re.compile(r"(?:the\s+)?(state|commonwealth|province|country|jurisdiction)(\s+(?:in\s+which|where)\s+"
                      r"[^,.;:()]{3,80}?)(?=\s*(?:[,.;:()]|$|\s+(?:without|excluding|except|as\s+(?:applied|such)|"
                      r"shall|will)\b))", re.I)
"""A law named by where something is, not by a place ("the laws of the State in which the Franchised Restaurant is
located"): CUAD writes the phrase itself."""


def _places_after(sentence: str, at: int) -> tuple[list[str], int]:
    """Places named at ``sentence[at:]`` (after "laws of"), with the offset where the last one ends.
    "England and Wales" gives both; "the State of California and the laws of Hong Kong" gives both."""
    rest = sentence[at:]
    backref = _BACKREF.match(rest)
    if backref:  # "the laws thereof", "the laws of that State": the state the sentence names
        named = re.search(r"(?:State|Commonwealth)\s+of\s+([A-Z][\w ]{2,30})", sentence) or re.search(
            r"\bin\s+(?:the\s+)?([A-Z][\w ]{2,30})", sentence)
        value = known_place(named.group(1)) if named else None
        return ([value], at + backref.end()) if value else ([], at)
    place = _PLACE.match(rest)
    either = re.search(r"\beither\s+(?:the\s+)?([A-Z][\w ]{2,30}?)\s+or\s+(?:the\s+)?([A-Z][\w ]{2,30})", rest[:200])
    if either and known_place(either.group(1)) and known_place(either.group(2)):
        # "the state where a suit is filed, being either Illinois or New York"
        return [known_place(either.group(1)), known_place(either.group(2))], at + either.end()
    unnamed = _UNNAMED.match(rest)
    if unnamed:  # "the laws of the State in which the Franchised Restaurant is located": a rule, no named place
        return ["the " + re.sub(r"\s+", " ", unnamed.group(1).lower() + unnamed.group(2))], at + unnamed.end()
    if not place or not place.group(1).strip():
        return [], at
    name = re.sub(r"(?:\s+(?:and|the|of))+$", "", place.group(1))
    name = re.sub(r"(?<=[a-z]{2})\.$|(?<=\.)\.$", "", name)  # the sentence's full stop
    raw = rest[:place.start(1) + len(name)]
    parts = re.split(r"\s+and\s+(?:the\s+)?", name)
    if len(parts) > 1 and all(known_place(p) for p in parts):
        values = [known_place(p) for p in parts]
    else:
        values = [jurisdiction(raw)]
    end = at + len(raw)
    country = re.match(r"\s*,\s*(?:the\s+)?(" + "|".join(COUNTRIES) + r")\b", sentence[end:])
    if country and len(values) == 1 and not known_place(values[0]) and values[0] != country.group(1):
        values = [f"{values[0]}, {country.group(1)}"]  # "the laws of Victoria, Australia": CUAD keeps the country
        end += country.end()
    more = re.match(r"\s*,?\s*(?:and|or)\s+(?:the\s+)?(?:laws?\s+of\s+)", sentence[end:])
    if more:
        extra, extra_end = _places_after(sentence, end + more.end())
        if extra and all(known_place(x) for x in extra):
            values += extra
            end = extra_end
    return values, end


def _value(values: list[str], sentence: str) -> str | None:
    values = [v for v in dict.fromkeys(values) if v and (v[0].isupper() or v.startswith("the ")) and
              v.lower() not in _NOT_PLACES]
    if not values:
        return None
    if values[0].lower() in {"united states", "united states of america", "u.s.a", "usa"}:
        state = re.search(r"(?:State|Commonwealth)\s+of\s+([A-Z][\w ]+)", sentence)
        if state and known_place(state.group(1)):
            values[0] = known_place(state.group(1))
    if re.search(r"federal\s+laws\s+of\s+Canada", sentence) and not values[0].endswith("Canada"):
        values[0] = f"{values[0]}, Canada"
    values = [v for v in values if not any(o != v and (o.endswith(", " + v) or (
        v.lower().startswith("united states") and o in US_STATES)) for o in values)]  # "Nova Scotia and Canada"
    return "; ".join(dict.fromkeys(values))


_EXCEPT_LAW = re.compile(r"[^.;]{0,60}?\bexcept\b(?:[^.;]|(?<=\d)\.(?=\d)){0,250}?\b(?:governed|construed|interpreted)\s+"
                         r"(?:(?:in\s+accordance\s+with|and\s+\w+|by|under)\s+){1,4}the\s+laws?\s+of\s+", re.I)
"""A second law the same sentence names for a part of the contract, after "except" ("except Section 25, which shall
be governed by the laws of the Commonwealth of Massachusetts"; "Section 20.1" keeps its full stop); not a kind of law ("except with respect to issues
governed by the copyright laws of the United States": the words before "laws" are no "the")."""


def _law_sentences(text: str, spans: list[tuple[int, int]], cue: re.Pattern[str], source: str,
                   confidence: float, every: bool = False) -> list[Extraction]:
    """The first sentence's law (or, with ``every``, the first law of every sentence that names one)."""
    out: list[Extraction] = []
    for start, end in spans:
        sentence = text[start:end]
        if not cue.search(sentence) or re.search(r"\bnot\s+be\s+governed|conflicts?\s+of\s+laws?\s+of\s+$",
                                                 sentence[:40], re.I):
            continue
        for match in GOV_RE.finditer(sentence):
            before = sentence[max(0, match.start() - 60):match.start()]
            if re.search(r"conflicts?\s+(?:of\s+)?$|choice\s+of\s+$|principles\s+of\s+$", before[-14:], re.I):
                continue
            if source != "rule:en_governing_law" and re.search(
                    r"organi[sz]ed|incorporated|existing|formed|registered|duly", before, re.I):
                continue
            values, raw_end = _places_after(sentence, match.end())
            value = _value(values, sentence)
            if value is None or (match.group().lower().startswith("regulations") and not (known_place(value) or re.match(
                    r"\s*(?:the\s+)?(?:Republic|State|Commonwealth|Kingdom|Province)\s+of\b", sentence[match.end():]))):
                continue  # "the rules and regulations of MICOA" is no governing law
            but = _EXCEPT_LAW.match(sentence, raw_end)
            if but and source == "rule:en_governing_law":
                # "... the laws of such state, except that Section 20.1 shall be governed by the laws of the state in
                # which the breach occurs": a second law for a part, which CUAD lists after the first
                extra, extra_end = _places_after(sentence, but.end())
                if _value(extra, sentence):
                    value = _value(values + extra, sentence) or value
                    raw_end = extra_end
            b = start + match.start()
            out.append(Extraction(text=text[b:start + raw_end], start=b, end=start + raw_end, value=value,
                                  confidence=confidence, source=source))
            if not every:
                return out
            break
    return out


_OWN_LAW = re.compile(r"\b(?:this|the)\s+(?:[\w-]+\s+){0,4}?(?:agreement|amendment|contract|lease|licen[cs]e|guarant\w*|"
                      r"note|plan|manual|terms|addendum)\b(?:(?!\.\s).){0,250}?\b(?:govern(?:ed|s)|construed|interpreted)"
                      r"|governing\s+law\b|\bgoverned\s+by\b", re.I | re.S)
_OTHER_LAW = re.compile(r"\bcompl(?:y|ies|iance)\b|\bexport|securities\s+laws|\btax(?:es|ation)?\b|\bantitrust|"
                        r"\bpatents?\b|\bopinions?\b", re.I)


_NAMES_CONTRACT = re.compile(r"\b(?:this|the)\s+(?:[\w-]+\s+){0,3}?(?:agreement|amendment|contract|lease)\b", re.I)
"""The law's own sentence names the contract ("... of this Contract ... shall be governed by"), not only what it
sets up ("The activities of the Joint Venture Company shall be governed by the laws ... of China")."""


def _own_law(text: str, found: list[Extraction]) -> Extraction:
    """Of the laws several sentences name, the one the contract is governed by: a sentence that says "this
    Agreement ... governed / construed" (or "governing law") before another, one whose own sentence is about
    compliance, export, securities law, tax, patents or the laws a legal opinion covers after the rest, and a US
    state before "the United States" (federal law named beside the state's, or in a patent clause), one whose own
    sentence names the contract before one about something else (a joint venture company's activities); the first
    in the contract among equals."""

    def score(e: Extraction) -> float:
        sentence = text[max(0, e.start - 250):e.end]
        own = re.split(r"(?<=[.;])\s+(?=[A-Z(])|\n\s*\n", sentence)[-1]  # the law's own sentence
        return (2.0 * bool(_OWN_LAW.search(sentence)) - 1.5 * bool(_OTHER_LAW.search(own))
                - 1.0 * e.value.lower().startswith("united states") + 0.5 * bool(_NAMES_CONTRACT.search(own)))

    return max(found, key=lambda e: (score(e), -e.start))


_WEAK_CUE = re.compile(r"\b(?:controlled|subject|pursuant|according)\s+(?:to|by)\s+(?:the\s+)?(?:\w+\s+){0,4}?"
                       r"(?:laws?|legislation)\b|\b(?:laws?|legislation)\s+of\s+.{2,60}?\s+shall\s+apply|"
                       r"\bin\s+accordance\s+with\s+the\s+laws?\s+of", re.I)
_ADJECTIVE = re.compile(
    r"(?:governed|construed|interpreted|subject\s+to\s+the\s+application\s+of|subject\s+to)\s+(?:[\w,]+\s+){0,3}?"
    r"(?:by|under|in\s+accordance\s+with|of)?\s*(?:the\s+)?(?:internal\s+)?(?:(?:State|Commonwealth)\s+of\s+)?(?P<a>" + "|".join(st.replace(" ", r"\s+") for st in US_STATES)
    + r"|PRC|Chinese|English|Israeli|Italian|German|French|Swiss|Taiwanese|Japanese|Korean|Indian|Dutch|Canadian|"
      r"Singapore|Hong\s+Kong|Spanish|" + "|".join(a for a in _ADJECTIVES if " " not in a) + r")\s+laws?\b(?!\s+(?:enforcement|firms?|schools?|"
      r"departments?|offices?))", re.IGNORECASE)


_ENDED = re.compile(r"[.;:)]\s*$")
_OPEN_END = re.compile(r"\b(?i:the|of|to|and|or|by|with|under|in|a|an|laws?|governed|construed)$")
_BLANK_LINE = re.compile(r"\n\s*\n")


def _rejoined(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` with a sentence that a blank line cut in two joined again ("construed in accordance with, the" /
    "laws of the State of Georgia"): a span that ends without . ; : or ) joins the next when that starts lower case
    or when it ends in a word no sentence ends with ("... CONTROLLED BY" / "THE LAWS OF THE STATE OF TEXAS": a line
    of capitals that the segmenter took for a heading), or when only a line break (no blank line) parts them; a
    joined span stays under 1,500 characters."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        previous = text[max(out[-1][0], out[-1][1] - 40):out[-1][1]] if out else ""
        gap = text[out[-1][1]:start] if out else ""
        if out and end - out[-1][0] < 1500 and not _ENDED.search(previous) and (
                text[start:start + 1].islower() or _OPEN_END.search(previous) or
                "\n" in gap and not _BLANK_LINE.search(gap)):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


_CANONICAL = [*US_STATES, *PROVINCES, *COUNTRIES, "PRC", "P.R.C", "R.O.C", "United States of America", "United States",
              "United Kingdom", "U.S.A", "USA", "Hong Kong Special Administrative Region", "State", "Commonwealth",
              "Province", "Republic", "Kingdom", "Federal Republic"]
_RECASE = re.compile(r"(?:(?<![\w.])|(?<=\bof)|(?<=\bofthe))(?:" + "|".join(r"\s+".join(re.escape(w) for w in c.split()) for c in sorted(
    _CANONICAL, key=len, reverse=True)) + r")(?![\w])", re.IGNORECASE)
_CANON_BY_KEY = {re.sub(r"\s+", " ", c.lower()): c for c in _CANONICAL}
_AFTER_OF = re.compile(r"\b(?i:laws?|legislation|state|commonwealth|province|republic|kingdom)\s+of\s*(?:the\s+)?"
                       r"((?:[a-z][\w'’.\-]*\s*){1,3})")
_FUNCTION_WORDS = {"and", "the", "of", "without", "excluding", "applicable", "as", "in", "including", "except", "which",
                   "that", "to", "regardless", "other", "for", "notwithstanding", "with", "shall", "its", "their", "any",
                   "such", "this", "said", "thereof", "a", "an", "or", "is", "are", "be", "will", "may", "state",
                   "commonwealth", "province", "republic", "kingdom", "giving", "given", "effect", "conflict",
                   "conflicts", "choice", "principles", "rules", "provisions", "law", "laws"}


_LAWISH = re.compile(r"LAW|LEGISLATION|REGULATION|COURT|ARBITRA|JURISDICTION|VENUE|GOVERN", re.IGNORECASE)
_LOWER, _UPPER = re.compile(r"[a-z]"), re.compile(r"[A-Z]")


def _truecased(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with every sentence written in capitals ("THIS AGREEMENT SHALL BE GOVERNED BY THE LAWS OF THE STATE OF
    NEW YORK") lower-cased except the places it names and the words after "laws of" ("... the laws of the State of
    New York"), so that the passes, which tell a place by its capital letter, read it; same length and offsets."""
    out = None
    starts = [s for s, _ in spans]
    hits = []
    for word in ("LAW", "GOVERN", "COURT", "ARBITRA", "JURISDICTION", "LEGISLATION", "REGULATION", "VENUE"):
        at = text.find(word)
        while at >= 0:
            hits.append(at)
            at = text.find(word, at + len(word))
    candidates = sorted({max(0, bisect.bisect_right(starts, hit) - 1) for hit in hits})
    for start, end in (spans[i] for i in candidates):  # only sentences that name a law etc. in capitals
        sentence = text[start:end]
        if not _LAWISH.search(sentence):
            continue
        lower_count, upper_count = len(_LOWER.findall(sentence)), len(_UPPER.findall(sentence))
        if upper_count < 20 or upper_count < 4 * lower_count:  # at least 80 % of the letters in capitals
            continue
        lower = sentence.lower()
        lower = _RECASE.sub(lambda m: "".join(
            w if w.isspace() else _CANON_BY_KEY[re.sub(r"\s+", " ", m.group().lower())].split()[i // 2]
            for i, w in enumerate(re.split(r"(\s+)", m.group()))), lower)
        for m in _AFTER_OF.finditer(lower):
            words = re.split(r"(\s+)", m.group(1))
            fixed, stop = [], False
            for w in words:
                stop = stop or (not w.isspace() and w.strip(",.;").lower() in _FUNCTION_WORDS)
                fixed.append(w if stop or w.isspace() else w[:1].upper() + w[1:])
            lower = lower[:m.start(1)] + "".join(fixed) + lower[m.end(1):]
        out = (out if out is not None else text)
        out = out[:start] + lower + out[end:]
    return text if out is None else out


def governing_law(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The governing law's place(s), CUAD-normalised (module docstring); ``[]`` when no pass finds one. Sentences
    written in capitals are read through ``_truecased``; ``text`` of the result is always the contract's own."""
    spans = _rejoined(text, spans)
    proxy = _truecased(text, spans)
    found = _governing_law(proxy, spans)
    return [f.model_copy(update={"text": text[f.start:f.end]}) for f in found]


def _governing_law(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    found = _law_sentences(text, spans, GOV_CUE, "rule:en_governing_law", 0.9, every=True)
    if found:
        return [_own_law(text, found)]
    for start, end in spans:
        match = _ADJECTIVE.search(text, start, end)
        if match:
            place = re.sub(r"\s+", " ", match.group("a"))
            return [Extraction(text=match.group(), start=match.start(), end=match.end(),
                               value=_ADJECTIVES.get(place.lower(), known_place(place) or place), confidence=0.8,
                               source="rule:en_governing_law_adjective")]
    found = _law_sentences(text, spans, _WEAK_CUE, "rule:en_governing_law_weak", 0.6)
    if found:
        return found
    return _from_disputes(text, spans)


_FORUM_CITIES = {"beijing": "Beijing", "shanghai": "Shanghai", "shenzhen": "Shenzhen", "people's court":
                 "People's Republic of China", "people’s court": "People's Republic of China"}
_FORUM_PLACE = re.compile(r"\b(?:" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(
    [*US_STATES, *PROVINCES, *COUNTRIES, "PRC", "P.R.C", "China", "United Kingdom", *_FORUM_CITIES], key=len,
    reverse=True)) + r")\b", re.I)
_VENUE = re.compile(r"\b(?:courts?|tribunals?|arbitrat\w*|venue|jurisdiction)\b", re.I)


def _from_disputes(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The places of the courts or the arbitration that disputes go to ("arbitration in McLean, Virginia", "a court
    located in the Commonwealth of Massachusetts or in any court in the Netherlands"), when no sentence names a
    law; confidence 0.4."""
    for start, end in spans:
        sentence = text[start:end]
        venue = _VENUE.search(sentence)
        if not venue or not re.search(r"disput|claim|action|suit|proceeding|litigat", sentence, re.I):
            continue
        places = []
        for match in _FORUM_PLACE.finditer(sentence, max(0, venue.start() - 30)):
            if re.match(r"\s+(?:corporation|company|limited|law|laws)\b", sentence[match.end():], re.I):
                continue  # a party's description or a law, not a forum
            name = match.group().lower().replace("’", "'")
            value = _FORUM_CITIES.get(name) or known_place(match.group())
            if value:
                places.append((match, value))
        if places:
            b, e = start + places[0][0].start(), start + places[-1][0].end()
            return [Extraction(text=text[b:e], start=b, end=e, value="; ".join(dict.fromkeys(v for _, v in places)),
                               confidence=0.4, source="rule:en_governing_law_forum")]
    return []
