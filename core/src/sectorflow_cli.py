"""The ``sectorflow`` script's entry point: :func:`sectorflow.cli.main`, with Ctrl-C while it is imported answered
as later: one line, exit 130.

Importing ``sectorflow`` (pydantic, numpy, typer, the plugins' registry) takes a second or two; a Ctrl-C in that
time (before ``main`` runs) was a ``KeyboardInterrupt`` traceback (fresh-user report, 3 Dec 2026). This module
imports nothing of the package until :func:`main` runs, inside its ``try``. It is a top-level module, not part of
the ``sectorflow`` package, because importing any module of the package runs the package's ``__init__`` first.
"""

from __future__ import annotations

import os
import sys

import _signal as signal  # the C module: `signal` imports enum and functools, tens of milliseconds more

INTERRUPTED = "stopped by SIGINT."
"""What ``sectorflow`` prints for a Ctrl-C outside a command that stops cleanly (as :func:`sectorflow.cli.main`)."""


def _interrupted(signum: int, frame: object) -> None:
    """SIGINT while the package is imported: nothing has been read or written yet, so the process ends at once
    (a ``KeyboardInterrupt`` raised inside the import machinery can be swallowed: "Exception ignored in ...")."""
    try:
        sys.stderr.write(INTERRUPTED + "\n")
        sys.stderr.flush()
    finally:
        os._exit(130)


def main(argv: list[str] | None = None) -> int:
    """Import :mod:`sectorflow.cli` and run its ``main``; a Ctrl-C during the import prints :data:`INTERRUPTED`
    and exits with 130 (a SIGINT that is ignored, as in a background job, stays ignored)."""
    previous = signal.getsignal(signal.SIGINT)
    quiet = previous is signal.default_int_handler
    if quiet:
        signal.signal(signal.SIGINT, _interrupted)
    try:
        from sectorflow.cli import main as run
    except KeyboardInterrupt:  # raised before the handler was in place
        print(INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    finally:
        if quiet:
            signal.signal(signal.SIGINT, previous)
    return run(argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
