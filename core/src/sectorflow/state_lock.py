"""One run at a time on a SQLite state store: an exclusive lock held for the whole of a ``sectorflow run --state``
(and of a ``state reset``), so that a second run on the same file is refused at once instead of taking the first
one's unfinished run for a stale one (``--discard-unfinished`` then threw away a run that was still going).

SQLite: the lock is ``fcntl.flock`` on a sibling file ``STATE.lock`` (``state.sqlite.lock``
next to ``state.sqlite``), which also holds the holder's process id for the message. The operating system releases
it when the holder exits, however it exits (``kill -9`` included), so there is never a stale lock to clear by hand;
the file itself stays (deleting a lock file races with a process opening it). Nothing is locked on a platform
without ``fcntl`` (Windows).

PostgreSQL (``postgresql://``, since 3 Dec 2026; before, a server and a ``run --state`` on the same database both
wrote it): a session-level advisory lock on the store's schema (:mod:`sectorflow.state_lock_pg`), exclusive for a
run or reset, shared for ``sectorflow serve`` (replicas share one PostgreSQL store, docs/deployment.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ConfigError
from .state_store import default_state_path


try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def state_lock_path(state: str | Path | None) -> Path | None:
    """The lock file of the state store ``state`` (as :func:`~sectorflow.open_state_store` takes it: ``None`` for the
    default file, a path, ``sqlite:///path``), or ``None`` for a PostgreSQL URL."""
    if state is None:
        return default_state_path().with_name(default_state_path().name + ".lock")
    text = str(state)
    if text.startswith(("postgresql://", "postgres://")):
        return None
    if text.startswith("sqlite:///"):
        text = text[len("sqlite://"):]
    path = Path(text).expanduser()
    return path.with_name(path.name + ".lock")


@contextmanager
def state_lock(state: str | Path | None, *, what: str = "run") -> Iterator[None]:
    """Hold the exclusive lock of the state store ``state`` (a SQLite path or ``sqlite:///`` URL, ``None`` for the
    default file, or a ``postgresql://`` URL) for the block (see the module docstring). ``what`` names this
    process's action in the lock file or the lock's connection (``run``, ``reset``, ``serve``).

    Raises:
        ConfigError: another process holds it: "another run (pid N) is using STATE; wait for it to finish or use
            another --state" (``details``: ``{"state": ..., "pid": N or None}``); the lock file cannot be created
            (a folder that does not exist or is not writable); the PostgreSQL server cannot be reached.
    """
    if _is_postgres(state):
        from .state_lock_pg import pg_state_lock

        with pg_state_lock(str(state), what):
            yield
        return
    path = state_lock_path(state)
    if path is None or fcntl is None:
        yield
        return
    shown = str(state) if state is not None else str(default_state_path())
    if state is None:
        path.parent.mkdir(parents=True, exist_ok=True)  # as the store does for its default file
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # never O_TRUNC: the holder's pid is in it
    except OSError as exc:
        raise ConfigError(f"Cannot open the lock file {path} of the state store {shown}: {exc.strerror}. Give a "
                          "--state in an existing, writable folder.") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            pid = int(holder[0]) if holder and holder[0].isdigit() else None
            doing = holder[1] if len(holder) > 1 else "run"
            raise ConfigError(f"another {doing} (pid {pid if pid is not None else 'unknown'}) is using {shown}; wait "
                              "for it to finish or use another --state.",
                              details={"state": shown, "pid": pid, "lock": str(path)})
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {what}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # released below; a reader between the two finds no pid, not a wrong one
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def state_lock_holder(state: str | Path | None) -> dict[str, object] | None:
    """Who holds the lock of the state store ``state`` now: ``{"pid": N or None, "doing": "run" | "reset" | ...}``,
    or ``None`` when nobody does (also on a platform without ``fcntl``, or with no lock file yet). For a PostgreSQL
    URL it asks the server (``pg_locks``); a server that cannot be reached raises ``ConfigError``.
    ``sectorflow aml state show`` uses it to tell a run in progress from one that was killed (both leave an
    unfinished run in the store). The probe takes a shared lock for an instant, without creating the file; a run
    that starts in that instant is refused as if another held the store (it says so; run it again).
    """
    if _is_postgres(state):
        from .state_lock_pg import pg_state_lock_holder

        return pg_state_lock_holder(str(state))
    path = state_lock_path(state)
    if path is None or fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            return {"pid": int(holder[0]) if holder and holder[0].isdigit() else None,
                    "doing": holder[1] if len(holder) > 1 else "run"}
        return None
    finally:
        os.close(fd)



def _is_postgres(state: str | Path | None) -> bool:
    return state is not None and str(state).startswith(("postgresql://", "postgres://"))
