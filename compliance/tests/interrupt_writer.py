"""Child process of test_interrupt.py: append audit records through the process-wide log (``runtime``, whose close
at exit signs the last checkpoint) as a task call does (a ``call_started`` with ``durable=False``, then its
``call_finished``), printing each sequence number once its append returned, until SIGINT stops it; then exit 130
as ``sectorflow`` does after Ctrl-C (``KeyboardInterrupt``, or ``sectorflow.stopping``'s ``Stopped``).

Usage: interrupt_writer.py HANDLER [STATEMENT N]. HANDLER: ``keyboard`` (Python's default SIGINT handler) or
``stopping`` (the one ``sectorflow run`` installs). With STATEMENT and N, the process sends itself SIGINT right after
the N-th execution of the SQL statement that starts with STATEMENT returned (``BEGIN IMMEDIATE``, ``INSERT INTO
records``, ``COMMIT``, ``PRAGMA synchronous=NORMAL`` ...): the interrupt lands exactly there. The store and key come
from ``SECTORFLOW_AUDIT_DB`` and ``SECTORFLOW_AUDIT_KEY``.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from sectorflow import stopping
from sectorflow.compliance import runtime
from sectorflow.compliance.records import make_object


class InterruptingConnection:
    """A sqlite3 connection that sends this process SIGINT after the ``n``-th ``statement`` it executed."""

    def __init__(self, conn: Any, statement: str, n: int) -> None:
        self._conn, self._statement, self._left = conn, statement, n

    def execute(self, sql: str, params: Any = ()) -> Any:
        cursor = self._conn.execute(sql, params)
        if sql.startswith(self._statement):
            self._left -= 1
            if self._left == 0:
                signal.raise_signal(signal.SIGINT)  # its handler runs at the next bytecode: right here
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def main() -> int:
    handler = sys.argv[1]
    # Python's own handler whatever this process inherited: a job started in the background by a non-interactive
    # shell (`cmd &`, as a CI runner may) starts with SIGINT ignored, and Python then installs no handler at all
    signal.signal(signal.SIGINT, signal.default_int_handler)
    lg = runtime.get_log()
    assert lg is not None
    if len(sys.argv) > 3:
        lg.store._conn = InterruptingConnection(lg.store._conn, sys.argv[2], int(sys.argv[3]))  # type: ignore[attr-defined]
    try:
        if handler == "stopping":
            with stopping.stop_on_signals():
                loop(lg)
        else:
            loop(lg)
    except (KeyboardInterrupt, stopping.Stopped):
        sys.stderr.write("stopped by SIGINT.\n")
        return 130
    return 0


def loop(lg: Any) -> None:
    i = 0
    while True:
        for durable in (False, True):  # a call's start (its fsync rides on its end's), then its end
            seq = lg.append("test.interrupt", actor="writer", obj=make_object(task="interrupt"), n_items=1,
                            inputs=[{"i": i}], details={"i": i}, durable=durable)
            sys.stdout.write(f"{seq}\n")
            sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    sys.exit(main())
