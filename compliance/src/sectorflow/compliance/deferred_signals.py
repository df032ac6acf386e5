"""Holding SIGINT and SIGTERM back while an audit-store transaction runs, so that Ctrl-C cannot split one.

Python runs a signal's handler (``KeyboardInterrupt``, ``sectorflow.stopping``'s ``Stopped``) in the main thread
between two bytecodes, at any point: right after ``BEGIN IMMEDIATE`` returned, before the ``try`` that rolls back
was entered, the exception left a transaction open on the log's connection; the log's close at exit
(``runtime.reset``, an ``atexit`` callback) then failed with ``sqlite3.OperationalError: cannot start a transaction
within a transaction`` and could not sign its last checkpoint, so the next ``audit verify`` found the run's records
unsigned. :func:`signals_deferred` swaps the handlers of :data:`DEFERRED` for one that only notes the signal, runs
the block (the whole transaction, from ``BEGIN`` to ``COMMIT`` or ``ROLLBACK``), puts the handlers back and then
raises the noted signal again (``signal.raise_signal``), so its own handler runs right after the block: a Ctrl-C
is acted on at most one commit later (a few milliseconds; an fsync), and the transaction has either committed as a
whole or not at all.

Only the main thread runs Python signal handlers, and only it may set them: elsewhere the block runs as it is (no
handler can interrupt it there).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DEFERRED = (signal.SIGINT, signal.SIGTERM)
"""The signals held back during a transaction (the ones that stop a command cleanly)."""


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Run the block with :data:`DEFERRED` held back; a signal that arrived meanwhile is raised again after it.

    Nested use is fine (the inner block notes the signal and raises it again for the outer one, which holds it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    previous: dict[int, Any] = {}
    try:
        for signum in DEFERRED:  # inside the try: a signal between two swaps still gets its handler back
            previous[signum] = signal.signal(signum, note)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if noted:  # its own handler runs now (Python calls it at the next bytecode): after the block
            signal.raise_signal(noted[0])
