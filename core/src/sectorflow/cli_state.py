"""``sectorflow run TASK FILE --state STATE``: a stateful task's run that loads its state from a store, saves it at
the end, and survives being killed.

The run reads the file in chunks of ``--checkpoint-rows`` items (default 8,192). After each chunk its results are written to
``.<output>.partial-state`` (a fixed name next to ``--output``), flushed and fsync'd, and then ONE store transaction
journals the chunk's validated inputs together with the run's progress (rows consumed, output byte offset; see
:mod:`sectorflow.state_store`). An ``--output`` ending in ``.gz`` gets one gzip member per chunk
(:mod:`sectorflow.output_files`), so the offset still falls between whole members. Killed at any point (``kill -9``, power loss), the same command resumes: the state
is restored to the last commit (snapshot + journal), the partial output is cut back to the recorded offset and the
consumed rows are skipped, so the results file ends byte-identical to an uninterrupted run's: nothing lost,
nothing counted twice. No snapshot is taken while the run is unfinished, so ``--discard-unfinished`` can put the
state back to where the run started. At the end the output is renamed into place, the run's progress forgotten,
and a snapshot taken if the journal has grown past the store's bound (:mod:`sectorflow.state_store`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, Optional

from .errors import ConfigError
from .output_files import compressed, gzip_member
from .state_keeper import StateKeeper, context_tenant
from .state_store import RunProgress, open_state_store
from .taskflow import Taskflow

PARTIAL_SUFFIX = ".partial-state"
"""The partial output of a ``--state`` run is ``.<name>.partial-state`` next to ``--output``."""


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class _TextBytes:
    """A text stream as the binary one :func:`run_with_state` writes (UTF-8)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data.decode("utf-8"))

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.flush()


def _partial_path(output: Path) -> Path:
    target = output.resolve()
    return target.with_name(f".{target.name}{PARTIAL_SUFFIX}")


def reset_hint(spec: Any, state: str, tenant: str) -> str:
    """How to forget ``tenant``'s state in the store ``state`` (as the user gave ``--state``), as it must be typed:
    the task's :attr:`~sectorflow.TaskSpec.state_reset` command with ``--state``, ``--tenant`` and ``--yes``
    (quoted for a POSIX shell), or a description for a task without one."""
    if not spec.state_reset:
        return f"forget tenant {tenant!r}'s state in {state} (the task has no reset command: use another --state)"
    return f"`{spec.state_reset} --state {shlex.quote(state)} --tenant {shlex.quote(tenant)} --yes`"


def prepare(tf: Taskflow, state: str, tenant: str, source: str, name: str, output: Optional[Path],
            discard_unfinished: bool) -> tuple[StateKeeper, RunProgress | None, str]:
    """Open the store, settle an unfinished run, restore the state. Returns ``(keeper, run to resume or None,
    input SHA-256)``.

    Raises:
        ConfigError: an unfinished run of another input or output (the message says how to finish or discard it),
            or a stored state the pipeline cannot continue.
    """
    keeper = StateKeeper(tf, open_state_store(state), tenant)
    keeper.snapshots_paused = True
    pipeline = tf._tenant_pipeline(context_tenant(tenant))[0]  # the tenant's, as the run's calls will use it
    store, task = keeper.store, keeper.task
    digest = file_sha256(source)
    run = store.run(task, tenant)
    target = str(output.resolve()) if output is not None else None
    if run is not None and discard_unfinished:
        with store.transaction():
            store.discard_run(task, tenant)
        if run.output:
            Path(run.output).with_name(f".{Path(run.output).name}{PARTIAL_SUFFIX}").unlink(missing_ok=True)
        run = None
    if run is not None and (run.input_sha256 != digest or run.output != target):
        what = "another input" if run.input_sha256 != digest else f"another output ({run.output or 'stdout'})"
        raise ConfigError(
            f"The state {store.url} (tenant {tenant!r}) has an unfinished run of {what}: {run.input} (SHA-256 "
            f"{run.input_sha256[:16]}..., {run.rows_done} row(s) done, last commit {run.time}). Finish it by running "
            f"the same command again (same input, same --output), or add --discard-unfinished to put the state back "
            f"to where that run started; then run {name}.",
            details={"input": run.input, "input_sha256": run.input_sha256, "rows_done": run.rows_done})
    fed = store.fed(task, tenant, digest) if run is None else None
    if fed is not None:
        raise ConfigError(
            f"{name} (SHA-256 {digest[:16]}...) was already fed into the state {store.url} (tenant {tenant!r}): "
            f"a finished run of {fed[0]} on {fed[2]}, {fed[1]} item(s). Feeding it again would count its items twice "
            "(the state would hold each transaction once per run). Run the next file instead, or, to start over, "
            f"forget the tenant's state first: {reset_hint(tf.spec, state, tenant)}.",
            details={"input": fed[0], "input_sha256": digest, "items": fed[1], "time": fed[2]})
    try:
        keeper.restore(pipeline)
    except ConfigError as exc:  # a state these options cannot continue: the reset command as it must be typed
        raise ConfigError(f"{exc.message} To forget this state and start over: {reset_hint(tf.spec, state, tenant)}.",
                          details=exc.details) from exc
    if run is None:
        with store.transaction():
            store.begin_run(task, tenant, digest, name, target)
    return keeper, run, digest


