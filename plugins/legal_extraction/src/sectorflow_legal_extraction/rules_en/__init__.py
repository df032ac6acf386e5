"""Rules for English contracts: dates, term, renewal, notice, dispute resolution, amounts and clause fields; parties
(``rules_en.party_rules``) and governing law (``rules_en.law``) live in their own modules and are re-exported here.

Each function returns ``list[Extraction]`` (empty when nothing is found: nothing is guessed). Developed on CUAD
train and validation contracts and contracts_more (the development pool) only; ``benchmarks/legal_eval.py`` measures
them on the test contracts.
"""

from __future__ import annotations

import re
from decimal import Decimal

from .. import normalize as nz
from .date_cues import (MADE_CUE, OTHER_AGREEMENT, before_appendix, event_date, late_preamble_date,
                        made_after_contents, side_by_side_latest)
from .law import governing_law, jurisdiction  # noqa: F401  (the task's governing-law rule)
from .party_rules import PREAMBLE_CHARS, _clean_name, looks_like_party, parties  # noqa: F401  (re-exported)
from ..schema import Extraction


_STRONG_CUE = re.compile(r"(?:\bdated|\bmade|\bentered\s+(?:into|on|upon)|\bexecuted|\bas\s+of|\beffective|\bsigned)\W+"
                         r"(?:\w+\W+){0,6}$", re.I)
_WEAK_CUE = re.compile(r"(?:\bon|\bthis)\W+(?:\w+\W+){0,6}$", re.I)
_SHORT_HYPHEN_DATE = re.compile(r"(?<![\w./\-])\d{1,2}-\d{1,2}-\d{2}(?![\w\-])")
"""``3-31-16``: a signature block's date with a two-digit year and hyphens (read only in signature blocks)."""


def _short_hyphen_dates(text: str, offset: int, date_order: str) -> list[tuple[int, int, str, str]]:
    out = []
    for match in _SHORT_HYPHEN_DATE.finditer(text):
        iso = nz.parse_date(match.group(), date_order)
        if iso:
            out.append((offset + match.start(), offset + match.end(), match.group(), iso))
    return out


_OTHER_DATE_LABEL = re.compile(r"\b(?i:effective|commencement|termination|expiration|expiry|start|end|due|delivery|"
                               r"shipment|completion|renewal|invoice|payment|birth|filing|maturity|amendment)[ \t]+$")
"""The word before "Date:" that makes it the label of an event's date, not of a signature."""


def _signature_dates(text: str, date_order: str = "MDY") -> list[tuple[int, int, str, str]]:
    """Dates of the signature blocks: after a ``Date:`` label anywhere, and every full date after the last
    "IN WITNESS WHEREOF" (or in the last 3,000 characters when there is none); there, also ``3-31-16``."""
    out = []
    for match in re.finditer(r"\b(?:Dated?|DATED?)\s*:?\s*", text):
        if _OTHER_DATE_LABEL.search(text[max(0, match.start() - 20):match.start()]):
            continue  # "Effective Date: January 1, 2019", "Termination Date: ...": another date's label
        found = nz.dates_in(text[match.end():match.end() + 40], date_order) or _short_hyphen_dates(
            text[match.end():match.end() + 12], 0, date_order)  # "Date: 3-14-18"
        if found and found[0][0] == 0 and (":" in match.group() or re.match(r"\d", found[0][2])):
            s, e, raw, iso = found[0]
            out.append((match.end() + s, match.end() + e, raw, iso))
            # two signers' columns: "Date:   Date:   3-29-2016   3-31-16": the next signer's date right after
            after = match.end() + e
            gap = re.match(r"[ \t]{1,12}", text[after:after + 12])
            nxt = (nz.dates_in(text[after:after + 40], date_order) or _short_hyphen_dates(
                text[after:after + 24], 0, date_order)) if gap else []
            if nxt and nxt[0][0] == gap.end():
                out.append((after + nxt[0][0], after + nxt[0][1], nxt[0][2], nxt[0][3]))
    witness = [m.end() for m in re.finditer(r"IN\s+WITNESS\s+WHEREOF|(?i:in\s+witness\s+whereof)", text)]
    tail = witness[-1] if witness else max(0, len(text) - 3000)
    out += [(tail + s, tail + e, raw, iso) for s, e, raw, iso in nz.dates_in(text[tail:tail + 6000], date_order)
            if len(iso) >= 7 and not re.search(r"(?i:source):|\b(?:10-K|10-Q|8-K|S-1|F-1)\b",
                                                text[max(text.rfind("\n", 0, tail + s) + 1, tail + s - 60):tail + s])]
    out += [d for d in _short_hyphen_dates(text[tail:tail + 6000], tail, date_order)
            if re.search(r"\b(?:Dated?|DATED?)\b", text[max(0, d[0] - 120):d[0]])]
    return sorted(set(out))


_SALUTATION = re.compile(r"\b(?:(?i:Ladies\s+and\s+Gentlemen)|(?i:Dear)\s+(?:(?i:Sirs?|Madam|Mr|Ms|Mrs)|"
                         r"[A-Z][a-z]+))\b")
