"""``import paddle`` without its side effect on the root logger (it adds a handler and sets INFO; see
../shared/notes/stack-facts.md). The core has the same helper, but plugins use only the core's public API."""

from __future__ import annotations

import logging
import warnings
from types import ModuleType


def import_paddle() -> ModuleType:
    """``import paddle``, leaving the root logger's handlers and level as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
    root.handlers[:] = handlers
    root.setLevel(level)
    return paddle
