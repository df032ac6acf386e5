"""Audit-log configuration: environment variables, optionally a TOML file; the environment wins.

Environment:
    SECTORFLOW_AUDIT: ``off`` turns the log off; ``on`` (or unset) leaves it on.
    SECTORFLOW_AUDIT_DB: the store: a SQLite file path, or a ``postgresql://`` connection string. Unset (and no
        ``db`` in the file): the embedded default, ``$SECTORFLOW_HOME/audit/audit.db``, created by the first audited
        event together with a key file ``$SECTORFLOW_HOME/keys/audit-key.json`` (mode 0600); a one-line notice then
        says where both are and how to move them.
    SECTORFLOW_AUDIT_KEY: the key file made by ``sectorflow audit keygen`` (Ed25519 signing key, HMAC key, key-wrapping
        key). Kept apart from the store: never inside the database. Required when SECTORFLOW_AUDIT_DB is set.
    SECTORFLOW_AUDIT_REGULATED: task names (comma-separated) or ``*`` whose calls fail when their record cannot be
        written (fail closed, MLPS 2.0 8.1.4.3 d).
    SECTORFLOW_AUDIT_ADMINS / SECTORFLOW_AUDIT_OPERATORS: actor ids (comma-separated) holding the audit-admin and the
        operator role; nobody may hold both (MLPS 2.0 8.1.5.2).
    SECTORFLOW_AUDIT_RETENTION_DAYS: days records stay in the live store before ``sectorflow audit archive`` moves
        them to an archive file with their proofs (default 180: Cybersecurity Law art. 21(3), at least six months).
    SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS: ``FULL`` (default) or ``NORMAL`` (see :class:`AuditConfig`).
    SECTORFLOW_AUDIT_REPLICA / SECTORFLOW_AUDIT_REPLICA_MODE: a second store written with every commit (``sync``) or
        from a background thread (``async``); see :class:`AuditConfig`.
    SECTORFLOW_AUDIT_CONFIG: a TOML file with an ``[audit]`` table holding the same settings under the names of
        :class:`AuditConfig`'s fields (``db``, ``key_file``, ``regulated``, ...).
"""

from __future__ import annotations

import getpass
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from sectorflow import home, settings

from .errors import AuditConfigError

DEFAULT_RETENTION_DAYS = 180
"""Cybersecurity Law (2016) art. 21(3): network logs kept at least six months."""

AML_RETENTION_DAYS = 1827
"""Five years (with two leap days): the record-keeping rule for financial institutions' customer due diligence and
transaction records (PBOC/CBIRC/CSRC Order 2022 No. 1; its article unverified, see docs/compliance.md)."""

RECORD_KINDS = ("aml_call", "case_disposition", "report_draft", "operations")
"""Record kinds with their own retention (see :func:`~.records.record_kind`)."""

MIN_RETENTION_DAYS = {"aml_call": AML_RETENTION_DAYS, "case_disposition": AML_RETENTION_DAYS,
                      "report_draft": AML_RETENTION_DAYS, "operations": DEFAULT_RETENTION_DAYS}
"""The legal minimum of each kind; a shorter setting is refused unless ``allow_short_retention``."""


