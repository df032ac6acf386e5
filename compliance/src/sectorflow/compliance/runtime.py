"""The process-wide audit log and the public recording functions (task events, federated runs, access decisions,
configuration changes), with fail-closed handling for regulated tasks and retries for the rest."""

from __future__ import annotations

import atexit
import functools
import importlib.metadata
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sectorflow import TaskEvent

from .config import AuditConfig, load_config
from .errors import AuditConfigError, AuditKeyError, AuditWriteError
from .records import items_digest, make_object

if TYPE_CHECKING:  # pragma: no cover
    from .log import AuditLog

log = logging.getLogger("sectorflow.audit")
_lock = threading.RLock()
_config: AuditConfig | None = None
_log: AuditLog | None = None
_noticed = False
_open_warned = False
_plugins_recorded: set[str] = set()
failures = {"lost": 0, "retried": 0}
"""Process-wide counts of records lost (non-regulated tasks, after retries) and of retried writes."""


def config() -> AuditConfig:
    """The audit configuration of this process (read once; :func:`reset` re-reads)."""
    global _config
    with _lock:
        if _config is None:
            _config = load_config()
        return _config


def get_log() -> AuditLog | None:
    """The process-wide :class:`AuditLog`, opened on first use; ``None`` when the log is off.

    Raises:
        AuditConfigError: a store or key file is configured but cannot be opened.
    """
    global _log, _noticed
    with _lock:
        if _log is not None:
            return _log
        cfg = config()
        refused_off = False
        if not cfg.enabled:  # SECTORFLOW_AUDIT=off: only an audit admin may stop a log that exists
            if _noticed:
                return None
            _noticed = True
            refused_off = _off_refused(cfg)
            if not refused_off:
                return None
            cfg = _set_config(cfg.model_copy(update={"enabled": True}))
        if cfg.key_file is None:
            raise AuditConfigError("SECTORFLOW_AUDIT_DB is set but SECTORFLOW_AUDIT_KEY is not: create a key file "
                                   "with `sectorflow audit keygen PATH` (keep it outside the database's folder).")
        assert cfg.db is not None
        try:
            from .keys import generate_key_file, load_key_file
            from .log import AuditLog
            from .store import open_store
        except ImportError as exc:
            raise AuditConfigError(f"The audit log needs the compliance extra ({exc.name} is missing): "
                                   f"pip install 'sectorflow[compliance]'.") from exc
        created = cfg.embedded and not cfg.key_file.exists()
        if created:
            if Path(cfg.db).exists():  # a fresh key cannot vouch for the old checkpoints: never make one silently
                raise AuditKeyError(f"The audit store {cfg.db} exists but its key file {cfg.key_file} is missing: "
                                    f"put the key file back (SECTORFLOW_AUDIT_KEY), or move the store away to "
                                    f"start a new log.")
            generate_key_file(cfg.key_file)
            os.chmod(cfg.key_file.parent, 0o700)  # our own folder under SECTORFLOW_HOME: the keys only
        from .policy import enforce

        _log = AuditLog(open_store(cfg.db, pg_schema=cfg.pg_schema, sqlite_synchronous=cfg.sqlite_synchronous),
                        load_key_file(cfg.key_file), cfg)
        effective = enforce(_log, cfg, _os_user())
        if effective is not cfg:  # the pinned policy wins over a non-admin's settings
            cfg = _set_config(effective)
            _log.config = cfg
        if refused_off:
            log.warning("SECTORFLOW_AUDIT=off refused: only an audit admin may turn the audit log off; %s is not "
                        "one. The log stays on and the attempt is recorded.", _os_user())
            _log.append("access.decision", actor=_os_user(), source="local", outcome="denied",
                        reason="SECTORFLOW_AUDIT=off by a user who is not an audit admin",
                        details={"action": "audit.off", "roles": []})
        if cfg.replica:
            from .replica import Replica

            _log.attach_replica(Replica(cfg.replica, pg_schema=cfg.replica_pg_schema or cfg.pg_schema,
                                        sqlite_synchronous=cfg.sqlite_synchronous))
        if created:
            log.warning("sectorflow audit log on: records in %s, signing key in %s (mode 0600); move them with "
                        "SECTORFLOW_AUDIT_DB and SECTORFLOW_AUDIT_KEY (or SECTORFLOW_HOME), turn the log off with "
                        "SECTORFLOW_AUDIT=off; see `sectorflow audit status`.", cfg.db, cfg.key_file)
        return _log


