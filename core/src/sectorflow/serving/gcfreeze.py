"""Keep the loaded models and libraries out of the cyclic garbage collector's full collections (``gc.freeze``).

A serving process holds some 150,000 container objects once Paddle, FastAPI, pydantic and a model are loaded, and
they never become garbage. CPython's full (generation-2) collection walks all of them; at 200 concurrent clients
(``benchmarks/serve_load.py``) one such collection stopped the event loop, and with it every request in flight, for
220-440 ms on the loaded 2-core development machine, a few times a minute: that pause alone was the p99 latency.
:func:`gc.freeze` (Python 3.7+, the measure Instagram describes for its Django workers) moves every object that
exists at that moment to a permanent generation that collections skip; objects created later are collected as
before, and frozen objects are still freed by reference counting when their last reference goes. Only reference
cycles among frozen objects that become garbage (e.g. parts of a model replaced by a hot reload) wait for
:func:`release`.

The same hold raises the collector's generation-0 threshold from 700 to :data:`GEN0_THRESHOLD` allocations. Each
request of a server under load allocates a few hundred container objects that live until it is answered (100 ms and
more at 200 clients), so with the default threshold the young collections ran a thousand times a second and kept
promoting live requests to older generations: 0.4-0.6 s of every 6 s in collections (measured with
``benchmarks/serve_load.py``). Request objects are freed by reference counting, not by the collector; the larger
threshold only lets cyclic garbage live a little longer.

Freezing is process-wide, so it is counted: each running server holds it once (``hold`` when its models are
loaded, ``release`` at shutdown), and the last release unfreezes. While any server holds it, the freeze is declared
to the core (:func:`sectorflow.declare_gc_frozen`), so a pipeline that hands its objects to the oldest generation with
``gc.freeze(); gc.unfreeze()`` (the AML pipeline) leaves the server's frozen objects alone (:func:`sectorflow.gc_frozen`).
"""

from __future__ import annotations

import gc
import threading

from sectorflow import declare_gc_frozen, withdraw_gc_frozen

GEN0_THRESHOLD = 20_000
"""Generation-0 threshold while a server holds the freeze (CPython's default: 700)."""

_lock = threading.Lock()
_holders = 0
_saved_threshold: tuple[int, ...] | None = None


def hold() -> None:
    """Freeze every object that exists now and raise the generation-0 threshold (call once the models are loaded;
    after a reload: :func:`refreeze`)."""
    global _holders, _saved_threshold
    with _lock:
        _holders += 1
        if _holders == 1:
            declare_gc_frozen()  # before the freeze: no pipeline's hand-over unfreezes it from now on
            _saved_threshold = gc.get_threshold()
            first, *older = _saved_threshold
            gc.set_threshold(max(first, GEN0_THRESHOLD), *older)
        gc.collect()  # garbage of the start-up (e.g. the loaders' temporaries) is not frozen with the rest
        gc.freeze()


def refreeze() -> None:
    """Freeze what was loaded since (a reloaded model), if a server holds the freeze."""
    with _lock:
        if _holders:
            gc.freeze()


def release() -> None:
    """Drop one hold; the last one moves the frozen objects back into the collected generations and restores the
    collector's thresholds."""
    global _holders, _saved_threshold
    with _lock:
        if _holders:
            _holders -= 1
            if not _holders:
                gc.unfreeze()
                if _saved_threshold is not None:
                    gc.set_threshold(*_saved_threshold)
                    _saved_threshold = None
                withdraw_gc_frozen()


def holders() -> int:
    """Running servers that hold the freeze (0: nothing is frozen by serving)."""
    return _holders
