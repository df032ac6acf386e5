"""One tenant's state of a stateful task, kept in a :class:`~sectorflow.state_store.StateStore`.

:class:`StateKeeper` ties one tenant's pipeline of a :class:`~sectorflow.Taskflow` to the store:
:meth:`~StateKeeper.restore` (snapshot + journal replay into the pipeline), :meth:`~StateKeeper.record` (one call's
validated inputs, one store transaction, a snapshot now and then) and :meth:`~StateKeeper.snapshot`. The caller holds
the tenant's lock (the pipeline is passed in, as a reload may have swapped it). ``Taskflow(task, state_store=store)``
keeps one per tenant (each restored when the tenant's pipeline is made, each call journalled before it returns);
``sectorflow run --state`` uses one with the run's progress (:mod:`sectorflow.cli_state`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import ConfigError
from .state_store import SNAPSHOT_FACTOR, SNAPSHOT_MIN_BYTES, SNAPSHOT_RATIO, StateStore

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from .pipeline import Pipeline
    from .taskflow import Taskflow

DEFAULT_TENANT = "default"
"""The store's name for the default tenant (``CallContext.tenant`` ``None``: callers that name none;
``sectorflow run --state`` without ``--tenant``)."""


def store_tenant(tenant: str | None) -> str:
    """The store's name of a ``CallContext.tenant`` (``None``: :data:`DEFAULT_TENANT`)."""
    return DEFAULT_TENANT if tenant is None else tenant


def context_tenant(name: str) -> str | None:
    """The ``CallContext.tenant`` of a store's tenant name (:data:`DEFAULT_TENANT`: ``None``)."""
    return None if name == DEFAULT_TENANT else name


