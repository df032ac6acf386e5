"""Tamper-evident audit log (issue 4): every task call, model load, configuration change, plugin load, federated
run and round, key rotation and access decision, hashed into an RFC 9162 Merkle tree with Ed25519-signed
checkpoints. See ``docs/compliance.md``.

Public API::

    from sectorflow.compliance import record_federated, record_access, record_config_change, get_log
"""

from __future__ import annotations

from .admin import AuditAdmin
from .config import AuditConfig, load_config
from .errors import AuditAccessDenied, AuditConfigError, AuditKeyError, AuditWriteError, ProofError
from .keys import generate_key_file, load_key_file
from .log import AuditLog
from .runtime import get_log, record_access, record_config_change, record_federated, record_task_event, reset
from .store import open_store
from .verify import VerifyReport, verify_log, verify_proof_document

__all__ = [
    "AuditAdmin", "AuditConfig", "AuditLog", "VerifyReport", "load_config", "get_log", "reset", "open_store",
    "record_task_event", "record_federated", "record_access", "record_config_change", "generate_key_file",
    "load_key_file", "verify_log", "verify_proof_document", "AuditAccessDenied", "AuditConfigError",
    "AuditKeyError", "AuditWriteError", "ProofError",
]