def opened_log() -> AuditLog | None:
    """The process-wide log if it is open already (``None`` otherwise); never opens one (a metrics scrape must not
    create an audit store)."""
    return _log


def _set_config(cfg: AuditConfig) -> AuditConfig:
    global _config
    _config = cfg
    return cfg


def _os_user() -> str:
    from .config import _os_user as user

    return user()


def _off_refused(cfg: AuditConfig) -> bool:
    """``SECTORFLOW_AUDIT=off`` with a log that exists: ``False`` when an audit admin asked (the log records
    ``audit.disabled`` first, so the gap is visible), ``True`` when anyone else did (refused: the log stays on)."""
    from .policy import admins_of, read_policy
    from .store import open_store

    if not cfg.db or (not cfg.db.startswith(("postgresql://", "postgres://"))
                      and not Path(cfg.db.removeprefix("sqlite://")).is_file()):
        return False  # no log yet: nothing is stopped
    try:
        store = open_store(cfg.db, pg_schema=cfg.pg_schema, sqlite_synchronous=cfg.sqlite_synchronous)
    except AuditConfigError:
        return False  # cannot be reached: the ordinary open would fail the same way
    try:
        admins, policy = admins_of(store, cfg), read_policy(store) or {}
    finally:
        store.close()
    user = _os_user()
    if user in admins and user not in set(policy.get("operators", cfg.operators)):
        try:
            from .keys import load_key_file
            from .log import AuditLog

            lg = AuditLog(open_store(cfg.db, pg_schema=cfg.pg_schema, sqlite_synchronous=cfg.sqlite_synchronous),
                          load_key_file(cfg.key_file or ""), cfg)
            lg.append("audit.disabled", actor=user, source="local", outcome="success",
                      reason="SECTORFLOW_AUDIT=off by an audit admin")
            lg.close()
        except (AuditConfigError, AuditKeyError, AuditWriteError) as exc:
            log.warning("the audit log is turned off, and that could not be recorded: %s", exc)
        return False
    return True


def reset() -> None:
    """Close the process-wide log and forget the configuration (tests; after changing the environment)."""
    global _log, _config, _noticed, _open_warned
    with _lock:
        if _log is not None:
            try:
                _log.close()  # signs a last checkpoint: a store damaged meanwhile refuses it (verify says why)
            except AuditWriteError as exc:  # store errors arrive as this (AuditLog.checkpoint): one line at exit
                log.warning("audit log closed without its last checkpoint (the next writer or `sectorflow audit "
                            "verify` signs the records): %s", exc)
        _log, _config, _noticed, _open_warned = None, None, False, False
        _plugins_recorded.clear()
        _started_digests.clear()
        failures.update(lost=0, retried=0)


atexit.register(reset)


def write(regulated: bool, append: Callable[[AuditLog], int]) -> int | None:
    """Run ``append`` on the log with retries.

    Regulated (fail closed): after ``config.retries`` retries the error propagates, failing the operation being
    recorded (MLPS 2.0 8.1.4.3 d). Not regulated: the record is counted in ``failures["lost"]``, logged at ERROR,
    and ``None`` is returned.

    Raises:
        AuditWriteError, AuditConfigError: only when ``regulated``.
    """
    cfg = config()
    try:
        audit_log = get_log()
    except (AuditConfigError, AuditKeyError) as exc:
        if regulated:
            raise
        failures["lost"] += 1
        # A configuration mistake, not a bug: its message says what to fix, a traceback would only bury it. Said
        # once per process (every later call would repeat it); the count goes on in failures["lost"].
        global _open_warned
        if not _open_warned:
            log.warning("audit log cannot be opened, so this process records nothing; unregulated tasks carry on, "
                        "regulated tasks fail: %s", exc)
            _open_warned = True
        return None
    if audit_log is None:
        if regulated:
            raise AuditConfigError("This task is configured as regulated (SECTORFLOW_AUDIT_REGULATED) but the audit "
                                   "log is off (SECTORFLOW_AUDIT=off): turn it on, or take the task out of "
                                   "SECTORFLOW_AUDIT_REGULATED.")
        return None
    for attempt in range(cfg.retries + 1):
        try:
            return append(audit_log)
        except AuditWriteError:
            if attempt == cfg.retries:
                if regulated:
                    raise
                failures["lost"] += 1
                audit_log.stats["lost"] += 1
                log.error("audit record lost after %d attempts", attempt + 1, exc_info=True)
                return None
            failures["retried"] += 1
            audit_log.stats["retried"] += 1
            time.sleep(0.01 * (2 ** attempt))
        except Exception:
            if regulated:
                raise
            failures["lost"] += 1
            audit_log.stats["lost"] += 1
            log.error("audit record lost", exc_info=True)
            return None
    return None  # pragma: no cover


