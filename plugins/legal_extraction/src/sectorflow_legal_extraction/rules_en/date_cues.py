"""Where an English agreement date is looked for besides the preamble's first characters, and the cues that tell
the agreement's own date from another's: another agreement's date or a recital's (``OTHER_AGREEMENT``), an event's
(:func:`event_date`), a "made / entered into" cue (``MADE_CUE``); signature dates before an appendix, two signers'
dates side by side, a preamble after a cover page or a table of contents. Used by :func:`rules_en.agreement_date`;
developed on CUAD train, validation and contracts_more misses only, never the test split.
"""

from __future__ import annotations

import re

from .. import normalize as nz

OTHER_AGREEMENT = re.compile(r"(?:(?:\bto|\bof|\bunder|\bin|\bthat|\band|\bmeans)\s+(?:the|that|a|certain)|"
                             # an amendment's verb: "amends the License Agreement dated March 3, 2010" (not the
                             # adjectives "Amended and Restated Agreement", "Amending Agreement": an article follows)
                             r"\b(?:amend|amends|amending|supplements?|supplementing|modif(?:y|ies|ying)|"
                             r"restates?|restating|extends?|extending)\s+(?:and\s+restates?\s+)?"
                             r"(?:the|that|a|certain|said|each|its)(?:\s+certain)?|"
                             # a sentence that starts with another agreement: "The Supply Agreement dated March 3,
                             # 2010 between ... is hereby amended" (a contract calls itself "this Agreement")
                             r"(?-i:\b(?:The|THE))(?=\s+(?-i:[A-Z]))(?:\s+[\w&\-]+){0,6}?(?=\s+(?:agreement|contract|"
                             r"lease)\b))\s+(?:(?!\bthis\s)[^.()]){0,80}?"
                             # (not across "This ... Agreement": a title above the preamble, "... UNDER THE
                             # SECURITIES EXCHANGE ACT OF 1934, AS AMENDED SUPPLY AGREEMENT This Supply Agreement is
                             # entered into as of"; across a party's "Inc." / "Ltd." / "Co." / "Corp.")
                             r"(?:agreement|contract|lease)\b(?:(?!\bthis\s)(?:[^.;]|(?<=\bInc)\.|(?<=\bLtd)\.|(?<=\bCo)\.|"
                             r"(?<=\bCorp)\.)){0,120}?\b(?:dated|entered\s+into\s+"
                             r"(?:on|as\s+of))\s+(?:as\s+of\s+)?$|"
                             # a definition of another agreement, any date of it: ""MTA" shall mean the Material
                             # Transfer Agreement entered into by Acme and Beta on June 28, 2011"
                             r"\bmeans?\s+(?:the|that|a|certain)\s+(?:(?!\bthis\s)[^.()]){0,80}?(?:agreement|contract|"
                             r"lease)\b(?:[^.;]|(?<=\bInc)\.|(?<=\bLtd)\.|(?<=\bCo)\.|(?<=\bCorp)\.){0,200}$|"
                             r"WHEREAS\b[^;]{0,400}$|\b(?:letter|notice|memorandum|e-?mail|fax|proposal|offer)\s+"
                             r"(?:dated|of)\s+$|(?:before|after|prior\s+to|until|through|later\s+than|\bby|ending|"
                             r"amended)\s+(?:the\s+)?$|(?:commenc|begin|start|end|expir|terminat)\w*\s+(?:on|as\s+of)\s+"
                             r"(?:the\s+)?$", re.I)


EVENT = re.compile(r"\b(?:due|deliver\w*|pay\w*|paid|begin\w*|commenc\w*|start\w*|end|ends|ending|expir\w*|"
                   r"terminat\w*|later\s+than|before|after|until|through|within|vacate|complet\w*|ship\w*|"
                   r"install\w*|deadline)\b", re.I)


def event_date(head: str, at: int) -> bool:
    """Whether the date at ``at`` is the date of an event the sentence sets (a payment due, a delivery, a start or
    an end: "The first rent payment is due on March 1, 2024", "no later than May 5, 2021"), not the agreement's."""
    sentence = re.split(r"[.;]\s|\n\s*\n", head[max(0, at - 200):at])[-1]
    return bool(EVENT.search(sentence))