class AuditConfig(BaseModel):
    """Settings of the audit log.

    Attributes:
        enabled: ``False`` only with ``SECTORFLOW_AUDIT=off`` (or ``enabled = false``).
        embedded: no store was configured: ``db`` and ``key_file`` are the defaults under ``$SECTORFLOW_HOME``,
            created by the first audited event; the OS user running sectorflow is then the audit admin unless
            ``audit_admins`` names others.
        db: SQLite path or ``postgresql://`` DSN.
        key_file: path of the key file (``sectorflow audit keygen``).
        regulated: task names whose calls fail closed; ``"*"`` means every task.
        retention_days: days operation records stay in the live store before archiving (>= 180 unless
            ``allow_short_retention``).
        retention_by_kind: days per record kind (``aml_call``, ``case_disposition``, ``report_draft``,
            ``operations``); unset kinds get their legal minimum (5 years = 1827 days for the first three,
            ``retention_days`` for operations). Under the minimum is refused unless ``allow_short_retention``.
        checkpoint_every: sign a checkpoint after this many records (and at close).
        checkpoint_seconds: ... or when the last checkpoint is older than this at an append.
        retries: extra write attempts for non-regulated tasks before the record is counted as lost.
        encrypt_payloads: also store the items, AES-GCM encrypted under a per-subject key (crypto-shredding).
        subject_fields: task name -> input field naming the data subject (e.g. ``{"aml": "customer_id"}``).
        audit_admins / operators: actor ids holding each role.
        pg_schema: PostgreSQL schema holding the tables.
        replica: a second store (SQLite path or ``postgresql://`` DSN, tables in ``replica_pg_schema``, default
            ``pg_schema``) that receives every record and checkpoint: ``replica_mode = "sync"`` (default) after each
            commit, ``"async"`` from a background thread, appends then wait only when the replica is more than
            ``replica_max_lag`` records behind. ``sectorflow audit verify`` checks it, ``audit restore --from``
            repairs the store from it; losing it appends an ``audit.replica_failed`` record (never a silent gap).
        sqlite_synchronous: ``FULL`` (default: every record fsynced before the operation it records returns, so
            it survives power loss; an unregulated call's ``call_started`` is committed before the work and
            fsynced by its ``call_finished``'s commit, one fsync per call: docs/compliance.md) or ``NORMAL`` (WAL
            commits survive a killed process but the last ones may be lost on power loss or an OS crash; about
            half the per-call overhead, see ``benchmarks/audit_bench.py``).
        commit: ``sync`` (default): every record committed before the call goes on; ``group``: the records of
            unregulated task calls are committed by a writer thread, many per durable commit, off the call's path
            (:mod:`.group_commit`; a committed record is as durable as ``sqlite_synchronous`` says, a killed
            process may lose the records of its last milliseconds of calls, not yet committed). Regulated tasks
            are always committed before the call goes on. ``SECTORFLOW_AUDIT_COMMIT``.
    """

    enabled: bool = False
    embedded: bool = False
    db: str | None = None
    key_file: Path | None = None
    regulated: frozenset[str] = frozenset()
    retention_days: int = Field(DEFAULT_RETENTION_DAYS, ge=1)
    retention_by_kind: dict[str, int] = Field(default_factory=dict)
    allow_short_retention: bool = False
    checkpoint_every: int = Field(64, ge=1)
    checkpoint_seconds: float = Field(60.0, gt=0)
    retries: int = Field(3, ge=0, le=20)
    encrypt_payloads: bool = False
    subject_fields: dict[str, str] = Field(default_factory=dict)
    audit_admins: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()
    pg_schema: str = Field("sectorflow_audit", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    commit: Literal["sync", "group"] = "sync"
    replica: str | None = None
    replica_pg_schema: str | None = Field(None, pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    replica_mode: Literal["sync", "async"] = "sync"
    replica_max_lag: int = Field(1000, ge=1)

    @field_validator("db", "replica")
    @classmethod
    def _known_store(cls, value: str | None) -> str | None:
        if value and "://" in value and not value.startswith(("postgresql://", "postgres://", "sqlite:///")):
            raise ValueError(f"{value!r} is neither a SQLite file path (or sqlite:///path) nor a postgresql:// DSN")
        return value

    @model_validator(mode="after")
    def _check(self) -> AuditConfig:
        both = self.audit_admins & self.operators
        if both:
            raise ValueError(f"actor(s) {sorted(both)} hold both the operator and the audit-admin role; MLPS 2.0 "
                             f"8.1.5.2 separates them: remove them from one list")
        if self.retention_days < DEFAULT_RETENTION_DAYS and not self.allow_short_retention:
            raise ValueError(f"retention_days={self.retention_days} is under {DEFAULT_RETENTION_DAYS} (Cybersecurity "
                             f"Law art. 21: at least six months); set allow_short_retention=true to force it")
        unknown = set(self.retention_by_kind) - set(RECORD_KINDS)
        if unknown:
            raise ValueError(f"retention_by_kind: unknown kind(s) {sorted(unknown)}; use {RECORD_KINDS}")
        for kind, days in self.retention_by_kind.items():
            if days < 1:
                raise ValueError(f"retention_by_kind.{kind}={days}: give a number of days >= 1")
            if days < MIN_RETENTION_DAYS[kind] and not self.allow_short_retention:
                why = ("five years: customer due diligence and transaction record keeping, PBOC/CBIRC/CSRC Order 2022 "
                       "No. 1" if kind != "operations" else "six months: Cybersecurity Law art. 21")
                raise ValueError(f"retention_by_kind.{kind}={days} is under {MIN_RETENTION_DAYS[kind]} days ({why}); "
                                 f"set allow_short_retention=true to force it")
        return self

    def retention_for(self, kind: str) -> int:
        """Days records of ``kind`` stay in the live store (see ``retention_by_kind``)."""
        if kind in self.retention_by_kind:
            return self.retention_by_kind[kind]
        return self.retention_days if kind == "operations" else MIN_RETENTION_DAYS[kind]

    def is_regulated(self, task: str | None) -> bool:
        """Whether calls of ``task`` must fail when their audit record cannot be written."""
        return "*" in self.regulated or (task is not None and task in self.regulated)


def _split(raw: str) -> frozenset[str]:
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


def load_config(environ: dict[str, str] | None = None) -> AuditConfig:
    """Read the configuration from ``environ`` (default ``os.environ``) and the TOML file it names.

    Raises:
        AuditConfigError: unreadable TOML file or invalid values (the message names the setting).
    """
    env = settings(environ)
    values: dict[str, Any] = {}
    cfg_path = env.audit_config
    if cfg_path:
        try:
            with open(cfg_path, "rb") as fh:
                values.update(tomllib.load(fh).get("audit", {}))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise AuditConfigError(f"SECTORFLOW_AUDIT_CONFIG={cfg_path!r}: {exc}") from exc
    for name, key, conv in (("audit_db", "db", str), ("audit_key", "key_file", str),
                            ("audit_regulated", "regulated", _split),
                            ("audit_admins", "audit_admins", _split),
                            ("audit_operators", "operators", _split),
                            ("audit_retention_days", "retention_days", str),
                            ("audit_sqlite_synchronous", "sqlite_synchronous", str.upper),
                            ("audit_commit", "commit", str.lower),
                            ("audit_replica", "replica", str),
                            ("audit_replica_mode", "replica_mode", str.lower)):
        if getattr(env, name):
            values[key] = conv(getattr(env, name))
    for key in ("regulated", "audit_admins", "operators"):
        if isinstance(values.get(key), str):
            values[key] = _split(values[key])
    switch = (env.audit or "").strip().lower()
    if switch not in ("", "on", "off", "1", "0", "true", "false"):
        raise AuditConfigError(f"SECTORFLOW_AUDIT={switch!r}: write on or off.")
    values["enabled"] = switch not in ("off", "0", "false") and values.get("enabled", True) is not False
    if not values.get("db"):  # nothing configured: the embedded store and key under SECTORFLOW_HOME
        folder = home(environ)
        values["db"] = str(folder / "audit" / "audit.db")
        values.setdefault("key_file", str(folder / "keys" / "audit-key.json"))
        values["embedded"] = True
        if not values.get("audit_admins"):  # a single-user install: its user administers its own log
            user = _os_user()
            if user not in set(values.get("operators") or ()):
                values["audit_admins"] = frozenset({user})
    try:
        return AuditConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'audit'}: {e['msg']}" for e in exc.errors())
        raise AuditConfigError(f"Bad audit configuration: {problems}.") from exc


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - a uid without a passwd entry and no LOGNAME
        return str(os.getuid())


def notice_disabled(environ: dict[str, str] | None = None) -> bool:
    """Whether the one-time 'audit log is off' notice should be shown (off by default, not by choice)."""
    return (settings(environ).audit or "").strip().lower() not in ("off", "0", "false")