class FedItems:
    """Which items of a ``sectorflow run --state`` earlier runs already fed into the keeper's state.

    Keys are the pipeline's :meth:`~sectorflow.Pipeline.item_keys` (``ids_by_row``: the input's format numbers
    ids by row), stored as 24-digit hex BLAKE2b digests (a fixed size whatever the key). :meth:`seen` compares with
    the keys of the runs before the current one (journal position ``start_seq`` and earlier): a file fed again under
    another name (a copy, its ``.gz``) or overlapping the last one. The running run's own items are not counted (a
    repeat within the input is the task's to handle: aml's window marks it ``input.duplicate_id``), so a resumed run
    finds what the uninterrupted one found."""

    def __init__(self, keeper: StateKeeper, pipeline: Any, start_seq: int, ids_by_row: bool = False) -> None:
        self.store, self.task, self.tenant = keeper.store, keeper.task, keeper.tenant
        self.pipeline, self.start_seq, self.ids_by_row = pipeline, start_seq, ids_by_row
        self._last: dict[int, str] = {}  # id(item) -> key of the chunk :meth:`seen` looked at last

    def keys(self, items: list[Any]) -> list[str] | None:
        """The stored keys of ``items`` (``None``: the task's items have none); those :meth:`seen` just computed
        are not computed again."""
        if not items:
            return None
        last = self._last
        if last and all(id(item) in last for item in items):
            return [last[id(item)] for item in items]
        keys = self.pipeline.item_keys(items, ids_by_row=self.ids_by_row)
        if keys is None:
            return None
        return [hashlib.blake2b(key.encode(), digest_size=12).hexdigest() for key in keys]

    def seen(self, items: list[Any]) -> list[int]:
        """The indices of the items of ``items`` an earlier run fed."""
        self._last = {}
        keys = self.keys(items)
        if not keys:
            return []
        self._last = {id(item): key for item, key in zip(items, keys)}  # the chunk stays alive until it is recorded
        found = self.store.seen_keys(self.task, self.tenant, keys, upto_seq=self.start_seq)
        return [i for i, key in enumerate(keys) if key in found] if found else []


def _open_output(output: Optional[Path], run: RunProgress | None, stdout: Callable[[], Any]) -> tuple[BinaryIO, int]:
    """The partial output file (cut back to the run's last committed offset) or stdout's bytes, and the offset."""
    if output is None:  # standard output cannot be cut back: a resumed run writes the rest of the results only
        return _TextBytes(stdout()), (run.output_offset if run else 0)
    partial = _partial_path(output)
    target = output.resolve()
    if run is None or (run.output_offset == 0 and not partial.exists()):  # killed before its first write
        return open(partial, "wb"), 0
    if not partial.exists() and target.exists() and target.stat().st_size == run.output_offset:
        os.replace(target, partial)  # killed between the rename and the final commit: take the output back
    if not partial.exists() or partial.stat().st_size < run.output_offset:
        raise ConfigError(f"The unfinished run's partial output {partial} is missing or shorter than its last "
                          f"checkpoint ({run.output_offset} bytes): add --discard-unfinished to start the run again "
                          "from the state before it.")
    handle = open(partial, "r+b")
    handle.truncate(run.output_offset)
    handle.seek(run.output_offset)
    return handle, run.output_offset