def _record_plugins(audit_log: AuditLog) -> None:
    from sectorflow import host  # the core's plugin manager: which plugins this process loaded

    pm = host.get_plugin_manager()
    versions = {pm.get_name(p): f"{d.project_name}=={d.version}" for p, d in pm.list_plugin_distinfo()}
    # The core loads entry points itself (pluggy's distinfo is then empty: every plugin.loaded record said
    # "distribution": null); the distribution is the entry point's.
    for ep in importlib.metadata.entry_points(group=host.ENTRY_POINT_GROUP):
        if ep.dist is not None:
            versions.setdefault(ep.name, f"{ep.dist.name}=={ep.dist.version}")
    for name in host.BUILTIN_PLUGINS:  # registered in code by the core: its distribution is sectorflow's
        versions.setdefault(name, f"sectorflow=={importlib.metadata.version('sectorflow')}")
    for name, _plugin in sorted(pm.list_name_plugin(), key=lambda x: str(x[0])):
        if name in _plugins_recorded:
            continue
        audit_log.append("plugin.loaded", actor="sectorflow", source="local", outcome="success",
                         details={"plugin": name, "distribution": versions.get(name)})
        _plugins_recorded.add(name)


_started_digests: dict[int, str] = {}
"""Input digests of calls in flight, by ``TaskEvent.call_id`` (a call's ``call_started`` and its ``call_finished``
or ``call_failed`` carry the same one), so one call's inputs are digested once; bounded."""


def _input_digest(audit_log: AuditLog, event: TaskEvent) -> str | None:
    if event.inputs is None:
        return None
    if event.kind != "call_started" and event.call_id is not None:
        with _lock:
            digest = _started_digests.pop(event.call_id, None)
        if digest is not None:
            return digest
    digest = items_digest(audit_log.keys, event.inputs)
    if event.kind == "call_started" and event.call_id is not None:
        with _lock:
            if len(_started_digests) >= 4096:
                _started_digests.pop(next(iter(_started_digests)))
            _started_digests[event.call_id] = digest
    return digest


_OUTCOME = {"call_started": "started", "call_failed": "failure", "model_load_failed": "failure"}


def record_task_event(event: TaskEvent) -> int | None:
    """Record a core :class:`~sectorflow.TaskEvent` (called by the built-in ``audit`` plugin's hook).

    Event type ``task.<kind>``; the object carries task, plugin, model name, version and weights hash
    (``bundle_sha256``); inputs and outputs are HMAC digests. Fails closed for regulated tasks.
    """
    cfg = config()
    regulated = cfg.is_regulated(event.task)
    if not cfg.enabled and not regulated and _noticed:  # the log is off and its notice given: what write() returns
        return None
    meta = event.meta
    subjects = None
    field_name = cfg.subject_fields.get(event.task)
    if cfg.encrypt_payloads and field_name and event.inputs:
        subjects = [getattr(item, field_name, None) if not isinstance(item, dict) else item.get(field_name)
                    for item in event.inputs]
    details = dict(event.details)
    obj = make_object(task=event.task, plugin=meta.plugin if meta else None,
                      model_name=meta.model_name if meta else None, model_version=meta.model_version if meta else None,
                      weights_sha256=meta.bundle_sha256 if meta else None, dataset_id=details.pop("dataset_id", None),
                      device=meta.device if meta else None, precision=meta.precision if meta else None)
    ctx = event.context

    def append(audit_log: AuditLog) -> int | None:
        if len(_plugins_recorded) == 0:
            _record_plugins(audit_log)
        if audit_log.on_lost is None:
            audit_log.on_lost = _count_lost
        if cfg.commit == "group" and not regulated:  # off the call's path, group-committed (group_commit.py)
            put: Callable[..., int | None] = audit_log.submit
        else:  # committed now; an unregulated call's start is fsynced with its end, before the call returns
            put = functools.partial(audit_log.append, durable=regulated or event.kind != "call_started")
        return put(
            f"task.{event.kind}", actor=ctx.actor, tenant=ctx.tenant, source=ctx.source, channel=ctx.channel,
            obj=obj, outcome=_OUTCOME.get(event.kind, "success"), reason=event.error, request_id=ctx.request_id,
            n_items=event.n_items, inputs=event.inputs, outputs=event.outputs, subjects=subjects,
            duration_ms=event.duration_ms, details=details, when=event.time,
            input_digest=_input_digest(audit_log, event))

    return write(regulated, append)  # type: ignore[arg-type]


