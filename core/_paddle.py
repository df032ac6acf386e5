"""Import Paddle without its side effects on logging.

``import paddle`` adds a handler to the root logger and sets it to INFO, so every other library's log lines print
twice (../shared/notes/stack-facts.md). :func:`import_paddle` restores the root logger afterwards.
"""

from __future__ import annotations

import logging
import warnings
from types import ModuleType


def import_paddle() -> ModuleType:
    """``import paddle``, leaving the root logger's handlers and level as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "No ccache found" and similar build-time warnings
        import paddle
    root.handlers[:] = handlers
    root.setLevel(level)
    return paddle