_LINE_DATE = re.compile(r"(?:^|\n|\s{3,}|AGREEMENT\s+)[ \t]*([A-Z](?:[a-z]{2,8}|[A-Z]{2,8})\.?\s+\d{1,2},?\s+"
                        r"(?:19|20)\d{2}|[_ \t]*,\s*(?:19|20)\d{2})"
                        r"[ \t]*(?=\n|\s{3,}|$)")


def _letter_date(head: str, date_order: str) -> tuple[int, int, str, str] | None:
    """The date of a letter agreement: a date standing on its own line (or after the title: "AGENCY AGREEMENT
    , 2009") above the salutation ("Ladies and Gentlemen:", "Dear Sirs"); ``None`` when there is none."""
    salutation = _SALUTATION.search(head[:3000])
    if not salutation:
        return None
    for match in reversed(list(_LINE_DATE.finditer(head, 0, salutation.start()))):
        raw = match.group(1)
        year = re.fullmatch(r"[_ \t]*,\s*((?:19|20)\d{2})", raw)
        iso = year.group(1) if year else nz.parse_date(raw, date_order)
        if iso:
            return match.start(1), match.end(1), raw, iso
    for chunk in reversed(list(re.finditer(r"[^\n]+?(?=\n|\s{3,}|$)", head[:salutation.start()]))):
        raw = chunk.group().strip()  # a line that is a date and nothing else: "____________, 1996", "November ___, 2006"
        found = nz.dates_in(raw, date_order) if raw else []
        if found and found[0][0] == 0 and found[0][1] == len(raw):
            at = chunk.start() + chunk.group().find(raw)
            return at, at + len(raw), raw, found[0][3]
    return None


def _only_effective(cue_text: str) -> bool:
    """Whether the cue before a date names it effective and nothing else ("effective as of"), not made or dated."""
    return bool(re.search(r"effective", cue_text, re.I)) and not re.search(r"dated|made|entered|executed|signed",
                                                                         cue_text, re.I)


def _days_after(iso: str, days: int) -> str:
    import datetime

    return (datetime.date.fromisoformat(iso) + datetime.timedelta(days=days)).isoformat()


def _head_end(text: str, chars: int = PREAMBLE_CHARS) -> int:
    """Where the preamble ends: after ``chars`` characters counting each run of spaces and line breaks as one, so
    that a text laid out with wide spacing ("This  Agreement  is  made ...") keeps as much of its preamble."""
    seen = 0
    for match in re.finditer(r"\s+|\S+", text):
        seen += 1 if match.group()[0].isspace() else len(match.group())
        if seen >= chars:
            return match.start() + max(1, chars - (seen - len(match.group())))
    return len(text)


def _other_agreements(text: str, at: int) -> bool:
    """Whether the date at ``at`` is another agreement's or a recital's (:data:`OTHER_AGREEMENT` over the 400
    characters before it, spacing and line breaks made one space)."""
    return bool(OTHER_AGREEMENT.search(re.sub(r"\s+", " ", text[max(0, at - 400):at])))


