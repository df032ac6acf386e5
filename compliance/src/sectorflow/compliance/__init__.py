"""Tamper-evident audit log (issue 4): every task call, model load, configuration change, plugin load, federated
run and round, key rotation and access decision, hashed into an RFC 9162 Merkle tree with Ed25519-signed
checkpoints. See ``docs/compliance.md``.

Public API::

    from sectorflow.compliance import record_access, get_log
    from sectorflow.compliance import record_case_disposition, record_report_draft   # retention 5 years

On by default: with nothing configured, the first audited event creates an embedded SQLite store and key file under
``SECTORFLOW_HOME`` (issue 23). ``SECTORFLOW_AUDIT_REPLICA`` adds a replica (``replica.py``, ``restore.py``); an audit
admin pins the settings no other user's process can change (``policy.py``); checkpoints are also C2SP
``tlog-checkpoint`` notes (``records.signed_note``).

The names that need the ``compliance`` extra (``cryptography``, ``psycopg``) are imported on first use, so the
built-in ``audit`` plugin loads, and stays off, on an install without that extra.
"""

from __future__ import annotations

import importlib
from typing import Any

from .config import AuditConfig, load_config
from .errors import (AuditAccessDenied, AuditArchiveError, AuditConfigError, AuditKeyError, AuditRestoreError,
                     AuditWriteError, ProofError)
from .runtime import flush, get_log, record_access, record_case_disposition, record_report_draft, record_task_event, reset

_LAZY = {"AuditAdmin": "admin", "generate_key_file": "keys", "load_key_file": "keys", "AuditLog": "log",
         "open_store": "store", "VerifyReport": "verify", "verify_log": "verify",
         "verify_proof_document": "verify"}

__all__ = [
    "AuditConfig", "load_config", "get_log", "flush", "reset", "record_task_event", "record_access",
    "record_case_disposition", "record_report_draft", "AuditAccessDenied", "AuditArchiveError", "AuditConfigError",
    "AuditKeyError",
    "AuditWriteError", "AuditRestoreError", "ProofError", *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
