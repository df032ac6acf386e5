"""Server configuration: a TOML or JSON file, plus API keys from the environment.

File format (TOML; JSON with the same structure also works)::

    [server]
    max_body_bytes = 1048576          # larger request bodies get 413
    max_items_per_request = 1024      # longer ``inputs`` lists get 422
    threads = 2                       # inference thread pool (runs off the event loop)
    allowed_bundle_roots = ["/srv/models"]   # reload may only load bundles below these (empty: anywhere)
    freeze_gc = true                  # gc.freeze() and a larger gen-0 threshold once the models are loaded (serving.gcfreeze)
    state_store = "/srv/sectorflow/state.sqlite"  # stateful tasks (aml): their state, restored at start and each
                                      # call journalled before its answer (SQLite file or postgresql:// URL; omitted:
                                      # the state lives in memory only; sectorflow.state_store)
    grpc_listen = "0.0.0.0:8081"      # also serve the Open Inference Protocol over gRPC there (unset: no gRPC)
    rate_limit_storage = "redis://redis:6379/0"   # where rate-limit windows live (default memory://: this process);
                                      # replicas behind one address share limits through one Redis
    replica = "pod-a"                 # label of sectorflow_replica_info (unset: the host name)

    [web.aml]                         # settings of a plugin's web pages (sectorflow_register_web): its own keys
    sources = [{tenant = "bank-1", results = "results.jsonl", transactions = "txns.csv", format = "csv"}]

    [defaults]                        # applied to every served task unless [tasks.NAME] says otherwise
    max_batch_size = 32               # items merged into one model call (Triton/Ray Serve knob)
    max_queue_delay_ms = 5            # how long the first queued request waits for company
    instances = 1                     # batches of one task computed at the same time

    [tasks.aml]                       # Taskflow arguments and batching knobs of one task
    batch_size = 256
    task_path = "/srv/models/aml-v3"

    [[keys]]
    id = "teller-app"                 # the actor in audit records
    sha256 = "9f86d08..."             # hex SHA-256 of the secret key (the secret itself is never stored)
    tenant = "bank-1"
    scopes = ["task:aml"]             # task:NAME, task:*, admin (model reload), audit (audit admin), metrics,
                                      # role:NAME (a web page's role: role:analyst, role:approver)
    rate_limit = "200/second"         # items per window, ``limits`` notation; omitted: unlimited
    lane = "interactive"              # default priority lane: interactive or batch

Keys may also come from ``SECTORFLOW_SERVE_KEYS``: a JSON list of objects shaped like ``[[keys]]``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import ConfigError, settings

KEYS_ENV = "SECTORFLOW_SERVE_KEYS"
Lane = Literal["interactive", "batch"]
LANES: tuple[Lane, ...] = ("interactive", "batch")


SCOPES = ("task:*", "admin", "audit", "metrics")
"""The scopes that name no task (``task:NAME`` names one; see docs/serving.md)."""
ROLE_PATTERN = r"role:[a-z][a-z0-9_-]{0,63}"
"""A web page's role (``role:analyst``, ``role:approver``): granted by the key, given meaning by the plugin whose
pages read it (``sectorflow_register_web``)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LaneConfig(_Strict):
    """A priority lane's queue: its bound (items waiting per task) and how long a request may wait in it."""

    max_queue_items: int = Field(4096, ge=1)
    queue_timeout_ms: float = Field(2000.0, gt=0)


class BatchingConfig(_Strict):
    """Dynamic batching knobs of one task (the names follow Triton's dynamic batcher)."""

    max_batch_size: int = Field(32, ge=1, le=65536)
    max_queue_delay_ms: float = Field(5.0, ge=0)
    instances: int = Field(1, ge=1, le=64)
    interactive: LaneConfig = LaneConfig()
    batch: LaneConfig = LaneConfig(max_queue_items=65536, queue_timeout_ms=30000.0)


