"""Import Paddle without its side effects on logging, and without its known harmless notes on stderr.

``import paddle`` adds a handler to the root logger and sets it to INFO, so every other library's log lines print
twice (../shared/notes/stack-facts.md). :func:`import_paddle` restores the root logger afterwards.

Paddle's dynamic-graph (eager) mode is per thread, and only the thread that first imported Paddle starts in it:
every other thread starts in static (PIR) mode, where a layer's parameters are graph values, not tensors (found when
a Flower simulation imported Paddle in its server thread and a trainable built in the main thread afterwards failed).
:func:`import_paddle` therefore puts the calling thread in dynamic mode, the mode every sectorflow component expects
(nothing here uses static mode; Paddle Inference predictors do not depend on it).

Paddle 3.3 (checked with 3.3.1) prints notes that say nothing about the user's run (a fresh-user check of 2 Dec 2026
saw them on ``sectorflow run customer_service``): on import, a ``UserWarning`` "No ccache found" (Paddle's C++
extension builder, when no ``ccache`` is on ``PATH``); under ``paddle.jit.save``, a ``UserWarning`` "Tensor do not
have 'place' interface for pir graph mode" (``paddle.zeros_like`` reads ``Tensor.place`` while tracing) and a C++
log line "Paddle static graph(PIR) not support input out tensor for now!!!!!" (Paddle's own APIs pass ``out=None``
to its operators while tracing). :data:`PADDLE_WARNINGS` are filtered by message and module
(``warnings.filterwarnings``, from :func:`import_paddle` on: every other warning still shows); the C++ line is not a
Python warning, so :func:`paddle_notes_filtered` drops it, and only it, from stderr around an export.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

PADDLE_WARNINGS: tuple[tuple[str, str], ...] = (
    (r"No ccache found", r"paddle\.utils\.cpp_extension\.extension_utils"),
    (r"Tensor do not have 'place' interface for pir graph mode", r"paddle\.pir\.math_op_patch"),
)
"""``(message, module)`` regular expressions of the Paddle ``UserWarning``\\ s :func:`import_paddle` filters (see the
module docstring)."""

PADDLE_NATIVE_NOTES = re.compile(rb"^W\d{4} [\d:.]+ +\d+ eager_utils\.cc:\d+\] Paddle static graph\(PIR\) not support "
                                 rb"input out tensor for now!*\r?\n?$")
"""The C++ log line :func:`paddle_notes_filtered` drops (glog's ``W<mmdd> <time> <thread> <file>:<line>]`` prefix)."""

_filters_added = False
_fd_lock = threading.Lock()


def _filter_paddle_warnings() -> None:
    global _filters_added
    if not _filters_added:
        for message, module in PADDLE_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning, module=module)
        _filters_added = True


def import_paddle() -> ModuleType:
    """``import paddle``, leaving the root logger's handlers and level as they were, with the warnings of
    :data:`PADDLE_WARNINGS` filtered (the calling thread in dynamic mode; see the module docstring)."""
    _filter_paddle_warnings()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import paddle
    root.handlers[:] = handlers
    root.setLevel(level)
    if not paddle.in_dynamic_mode():  # a thread other than the one that imported Paddle (see the module docstring)
        paddle.disable_static()
    return paddle


@contextmanager
def paddle_notes_filtered() -> Iterator[None]:
    """Around a ``paddle.jit.save`` (or any block that traces a Paddle model): what the process writes to stderr
    (file descriptor 2) passes through unchanged, line by line and as it is written, except the C++ line of
    :data:`PADDLE_NATIVE_NOTES`. The descriptor is process-wide, so one block runs at a time (a lock); other threads'
    output during the block goes through the same filter. The Python warnings of :data:`PADDLE_WARNINGS` are
    filtered too."""
    _filter_paddle_warnings()
    with _fd_lock:
        sys.stderr.flush()
        saved = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)

        def forward() -> None:
            with os.fdopen(read_end, "rb") as source:
                for line in source:
                    if not PADDLE_NATIVE_NOTES.match(line):
                        os.write(saved, line)

        pump = threading.Thread(target=forward, name="sectorflow-paddle-stderr", daemon=True)
        pump.start()
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)  # closes the pipe's last write end: the pump reads to the end and stops
            pump.join(timeout=10)
            if not pump.is_alive():  # else a child process still holds the pipe: leave the pump its descriptor
                os.close(saved)
