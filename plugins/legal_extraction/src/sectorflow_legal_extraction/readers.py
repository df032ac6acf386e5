"""Plain-text and HTML input for ``sectorflow run legal_extraction FILE`` (``--format txt``, or a ``*.txt``,
``*.html`` or ``*.htm`` name: the pipeline reads HTML without its markup, offsets pointing into the HTML).

``jsonl`` and ``csv`` (one contract per row, with a ``text`` column or key) are built into the core. A contract
usually arrives as one text file, so the plugin adds ``txt``: the whole file is one contract (row 1). UTF-8, with
``.gz`` and ``-`` for standard input as for the built-in formats.
"""

from __future__ import annotations

from sectorflow import whole_file_reader

read_txt = whole_file_reader("the contract text")
"""The whole file as one contract: ``(1, {"text": ...})``; an empty file is one bad row."""

READERS = {"txt": read_txt, "html": read_txt, "htm": read_txt}
