"""Language detection and segmentation of contract text into clauses/sentences with character offsets."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u4e00-\u9fff]")


def detect_language(text: str) -> str:
    """``"zh"`` when at least 10 % of the first 5,000 non-space characters are CJK ideographs, else ``"en"``."""
    sample = re.sub(r"\s+", "", text[:5000])
    if not sample:
        return "en"
    return "zh" if len(_CJK.findall(sample)) / len(sample) >= 0.10 else "en"


_EN_BREAK = re.compile(r"(?<=[.;:])\s+(?=[(\"“A-Z0-9])|\n\s*\n|\n(?=\s*(?:\(?[0-9]+(?:\.[0-9]+)*\)?|\(?[a-z]\)|"
                       r"[A-Z][A-Z ]{3,}|ARTICLE|Section)\s)")
_ABBREVIATION = re.compile(r"(?:\b(?:Inc|Corp|Ltd|Co|No|Nos|Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|v|etc|Sec|Art|Ave|Blvd|Ste|"
                           r"L\.P|N\.A|U\.S|S\.A|B\.V|N\.V|L\.L\.C|P\.C|i\.e|e\.g)|(?:^|\s)\(?\d+(?:\.\d+)*|"
                           r"(?:^|\s)\(?[A-Za-z])\.$")
_ZH_BREAK = re.compile(r"(?<=[。；！？;])|\n+")


def segments(text: str, language: str, max_chars: int = 1200) -> list[tuple[int, int]]:
    """Sentence-like segments as ``(start, end)`` offsets (whitespace trimmed, empty ones dropped).

    English breaks after ``. ; :`` before a capital or number, at blank lines and before numbered headings; Chinese
    after 。；！？ and at line ends. Segments longer than ``max_chars`` are cut at whitespace.
    """
    pattern = _ZH_BREAK if language == "zh" else _EN_BREAK
    out: list[tuple[int, int]] = []
    start = 0
    for match in [*pattern.finditer(text), None]:
        end = match.start() if match else len(text)
        if match and language != "zh" and "\n" not in match.group() and _ABBREVIATION.search(text[max(start, end - 12):end]):
            continue  # "Inc. (", "Section 2.1 The", "1. Name"
        _emit(text, start, end, max_chars, out)
        if match:
            start = match.end()
    return out


def _emit(text: str, start: int, end: int, max_chars: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    while end - start > max_chars:
        cut = text.rfind(" ", start + max_chars // 2, start + max_chars)
        cut = cut if cut > start else start + max_chars
        out.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start and re.search(r"\w", text[start:end]):
        out.append((start, end))


_BLANK_LINE = re.compile(r"\n[ \t\r　]*\n")
_MORE_BLANK_LINES = re.compile(r"(?:[ \t\r　]*\n)*")


def party_block_end(text: str, start: int, limit: int, attribute_line: re.Pattern[str]) -> int:
    """Where the block of a party line ends: the party's attribute lines (地址, 联系人 / ``Address:``, ``Contact:``
    ...) lie between ``start`` (the end of its name) and the returned offset.

    The block runs to ``limit`` (the next party line, or the end of the part read) or to the first blank line,
    unless the paragraph after that blank line starts with an attribute line (``attribute_line.match`` at the start
    of its first line: ``地址：…``, ``Address: …``); then the blank line sits inside the party's block and it goes on
    to the next blank line, again and again. Never past ``limit``: another party's lines are never read, and the body
    (a paragraph that does not start with an attribute line, such as ``第一条 …`` or ``1. Definitions``) ends it.
    """
    end = start
    while True:
        blank = _BLANK_LINE.search(text, end, limit)
        if blank is None:
            return limit
        line = _MORE_BLANK_LINES.match(text, blank.end(), limit).end()  # the next paragraph's first line
        if line >= limit or not attribute_line.match(text, line, limit):
            return blank.start()
        end = line