class TaskConfig(BatchingConfig):
    """How one task is served: ``Taskflow`` arguments plus batching knobs."""

    device: str = "cpu"
    precision: str = "fp32"
    batch_size: int = Field(64, ge=1, le=65536)
    num_threads: int | None = None
    task_path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class KeyConfig(_Strict):
    """One API key, stored as the SHA-256 of its secret."""

    id: str = Field(min_length=1, max_length=128)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tenant: str | None = None
    scopes: list[str] = Field(default_factory=list)
    rate_limit: str | None = None
    lane: Lane = "interactive"

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, value: list[str]) -> list[str]:
        bad = [scope for scope in value if scope not in SCOPES and not
               (scope.startswith("task:") and len(scope) > 5 and scope.strip() == scope)
               and not re.fullmatch(ROLE_PATTERN, scope)]
        if bad:
            raise ValueError(f"unknown scope(s) {bad}: a scope is task:NAME (one task), task:* (every task), "
                             f"admin (reload models), audit or metrics (read /metrics), or role:NAME (a web "
                             f"page's role, such as role:analyst or role:approver)")
        return value

    @field_validator("rate_limit")
    @classmethod
    def _parse_limit(cls, value: str | None) -> str | None:
        if value is not None:
            from limits import parse

            try:
                parse(value)
            except ValueError as exc:
                raise ValueError(f"{value!r} is not a rate like '100/second' or '10 per minute'") from exc
        return value


class ServerConfig(_Strict):
    max_body_bytes: int = Field(1 << 20, ge=1024)
    max_items_per_request: int = Field(1024, ge=1)
    threads: int = Field(2, ge=1, le=256)
    allowed_bundle_roots: list[str] = Field(default_factory=list)
    load_in_background: bool = True
    freeze_gc: bool = True
    state_store: str | None = None
    grpc_listen: str | None = Field(None, pattern=r"^\S+:\d{1,5}$")
    rate_limit_storage: str = Field("memory://", pattern=r"^(memory|redis|rediss|redis\+unix)://")
    replica: str | None = Field(None, min_length=1, max_length=128)


class ServeConfig(_Strict):
    """The whole server configuration (see the module docstring for the file format).

    ``serve`` names the tasks to serve (empty: every registered task); ``tasks`` overrides per task;
    ``tenants`` maps a tenant to a rate limit shared by all its keys; ``web`` holds each web plugin's own settings
    (``[web.NAME]``, read with :meth:`~sectorflow.serving.web.WebHost.settings`).
    """

    server: ServerConfig = ServerConfig()
    defaults: BatchingConfig = BatchingConfig()
    serve: list[str] = Field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    keys: list[KeyConfig] = Field(default_factory=list)
    tenants: dict[str, str] = Field(default_factory=dict)
    web: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def task(self, name: str) -> TaskConfig:
        """The effective configuration of task ``name`` (defaults overlaid by ``[tasks.NAME]``)."""
        merged = {**self.defaults.model_dump(), **self.tasks.get(name, {})}
        try:
            return TaskConfig.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(f"[tasks.{name}] is invalid: {_explain(exc)}") from exc


def _explain(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())


def load_config(path: str | Path | None = None, *, data: dict[str, Any] | None = None,
                environ: dict[str, str] | None = None) -> ServeConfig:
    """Read the server configuration from ``path`` (``.toml`` or ``.json``) or ``data``, adding the keys of
    ``SECTORFLOW_SERVE_KEYS`` from ``environ`` (default ``os.environ``).

    Raises:
        ConfigError: unreadable file, unknown field, bad value, or two keys with the same id or hash.
    """
    raw: dict[str, Any] = dict(data or {})
    if path is not None:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
            raw = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot read the server configuration {file}: {exc}") from exc
    keys = settings(environ).serve_keys
    if keys:
        try:
            extra = json.loads(keys)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{KEYS_ENV} is not JSON: {exc}") from exc
        if not isinstance(extra, list):
            raise ConfigError(f"{KEYS_ENV} must be a JSON list of key objects.")
        raw["keys"] = list(raw.get("keys", [])) + extra
    try:
        config = ServeConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"Invalid server configuration: {_explain(exc)}") from exc
    for attr in ("id", "sha256"):
        values = [getattr(k, attr) for k in config.keys]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise ConfigError(f"Two API keys share the same {attr}: {dupes[:3]}.")
    for name in config.tasks:
        config.task(name)
    return config