def agreement_date(text: str, date_order: str = "MDY") -> list[Extraction]:
    """The agreement's date, in this order: a preamble date after "dated" / "made" / "entered into" / "as of" /
    "effective" (not the date of another agreement it amends: "to the Distribution Agreement dated ...", "amends
    the License Agreement dated ...", "The Supply Agreement dated ... is hereby amended"; an amendment that gives no
    date of its own gets none, never the amended agreement's; a date
    named only effective gives way to the date the same preamble says it is made / entered into on), then one
    after "on" / "this" (a date named only effective gives way to the latest signature date in the 60 days after
    it); "This Agreement is dated ..." anywhere; the first full date of the first 1,500 characters (not one a term
    runs to or from: "extended to January 20, 2012", "TERM: ..."); the witness clause ("executed this Agreement as
    of this 4th day of April, 2003"); the latest signature-block date (those labelled "Date:" first: the last party
    to sign dates the agreement; not those after an appendix that follows them); a preamble that a cover page or a
    table of contents pushed further (:func:`late_preamble_date`). Partly blank dates keep only what is given
    ("[___], 2020" -> ``2020``); numeric
    ones are read in ``date_order`` (``"MDY"``: 01/03/2024 is 3 January; ``"DMY"``: 1 March)."""
    head = text[:_head_end(text)]
    dates = [d for d in nz.dates_in(head, date_order)  # not a filing's "Source: X, 8-K, 1/1/2020" (the 60 characters
             if not re.search(r"(?i:source):|\b(?:10-K|10-Q|8-K|S-1|F-1)\b",  # before, on the line: a one-line text)
                              head[max(head.rfind("\n", 0, d[0]) + 1, d[0] - 60):d[0]])
             and not re.match(r"\s*(?:WHEREAS|Whereas)\b", head[head.rfind("\n\n", 0, d[0]) + 1:d[0]])]  # recitals
    chosen, confidence = None, 0.0
    letter = re.search(r"^[ \t]*(?i:date)[ \t]*:[ \t]*", head[:1000], re.M)  # a letter's or confirmation's "Date:" line
    found = nz.dates_in(head[letter.end():letter.end() + 40], date_order) if letter else []
    if found and found[0][0] == 0 and len(found[0][3]) == 10:
        s, e, raw, iso = found[0]
        chosen, confidence = (letter.end() + s, letter.end() + e, raw, iso), 0.85
    if chosen is None:
        dated_letter = _letter_date(head, date_order)  # "AGENCY AGREEMENT / May 14, 2014 / ... / Ladies and Gentlemen:"
        if dated_letter:
            chosen, confidence = dated_letter, 0.8
    for cue, score in ((_STRONG_CUE, 0.85), (_WEAK_CUE, 0.75)):
        for n, date in enumerate(dates):
            before = re.sub(r"\s+", " ", head[max(0, date[0] - 400):date[0]])  # spacing and line breaks vary
            if chosen is None and cue.search(before[-60:]) and not OTHER_AGREEMENT.search(before) and not (
                    cue is _WEAK_CUE and event_date(head, date[0])):  # "the first payment is due on March 1"
                chosen, confidence = date, score
                # "dated as of this ____ day of ______, 2012, but made effective as of February 20, 2012": the full
                # date the same sentence gives next
                later = next((d for d in dates[n + 1:n + 2] if len(d[3]) == 10 and d[0] - date[1] < 120 and
                              not re.search(r"[.;]\s", head[date[1]:d[0]]) and
                              _STRONG_CUE.search(re.sub(r"\s+", " ", head[max(0, d[0] - 120):d[0]])[-60:])), None)
                if len(date[3]) < 10 and later:
                    chosen = later
                elif cue is _STRONG_CUE and _only_effective(before[-60:]):
                    # "shall be effective as of May 1, 2020 ... and is made and entered into this 10th day of
                    # January, 2020": the date it is made on, when the preamble gives one next, is the agreement's
                    made = next((d for d in dates[n + 1:] if d[0] - date[1] < 1500 and len(d[3]) == 10 and
                                 MADE_CUE.search(re.sub(r"\s+", " ", head[max(0, d[0] - 60):d[0]])) and
                                 not OTHER_AGREEMENT.search(re.sub(r"\s+", " ", head[max(0, d[0] - 400):d[0]]))),
                                None)
                    chosen = made or made_after_contents(text, date, date_order) or chosen
                break
        if chosen:
            break
    if chosen is not None and len(chosen[3]) == 10:
        # "This Agreement is effective 7/1/98" and signed "Date: 7/7/98": the agreement is dated when the last party
        # signs (CUAD's answer); only a preamble date named effective and nothing else, and a signature date in the
        # 60 days after it (an effective date long before or after the signing is a term, not the agreement's date)
        cue_text = re.sub(r"\s+", " ", head[max(0, chosen[0] - 60):chosen[0]])
        if re.search(r"effective", cue_text, re.I) and not re.search(r"dated|made|entered|executed|signed", cue_text,
                                                                      re.I):
            signed = [d for d in _signature_dates(text, date_order)
                      if len(d[3]) == 10 and chosen[3] < d[3] <= _days_after(chosen[3], 60)]
            if signed:
                chosen, confidence = max(signed, key=lambda d: d[3]), 0.6
    if chosen is None:
        for match in re.finditer(r"(?:this|the)\s+(?:agreement|amendment|contract)\s+(?:is|was|shall\s+be)\s+dated\s+"
                                 r"(?:as\s+of\s+)?", text, re.I):  # "14.6 This Agreement is dated April 29, 2010."
            found = nz.dates_in(text[match.end():match.end() + 60], date_order)
            if found and found[0][0] == 0:
                s, e, raw, iso = found[0]
                chosen, confidence = (match.end() + s, match.end() + e, raw, iso), 0.8
                break
    early = [d for d in dates if d[0] < 1500 and not OTHER_AGREEMENT.search(head[max(0, d[0] - 400):d[0]])
             and not re.search(r"(?:\bto|\bterm\s*:|\bfrom)\s*$", head[max(0, d[0] - 30):d[0]], re.I)
             and not event_date(head, d[0])]
    if chosen is None and early and len(early[0][3]) == 10:
        chosen, confidence = side_by_side_latest(head, early[0], dates), 0.4
    if chosen is None:
        for match in re.finditer(r"(?:IN\s+WITNESS\s+WHEREOF[^.]{0,200}?(?:as\s+of|on|AS\s+OF|ON)|(?:Signed|Executed|"
                                 r"Dated|SIGNED|EXECUTED|DATED)(?:\s+and\s+effective|\s+AND\s+EFFECTIVE)?)\s+"
                                 r"(?:this\s+|the\s+|THIS\s+|THE\s+)?", text):
            found = nz.dates_in(text[match.end():match.end() + 60], date_order)
            if found and found[0][0] <= 2 and not OTHER_AGREEMENT.search(
                    re.sub(r"\s+", " ", text[max(0, match.end() - 400):match.end()])):
                s, e, raw, iso = found[0]  # not "UNDER THAT CERTAIN LEASE DATED DECEMBER ___, 2009": another document
                chosen, confidence = (match.end() + s, match.end() + e, raw, iso), 0.6
                break
    if chosen is None:
        signed = [d for d in _signature_dates(text, date_order) if not event_date(text, d[0])
                  and not _other_agreements(text, d[0])]  # a short amendment's "amends the ... Agreement dated"
        signed = [d for d in signed if len(d[3]) == 10] or signed  # a partly blank "April ____, 2003" last
        # dates labelled "Date:" / "Dated:" before any other date of the tail (a rate table's dates are no signature)
        labelled = [d for d in signed if re.search(r"\b(?:Dated?|DATED?)\s*:?\s*$", text[max(0, d[0] - 12):d[0]])
                    and not _OTHER_DATE_LABEL.search(re.sub(r"\b(?:Dated?|DATED?)\s*:?\s*$", "",
                                                            text[max(0, d[0] - 40):d[0]]))]
        # "Date:   Date:\n3-29-2016   3-31-16": a date right after a labelled one, blanks between, is the next signer's
        labelled += [d for d in signed if d not in labelled and any(0 < d[0] - x[1] <= 12 and not text[x[1]:d[0]].strip()
                                                                     for x in labelled)]
        signed = before_appendix(text, labelled or signed)
        if signed:
            chosen, confidence = max(signed, key=lambda d: d[3]), 0.45
    if chosen is None and dates and dates[0][0] < 1500 and not event_date(head, dates[0][0]) \
            and not _other_agreements(head, dates[0][0]):
        chosen, confidence = dates[0], 0.35  # (an amendment without a date of its own gives none)
    if chosen is None:
        chosen = late_preamble_date(text, len(head), date_order)
        confidence = 0.3
    if chosen is None:
        return []
    start, end, raw, iso = chosen
    return [Extraction(text=raw, start=start, end=end, value=iso, confidence=confidence, source="rule:en_date")]


