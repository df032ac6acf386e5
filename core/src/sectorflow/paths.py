"""Checking a file path before sectorflow writes to it, so that a bad path is a typed error naming the path, the
cause and the fix, not a raw ``FileExistsError`` traceback from deep inside a writer."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path

from .errors import PathNotWritableError

_WHY = {errno.EROFS: "it is on a read-only file system", errno.EACCES: "permission denied",
        errno.EPERM: "permission denied", errno.ENOSPC: "the disk is full", errno.ENOTDIR: "a parent is a file"}


def writable_file(path: str | Path, *, what: str = "output file", setting: str | None = None,
                  create_parents: bool = True) -> Path:
    """Make ``path`` ready to be written: its parent folders exist (created when ``create_parents``) and can be
    written by this user, and ``path`` itself is not a folder (an existing file must be writable).

    Args:
        path: the file to be written.
        what: what the file is, for the message (``"audit store"``, ``"PNG file"``).
        setting: the option or variable the path came from (``"SECTORFLOW_AUDIT_DB"``, ``"--png"``), named in the fix.

    Returns:
        ``path`` as a :class:`~pathlib.Path` (``~`` expanded).

    Raises:
        PathNotWritableError: names the path, the cause (a parent is a file, read-only file system, no permission,
            missing folder when ``create_parents`` is false) and the fix. No file is created.
    """
    path = Path(path).expanduser()
    fix = f"give {setting} a path in a folder you can write" if setting else "give a path in a folder you can write"

    def fail(reason: str, where: Path) -> PathNotWritableError:
        return PathNotWritableError(f"Cannot write the {what} {path}: {reason} ({where}). Fix: {fix}, or make "
                                    f"{where} a folder writable by user {_user()}.",
                                    details={"path": str(path), "reason": reason, "at": str(where)})

    try:
        if path.is_dir():
            raise PathNotWritableError(f"Cannot write the {what} {path}: it is a folder. Fix: {fix}, with a file "
                                       f"name (e.g. {path / 'file'}).",
                                       details={"path": str(path), "reason": "is a folder"})
        parent = path.parent
        existing = parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
    except PermissionError as exc:  # a folder on the way that this user may not look into
        closed = next((p for p in reversed(path.parents) if not os.access(p, os.X_OK)), path.parent)
        raise fail("permission denied", closed) from exc
    if existing.exists() and not existing.is_dir():
        raise fail("a parent is a file, not a folder", existing)
    if not parent.exists():
        if not create_parents:
            raise fail("the folder does not exist", parent)
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise fail(_WHY.get(exc.errno or 0, exc.strerror or type(exc).__name__), existing) from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise fail(_access_reason(parent), parent)
    if path.exists() and not os.access(path, os.W_OK):
        raise fail(_access_reason(path), path)
    return path


def _access_reason(where: Path) -> str:
    try:
        probe = os.statvfs(where)
        if probe.f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except OSError:  # pragma: no cover - statvfs of an existing path
        pass
    return "permission denied (read-only or another user's folder)"


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):  # pragma: no cover - non-POSIX or a uid without a passwd entry
        return str(os.getuid()) if hasattr(os, "getuid") else "this user"
