"""Plain-text input for ``sectorflow run legal_extraction FILE`` (``--format txt``, or a ``*.txt`` name).

``jsonl`` and ``csv`` (one contract per row, with a ``text`` column or key) are built into the core. A contract
usually arrives as one text file, so the plugin adds ``txt``: the whole file is one contract (row 1). UTF-8, with
``.gz`` and ``-`` for standard input as for the built-in formats.
"""

from __future__ import annotations

from sectorflow import whole_file_reader

read_txt = whole_file_reader("the contract text")
"""The whole file as one contract: ``(1, {"text": ...})``; an empty file is one bad row."""

READERS = {"txt": read_txt}
