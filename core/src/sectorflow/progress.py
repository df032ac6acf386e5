"""Progress of ``sectorflow run`` on standard error (never on standard output, where the results go).

The size of a run is knowable as bytes: the input file's size, and how far into it the reader has got (the offset
of the file descriptor the reader has open on it, :func:`bytes_read`; for a ``.gz`` file the compressed bytes). From
those two and the time so far come the percent done and the time left; the items done are counted as results come.

- On a terminal: a rich progress bar (bytes done / total, percent, items, time left), removed at the end.
- Otherwise (a log file, a pipe, a CI job): one plain line every ``SECTORFLOW_PROGRESS_INTERVAL`` seconds (default
  5), e.g. ``progress: aml rows.csv: 12,288 items, 1.2 MB of 3.9 MB (31%), 0:00:04 elapsed, about 0:00:09 left``.
- ``sectorflow run --no-progress``: neither.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from types import TracebackType
from typing import Optional

from rich.console import Console
from rich.progress import (BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from .env import raw
from .errors import ConfigError

DEFAULT_INTERVAL = 5.0
"""Seconds between two plain progress lines when standard error is not a terminal."""


def interval() -> float:
    """``SECTORFLOW_PROGRESS_INTERVAL`` in seconds (0: a line at every update), default :data:`DEFAULT_INTERVAL`.

    Raises:
        ConfigError: the variable is not a number >= 0.
    """
    value = raw("progress_interval")
    if value is None or not value.strip():
        return DEFAULT_INTERVAL
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise ConfigError(f"SECTORFLOW_PROGRESS_INTERVAL={value!r} is not a number of seconds >= 0.")
    return seconds


def _open_fds() -> list[int]:
    folder = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        return [int(name) for name in os.listdir(folder) if name.isdigit()]
    except OSError:
        return list(range(3, 256))


def bytes_read(path: Path) -> Optional[int]:
    """How far into ``path`` this process has read: the offset of a file descriptor open on it (the furthest, if
    several), ``None`` when none is open. Found by the file's device and inode, so any reader (a plugin's too) is
    seen without its help."""
    try:
        target = os.stat(path)
    except OSError:
        return None
    best: Optional[int] = None
    for fd in _open_fds():
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != (target.st_dev, target.st_ino) or not stat.S_ISREG(info.st_mode):
                continue
            offset = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError:
            continue
        best = offset if best is None else max(best, offset)
    return best


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class RunProgress:
    """Progress of one run over ``path`` (``None``: its size is not knowable), on ``console`` (standard error).

    ``update(items)`` after each chunk, with the items done so far. ``enabled=False`` shows nothing.
    """

    def __init__(self, label: str, path: Optional[Path], console: Console, *, enabled: bool = True) -> None:
        self.label = label
        self.path = path
        self.console = console
        self.enabled = enabled
        self.total: Optional[int] = None
        if path is not None:
            try:
                info = os.stat(path)
                self.total = info.st_size if stat.S_ISREG(info.st_mode) and info.st_size > 0 else None
            except OSError:
                self.total = None
        self.terminal = enabled and console.is_terminal
        self.interval = interval() if enabled and not self.terminal else DEFAULT_INTERVAL
        self.start = time.monotonic()
        self.last_line = self.start
        self._bar: Optional[Progress] = None
        self._task = None
        self._seen = False

    def __enter__(self) -> RunProgress:
        self.start = self.last_line = time.monotonic()
        if self.terminal:
            columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20)]
            if self.total is not None:
                columns += [TextColumn("{task.fields[read]}"), TaskProgressColumn()]
            columns.append(TextColumn("{task.fields[items]:,} items"))
            # time left where the size is known, else the time so far (narrow terminals: one or the other)
            columns += [TextColumn("left"), TimeRemainingColumn()] if self.total is not None else [TimeElapsedColumn()]
            self._bar = Progress(*columns, console=self.console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, items=0, read=self._read(0))
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, value, traceback)

    def _read(self, done: int) -> str:
        return f"{_size(done)} of {_size(self.total)}" if self.total else ""

    def position(self) -> Optional[int]:
        """Bytes of the input read so far (at most its size), ``None`` when unknown."""
        if self.total is None or self.path is None:
            return None
        done = bytes_read(self.path)
        if done is None:  # not open (any more): read to the end once it was seen open, else not begun
            return self.total if self._seen else None
        self._seen = True
        return min(done, self.total)

    def line(self, items: int, now: float) -> str:
        """The plain progress line for ``items`` done at ``now`` (``time.monotonic()``)."""
        elapsed = now - self.start
        text = f"progress: {self.label}: {items:,} items"
        done = self.position()
        if done is not None and self.total:
            text += f", {_size(done)} of {_size(self.total)} ({100 * done / self.total:.0f}%)"
        text += f", {_clock(elapsed)} elapsed"
        if done and self.total:
            text += f", about {_clock(elapsed * (self.total - done) / done)} left"
        return text

    def update(self, items: int) -> None:
        """Show that ``items`` items are done."""
        if not self.enabled:
            return
        if self._bar is not None:
            done = self.position()
            known = {"completed": done, "read": self._read(done)} if done is not None else {}
            self._bar.update(self._task, items=items, **known)
            return
        now = time.monotonic()
        if now - self.last_line >= self.interval:
            self.last_line = now
            self.console.print(self.line(items, now), highlight=False, markup=False)
