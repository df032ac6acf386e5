"""Per-tenant state of a stateful task: one pipeline per tenant, made from the loaded one, one lock per tenant.

A stateful task (``TaskSpec.stateful``: the AML transaction window, report aggregates, alert cooldowns) keeps its
history in its pipeline. :class:`TenantPipelines` gives every tenant (``CallContext.tenant``; ``None`` is the default
tenant, every caller that names none) a pipeline of its own, so that nothing one tenant puts into the state reaches
another tenant's results:

- the default tenant's pipeline is the loaded one (what ``Taskflow.pipeline`` returns);
- another tenant's pipeline is made on its first call by ``make(tenant, loaded)`` (``Taskflow`` passes
  :meth:`Pipeline.spawn <sectorflow.pipeline.Pipeline.spawn>`: same model and settings, empty state);
- each tenant has its own lock: calls of one tenant run one at a time, in the order they take the lock; calls of
  different tenants run at the same time;
- :meth:`swap` (``Taskflow.reload``) gives every tenant a new pipeline of the new model that has taken over that
  tenant's own state (``Pipeline.adopt_state``), all or nothing.

Memory: one slot (a lock and a pipeline) per tenant that has called, holding that tenant's state; a tenant whose
first call fails keeps only its lock (the empty pipeline is dropped), and :meth:`reset` drops a tenant's pipeline.
Over HTTP the tenants are those of the configured keys; a Python caller chooses its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import Pipeline
    from .spec import ResultMeta


class TenantSlot:
    """One tenant's pipeline (``None`` until its first call, or after a reset), the result metadata of the model it
    runs, whether it has run a call since it was made or reset (``used``), and the lock that serialises the
    tenant's calls. Read and change ``pipeline``, ``meta`` and ``used`` only while holding ``lock``."""

    __slots__ = ("lock", "meta", "pipeline", "used")

    def __init__(self, pipeline: Pipeline | None = None, meta: ResultMeta | None = None) -> None:
        self.lock = threading.Lock()
        self.pipeline = pipeline
        self.meta = meta
        self.used = False


class TenantPipelines:
    """The pipelines of one stateful task, one per tenant (see the module docstring).

    Args:
        pipeline: the loaded pipeline; it serves the default tenant (``None``).
        meta: its result metadata.
        make: ``make(tenant, loaded) -> Pipeline``, the pipeline of a tenant's first call (or first call after a
            reset) from the loaded pipeline, with the same model and settings and that tenant's starting state
            (empty: ``loaded.spawn()``). Called with the tenant's lock held; must only read ``loaded``'s settings,
            since the default tenant's calls may be running on it.
    """

    def __init__(self, pipeline: Pipeline, meta: ResultMeta,
                 make: Callable[[str | None, Pipeline], Pipeline]) -> None:
        self._loaded = (pipeline, meta)
        self._make = make
        self._slots: dict[str | None, TenantSlot] = {None: TenantSlot(pipeline, meta)}
        self._lock = threading.Lock()  # guards the set of slots and the loaded pipeline (held through a swap)

    def slot(self, tenant: str | None) -> TenantSlot:
        """The tenant's slot, made (empty, without a pipeline) on first use."""
        slot = self._slots.get(tenant)
        if slot is None:
            with self._lock:
                slot = self._slots.get(tenant)
                if slot is None:
                    slot = self._slots[tenant] = TenantSlot()
        return slot

    def enter(self, tenant: str | None) -> TenantSlot:
        """The tenant's slot with its lock held and its pipeline made (release ``slot.lock`` when done).

        Raises:
            whatever ``make`` raises (the lock is then released).
        """
        slot = self.slot(tenant)
        slot.lock.acquire()
        if slot.pipeline is None:
            try:
                loaded, meta = self._loaded  # a swap holds this lock, so this is the current model
                slot.pipeline, slot.meta = self._make(tenant, loaded), meta
            except BaseException:
                slot.lock.release()
                raise
        return slot

    def discard_unused(self, slot: TenantSlot) -> None:
        """Drop the pipeline of a slot (lock held) whose first call failed: a tenant keeps no state it did not put."""
        if not slot.used and slot is not self._slots.get(None):
            slot.pipeline = None

    def reset(self, tenant: str | None, also: Callable[[Pipeline | None], bool] | None = None) -> bool:
        """Forget ``tenant``'s state (waits for its running call); other tenants are untouched. The default
        tenant's pipeline is reset in place (``Pipeline.reset_state``); another tenant's is dropped, and its next call
        starts from a new one. ``also(pipeline)``, with the tenant's lock still held, forgets what else holds the
        tenant's state (the stored state: ``pipeline`` is the default tenant's reset one, else ``None``) and says
        whether there was any. Returns whether the tenant had run a call since it was made or last reset (or
        ``also`` found state)."""
        slot = self._slots.get(tenant) if also is None else self.slot(tenant)
        if slot is None:
            return False
        with slot.lock:
            had = slot.used
            slot.used = False
            if tenant is None:
                assert slot.pipeline is not None
                slot.pipeline.reset_state()
            else:
                slot.pipeline = None
            if also is not None:
                had = also(slot.pipeline) or had
        return had

    def tenants(self) -> list[str | None]:
        """Tenants whose pipeline has run a call since it was made or last reset: ``None`` (the default tenant)
        first, then the others sorted."""
        used = [tenant for tenant, slot in list(self._slots.items()) if slot.used]
        return sorted(used, key=lambda t: (t is not None, t or ""))

    def pipeline_of(self, tenant: str | None) -> Pipeline | None:
        """The tenant's pipeline now (``None`` before its first call), without making one."""
        slot = self._slots.get(tenant)
        return slot.pipeline if slot is not None else None

    def swap(self, pipeline: Pipeline, meta: ResultMeta, carry: Callable[[Pipeline, Pipeline], None],
             commit: Callable[[], None]) -> None:
        """Move every tenant to the new loaded ``pipeline``, all or nothing.

        The default tenant gets ``pipeline`` itself; every other tenant with a pipeline gets ``pipeline.spawn()``.
        Then, with every tenant's lock held (no call runs; a tenant's first call waits), ``carry(new, old)`` gives
        each new pipeline its own tenant's old state (``new.adopt_state(old)``), ``commit()`` runs, and every slot
        and the loaded pipeline are swapped. If a spawn or a ``carry`` raises, nothing is swapped (every tenant
        stays on the old model with its state) and the error is raised.
        """
        with self._lock:  # no new slot and no other swap meanwhile
            slots = list(self._slots.items())
            # the new pipelines are made before any lock is taken, so calls go on meanwhile
            fresh = {tenant: pipeline.spawn() for tenant, slot in slots
                     if tenant is not None and slot.pipeline is not None}
            held: list[TenantSlot] = []
            try:
                for _, slot in slots:
                    slot.lock.acquire()
                    held.append(slot)
                moves: list[tuple[TenantSlot, Pipeline]] = []
                for tenant, slot in slots:
                    if slot.pipeline is None:
                        continue  # no state: its first call makes a pipeline of the new model
                    new = pipeline if tenant is None else fresh.get(tenant) or pipeline.spawn()
                    moves.append((slot, new))
                for slot, new in moves:
                    carry(new, slot.pipeline)  # type: ignore[arg-type]
                commit()
                for slot, new in moves:
                    slot.pipeline, slot.meta = new, meta
                self._loaded = (pipeline, meta)
            finally:
                for slot in held:
                    slot.lock.release()