class StateKeeper:
    """The stored state of ``taskflow``'s task for ``tenant``.

    Args:
        taskflow: a Taskflow of a stateful task (``spec.stateful``) whose pipelines implement ``state_dict``; its
            ``_execute`` replays the journal.
        store: where the state lives.
        tenant: whose state: the store's tenant name (non-empty text; :data:`DEFAULT_TENANT` for the default
            tenant).

    Raises:
        ConfigError: a stateless task or an empty tenant.
    """

    def __init__(self, taskflow: Taskflow, store: StateStore, tenant: str = DEFAULT_TENANT) -> None:
        if not taskflow.spec.stateful:
            raise ConfigError(f"Task {taskflow.spec.name!r} keeps no state between calls: a state store changes "
                              "nothing; drop it.")
        if not isinstance(tenant, str) or not tenant.strip():
            raise ConfigError(f"tenant={tenant!r}: give the tenant's name as non-empty text.")
        self.taskflow = taskflow
        self.store = store
        self.tenant = tenant
        self.task = taskflow.spec.name
        self._journal_bytes: int | None = None  # journal bytes since the snapshot (None: ask the store)
        self._snapshot_bytes = 0
        self._replay_s = 0.0  # seconds the calls journalled since the snapshot took (replay time on restart)
        self._snapshot_s: float | None = None  # seconds the last snapshot this keeper wrote took
        self.snapshots_paused = False
        """While ``True`` (an unfinished ``sectorflow run --state``), :meth:`record` takes no snapshot, so that
        the run's journal rows can be discarded (back to the state before the run)."""

    def restore(self, pipeline: Pipeline) -> int:
        """Load the tenant's snapshot into ``pipeline`` and replay the journal after it (results discarded), each
        row as one call, as it first ran. Returns the number of items replayed. The caller holds the tenant's lock
        (or no call can run yet).

        Raises:
            ConfigError: a stored state the pipeline cannot continue (another window, model, format version).
        """
        tf = self.taskflow
        snapshot, _, journal = self.store.load(self.task, self.tenant)
        if snapshot is not None:
            pipeline.load_state_dict(snapshot)
        else:
            pipeline.reset_state()
            if not journal:  # a new tenant: its empty state first, so that the state's identity (task, window
                # length, model features) is checked on every later restore, also before the first full snapshot
                # (a journal replayed through a pipeline of other options would silently differ)
                state = pipeline.state_dict()
                with self.store.transaction():
                    self.store.put_snapshot(self.task, self.tenant, state, seq=0)
        replayed = 0
        start = time.perf_counter()
        for _, items in journal:
            tf._execute(pipeline, pipeline.journal_items(items))
            replayed += len(items)
        self._replay_s = time.perf_counter() - start  # what the next restart would replay, in seconds
        return replayed

    def record(self, pipeline: Pipeline, items: Sequence[BaseModel], *, seconds: float = 0.0,
               rows_done: int | None = None, output_offset: int | None = None,
               keys: Sequence[str] | None = None) -> None:
        """Journal one call's validated inputs (and the run's progress) in one store transaction; ``seconds``: how
        long the call took (what replaying it will take); ``keys``: also remember these keys of the items
        (``sectorflow run --state``: :class:`~sectorflow.cli_state.FedItems`). Then snapshot ``pipeline`` (the
        tenant's, after the call) if :meth:`maybe_snapshot` says so."""
        self._replay_s += seconds
        rows = pipeline.journal_rows(items)
        with self.store.transaction():
            size = self.store.append(self.task, self.tenant, rows, rows_done=rows_done, output_offset=output_offset,
                                     keys=keys)
        if self._journal_bytes is not None:
            self._journal_bytes += size
        if not self.snapshots_paused:
            self.maybe_snapshot(pipeline)

    def maybe_snapshot(self, pipeline: Pipeline) -> bool:
        """Take a snapshot when replaying the journal since the last one would take
        :data:`~sectorflow.state_store.SNAPSHOT_RATIO` times as long as writing a snapshot took (timed on the last
        one this keeper wrote), so that snapshots cost at most ``1 / SNAPSHOT_RATIO`` of the calls' own time and a
        restart replays at most ``SNAPSHOT_RATIO`` snapshot-times of calls; before the first timed snapshot, when the
        journal holds :data:`~sectorflow.state_store.SNAPSHOT_FACTOR` times the stored snapshot's bytes (and at least
        :data:`~sectorflow.state_store.SNAPSHOT_MIN_BYTES`). Whether one was taken."""
        if self._snapshot_s is not None:
            due = self._replay_s >= SNAPSHOT_RATIO * self._snapshot_s
        else:
            if self._journal_bytes is None:
                self._journal_bytes, self._snapshot_bytes = self.store.journal_bytes(self.task, self.tenant)
            due = self._journal_bytes >= max(SNAPSHOT_MIN_BYTES, SNAPSHOT_FACTOR * self._snapshot_bytes)
        if due:
            self.snapshot(pipeline)
        return due

    def finish_run(self, pipeline: Pipeline) -> None:
        """End an unfinished ``sectorflow run --state`` (its progress forgotten; its journal rows stay; its input's
        SHA-256 remembered, so feeding the same input again is refused), then take a snapshot of ``pipeline`` if the
        policy says so."""
        with self.store.transaction():
            run = self.store.run(self.task, self.tenant)
            if run is not None:
                self.store.record_fed(self.task, self.tenant, run.input_sha256, run.input, run.items)
            self.store.end_run(self.task, self.tenant)
        self.snapshots_paused = False
        self.maybe_snapshot(pipeline)

    def snapshot(self, pipeline: Pipeline) -> None:
        """Write ``pipeline``'s (the tenant's) full state as the tenant's snapshot (dropping the journal it
        covers)."""
        start = time.perf_counter()
        state = pipeline.state_dict()
        with self.store.transaction():
            self.store.put_snapshot(self.task, self.tenant, state)
        self._snapshot_s = time.perf_counter() - start
        self._replay_s = 0.0
        self._journal_bytes = None  # counted again from the store (one query) when needed

    def reset(self, empty: Pipeline | None = None) -> bool:
        """Forget the tenant's stored state; with ``empty`` (the tenant's pipeline, just reset), store its empty
        state in its place, with its identity (see :meth:`restore`; without, the next restore does). Whether there
        was any state."""
        state = empty.state_dict() if empty is not None else None
        with self.store.transaction():
            had = self.store.reset(self.task, self.tenant)
            if state is not None:
                self.store.put_snapshot(self.task, self.tenant, state, seq=0)
        self._journal_bytes = None
        return had
