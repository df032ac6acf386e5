"""What one running server holds: configuration, keys, limits, metrics, the thread pools and one
:class:`~sectorflow.Taskflow` plus :class:`~sectorflow.serving.batching.TaskBatcher` per served task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .. import SectorflowError, TaskSpec, Taskflow
from .. import shown_store, state_lock
from . import gcfreeze
from .auth import KeyStore
from .batching import TaskBatcher
from .config import ServeConfig
from .metrics import ServerMetrics
from .ratelimit import RateLimits

log = logging.getLogger("sectorflow.serving")


@dataclass
class ServerState:
    """Shared by every route through ``app.state.sectorflow``."""

    config: ServeConfig
    specs: dict[str, TaskSpec]
    keys: KeyStore
    limits: RateLimits
    metrics: ServerMetrics
    executor: ThreadPoolExecutor
    reload_executor: ThreadPoolExecutor
    observer_executor: ThreadPoolExecutor | None = None
    """One thread for hook observers that declare they block (see :func:`~.access.observers_block`), so that an
    audit write (an fsync, or a database another process holds locked) never stops the event loop; one thread keeps
    their records in request order."""
    taskflows: dict[str, Taskflow] = field(default_factory=dict)
    batchers: dict[str, TaskBatcher] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    loaded_at: float | None = None
    frozen: bool = False
    grpc_port: int | None = None
    """The port the gRPC service (Open Inference Protocol) listens on; ``None``: no gRPC."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Every name a task answers to (its name and aliases) -> the task name."""
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    """The state store's lock (:func:`sectorflow.state_lock`, ``serve`` in its file), held from the first stateful
    task's load to :meth:`shutdown`, so that a ``sectorflow run --state`` on the same SQLite store is refused while
    the server writes it (before 2 Dec 2026 both wrote it). ``locked``: whether it is held; ``lock_problem``: why
    it could not be taken (another holder, named), then the stateful tasks fail to load with it (``/readyz``)."""
    locked: bool = False
    lock_problem: str | None = None

    def __post_init__(self) -> None:
        for name, spec in self.specs.items():
            self.aliases.update({alias: name for alias in (name, *spec.aliases)})

    def status(self, task: str) -> str:
        """``ready``, ``failed`` or ``loading``."""
        if task in self.batchers:
            return "ready"
        return "failed" if task in self.failed else "loading"

    @property
    def ready(self) -> bool:
        """Every served task's model is loaded."""
        return all(name in self.batchers for name in self.specs)

    async def load_all(self) -> None:
        """Construct each task's Taskflow in the reload pool (off the event loop), then start its batcher.

        A task whose model fails to load is recorded in :attr:`failed` (``/readyz`` reports it) and its route
        answers 503; the other tasks still serve.
        """
        loop = asyncio.get_running_loop()
        for name in self.specs:
            task_config = self.config.task(name)
            start = time.perf_counter()
            durable = self.config.server.state_store if self.specs[name].stateful else None
            if durable is not None and not self._lock(durable):
                self.failed[name] = f"ConfigError: {self.lock_problem}"
                log.error("task %s failed to load: %s", name, self.lock_problem)
                continue
            try:
                taskflow = await loop.run_in_executor(self.reload_executor, lambda c=task_config, n=name, d=durable: Taskflow(
                    n, device=c.device, precision=c.precision, batch_size=c.batch_size, num_threads=c.num_threads,
                    task_path=c.task_path, state_store=d, **c.options))
            except SectorflowError as exc:
                self.failed[name] = f"{type(exc).__name__}: {exc}"
                log.error("task %s failed to load: %s", name, exc)
                continue
            if taskflow.input_context:
                # The server validates request bodies itself (FastAPI and the ASGI fast path), without a context:
                # an option that changes how raw items are read would apply to files and Python calls only.
                given = ", ".join(sorted(taskflow.input_context))
                self.failed[name] = (f"ConfigError: option(s) {given} of task {name} change how raw input is read; "
                                     "the server does not apply them: drop them from the serve config and send "
                                     "complete values (e.g. ISO 8601 timestamps with their UTC offset).")
                log.error("task %s failed to load: %s", name, self.failed[name])
                continue
            self.taskflows[name] = taskflow
            self.metrics.set_model(name, taskflow.meta)
            batcher = TaskBatcher(taskflow, task_config, self.executor, self.metrics)
            batcher.start()
            self.batchers[name] = batcher
            log.info("task %s ready (%s@%s) in %.1f s", name, taskflow.meta.model_name, taskflow.meta.model_version,
                     time.perf_counter() - start)
        self.loaded_at = time.time()
        if self.config.server.freeze_gc and not self.frozen:
            gcfreeze.hold()  # the loaded models and libraries leave the full collections (see gcfreeze)
            self.frozen = True

    def _lock(self, store: str) -> bool:
        """Take the state store's lock once (see :attr:`held`); whether this server holds it. Another holder (a
        ``sectorflow run --state``, a ``state reset``, another server) is named in :attr:`lock_problem`."""
        if self.lock_problem is not None:
            return False
        if self.locked:
            return True
        try:
            self.held.enter_context(state_lock(store, what="serve"))
        except SectorflowError as exc:
            self.lock_problem = (f"[server] state_store {shown_store(store)}: {exc} The server does not serve its stateful tasks "
                                 "while another process writes the store: stop that process, then restart the server.")
            return False
        self.locked = True
        return True

    async def shutdown(self) -> None:
        """Stop every batcher (running calls finish), then the thread pools; release the state store's lock."""
        await asyncio.gather(*(b.stop() for b in self.batchers.values()), return_exceptions=True)
        self.held.close()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.reload_executor.shutdown(wait=False, cancel_futures=True)
        if self.observer_executor is not None:
            self.observer_executor.shutdown(wait=True)
        if self.frozen:
            self.frozen = False
            gcfreeze.release()