MADE_CUE = re.compile(r"(?:\bmade|\bentered\s+(?:into|on|upon)|\bexecuted|\bsigned)(?!\s+effective)\W+"
                      r"(?:\w+\W+){0,6}$", re.I)


_APPENDIX = re.compile(r"^[ \t]*(?:APPENDIX|EXHIBIT|SCHEDULE|ANNEX|ATTACHMENT|(?:Appendix|Exhibit|Schedule|Annex|"
                       r"Attachment)(?=\s+[A-Z0-9]))\b", re.M)


def before_appendix(text: str, signed: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """The signature dates before the first appendix, exhibit, schedule, annex or attachment that starts a line
    after the first of them (an appendix's own "Date: November 1, 2016" is no signature of the agreement); all of
    them when that leaves none."""
    if not signed:
        return signed
    heading = _APPENDIX.search(text, min(d[1] for d in signed))
    kept = [d for d in signed if heading is None or d[0] < heading.start()]
    return kept or signed


LATE_PREAMBLE_CHARS = 20000
"""How far a preamble is looked for when the first characters give no date (a cover page, a table of contents)."""


def side_by_side_latest(head: str, date: tuple[int, int, str, str],
                        dates: list[tuple[int, int, str, str]]) -> tuple[int, int, str, str]:
    """``date``, or the latest of the dates written next to it with only blanks between ("4/24/2018   04/25/2018":
    two signers' columns; the last party to sign dates the agreement)."""
    run = [date]
    for other in dates:
        if other[0] > run[-1][1] and other[0] - run[-1][1] <= 12 and not head[run[-1][1]:other[0]].strip():
            run.append(other)
    full = [d for d in run if len(d[3]) == 10]
    return max(full, key=lambda d: d[3]) if full else date


_CONTENTS = re.compile(r"^[ \t]*(?:TABLE\s+OF\s+CONTENTS|Table\s+of\s+Contents|CONTENTS)\b", re.M)


def made_after_contents(text: str, date: tuple[int, int, str, str],
                        date_order: str) -> tuple[int, int, str, str] | None:
    """For a cover page's date named only effective ("... AGREEMENT / Effective as of September 30, 1998 / TABLE OF
    CONTENTS"), the full date the preamble after the table of contents says the contract is made / entered into on
    ("THIS SECOND AMENDED AND RESTATED ... AGREEMENT ... is entered into on August 31, 2017"); ``None`` when no table
    of contents follows within 3,000 characters or the preamble gives no such date."""
    contents = _CONTENTS.search(text, date[1], date[1] + 3000)
    late = late_preamble_date(text, contents.end(), date_order, made_only=True) if contents else None
    return late if late and len(late[3]) == 10 else None


def late_preamble_date(text: str, after: int, date_order: str,
                       made_only: bool = False) -> tuple[int, int, str, str] | None:
    """The first date after "made" / "entered into" / "executed" / "dated" (``made_only``: not "dated"), with
    "agreement" / "contract" / "lease" in the 300 characters before, between ``after`` and
    :data:`LATE_PREAMBLE_CHARS`: the preamble of a contract that a cover page or a table of contents pushed out of
    the first characters ("MASTER FRANCHISE AGREEMENT ... AGREEMENT made as of the ____ day of ______, 2015"); not
    another agreement's date, a recital's or an event's. ``None`` when there is none."""
    window = text[:LATE_PREAMBLE_CHARS]
    for date in nz.dates_in(window[after:], date_order):
        at = after + date[0]
        before = re.sub(r"\s+", " ", window[max(0, at - 400):at])
        if (MADE_CUE.search(before[-60:]) or not made_only and re.search(r"\bdated\W+(?:\w+\W+){0,6}$", before[-60:],
                                                                          re.I)) \
                and re.search(r"\b(?:agreement|contract|lease)\b", before[-300:], re.I) \
                and not OTHER_AGREEMENT.search(before) and not event_date(window, at) \
                and not re.search(r"\bWHEREAS\b", before[-200:], re.I):
            return at, after + date[1], date[2], date[3]
    return None
