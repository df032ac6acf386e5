"""Import Paddle without its side effects on logging.

``import paddle`` adds a handler to the root logger and sets it to INFO, so every other library's log lines print
twice (../shared/notes/stack-facts.md). :func:`import_paddle` restores the root logger afterwards.

Paddle's dynamic-graph (eager) mode is per thread, and only the thread that first imported Paddle starts in it:
every other thread starts in static (PIR) mode, where a layer's parameters are graph values, not tensors (found when
a Flower simulation imported Paddle in its server thread and a trainable built in the main thread afterwards failed).
:func:`import_paddle` therefore puts the calling thread in dynamic mode, the mode every sectorflow component expects
(nothing here uses static mode; Paddle Inference predictors do not depend on it).
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
    if not paddle.in_dynamic_mode():  # a thread other than the one that imported Paddle (see the module docstring)
        paddle.disable_static()
    return paddle
