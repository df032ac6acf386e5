"""Dynamic batching of one task: requests queue in priority lanes and merge into model calls.

The knobs are Triton's dynamic batcher's: a merged call holds at most ``max_batch_size`` items (a request carrying
``k`` items counts ``k``; a request larger than ``max_batch_size`` runs alone, never split), and the first queued
request waits at most ``max_queue_delay_ms`` for company (not at all when no other request of the task is in
flight: one client at a time would only pay the delay). The interactive lane is always drained before the batch
lane. Each lane is bounded in items and in waiting time; past either bound a request is refused with
:class:`Overloaded` (HTTP 503 with Retry-After) and is never run.

When more items wait than one call holds, they are shared evenly between the calls they need (136 waiting with
``max_batch_size`` 64: calls of 46, 45 and 45, not 64, 64 and 8). Filling each call to the limit left the remainder
waiting one call longer than the rest: in a closed loop of 200 clients and batches of 64, 8 requests in 200 waited
a fourth call, which set the p99 latency at about 4/3 of the median; with even shares the batches settle at 50 and
every request waits four calls.

Only requests with the same caller (key id, tenant, client address) are merged, so that the single
``call_started``/``call_finished`` event of a merged call names exactly one actor. Inference runs in a thread pool,
off the event loop. If a merged call fails, each of its requests is run again alone, so that one bad request fails
alone; a request once taken into a call is never dropped.

A stateful task (``TaskSpec.stateful``, e.g. the AML transaction window) is never merged across requests: running a
failed merged call again request by request would apply the items that had already entered the state a second time
(a fresh-user test saw one cash deposit counted twice and a false structuring alert). Each request of a stateful
task is its own call, and what it answered with 200 is exactly what entered the state.

A stateful task keeps its state per tenant (the key's ``tenant``; ``Taskflow`` runs one call of a tenant at a time,
calls of different tenants at the same time). A worker does not take a request of a tenant whose call is running:
it takes the next request of another tenant instead. So with ``instances`` above 1 different tenants' requests run
at the same time, one tenant's never overtake each other (they run in queue order), and a tenant's burst holds at
most one worker.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any

from .. import CallContext, Taskflow
from .config import LANES, Lane, TaskConfig
from .metrics import MODEL_CALL, ServerMetrics


class Overloaded(Exception):
    """A request refused before inference because a lane is full or it waited too long (HTTP 503)."""

    def __init__(self, reason: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Answer:
    """What a request gets back: its outputs and the id of the task call (and audit event) that made them."""

    outputs: list[Any]
    call_id: str
    batch_items: int


@dataclass(eq=False)
class _Pending:
    items: Sequence[Any]
    context: CallContext
    lane: Lane
    future: asyncio.Future[Answer]
    arrived: float = field(default_factory=time.perf_counter)
    taken: bool = False
    version: str | None = None  # the model version of the call that answered it (None: no call yet)

    @property
    def group(self) -> tuple[str, str | None, str]:
        return (self.context.actor, self.context.tenant, self.context.source)


class TaskBatcher:
    """Queue, merge and run the requests of one task on one :class:`~sectorflow.Taskflow`.

    Call :meth:`start` inside a running event loop, :meth:`submit` per request, :meth:`stop` at shutdown.
    """

    def __init__(self, taskflow: Taskflow, config: TaskConfig, executor: Executor, metrics: ServerMetrics) -> None:
        self.taskflow = taskflow
        self.name = taskflow.spec.name
        self.config = config
        self._executor = executor
        self._metrics = metrics
        self._lanes: dict[Lane, deque[_Pending]] = {lane: deque() for lane in LANES}
        self._queued: dict[Lane, int] = {lane: 0 for lane in LANES}
        self._wakeup = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._in_flight = 0  # requests submitted and not yet answered (queued or in a running call)
        self._stateful = taskflow.spec.stateful
        self._busy: set[str | None] = set()  # stateful task: tenants with a call running
        # the lanes' metric children, looked up once (prometheus' labels() was ~2 % of the server's time, py-spy)
        self._queue_gauge = {lane: metrics.queue_items.labels(self.name, lane) for lane in LANES}
        self._queue_time = {lane: metrics.queue_seconds.labels(self.name, lane) for lane in LANES}

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start ``config.instances`` worker coroutines (each forms and runs one merged call at a time)."""
        for i in range(self.config.instances):
            self._workers.append(asyncio.create_task(self._worker(), name=f"batcher-{self.name}-{i}"))

    async def stop(self) -> None:
        """Stop the workers after the calls already running finish; refuse whatever still waits."""
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        for lane in LANES:
            while self._lanes[lane]:
                pending = self._lanes[lane].popleft()
                if not pending.future.done():
                    self._metrics.rejections.labels(self.name, "shutdown").inc()
                    pending.future.set_exception(Overloaded("shutdown", "The server is shutting down.", 5))

    # --- requests -------------------------------------------------------------------------------------------------

    def queued_items(self, lane: Lane) -> int:
        """Items waiting in ``lane`` now."""
        return self._queued[lane]

    async def submit(self, items: Sequence[Any], context: CallContext, lane: Lane,
                     note: dict[str, Any] | None = None) -> Answer:
        """Queue validated items and wait for their outputs.

        ``note`` (the request's ASGI ``scope["state"]``) gets the model version of the call that answered the
        request under :data:`~.metrics.MODEL_CALL` once one has (with outputs or an error), so that the server counts
        the request in ``sectorflow_requests_total`` as a model call rather than a refusal.

        Raises:
            Overloaded: the lane is full (``queue_full``) or the request waited longer than the lane's timeout
                (``queue_timeout``) without being taken into a call.
            SectorflowError: the task refused the items (e.g. ``InvalidInputError`` from the pipeline).
        """
        lane_config = getattr(self.config, lane)
        if self._queued[lane] + len(items) > lane_config.max_queue_items:
            self._metrics.rejections.labels(self.name, "queue_full").inc()
            raise Overloaded("queue_full", f"The {lane} queue of task {self.name!r} is full "
                             f"({self._queued[lane]} items waiting, bound {lane_config.max_queue_items}).",
                             self._retry_hint(lane))
        loop = asyncio.get_running_loop()
        pending = _Pending(items, context, lane, loop.create_future())
        self._lanes[lane].append(pending)
        self._count(lane, len(items))
        self._wakeup.set()
        # One timer per request (not asyncio.wait + shield, which cost two more futures and their callbacks).
        timer = loop.call_later(lane_config.queue_timeout_ms / 1000, self._expire, pending)
        self._in_flight += 1
        try:
            return await pending.future
        except asyncio.CancelledError:
            self._withdraw(pending)  # not yet taken: never runs; taken: runs, and its answer is dropped
            raise
        finally:
            self._in_flight -= 1
            timer.cancel()
            if note is not None and pending.version is not None:
                note[MODEL_CALL] = pending.version

    def _expire(self, pending: _Pending) -> None:
        """The lane's timeout passed: refuse the request if no call has taken it yet."""
        if pending.future.done() or not self._withdraw(pending):
            return
        lane_config = getattr(self.config, pending.lane)
        self._metrics.rejections.labels(self.name, "queue_timeout").inc()
        pending.future.set_exception(Overloaded(
            "queue_timeout", f"Task {self.name!r} did not start the request within "
            f"{lane_config.queue_timeout_ms:.0f} ms in the {pending.lane} lane.", self._retry_hint(pending.lane)))

    def _retry_hint(self, lane: Lane) -> int:
        return max(1, round(getattr(self.config, lane).queue_timeout_ms / 1000))

    def _count(self, lane: Lane, delta: int) -> None:
        self._queued[lane] += delta
        self._queue_gauge[lane].set(self._queued[lane])

    def _withdraw(self, pending: _Pending) -> bool:
        """Remove a request not yet taken into a call; ``False`` if it was already taken."""
        if pending.taken:
            return False
        try:
            self._lanes[pending.lane].remove(pending)
        except ValueError:
            return False
        self._count(pending.lane, -len(pending.items))
        return True

    # --- forming batches ------------------------------------------------------------------------------------------

    def _take(self, pending: _Pending) -> None:
        self._lanes[pending.lane].remove(pending)
        self._count(pending.lane, -len(pending.items))
        pending.taken = True

    def _head(self) -> _Pending | None:
        if self._stateful:
            return self._stateful_head()
        for lane in LANES:
            if self._lanes[lane]:
                head = self._lanes[lane][0]
                self._take(head)
                return head
        return None

    def _stateful_head(self) -> _Pending | None:
        """The first queued request (interactive lane first) of a tenant with no call running, taken and its tenant
        marked busy until :meth:`_run` ends; ``None`` when every queued request's tenant is busy."""
        busy = self._busy
        for lane in LANES:
            for pending in self._lanes[lane]:
                tenant = pending.context.tenant
                if tenant not in busy:
                    self._take(pending)
                    busy.add(tenant)
                    return pending
        return None

    def _target(self, head: _Pending) -> int:
        """Items the batch headed by ``head`` may hold: ``max_batch_size``, or, when more items wait (in both lanes,
        whichever caller sent them) than one call holds, an even share of them (see the module docstring)."""
        limit = self.config.max_batch_size
        waiting = len(head.items) + sum(self._queued.values())
        if waiting <= limit:
            return limit
        calls = -(-waiting // limit)
        return -(-waiting // calls)

    def _collect(self, batch: list[_Pending], size: int, limit: int) -> int:
        if self.taskflow.spec.stateful:  # never merged: see the module docstring
            return size
        group = batch[0].group
        for lane in LANES:
            queue = self._lanes[lane]
            if not queue or size >= limit:
                continue
            kept: deque[_Pending] = deque()  # one pass over the lane (removing one by one is quadratic)
            taken = 0
            while queue:
                pending = queue.popleft()
                n = len(pending.items)
                if size < limit and size + n <= limit and pending.group == group:
                    pending.taken = True
                    batch.append(pending)
                    size += n
                    taken += n
                else:
                    kept.append(pending)
                if size >= limit:
                    kept.extend(queue)
                    break
            self._lanes[lane] = kept
            if taken:
                self._count(lane, -taken)
        return size

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._wakeup.clear()
            head = self._head()
            if head is None:
                await self._wakeup.wait()
                continue
            batch, size = [head], len(head.items)
            target = self._target(head)
            # Wait for company only if there can be any: with no other request of the task in flight (queued or in
            # a running call), e.g. one client at a time, waiting would only add max_queue_delay_ms to its latency.
            alone = self._in_flight <= 1
            deadline = loop.time() + (0.0 if alone else self.config.max_queue_delay_ms / 1000)
            while True:
                self._wakeup.clear()
                size = self._collect(batch, size, target)
                remaining = deadline - loop.time()
                if size >= target or remaining <= 0 or self.taskflow.spec.stateful:
                    break
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except TimeoutError:
                    size = self._collect(batch, size, target)
                    break
            now = time.perf_counter()
            for pending in batch:
                self._queue_time[pending.lane].observe(now - pending.arrived)
            task = asyncio.create_task(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            await asyncio.shield(task)

    # --- running ----------------------------------------------------------------------------------------------------

    async def _run(self, batch: list[_Pending]) -> None:
        if not self._stateful:
            await self._run_batch(batch)
            return
        try:
            await self._run_batch(batch)
        finally:  # the tenant's next request may run now, on any worker
            self._busy.discard(batch[0].context.tenant)
            self._wakeup.set()

    async def _run_batch(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        items = [item for pending in batch for item in pending.items]
        head = batch[0].context
        context = head if len(batch) == 1 else replace(head, request_id=uuid.uuid4().hex)
        version = self.taskflow.meta.model_version or ""
        try:
            outputs = await asyncio.get_running_loop().run_in_executor(self._executor, self._call, items, context)
        except Exception as exc:
            if len(batch) > 1:  # isolate the request that failed; the others run again alone
                for pending in batch:
                    await self._run_batch([pending])
                return
            self._finish_failed(batch[0], exc, version)
            return
        elapsed = time.perf_counter() - started
        version = (outputs[0].meta.model_version if outputs and outputs[0].meta else version) or ""
        self._metrics.compute_seconds.labels(self.name, version).observe(elapsed)
        self._metrics.batch_size.labels(self.name).observe(len(items))
        self._metrics.items.labels(self.name, version, "success").inc(len(items))
        offset = 0
        for pending in batch:
            n = len(pending.items)
            pending.version = version
            answer = Answer(outputs[offset:offset + n], context.request_id, len(items))
            offset += n
            if not pending.future.done():
                pending.future.set_result(answer)

    def _call(self, items: list[Any], context: CallContext) -> list[Any]:
        return self.taskflow.run(items, context=context)

    def _finish_failed(self, pending: _Pending, exc: Exception, version: str) -> None:
        self._metrics.items.labels(self.name, version, "failure").inc(len(pending.items))
        pending.version = version
        if not pending.future.done():
            pending.future.set_exception(exc)
