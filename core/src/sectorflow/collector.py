"""What the host process has told the core about CPython's cyclic garbage collector: whether it froze objects.

A host (``sectorflow serve``, a pre-fork worker that calls :func:`gc.freeze` before forking, a notebook) may move the
objects it keeps to the collector's permanent generation (:func:`gc.freeze`). A pipeline that hands its own objects
straight to the oldest generation with ``gc.freeze(); gc.unfreeze()`` (the AML pipeline does, see docs/aml.md) would
then unfreeze the host's objects too, so it asks :func:`gc_frozen` first and skips the hand-over while a host says
it froze objects. The host says so explicitly; nothing probes the collector (``gc.get_freeze_count()`` walks every
frozen object, O(n) in CPython 3.11):

- :func:`gc_frozen_by_host` -> a context manager: ``with gc_frozen_by_host(): gc.freeze(); ...; gc.unfreeze()``.
- :func:`declare_gc_frozen` / :func:`withdraw_gc_frozen` -> the same as two calls, for a host whose freeze starts and
  ends in different places (``sectorflow.serving.gcfreeze``: when the models are loaded / at shutdown).
- :func:`gc_frozen` -> ``True`` while at least one declaration is in place (an O(1) read; declarations are counted,
  so two servers in one process each declare once and the last withdrawal ends it).

A host that calls :func:`gc.freeze` without declaring it may see its frozen objects moved back to the collected
generations by such a pipeline (they are still collected correctly; only the host's saving is lost).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_declared = 0


def declare_gc_frozen() -> None:
    """Record that the host froze (or is about to freeze) objects with :func:`gc.freeze`; call it before freezing,
    and :func:`withdraw_gc_frozen` once per call after :func:`gc.unfreeze`."""
    global _declared
    with _lock:
        _declared += 1


def withdraw_gc_frozen() -> None:
    """Withdraw one :func:`declare_gc_frozen` (more withdrawals than declarations are ignored)."""
    global _declared
    with _lock:
        if _declared:
            _declared -= 1


def gc_frozen() -> bool:
    """Whether a host has declared that it keeps objects frozen (:func:`gc.freeze`); O(1)."""
    return _declared > 0


@contextmanager
def gc_frozen_by_host() -> Iterator[None]:
    """Declare, for the ``with`` block, that the host keeps objects frozen; withdrawn on the way out (also on error)."""
    declare_gc_frozen()
    try:
        yield
    finally:
        withdraw_gc_frozen()