_TIME_OF_DAY = re.compile(r"\s*(?:\d{1,2}:\d{2}\s*[ap]\.?\s*m\.?|midnight|noon)[\w\s,.()]{0,40}?\bon\s+(?:the\s+)?",
                          re.I)
"""A time before the date: "12:01 a.m. Eastern Standard Time on March 3, 2003"."""


def _stated_effective_date(text: str, date_order: str) -> list[Extraction]:
    """A date the contract names effective or the commencement date: "... 2020 (the "Effective Date")",
    "effective as of / on / from", "Effective Date" means / is ..., "Commencement Date" means: ..., "Effective
    Date: ..."."""
    for start, end, raw, iso in nz.dates_in(text[:PREAMBLE_CHARS], date_order):
        if re.match(r"\s*,?\s*\(\s*(?:the\s+|this\s+)?[\"“]?(?:Effective|Commencement)\s+Date", text[end:end + 40],
                    re.I):
            return [Extraction(text=raw, start=start, end=end, value=iso, confidence=0.85,
                               source="rule:en_effective_date")]
    for match in re.finditer(r"effective\s+(?:as\s+of|on|from)|[\"“]?(?:Effective|Commencement)\s+Date[\"”]?\)?"
                             r"(?:\s+(?:of|for)\s+this\s+(?:agreement|contract))?\s*(?:means|shall\s+mean|is|will\s+be|"
                             r"shall\s+be|:)\s*:?", text, re.IGNORECASE):
        window = text[match.end():match.end() + 120]
        dates = nz.dates_in(window, date_order)
        if dates and (dates[0][0] < 25 or _TIME_OF_DAY.fullmatch(window[:dates[0][0]])):
            s, e, raw, iso = dates[0]
            return [Extraction(text=raw, start=match.end() + s, end=match.end() + e, value=iso, confidence=0.8,
                               source="rule:en_effective_date")]
    return []


_LAST_SIGNATURE = re.compile(
    r"effective[^.;]{0,200}?(?:\blast|\blater)\s+(?:of\s+the\s+(?:two\s+)?)?(?:date\s+of\s+)?(?:signature|execution)|"
    r"effective\s+date[^.;]{0,80}?\blast\s+(?:party|signature)|(?:\blast|\blater)\s+(?:of\s+the\s+(?:two\s+)?)?"
    r"(?:signature\s+dates?|date\s+of\s+(?:last\s+)?signature)[^.;]{0,80}?[\"“(]\s*effective\s+date", re.I)
"""An effective date defined by the last signature: "effective as of the later of the two signature dates below",
""Effective Date" means the date of last signature", "on the day after the date of last signature"."""


def _last_signature_effective_date(text: str, date_order: str) -> list[Extraction]:
    """The latest full signature-block date when the contract makes the last signature its effective date (the
    day after it when it says "the day after"); empty when it does not, or no signature date is written."""
    match = _LAST_SIGNATURE.search(text)
    if not match:
        return []
    signed = [d for d in _signature_dates(text, date_order) if len(d[3]) == 10]
    if not signed:
        return []
    s, e, raw, iso = max(signed, key=lambda d: d[3])
    if re.search(r"\bday\s+(?:after|following)\b", match.group(), re.I):
        iso = _days_after(iso, 1)
    return [Extraction(text=raw, start=s, end=e, value=iso, confidence=0.6, source="rule:en_effective_last_signature")]


