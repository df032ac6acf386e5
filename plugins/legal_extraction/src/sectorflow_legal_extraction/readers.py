"""Plain-text input for ``sectorflow run legal_extraction FILE`` (``--format txt``, or a ``*.txt`` name).

``jsonl`` and ``csv`` (one contract per row, with a ``text`` column or key) are built into the core. A contract
usually arrives as one text file, so the plugin adds ``txt``: the whole file is one contract (row 1). UTF-8, with
``.gz`` and ``-`` for standard input as for the built-in formats.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sectorflow import InvalidInputError, open_text


def read_txt(source: Any) -> Iterator[tuple[int, dict[str, Any] | InvalidInputError]]:
    """The whole file as one contract: ``(1, {"text": ...})``; an empty file is one bad row."""
    with open_text(source) as handle:
        text = handle.read()
    if not text.strip():
        yield 1, InvalidInputError(f"Input file {source} is empty: put the contract text in it.",
                                   details=[{"row": 1, "field": "text", "reason": "empty file"}])
        return
    yield 1, {"text": text}


READERS = {"txt": read_txt}
