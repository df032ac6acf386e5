"""Stopping a command cleanly on SIGTERM or SIGINT (Ctrl-C).

Paddle installs C++ signal handlers when it is imported (SIGTERM among them) that print a C++ traceback banner and
kill the process: under ``sectorflow run`` the banner landed in the JSON-lines stream on standard output and the
run's ``.NAME.partial-PID`` file stayed behind. :func:`stop_on_signals` removes Paddle's handlers
(``paddle.disable_signal_handler()``, when Paddle is loaded) and installs Python ones that raise :class:`Stopped`:
the command's ``finally`` blocks run (a partial output file is removed, a ``--state`` run's store keeps its last
checkpoint), and :func:`sectorflow.cli.main` prints one line on standard error and exits ``128 + signal number``
(143 for SIGTERM, 130 for SIGINT), the shells' convention.

Python runs a signal handler between bytecodes of the main thread, so a signal that arrives while a predictor runs
is acted on when the call returns (at most one forward pass later).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a command cleanly."""


class Stopped(BaseException):
    """The command was stopped by a signal (a ``BaseException``, like ``KeyboardInterrupt``: no ``except Exception``
    swallows it). ``exit_code`` is ``128 + signum``; ``detail`` is what the command adds to its one-line message
    (e.g. where a ``--state`` run's state was saved)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        self.detail = ""
        super().__init__(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        """``"SIGTERM"`` or ``"SIGINT"``."""
        return signal.Signals(self.signum).name

    def message(self) -> str:
        """The one line printed on standard error."""
        return f"stopped by {self.name}" + (f": {self.detail}" if self.detail else ".")


_pending: list[int] = []
"""The signal received, kept until :func:`check`: an exception raised while a finaliser (``__del__``, a weakref
callback) runs is printed and dropped by Python, so the command checks again at its next chunk."""


def _raise(signum: int, frame: Any) -> None:
    for other in SIGNALS:  # a second Ctrl-C while the clean-up runs must not interrupt it
        signal.signal(other, signal.SIG_IGN)
    _pending[:] = [signum]
    raise Stopped(signum)


def check() -> None:
    """Raise :class:`Stopped` if a signal arrived whose exception was dropped (see ``_pending``); call it between
    chunks of work."""
    if _pending:
        raise Stopped(_pending[0])


def disable_paddle_handlers() -> None:
    """Remove the C++ signal handlers Paddle installed on import (no-op when Paddle is not loaded)."""
    paddle = sys.modules.get("paddle")
    disable = getattr(paddle, "disable_signal_handler", None)
    if callable(disable):
        disable()


def install() -> None:
    """Remove Paddle's handlers and install the handlers that raise :class:`Stopped` (main thread only; elsewhere
    nothing is changed)."""
    if threading.current_thread() is not threading.main_thread():
        return
    disable_paddle_handlers()
    for signum in SIGNALS:
        signal.signal(signum, _raise)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGINT raise :class:`Stopped`; the previous handlers come back after it.
    Call :func:`install` again after loading a model that may have installed handlers of its own. Outside the main
    thread (where Python cannot set handlers) the block runs with the handlers as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    _pending.clear()
    install()
    try:
        yield
    finally:
        _pending.clear()
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