def effective_date(text: str, date_order: str = "MDY",
                   spans: list[tuple[int, int]] | None = None) -> list[Extraction]:
    """When the contract takes effect, in this order: a date it names effective ("effective as of", "(the
    "Effective Date")", "Effective Date" means ...; source ``rule:en_effective_date``); the date its term commences
    on ("The Term ... commencing the 1st day of September 2004", ``rule:en_effective_term_start``: needs the
    segments ``spans``); else the agreement's date (:func:`agreement_date`, ``rule:en_effective_agreement_date``,
    confidence at most 0.5: a contract that names no other date takes effect when it is made, and CUAD's answer is
    then its agreement date). Empty when none of them gives a date. Developed on CUAD train, validation and
    contracts_more only."""
    stated = _last_signature_effective_date(text, date_order) or _stated_effective_date(text, date_order)
    if stated:
        return stated
    if spans is not None:
        found = _term_parts(text, spans, date_order)
        if found and "start" in found and len(found["start"][3]) == 10:
            s, e, raw, iso = found["start"]
            return [Extraction(text=raw, start=s, end=e, value=iso, confidence=0.6,
                               source="rule:en_effective_term_start")]
    made = agreement_date(text, date_order)
    return [x.model_copy(update={"confidence": min(x.confidence, 0.5), "source": "rule:en_effective_agreement_date"})
            for x in made]