def _count_lost(n: int) -> None:
    """Records the group-commit writer could not commit: counted as a failed unregulated append is."""
    failures["lost"] += n


def flush(timeout: float | None = None) -> bool:
    """Wait until the open log has committed every queued record (:mod:`.group_commit`); ``True`` when nothing
    is left (also when no log is open)."""
    return _log.flush(timeout) if _log is not None else True


def record_access(*, actor: str, resource: str, action: str, allowed: bool, reason: str | None = None,
                  tenant: str | None = None, source: str | None = None, request_id: str | None = None,
                  roles: list[str] | None = None, channel: str = "http") -> int | None:
    """Record an access-control decision (for the HTTP server: every authentication and authorisation outcome).

    ``outcome`` is ``success`` when allowed, ``denied`` otherwise, with ``reason``. Access decisions fail closed
    when ``access`` is listed in ``SECTORFLOW_AUDIT_REGULATED`` (or ``*``).
    """
    return write(config().is_regulated("access"), lambda lg: lg.append(
        "access.decision", actor=actor, tenant=tenant, source=source, channel=channel,
        obj=make_object(task=resource), outcome="success" if allowed else "denied", reason=reason,
        request_id=request_id, details={"action": action, "roles": sorted(roles or [])}))


CASE_DISPOSITIONS = ("escalated", "reported", "closed_no_action", "closed_false_positive", "closed_true_positive",
                     "reopened")
REPORT_ACTIONS = ("drafted", "edited", "approved", "submitted", "withdrawn")


def record_case_disposition(*, case_id: str, disposition: str, actor: str, tenant: str | None = None,
                            source: str | None = None, reason: str | None = None,
                            alert_ids: list[str] | None = None, request_id: str | None = None,
                            channel: str | None = None) -> int | None:
    """Record an AML case disposition (``case.disposed``; retention kind ``case_disposition``, at least 5 years).

    Args:
        disposition: one of :data:`CASE_DISPOSITIONS`. alert_ids: the alerts the case covers.

    Raises:
        ValueError: unknown disposition. AuditWriteError / AuditConfigError: write failed and ``aml`` is regulated.
    """
    if disposition not in CASE_DISPOSITIONS:
        raise ValueError(f"case disposition {disposition!r} is not one of {CASE_DISPOSITIONS}")
    return write(config().is_regulated("aml"), lambda lg: lg.append(
        "case.disposed", actor=actor, tenant=tenant, source=source, channel=channel, obj=make_object(task="aml"),
        reason=reason, request_id=request_id,
        details={"case_id": case_id, "disposition": disposition, "alert_ids": list(alert_ids or [])}))


def record_report_draft(*, report_id: str, action: str, actor: str, report_kind: str | None = None,
                        tenant: str | None = None, source: str | None = None, reason: str | None = None,
                        request_id: str | None = None, channel: str | None = None) -> int | None:
    """Record what happened to a large-value or suspicious transaction report draft (``report.<action>``;
    retention kind ``report_draft``, at least 5 years).

    Args:
        action: one of :data:`REPORT_ACTIONS`. report_kind: e.g. ``large_value`` or ``suspicious``.

    Raises:
        ValueError: unknown action. AuditWriteError / AuditConfigError: write failed and ``aml`` is regulated.
    """
    if action not in REPORT_ACTIONS:
        raise ValueError(f"report action {action!r} is not one of {REPORT_ACTIONS}")
    return write(config().is_regulated("aml"), lambda lg: lg.append(
        f"report.{action}", actor=actor, tenant=tenant, source=source, channel=channel, obj=make_object(task="aml"),
        reason=reason, request_id=request_id, details={"report_id": report_id, "report_kind": report_kind}))
