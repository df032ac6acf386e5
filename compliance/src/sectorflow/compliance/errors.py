"""Errors of the audit log; all subclass :class:`sectorflow.errors.SectorflowError`."""

from __future__ import annotations

from sectorflow import ConfigError, SectorflowError

from .merkle import ProofError


class AuditConfigError(ConfigError):
    """The audit log is misconfigured (no key file, bad store URL, an actor both operator and audit admin, ...)."""


class AuditWriteError(SectorflowError):
    """A record could not be written. For a task configured as regulated this fails the call it records."""

    http_status = 503


class AuditAccessDenied(SectorflowError, PermissionError):
    """Reading, exporting or proving needs the audit-admin role (MLPS 2.0 8.1.5.2 a): the actor lacks it."""

    http_status = 403


class AuditArchiveError(SectorflowError, ValueError):
    """An archive run asked for as of a time that is later than now: it would move records out of the live store
    before their retention period ends. The message gives the current time and what to give instead."""

    http_status = 400


class AuditKeyError(SectorflowError):
    """A key file that cannot be read, or a subject key that was shredded."""


__all__ = ["AuditArchiveError", "AuditRestoreError", "AuditConfigError", "AuditWriteError", "AuditAccessDenied", "AuditKeyError",
           "ProofError"]


class AuditRestoreError(SectorflowError):
    """A restore was refused: the replica does not verify, belongs to another log or holds nothing. Nothing was
    changed; ``details`` holds the replica's verify report when there is one."""

    http_status = 409
