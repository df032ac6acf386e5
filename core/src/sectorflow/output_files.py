"""Results files of ``sectorflow run --output``: gzip-compressed when the name ends in ``.gz``.

Before 2 Dec 2026 ``--output results.jsonl.gz`` held plain JSON lines under a ``.gz`` name, which ``zcat`` and every
reader of ``.gz`` files refused ("not in gzip format"). Now such a name gets gzip data (RFC 1952), written through
the same temporary file and rename as plain results (:func:`sectorflow.batch._open_results`), so a run that fails
leaves no truncated ``.gz`` either. The gzip header carries no file name and a modification time of 0, so that the
same results give the same bytes. A ``--state`` run (:mod:`sectorflow.cli_state`) writes one gzip member per
checkpoint (a gzip file may hold several, read as one stream by ``zcat``, Python's :mod:`gzip` and
:func:`sectorflow.open_text`), so that a killed run can still cut its partial output back to the last checkpoint's
byte offset. Every results reader opens files with :func:`sectorflow.open_text`, which decompresses ``.gz``.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from pathlib import Path
from typing import IO


def compressed(path: str | Path | None) -> bool:
    """Whether results written to ``path`` are gzip-compressed (its name ends in ``.gz``; standard output never)."""
    return path is not None and str(path).lower().endswith(".gz")


def gzip_member(data: bytes) -> bytes:
    """``data`` as one gzip member, with modification time 0 and no file name (the same bytes for the same data)."""
    return gzip.compress(data, mtime=0)


class _GzipWriter(gzip.GzipFile):
    """A gzip writer over a file object it owns, closing it too (``GzipFile(fileobj=...)`` leaves it open)."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(filename="", mode="wb", fileobj=raw, mtime=0)
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def open_results(path: str | Path, compress: bool | None = None) -> IO[str]:
    """Open the results file ``path`` (a temporary name may differ from the final one: ``compress`` then says
    whether to gzip, default by ``path``'s name) for writing UTF-8 text, gzip-compressed when ``compress``.

    Raises:
        OSError: the file cannot be created (the caller words it).
    """
    compress = compressed(path) if compress is None else compress
    if not compress:
        return open(path, "w", encoding="utf-8")
    raw = open(path, "wb")
    return io.TextIOWrapper(_GzipWriter(raw), encoding="utf-8")  # type: ignore[arg-type]


def partial_path(target: Path, pid: int | None = None) -> Path:
    """The temporary name a run writes ``target`` under until it completes: ``.<name>.partial-<pid>`` beside it."""
    return target.with_name(f".{target.name}.partial-{os.getpid() if pid is None else pid}")


def remove_stale_partials(target: Path) -> list[tuple[Path, int]]:
    """Delete the partial outputs of ``target`` (:func:`partial_path`) left by runs whose process no longer exists
    (killed with SIGKILL, or by a power cut: a stopped or failed run removes its own); a live process's file (another
    run writing the same ``--output`` now) is left alone. Returns ``[(path, size in bytes)]`` of those deleted.

    Before 3 Dec 2026 every killed run left its hidden file (73 MB for one AMLGentex month) that nothing removed.
    """
    removed: list[tuple[Path, int]] = []
    pattern = re.compile(re.escape(f".{target.name}.partial-") + r"(\d+)")
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        found = pattern.fullmatch(name)
        if found is None or _alive(int(found.group(1))):
            continue
        path = target.parent / name
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError:
            continue
        removed.append((path, size))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
