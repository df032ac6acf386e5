"""Audit-admin routes (scope ``audit``): export records and inclusion proofs of the compliance audit log.

The scope only lets a key reach these routes; ``sectorflow.compliance.AuditAdmin`` then applies separation of duties:
a key holding ``audit`` gets the ``audit_admin`` role, a key holding ``admin`` (model operations) the ``operator``
role, and a key with both is refused (the refusal is itself recorded). Every read is recorded as ``audit.read``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from ..errors import ConfigError
from .access import client_address, require
from .auth import SCOPE_ADMIN, SCOPE_AUDIT, ApiKey
from .routes_tasks import ERRORS


def _admin(key: ApiKey, request: Request) -> Any:
    try:
        from ..compliance import AuditAdmin, get_log  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ConfigError("The audit routes need sectorflow.compliance (pip install 'sectorflow[compliance]').") \
            from exc
    audit_log = get_log()
    if audit_log is None:
        raise ConfigError("This server has no audit log: set SECTORFLOW_AUDIT_DB and SECTORFLOW_AUDIT_KEY.")
    roles = {"audit_admin"} if SCOPE_AUDIT in key.scopes else set()
    if SCOPE_ADMIN in key.scopes:
        roles.add("operator")
    return AuditAdmin(audit_log, key.id, roles=roles, source=client_address(request))


def audit_router() -> APIRouter:
    """``GET /v1/audit/records`` and ``GET /v1/audit/proof/{seq}``."""
    router = APIRouter(prefix="/v1/audit", tags=["audit"])
    responses = {k: ERRORS[k] for k in (401, 403, 422)} | {
        400: {"model": ERRORS[422]["model"], "description": "No audit log configured, or no such record."},
        503: {"model": ERRORS[422]["model"], "description": "The audit log cannot be written."}}

    @router.get("/records", operation_id="audit_records", responses=responses,
                summary="Audit records in a time range (ISO-8601 UTC), each with its Merkle leaf hash")
    async def records(request: Request, since: str | None = Query(None, max_length=40),
                      until: str | None = Query(None, max_length=40),
                      limit: int = Query(1000, ge=1, le=10000),
                      key: ApiKey = Depends(require(SCOPE_AUDIT))) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            out = []
            for record in _admin(key, request).export(since=since, until=until):
                out.append(record)
                if len(out) >= limit:
                    break
            return out

        return await asyncio.to_thread(read)

    @router.get("/proof/{seq}", operation_id="audit_proof", responses=responses,
                summary="Inclusion proof of one record against a freshly signed checkpoint")
    async def proof(request: Request, seq: int, key: ApiKey = Depends(require(SCOPE_AUDIT))) -> dict[str, Any]:
        if seq < 0:
            raise ConfigError(f"seq={seq}: record numbers start at 0.")
        return await asyncio.to_thread(lambda: _admin(key, request).prove(seq))

    return router