def run_with_state(keeper: StateKeeper, run: RunProgress | None, rows: Iterator[tuple[int, Any]],
                   validated: Callable[[Iterator[tuple[int, Any]]], Iterator[Any]], output: Optional[Path],
                   chunk_size: int, context: Any, stdout: Callable[[], Any],
                   progress: Callable[[int], None] = lambda n: None,
                   rejected: Callable[[], bool] = lambda: False,
                   run_chunk: Callable[[list[Any], Any], tuple[list[Any], list[Any]]] | None = None,
                   unrun: Callable[[list[Any]], None] = lambda chunk: None,
                   fed: FedItems | None = None) -> int | None:
    """Process the rows not yet consumed, chunk by chunk, committing after each; finish the run. Returns the number
    of items processed by this process, or ``None`` when ``rejected()`` turned true (``--on-error reject`` met a bad
    row): then no chunk after it ran, the output is left unrenamed and the run unfinished, for the caller to discard
    (:meth:`StateStore.discard_run` puts the state back to where the run started). A run that wrote no result (an
    empty or header-only input, every row skipped) leaves ``output`` as it was (absent, or the earlier results) and
    is discarded, not recorded as an input fed into the state. ``run_chunk(chunk, context)``: how a
    chunk runs, ``(the items that ran, their results)`` (default: all of them, ``tf.run``); the journal records the
    items that ran. ``unrun(chunk)``: called with the chunk read when ``rejected()`` turned true, which does not run
    (so that what the task would refuse of it is listed with the bad rows). ``fed``: the journal remembers the keys
    of the items that ran (:class:`FedItems`)."""
    done = run.rows_done if run else 0
    last = [done]

    def fresh() -> Iterator[tuple[int, Any]]:
        for row, record in rows:
            if row <= done:
                continue
            last[0] = row
            yield row, record

    out, offset = _open_output(output, run, stdout)
    gz = compressed(output)
    tf = keeper.taskflow
    tenant = context_tenant(keeper.tenant)
    context = replace(context, tenant=tenant)  # the audit records name the tenant; the calls run on its pipeline
    pipeline = tf._tenant_pipeline(tenant)[0]
    count = 0
    try:
        items = validated(fresh())
        while chunk := list(itertools.islice(items, chunk_size)):
            if rejected():
                unrun(chunk)
                break
            start = time.perf_counter()
            chunk, results = run_chunk(chunk, context) if run_chunk else (chunk, tf.run(chunk, context=context))
            if rejected():  # the chunk was refused (a row the task refuses): nothing of it is written or journalled
                break
            data = "".join(result.model_dump_json() + "\n" for result in results).encode()
            if gz and data:  # (a chunk whose every item an earlier run fed: no result, no empty member)
                data = gzip_member(data)  # one gzip member per checkpoint: the offset cuts between members
            seconds = time.perf_counter() - start
            out.write(data)
            out.flush()
            if output is not None:
                os.fsync(out.fileno())
            offset += len(data)
            keeper.record(pipeline, chunk, seconds=seconds, rows_done=last[0], output_offset=offset,
                          keys=fed.keys(chunk) if fed is not None else None)
            count += len(chunk)
            progress(count)
        for _ in items:  # rejected: the rest of the rows validated only, so that every bad row is listed
            pass
    finally:
        if output is not None:
            out.close()
    if rejected():
        return None
    if offset == 0:  # no result at all (an empty or header-only input, every row skipped): nothing was fed, the
        # output is left as it was (absent, or the earlier results) and the run is forgotten, not recorded as fed
        if output is not None:
            _partial_path(output).unlink(missing_ok=True)
        with keeper.store.transaction():
            keeper.store.discard_run(keeper.task, keeper.tenant)
        return count
    if output is not None:
        os.replace(_partial_path(output), output.resolve())
    keeper.finish_run(pipeline)
    return count
