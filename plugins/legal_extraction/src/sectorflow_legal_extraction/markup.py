"""Contracts given as HTML (a web page, a document-management export): the text without tags and entities, and
for each of its characters where it came from, so that every offset reported points into the HTML as given.

``<p>出租方（甲方）：上海明远置业有限公司</p><p>地址：…</p>`` is read as two lines; ``&quot;Company&quot;`` as
``"Company"``; ``<script>``/``<style>`` bodies and comments are dropped. The standard library's
:func:`html.unescape` decodes the entities.
"""

from __future__ import annotations

import html
import re

_LOOKS_LIKE_HTML = re.compile(r"<(?:!DOCTYPE\s+html|html|body|p|div|br|table|tr|td|li|h[1-6]|span|font)\b[^<>]*>",
                              re.I)
_TOKEN = re.compile(r"<!--.*?-->|<(script|style)\b[^>]*>.*?</\1\s*>|<[^<>]+>|&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|"
                    r"[A-Za-z][A-Za-z0-9]{1,31});?", re.S | re.I)
_BLOCK = re.compile(r"</?(?:p|div|br|tr|li|ul|ol|table|h[1-6]|title|section|article|header|footer|blockquote|pre|"
                    r"dt|dd|hr)\b", re.I)
_CELL = re.compile(r"</?t[dh]\b", re.I)


def looks_like_html(text: str) -> bool:
    """Whether ``text`` holds HTML markup (a block or inline tag such as ``<p>``, ``<br>``, ``<td>``)."""
    return bool(_LOOKS_LIKE_HTML.search(text))


def html_text(text: str) -> tuple[str, list[int], list[int]]:
    """``(plain, starts, ends)``: the text of ``text`` without markup, and for each character ``plain[i]`` the span
    ``text[starts[i]:ends[i]]`` it was read from (an entity maps to the whole entity). Block tags (``p``, ``div``,
    ``br``, ``tr``, ``li``, headings ...) become one line break, table cells a tab; white space between two tags
    (the source's indentation) is dropped, so a paragraph break is never read as a blank line."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def emit(chars: str, start: int, end: int) -> None:
        for ch in chars:
            out.append(ch)
            starts.append(start)
            ends.append(end)

    position = 0
    for token in [*_TOKEN.finditer(text), None]:
        stop = token.start() if token else len(text)
        plain = text[position:stop]
        between_tags = not plain.strip() and (position == 0 or text[position - 1] == ">") and token is not None \
            and token.group().startswith("<")
        if plain and not between_tags:
            for k, ch in enumerate(plain):
                emit(ch, position + k, position + k + 1)
        if token is None:
            break
        raw = token.group()
        if raw.startswith("&"):
            emit(html.unescape(raw).replace("\xa0", " "), token.start(), token.end())  # &nbsp; is a space
        elif _BLOCK.match(raw):
            if out and out[-1] != "\n":
                emit("\n", token.start(), token.end())
        elif _CELL.match(raw) and raw.startswith("</"):
            emit("\t", token.start(), token.end())
        position = token.end()
    return "".join(out), starts, ends


def source_span(starts: list[int], ends: list[int], start: int, end: int) -> tuple[int, int]:
    """The span of the HTML that ``plain[start:end]`` was read from."""
    if end <= start:
        at = starts[start] if start < len(starts) else (ends[-1] if ends else 0)
        return at, at
    return starts[start], ends[end - 1]
