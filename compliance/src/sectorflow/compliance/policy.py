"""The audit policy: settings an audit admin pins in the store, so that the audited cannot stop or weaken auditing
(MLPS 2.0 8.1.4.3 d: the audit process protected from unauthorised interruption; 8.1.5.2 a: only the audit admin
administers it).

``sectorflow audit policy --set KEY=VALUE`` (audit admin only) stores the policy in the store's ``meta`` table and
records it as ``config.changed``. Every process that opens the log then compares its own settings (environment,
TOML file) with the policy: a difference made by an audit admin is applied and recorded as ``config.changed``; one
made by anyone else (an operator, a service account) is refused: the pinned value is used and the attempt is
recorded as ``access.decision`` with outcome ``denied``. The same holds for ``SECTORFLOW_AUDIT=off`` once a store
exists: only an audit admin may turn the log off (recorded as ``audit.disabled``, so the gap is visible).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .config import AuditConfig
from .errors import AuditConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .log import AuditLog
    from .store import Store

POLICY_KEY = "policy"
POLICY_FIELDS = ("regulated", "retention_days", "retention_by_kind", "allow_short_retention", "replica",
                 "replica_mode", "replica_max_lag", "audit_admins", "operators", "checkpoint_every",
                 "checkpoint_seconds", "sqlite_synchronous", "encrypt_payloads", "subject_fields", "retries")
"""Settings a policy may pin (``db`` and ``key_file`` locate the store and cannot be pinned inside it)."""


_SETS = ("regulated", "audit_admins", "operators")


def _plain(value: Any, key: str | None = None) -> Any:
    """A setting as JSON stores it: sets (and lists given for set-valued settings) as sorted lists."""
    if isinstance(value, (set, frozenset)) or (key in _SETS and isinstance(value, (list, tuple))):
        return sorted(set(value))
    return value


def read_policy(store: Store) -> dict[str, Any] | None:
    """The pinned policy (``{field: value}``), or ``None`` when no audit admin pinned one."""
    raw = store.get_meta(POLICY_KEY)
    return json.loads(raw) if raw else None


def admins_of(store: Store | None, cfg: AuditConfig) -> frozenset[str]:
    """Who is an audit admin: the pinned policy's ``audit_admins`` when there is one, else the configuration's."""
    policy = read_policy(store) if store is not None else None
    if policy and "audit_admins" in policy:
        return frozenset(policy["audit_admins"])
    return cfg.audit_admins


def parse_settings(pairs: list[str]) -> dict[str, Any]:
    """``["regulated=aml,federated", "retention_days=365"]`` -> typed values (validated by :class:`AuditConfig`).

    Raises:
        AuditConfigError: not ``KEY=VALUE``, a key outside :data:`POLICY_FIELDS`, or a value the setting refuses.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in POLICY_FIELDS:
            raise AuditConfigError(f"--set {pair!r}: give KEY=VALUE with KEY one of {', '.join(POLICY_FIELDS)}.")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
        if key in ("regulated", "audit_admins", "operators") and isinstance(out[key], str):
            out[key] = [p.strip() for p in out[key].split(",") if p.strip()]
    return out


def pin(lg: AuditLog, actor: str, settings: dict[str, Any], *, source: str | None = None) -> dict[str, Any]:
    """Pin ``settings`` (merged into the current policy) in the store and record the change. The caller has checked
    the audit-admin role (:class:`~.admin.AuditAdmin`). Returns the new policy.

    Raises:
        AuditConfigError: the merged settings are not a valid configuration (e.g. retention under the minimum).
    """
    policy = {**(read_policy(lg.store) or {}), **{k: _plain(v, k) for k, v in settings.items()}}
    try:
        checked = AuditConfig(**{**lg.config.model_dump(), **policy})
    except Exception as exc:
        raise AuditConfigError(f"The policy is not a valid audit configuration: {exc}") from exc
    with lg._lock, lg.store.transaction():
        lg.store.put_meta(POLICY_KEY, json.dumps(policy, sort_keys=True))
    lg.append("config.changed", actor=actor, source=source, outcome="success", reason="audit policy pinned",
              details={"policy": policy})
    lg.config = checked
    return policy


def enforce(lg: AuditLog, cfg: AuditConfig, actor: str) -> AuditConfig:
    """Compare this process's settings with the pinned policy (see the module docstring); returns the settings to
    use. Differences by an audit admin are applied and recorded; by anyone else refused and recorded."""
    policy = read_policy(lg.store)
    if not policy:
        return cfg
    admins = frozenset(policy.get("audit_admins", cfg.audit_admins))
    mine = {k: _plain(getattr(cfg, k), k) for k in policy}
    differ = {k: mine[k] for k in policy if mine[k] != policy[k]}
    if not differ:
        return cfg
    if actor in admins and actor not in set(policy.get("operators", ())):
        lg.append("config.changed", actor=actor, source="local", outcome="success",
                  reason="an audit admin's process settings differ from the pinned policy",
                  details={"changed": sorted(differ)})
        return cfg
    lg.append("access.decision", actor=actor, source="local", outcome="denied",
              reason=f"{actor!r} is not an audit admin: the settings {sorted(differ)} differ from the pinned audit "
                     f"policy and were not applied",
              details={"action": "audit.settings", "refused": sorted(differ), "roles": []})
    return cfg.model_copy(update={k: (frozenset(v) if isinstance(getattr(cfg, k), frozenset) else v)
                                  for k, v in policy.items()})