def _sentences(text: str, spans: list[tuple[int, int]], pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    return [(s, e) for s, e in spans if pattern.search(text[s:e])]


RENEW_RE = re.compile(r"\b(?:renew|renewal|renewed|automatically\s+extend|extended\s+(?:automatically|for))",
                      re.IGNORECASE)


def renewal(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The renewal term: a duration in a sentence about (automatic) renewal or extension, ISO 8601 with
    ``successive`` when the renewals repeat."""
    for start, end in _sentences(text, spans, RENEW_RE):
        sentence = text[start:end]
        if not re.search(r"term|period|agreement", sentence, re.I):
            continue
        cut = RENEW_RE.search(sentence).start()
        duration = nz.parse_duration(sentence[cut:])
        if duration and re.search(r"prior|notice|before", sentence[cut:][max(0, duration["start"] - 40):
                                                                         duration["start"]], re.I):
            later = nz.parse_duration(sentence[cut + duration["end"]:])
            duration = None if later is None else {**later, "start": later["start"] + duration["end"],
                                                   "end": later["end"] + duration["end"]}
        if duration is None:
            continue
        successive = duration["successive"] or bool(re.search(r"successive|consecutive|each\s+year|thereafter|"
                                                              r"year\s+to\s+year|like\s+periods", sentence, re.I))
        b, e = start + cut + duration["start"], start + cut + duration["end"]
        return [Extraction(text=text[b:e], start=b, end=e, confidence=0.75, source="rule:en_renewal",
                           value={"iso": duration["iso"], "successive": successive, "clause": [start, end]})]
    return []


NOTICE_RE = re.compile(r"(?:at\s+least|no\s+(?:less|later)\s+than|not\s+less\s+than|minimum\s+of|upon|with|by\s+"
                       r"giving|giving|provides?|gives?)?\s*(?P<d>[\w\-]+\s*(?:\(\s*\d+\s*\))?\s*(?:calendar\s+|business"
                       r"\s+)?(?:days?|months?|years?))'?s?\s*(?:'|’)?\s*(?:prior\s+)?(?:written\s+)?(?:notice|prior|"
                       r"before|in\s+advance)", re.IGNORECASE)


def notice_period(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """Notice periods: first the one needed to stop a renewal ("at least ninety (90) days prior to the end of the
    then-current term" -> P90D, ``applies_to: renewal``), then one needed to terminate (``applies_to:
    termination``), each at most once."""
    out: list[Extraction] = []
    for kind, pattern in (("renewal", RENEW_RE), ("termination", re.compile(r"terminat", re.I))):
        for start, end in _sentences(text, spans, pattern):
            sentence = text[start:end]
            if not re.search(r"notice|notify|prior\s+to", sentence, re.I) or any(o.start >= start and o.end <= end
                                                                                 for o in out):
                continue
            match = next((m for m in NOTICE_RE.finditer(sentence) if nz.parse_duration(m.group("d"))), None)
            if match:
                if re.search(r"end\s+of\s+(?:the\s+|any\s+|such\s+)?(?:then[- ]current\s+|initial\s+|renewal\s+)?"
                             r"(?:term|period)|expiration|expiry|then[- ]current\s+term", sentence, re.I):
                    kind = "renewal"  # a notice to end the contract at the end of a term stops the renewal
                duration = nz.parse_duration(match.group("d"))
                b = start + match.start("d")
                e = b + len(match.group("d"))
                out.append(Extraction(text=text[b:e], start=b, end=e, confidence=0.7 if kind == "renewal" else 0.5,
                                      source=f"rule:en_notice_{kind}",
                                      value={"iso": duration["iso"], "business_days": duration["business_days"],
                                             "applies_to": kind}))
                break
    return out


_TERM_CUE = re.compile(r"(?:initial\s+)?term\s+of\s+(?:this\s+agreement\s+)?(?:shall\s+be\s+|is\s+|will\s+be\s+)?|"
                       r"\b(?:initial\s+)?term\s+(?:hereof\s+)?(?:shall|will)\s+"
                       r"(?=commence|begin|start|run|expire|end)|"
                       r"\b(?:agreement|term|contract|venture|promotion|engagement)(?:\s*\([^()]{0,30}\))?\s+"
                       r"(?:shall|will)\s+(?:automatically\s+)?(?=commence|begin|start)|"
                       # "This Agreement shall be effective commencing on <date> and continuing through [*****]"
                       r"\b(?:agreement|contract)(?:\s*\([^()]{0,30}\))?\s+(?:shall|will)\s+(?:be\s+effective|"
                       r"become\s+effective|take\s+effect|(?:be|remain)\s+in\s+(?:full\s+)?(?:force\s+and\s+)?"
                       r"effect|be\s+in\s+(?:full\s+)?force)\s+(?:for\s+(?:a|the)\s+period\s+)?"
                       r"(?=commenc|begin|start)|"
                       r"shall\s+(?:continue|remain)\s+in\s+(?:full\s+)?(?:force\s+and\s+effect\s+)?(?:for|until)\s+",
                       re.IGNORECASE)
_TERM_START = re.compile(r"(?:\bcommenc\w*|\bbegin\w*|\bstart\w*|\beffective|\bfrom|\bas\s+of|\bon\s+and\s+after)"
                         r"\s+(?:on\s+|upon\s+|as\s+of\s+|from\s+|with\s+)?(?:the\s+)?$", re.IGNORECASE)
_TERM_END = re.compile(r"(?:\bthrough|\bthru|\buntil|\btill|\bto|\bending|\bends?|\bexpir\w*|\bterminat\w*|"
                       r"\bincluding)\s+(?:on\s+|at\s+)?(?:midnight\s+(?:on\s+)?|the\s+close\s+of\s+business\s+on\s+)?"
                       r"(?:the\s+)?$", re.IGNORECASE)
_REDACTED_END = re.compile(r"(?:\bthrough|\bthru|\buntil|\btill|\bto|\bending|\bends?|\bexpir\w*|\bterminat\w*)"
                           r"\s+(?:on\s+)?(?:the\s+)?\[[\s*]*\*[\s*]*\]", re.IGNORECASE)
"""An end that the filed copy blanks out ("through [*****]", "terminating the [*****] day of [*****]")."""


_EVENT_STOP = (r"(?:and|or|but|unless|through|thru|until|to|for|shall|will|continu\w*|end\w*|expir\w*|terminat\w*|"
               r"on|upon|as|with|of)\b")
_START_EVENT = re.compile(r"(?:\bcommenc\w*|\bbegin\w*|\bstart\w*|\bfrom)\s+(?:on\s+|upon\s+|as\s+of\s+|with\s+)?"
                          r"(?:the\s+)?(?P<e>(?:[\"“]?[A-Z][\w-]*[\"”]?\s+){1,3}?(?i:date)\b|(?i:date\s+hereof)\b|"
                          r"(?i:(?:date\s+(?:of|on\s+which)\s+)?(?P<ev>(?:(?!" + _EVENT_STOP + r")[\w'-]+(?:\s+|(?=[,;.(]|$)))"
                          r"{1,12}(?=[,;.(]|$|" + _EVENT_STOP + r"))))")
"""A start the term sentence names by an event, not a date: "commence on the Effective Date", "from the date of
execution", "on the date of first shipment" (read before the end, redacted or a date, when no start date is given). ``ev`` is the event ("first shipment", "execution hereof", "signing hereof") when the start is
"the date of" one or the event itself; a bare "date" is never one."""

_GENERIC_EVENT = re.compile(r"(?i:date|day|time|the|this|such|said|a|an)", re.I)


def _term_parts(text: str, spans: list[tuple[int, int]], date_order: str = "MDY") -> dict | None:
    """The first term sentence's reading: ``{"duration": (s, e, iso)?, "start": (s, e, raw, iso)?, "end": (...)?,
    "redacted_end": bool}`` with offsets in ``text``; ``None`` when no term sentence gives a duration or a date
    named start or end (see :func:`term`)."""
    for start, end in spans:
        sentence = text[start:end]
        match = _TERM_CUE.search(sentence)
        if not match:
            continue
        at = start + match.end()
        rest = text[at:min(end, at + 300)]
        found: dict = {}
        duration = nz.parse_duration(rest[:120])
        if duration and duration["start"] < 30:
            found["duration"] = (at + duration["start"], at + duration["end"], duration["iso"])
        dates = nz.dates_in(rest, date_order)
        previous = 0
        for n, (s, e, raw, iso) in enumerate(dates):
            lead = rest[previous:s][-40:]
            cue_until = n == 0 and not rest[:s].strip() and match.group().lower().rstrip().endswith("until")
            if _TERM_END.search(lead) or cue_until:
                found.setdefault("end", (at + s, at + e, raw, iso))
            elif _TERM_START.search(lead):
                found.setdefault("start", (at + s, at + e, raw, iso))
            elif n + 1 < len(dates) and re.fullmatch(r"\s*(?:to|through|thru|until|-|–|—)\s*(?:the\s+)?",
                                                     rest[e:dates[n + 1][0]], re.I):
                found.setdefault("start", (at + s, at + e, raw, iso))  # "shall be June 1, 2019 to May 31, 2020"
            previous = e
        redacted = None if "end" in found else _REDACTED_END.search(rest)
        found["redacted_end"] = redacted is not None
        # the start an event names, read before the end: a redacted one ("through [*****]") or a date found as the
        # end ("continue through December 31, 2023"), when no start date was found
        until = redacted.start() if redacted else (found["end"][0] - at if "end" in found else None)
        anchor = _START_EVENT.search(rest[:until]) if until is not None and "start" not in found else None
        group = "ev" if anchor and anchor.group("ev") else "e"
        if anchor and not _GENERIC_EVENT.fullmatch(anchor.group(group).strip()):
            # "shall commence on the Effective Date and continue through [*****]": no date, the end redacted
            b, e = at + anchor.start(group), at + anchor.start(group) + len(anchor.group(group).rstrip())
            found["start_event"] = (b, e, text[b:e])
        if any(k in found for k in ("duration", "start", "end", "start_event")):
            return found
    return None


def term(text: str, spans: list[tuple[int, int]], date_order: str = "MDY") -> list[Extraction]:
    """The initial term, from the first sentence that states one ("the term of this Agreement", "shall continue in
    full force and effect until"): ``value`` holds what it gives of ``duration`` (ISO 8601: "for a term of three
    (3) years" -> ``P3Y``), ``start`` and ``end`` (ISO dates). A date is the start after "commencing" /
    "beginning" / "starting" / "effective" / "from" / "as of", the end after "through" / "until" / "to" /
    "ending" / "expiring" / "terminating" ("from September 1, 2004 through December 31, 2006"); a date named
    neither is not taken, and an end the filed copy redacts ("through [*****]") is left out with a warning, never
    read from the start; with such an end or an end date and no start date, a start named by an event is kept as
    ``start_event``: a defined date
    ("commence on the Effective Date" -> "Effective Date") or the event itself ("on the date of first shipment" ->
    "first shipment"; never a bare "date"). The span covers what was read. Developed on CUAD train, validation and contracts_more."""
    found = _term_parts(text, spans, date_order)
    if found is None:
        return []
    value = {"duration": found["duration"][2]} if "duration" in found else {}
    value.update({k: found[k][3] for k in ("start", "end") if k in found})
    if "start_event" in found:
        value["start_event"] = re.sub(r"[\"“”]|\s+", lambda m: "" if m.group()[0] in "\"“”" else " ",
                                      found["start_event"][2])
    parts = [found[k] for k in ("duration", "start", "end", "start_event") if k in found]
    b, e = min(p[0] for p in parts), max(p[1] for p in parts)
    warnings = [nz.REDACTED_TERM_END] if found["redacted_end"] else []
    return [Extraction(text=text[b:e], start=b, end=e, value=value, confidence=0.7 if "duration" in found else 0.65,
                       source="rule:en_term", warnings=warnings)]


def dispute_resolution(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """Arbitration (with the institution when named: AAA, ICC, JAMS, CIETAC ...) or the courts of a place."""
    for start, end in _sentences(text, spans, re.compile(r"arbitrat", re.I)):
        sentence = text[start:end]
        body = re.search(r"American\s+Arbitration\s+Association|International\s+Chamber\s+of\s+Commerce|"
                         r"\b(?:HKIAC|SIAC|LCIA|ICDR|AAA|ICC|SCC)\b|JAMS|"
                         r"China\s+International\s+Economic\s+and\s+Trade\s+Arbitration\s+Commission|CIETAC|"
                         r"London\s+Court\s+of\s+International\s+Arbitration|(?:[A-Z][\w&\-]*\s+(?:(?:of|and|for)\s+)?){1,8}"
                         r"Arbitration\s+(?:Centre|Center|Commission)", sentence)
        if re.search(r"shall\s+be\s+(?:finally\s+)?(?:settled|resolved|submitted|referred)|binding\s+arbitration|"
                     r"submit(?:ted)?\s+to\s+arbitration", sentence, re.I):
            return [Extraction(text=sentence, start=start, end=end, confidence=0.75, source="rule:en_arbitration",
                               value={"method": "arbitration", "body": body.group() if body else None})]
    for start, end in _sentences(text, spans, re.compile(r"jurisdiction|venue|\b(?:brought|commenced|instituted|"
                                                         r"submit(?:s|ted)?|litigated)\b", re.I)):
        sentence = text[start:end]
        court = re.search(r"courts?\s+(?:located\s+|sitting\s+)?(?:of|in)\s+(?:the\s+)?(?:State\s+of\s+)?"
                          r"([A-Z][\w ]{2,40}?(?:,\s*[A-Z][\w ]{2,30}?)?)(?=[,.;]|\s+(?:for|and|with|shall|in)\b|$)",
                          sentence)
        if court:
            return [Extraction(text=sentence, start=start, end=end, confidence=0.65, source="rule:en_court",
                               value={"method": "litigation", "body": court.group().strip()})]
    return []


_AMOUNT_CUE = re.compile(r"(?:total|aggregate)\s+(?:\w+\s+){0,2}?(?:price|amount|fees?|rent|consideration|sum)\b|"
                         r"purchase\s+price|contract\s+price|license\s+fee|consideration\s+of|total\s+of", re.I)


def contract_amount(text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The first amount (with a currency) in a sentence that names a total price, fee, rent or consideration ("a
    total license fee of USD 120,000.00", "the Purchase Price is EUR 1.234.567,89"). Written in figures and in
    words side by side ("USD 250,000 (Two Hundred Thousand US Dollars)"), the span covers both, and when they
    disagree ``amount`` is ``None`` with both readings and a warning (:func:`normalize.amount_value`)."""
    for start, end in spans:
        sentence = text[start:end]
        cue = _AMOUNT_CUE.search(sentence)
        if not cue:
            continue
        amounts = [a for a in nz.amounts_in(sentence) if a[0] >= cue.start() and a[3]["currency"]]
        if not amounts:
            continue
        value = nz.amount_value(amounts, sentence)
        s, e = amounts[0][0], amounts[0][1]
        pair = [a for a in amounts[1:] if nz.side_by_side(sentence, amounts[0], a)]
        if pair:
            e = pair[0][1]
            close = re.match(r"\s*\)", sentence[e:])
            if close and sentence[s:e].count("(") > sentence[s:e].count(")"):
                e += close.end()
        return [Extraction(text=text[start + s:start + e], start=start + s, end=start + e, value=value,
                           confidence=0.6, source="rule:en_amount", warnings=nz.check_consistency(amounts, sentence))]
    return []


HEADING = re.compile(r"\s*(?:(?:Section|SECTION|Article|ARTICLE)\s+)?(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])?[.)]?\s*"
                     r"[A-Z][A-Z0-9 ,&/'\-]{2,80}[.:]?\s*")
"""A heading segment in capitals: "5. LIQUIDATED DAMAGES.", "ARTICLE 7 CONFIDENTIALITY"."""

CLAUSE_PATTERNS = {
    "termination": re.compile(r"(?:may|shall\s+have\s+the\s+right\s+to)\s+terminate\s+this\s+agreement", re.I),
    "confidentiality": re.compile(r"\bconfidential(?:ity)?\b.{0,120}(?:shall\s+not\s+disclose|hold\s+in\s+"
                                  r"(?:strict\s+)?confidence|keep\s+confidential)|shall\s+(?:keep|maintain|hold)"
                                  r".{0,40}\bconfiden|\b(?:hold|keep|maintain)\b.{0,80}?\bin\s+(?:strict(?:est)?\s+)?"
                                  r"confidence", re.I | re.S),
    "assignment": re.compile(r"\bassign(?:ed|ment)?\b.{0,150}(?:without\s+the\s+(?:prior\s+)?(?:written\s+)?consent|"
                             r"may\s+not|shall\s+not)|(?:may\s+not|shall\s+not).{0,80}\bassign", re.I | re.S),
    "liquidated_damages": re.compile(r"liquidated\s+damages", re.I),
    "payment_terms": re.compile(r"(?:shall\s+pay|payment\s+(?:shall|is)\s+(?:be\s+)?due|payable\s+within|invoice)",
                                re.I),
}


def clause(key: str, text: str, spans: list[tuple[int, int]]) -> list[Extraction]:
    """The first sentence matching the clause field's pattern (termination, confidentiality, assignment,
    liquidated damages, payment terms), with amounts and durations found in it as its value."""
    pattern = CLAUSE_PATTERNS[key]
    for start, end in spans:
        sentence = text[start:end]
        if HEADING.fullmatch(sentence):  # "5. LIQUIDATED DAMAGES.": the clause is the sentence that says it
            continue
        if pattern.search(sentence):
            value: dict[str, object] = {}
            duration = nz.parse_duration(sentence)
            if duration:
                value["duration"] = duration["iso"]
            amounts = nz.amounts_in(sentence)
            if amounts:
                value["amount"] = nz.amount_value(amounts, sentence)
            rate = re.search(r"(\d+(?:\.\d+)?)\s*(?:%|per\s*cent|percent)", sentence, re.I)
            if key == "liquidated_damages" and rate:  # "0.5 percent (0.5%) of the fee due, for each day of delay"
                value["rate"] = str(Decimal(rate.group(1)) / 100)
                value["per_day"] = bool(re.search(r"\b(?:per|each|every)\s+(?:calendar\s+|business\s+)?day|\bdaily\b",
                                                  sentence, re.I))
            return [Extraction(text=sentence, start=start, end=end, value=value or None, confidence=0.6,
                               source=f"rule:en_{key}", warnings=nz.check_consistency(amounts, sentence))]
    return []
