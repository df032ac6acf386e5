"""``Taskflow``: a task by name, on the device and at the precision the user picks, thread-safe and typed."""

from __future__ import annotations

import difflib
import itertools
import numbers
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from . import plugins
from .bundle import Bundle, load_bundle
from .device import DeviceProbe, resolve_device
from .errors import BundleError, ConfigError, InvalidInputError, SectorflowError, UnsupportedPrecisionError
from .models.int8_store import resolve_int8_bundle
from .pipeline import Pipeline
from .spec import PRECISIONS, CallContext, ResultMeta, TaskEvent, TaskSpec
from .state_keeper import StateKeeper, store_tenant
from .env import settings
from .state_store import StateStore
from .tenants import TenantPipelines
from .validation import validate_items


_CALL_IDS = itertools.count(1)
"""``TaskEvent.call_id`` of each ``Taskflow.run`` (``next`` on a count is atomic under the GIL)."""


def _default_threads() -> int:
    raw = settings().num_threads
    raw = "1" if raw is None else raw  # set but empty is refused, as before
    try:
        value = max(1, int(raw))
    except ValueError as exc:
        raise ConfigError(f"SECTORFLOW_NUM_THREADS={raw!r} is not an integer: give one from 1 to {MAX_THREADS} "
                          "(CPU threads of each predictor), or unset it for 1.") from exc
    if value > MAX_THREADS:
        raise ConfigError(f"SECTORFLOW_NUM_THREADS={raw!r}: give an integer from 1 to {MAX_THREADS}.")
    return value


MAX_THREADS = 1024
"""The most CPU threads ``num_threads`` may ask of a predictor (a larger number is a typo, not a machine)."""

_KEYWORDS = ("device", "precision", "batch_size", "num_threads", "task_path", "device_probe")
"""``Taskflow``'s own keyword arguments: a misspelt one arrives among the task options and is suggested from here."""


def _check_task_path(task_path: Any) -> None:
    """Refuse a ``task_path`` that is neither ``None``, a ``str`` nor a path, or that is an empty or blank string
    (an unset environment variable: ``Path("")`` is the current folder, reported as ". is not a model bundle")."""
    if task_path is not None and not isinstance(task_path, (str, os.PathLike)):
        raise ConfigError(f"task_path={task_path!r} ({type(task_path).__name__}): give the path of a model bundle "
                          "folder (str or pathlib.Path), or leave it out for the task's own bundle.")
    if isinstance(task_path, str) and not task_path.strip():
        raise ConfigError(f"task_path={task_path!r} is {'blank' if task_path else 'empty'}: give the path of a model "
                          "bundle folder, or leave it out for the task's own bundle (an empty path is usually an "
                          "unset environment variable in the configuration).")


_PROBE_METHODS = ("gpu_count", "custom_devices", "xpu_count")


def _check_probe(probe: Any) -> None:
    if probe is not None and not all(callable(getattr(probe, name, None)) for name in _PROBE_METHODS):
        raise ConfigError(f"device_probe={probe!r} ({type(probe).__name__}): give a sectorflow.DeviceProbe (an "
                          f"object with the methods {', '.join(_PROBE_METHODS)}), or leave it out for the real "
                          "hardware.")


def _check_context(context: Any) -> CallContext:
    """``context`` itself, or a fresh :class:`CallContext` for ``None``; anything else is refused, since observers
    (the audit log) read ``context.actor``."""
    if context is None:
        return CallContext()
    if not isinstance(context, CallContext):
        raise ConfigError(f"context={context!r} ({type(context).__name__}): give a sectorflow.CallContext, e.g. "
                          "CallContext(actor='dr.li', tenant='ward-3'), or leave it out.")
    return context


def _is_int(value: Any) -> bool:
    """An integer, also numpy's (``np.int64(8)``, whose repr is ``8``: refusing it said "batch_size=8: give an
    integer"); not ``True``/``False``, which Python counts as integers."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _unknown_options_message(spec: TaskSpec, unknown: list[str]) -> str:
    """Names the unknown options, the closest known name of each (a task option or a ``Taskflow`` keyword) and the
    task's options."""
    known = [*spec.options, *_KEYWORDS]
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75) if isinstance(name, str) else []
        if not close and isinstance(name, str):  # case and - vs _ (Batch-Size): compare normalised names
            folded = {k.lower().replace("-", "_"): k for k in known}
            close = [folded[name.lower().replace("-", "_")]] if name.lower().replace("-", "_") in folded else []
        if close:
            hints.append(f"{name!r}: did you mean {close[0]!r}?")
    allowed = ", ".join(sorted(spec.options)) or "none"
    hint = f" ({'; '.join(hints)})" if hints else ""
    return f"Task {spec.name!r} has no option(s) {unknown}{hint}; its options are: {allowed}."


def _is_one_item(inputs: Any) -> bool:
    """Whether ``inputs`` is one item (a dict, a model, a string, a number, None) rather than a list of items."""
    return isinstance(inputs, (str, bytes, bytearray, Mapping, BaseModel)) or not isinstance(inputs, Iterable)


def _as_items(inputs: Any) -> tuple[bool, Sequence[Any]]:
    """``(single, items)``: one item as a list of one; a list or tuple as it is; an iterator (generator, ``map``)
    read into a list. Other iterables (a DataFrame, an array) are one item, which validation names.

    Raises:
        InvalidInputError: a set or frozenset (it has no order, so results could not be matched to items).
    """
    if isinstance(inputs, (list, tuple)):
        return False, inputs
    if isinstance(inputs, (set, frozenset)):
        raise InvalidInputError(f"Got a {type(inputs).__name__} of {len(inputs)} item(s): give a list, so that "
                                "result i answers item i (a set has no order).",
                                details=[{"row": None, "field": None, "reason": f"a {type(inputs).__name__}, "
                                          "not a list"}])
    if isinstance(inputs, Iterator) and not _is_one_item(inputs):
        return False, list(inputs)
    return True, [inputs]


class Taskflow:
    """Run a registered task.

    Example::

        tf = Taskflow("aml", device="cpu", precision="fp32", batch_size=64)
        results = tf(records)          # list in, list out; one item in, one result out
        for r in tf.stream(iterable):  # long inputs, in order, bounded memory
            ...

    Args:
        task: task name or alias (``Taskflow.tasks()`` lists them), or the registered :class:`TaskSpec` itself
            (``sectorflow run`` and the server, which looked it up already).
        device: ``cpu``, ``gpu[:N]``, ``npu[:N]``, ``mlu[:N]``, ``xpu[:N]`` or ``auto`` (GPU, then custom devices,
            then xpu, then CPU with a warning); any case. Another framework's name (``cuda:0``) is refused with the
            name to write (``gpu:0``).
        precision: ``fp32``, ``fp16``, ``bf16`` or ``int8`` (any case); one the task does not declare is refused. ``int8`` on CPU
            runs the INT8 ONNX bundle that ``sectorflow models quantize TASK`` built (``sectorflow.models.int8_store``
            says where it is looked for), on a GPU the fp32 bundle through TensorRT INT8.
        batch_size: the most items per model forward pass (an integer from 1 to 65,536; numpy integers too).
        num_threads: CPU threads of the predictor (an integer from 1 to 1,024; default ``SECTORFLOW_NUM_THREADS``
            or 1).
        task_path: a user's model bundle folder (str or path, not empty) instead of the task's default bundle.
        device_probe: what hardware exists (a :class:`~sectorflow.DeviceProbe`; tests inject a fake one).
        state_store: stateful tasks: a :class:`~sectorflow.state_store.StateStore`, a SQLite path or a
            ``postgresql://`` URL where every tenant's state is kept: a tenant's state is restored when its pipeline
            is made (the default tenant's here; snapshot, then the journal replayed), and every call's validated
            inputs are journalled (one store transaction) before the call returns, so a restarted process continues
            exactly (:mod:`sectorflow.state_keeper`); ``reset_state(tenant)`` forgets it there too.
        as_dict: ``True``: every call (``tf(...)``, :meth:`run`, :meth:`stream`) returns plain dicts, each result's
            ``model_dump(mode="json")`` (JSON types only: datetimes as ISO 8601 text, decimals as numbers or text as
            the model declares, ``meta`` included), as PaddleNLP's Taskflow does; default ``False``: the task's
            output-model instances (``r.score``, ``r["score"]``).
        **options: task-specific options (the task spec's ``options`` lists them).

    Raises:
        UnknownTaskError, DeviceUnavailableError, UnsupportedPrecisionError, BundleError, BundleIntegrityError,
        ConfigError (a bad ``batch_size``/``num_threads``/``task_path``/``device_probe``, an empty ``task_path``, or
        an unknown option: the message names the closest real option or keyword, ``batchsize`` -> ``batch_size``).

    Thread safety: concurrent calls on one instance give exactly the serial results; stateless tasks run concurrently
    on a predictor pool, stateful tasks (``spec.stateful``) take turns per tenant.

    State of stateful tasks: per tenant (``CallContext.tenant`` of the call; no context, or ``tenant=None``, is the
    default tenant). Each tenant has its own pipeline (the default tenant's is :attr:`pipeline`, the others are made
    by :meth:`Pipeline.spawn <sectorflow.pipeline.Pipeline.spawn>` on their first call: same model and settings, empty
    state) and its own lock, so one tenant's transactions never reach another tenant's results and different tenants'
    calls run at the same time. :meth:`reset_state` forgets one tenant's state, :meth:`tenants` lists the tenants
    holding state, :meth:`reload` carries every tenant's own state over to the new model.
    """

    def __init__(self, task: str | TaskSpec, *, device: str = "cpu", precision: str = "fp32", batch_size: int = 32,
                 num_threads: int | None = None, task_path: str | Path | None = None,
                 device_probe: DeviceProbe | None = None, state_store: StateStore | str | Path | None = None,
                 as_dict: bool = False, **options: Any) -> None:
        if not isinstance(as_dict, bool):
            raise ConfigError(f"as_dict={as_dict!r}: give True (results as plain dicts) or False (output models).")
        self.as_dict = as_dict
        """Results are plain dicts (``model_dump(mode="json")``) instead of output-model instances."""
        self.spec: TaskSpec = task if isinstance(task, TaskSpec) else plugins.get_task(task)
        if isinstance(precision, str) and precision.strip().lower() in PRECISIONS:
            precision = precision.strip().lower()  # "FP16" as "fp16", like device="GPU:0"
        if precision not in PRECISIONS:
            raise UnsupportedPrecisionError(f"precision={precision!r} is not one of {', '.join(PRECISIONS)}.")
        if precision not in self.spec.precisions:
            raise UnsupportedPrecisionError(
                f"Task {self.spec.name!r} runs at {', '.join(self.spec.precisions)}; precision={precision!r} is not "
                f"available for its model.")
        if not _is_int(batch_size) or not 1 <= batch_size <= 65536:
            raise ConfigError(f"batch_size={batch_size!r}: give an integer from 1 to 65536.")
        if num_threads is not None and (not _is_int(num_threads) or not 1 <= num_threads <= MAX_THREADS):
            raise ConfigError(f"num_threads={num_threads!r}: give an integer from 1 to {MAX_THREADS} (CPU threads of "
                              f"the predictor), or leave it out for SECTORFLOW_NUM_THREADS or 1.")
        batch_size, num_threads = int(batch_size), None if num_threads is None else int(num_threads)
        _check_task_path(task_path)
        _check_probe(device_probe)
        unknown = sorted(set(options) - set(self.spec.options))
        if unknown:
            raise ConfigError(_unknown_options_message(self.spec, unknown),
                              details={"unknown": unknown, "options": sorted(self.spec.options)})
        self.device = resolve_device(device, self.spec.devices, device_probe)
        self.precision = precision
        self.batch_size = batch_size
        self.num_threads = num_threads if num_threads is not None else _default_threads()
        self.options = dict(options)
        self.input_context: dict[str, Any] | None = self.spec.input_context(self.options)
        """The validation context of raw input items, from the options (:meth:`TaskSpec.input_context`)."""
        self._swap_lock = threading.Lock()
        self._current: tuple[Pipeline, ResultMeta] = self._build(task_path, CallContext())
        self._tenants: TenantPipelines | None = (
            TenantPipelines(*self._current, make=self._spawn_tenant) if self.spec.stateful else None)
        """Stateful tasks: one pipeline and one lock per tenant (see :mod:`sectorflow.tenants`)."""
        self.state_store: StateStore | None = None
        """With ``state_store=``: where every tenant's state is kept (:mod:`sectorflow.state_keeper`)."""
        self._keepers: dict[str | None, StateKeeper] = {}
        self._keepers_lock = threading.Lock()
        if state_store is not None:
            if not self.spec.stateful:
                raise ConfigError(f"state_store: task {self.spec.name!r} keeps no state between calls; drop it.")
            from .state_store import open_state_store

            self.state_store = state_store if isinstance(state_store, StateStore) else open_state_store(state_store)
            self._keeper(None).restore(self._current[0])  # the default tenant; others when they first call

    # --- construction and hot reload ---------------------------------------------------------------------------

    def _build(self, task_path: str | Path | None, context: CallContext) -> tuple[Pipeline, ResultMeta]:
        start = time.perf_counter()
        bundle_dir = Path(task_path) if task_path is not None else self.spec.default_bundle
        switch = self.spec.model_switch
        if switch is not None:
            value = self.options.get(switch, True)
            if not isinstance(value, bool):  # before the bundle lookup, so model=0 is named, not a missing INT8 model
                raise ConfigError(f"{switch}={value!r}: give True or False (False runs task {self.spec.name!r} "
                                  f"without its model).")
            if value is False:
                bundle_dir = None  # the caller turned the model off (e.g. Taskflow("aml", model=False)): load none
        base_meta = ResultMeta(task=self.spec.name, plugin=self.spec.plugin, device=str(self.device),
                               precision=self.precision)
        try:
            if self.precision == "int8":  # on CPU: the INT8 ONNX bundle built by `sectorflow models quantize`
                bundle_dir = resolve_int8_bundle(self.spec, bundle_dir, self.device)
            bundle: Bundle | None = (load_bundle(bundle_dir, expected_task=self.spec.name)
                                     if bundle_dir is not None else None)
            meta = base_meta.model_copy(update={
                "model_name": bundle.name if bundle else None,
                "model_version": bundle.version if bundle else None,
                "bundle_sha256": bundle.sha256 if bundle else None,
            })
            pipeline = self.spec.pipeline_class()(self.spec, bundle, self.device, self.precision, self.batch_size,
                                                  self.num_threads, dict(self.options))
            pipeline.load()
            identity = pipeline.model_identity() if bundle is not None else None
            if identity:  # the model the options picked from the bundle (aml: the account model), not its manifest's
                meta = meta.model_copy(update={k: identity[k] for k in ("model_name", "model_version",
                                                                        "bundle_sha256") if k in identity})
        except Exception as exc:  # every failed load is an event, also one Paddle raises on a malformed program
            plugins.emit(TaskEvent("model_load_failed", self.spec.name, context, base_meta,
                                   error=f"{type(exc).__name__}: {exc}",
                                   details={"task_path": str(bundle_dir) if bundle_dir else None}))
            if isinstance(exc, SectorflowError):
                raise
            # A plugin that chokes on an option value (thresholds=3: "'int' object is not iterable") fails here too:
            # name the options given, so the user does not hunt for a broken bundle.
            # Names only: option values can be personal data (aml customers=), and this message reaches the logs.
            given = f" with option(s) {', '.join(sorted(self.options))}"
            suspects = ("check those options (the task's option help: `sectorflow tasks`, docs) and the bundle"
                        if self.options else "check the bundle")
            raise BundleError(f"Task {self.spec.name!r}: the model bundle at {bundle_dir} failed to load"
                              f"{given if self.options else ''}: {type(exc).__name__}: {exc}; {suspects}.",
                              details={"task_path": str(bundle_dir),
                                       "options": sorted(self.options)}) from exc
        plugins.emit(TaskEvent("model_loaded", self.spec.name, context, meta,
                               duration_ms=(time.perf_counter() - start) * 1000,
                               details={"task_path": str(bundle_dir) if bundle_dir else None,
                                        "batch_size": self.batch_size, "num_threads": self.num_threads,
                                        "options": {k: repr(v) for k, v in self.options.items()}}))
        return pipeline, meta

    def reload(self, task_path: str | Path | None = None, *, context: CallContext | None = None) -> ResultMeta:
        """Load a bundle beside the current one and swap atomically once it is ready.

        Calls in flight finish on the old pipeline. If the new bundle fails to load (or fails its hash check) the
        old one keeps serving and the error is raised. A stateful task's new pipeline takes over the old one's state
        (:meth:`Pipeline.adopt_state`) between two calls, tenant by tenant: each tenant's new pipeline (the default
        tenant's is the new loaded one, the others its :meth:`Pipeline.spawn`) adopts that tenant's own old pipeline,
        with every tenant's lock held; if any spawn or adoption fails, every tenant stays on the old model with its
        state. Returns the new result metadata.
        """
        _check_task_path(task_path)
        context = _check_context(context)
        with self._swap_lock:
            old = self.meta
            pipeline, meta = self._build(task_path, context)
            if self._tenants is not None:  # carry every tenant's own history over; no call runs meanwhile
                def commit() -> None:
                    self._current = (pipeline, meta)

                try:
                    self._tenants.swap(pipeline, meta, carry=lambda new, previous: new.adopt_state(previous),
                                       commit=commit)
                except Exception as exc:
                    plugins.emit(TaskEvent("model_load_failed", self.spec.name, context, meta,
                                           error=f"{type(exc).__name__}: {exc}",
                                           details={"task_path": str(task_path) if task_path else None}))
                    raise
            else:
                self._current = (pipeline, meta)  # one assignment: a call sees the old pair or the new, never a mix
        plugins.emit(TaskEvent("model_unloaded", self.spec.name, context, old))
        return meta

    def _spawn_tenant(self, tenant: str | None, loaded: Pipeline) -> Pipeline:
        """The pipeline of ``tenant``'s first call (or first call after :meth:`reset_state`), made from the loaded
        one with its lock held: ``loaded.spawn()``, same model and settings, empty state. The one place a tenant's
        pipeline is made, so a store of tenants' state restores a tenant's state here."""
        pipeline = loaded.spawn()
        if self.state_store is not None:
            self._keeper(tenant).restore(pipeline)
        return pipeline

    def _keeper(self, tenant: str | None) -> StateKeeper:
        """The :class:`StateKeeper` of ``tenant``'s stored state (``state_store=`` only), made on first use."""
        keeper = self._keepers.get(tenant)
        if keeper is None:
            assert self.state_store is not None
            with self._keepers_lock:
                keeper = self._keepers.get(tenant)
                if keeper is None:
                    keeper = self._keepers[tenant] = StateKeeper(self, self.state_store, store_tenant(tenant))
        return keeper

    def save_state(self, tenant: str | None = None) -> None:
        """Write ``tenant``'s full state to the store now (a snapshot; ``state_store=`` only), e.g. before a
        planned shutdown so that the next start replays no journal. Waits for the tenant's running call.

        Raises:
            ConfigError: no ``state_store`` was given.
        """
        if self.state_store is None or self._tenants is None:
            raise ConfigError("save_state() needs Taskflow(..., state_store=...) of a stateful task.")
        slot = self._tenants.enter(tenant)
        try:
            self._keeper(tenant).snapshot(slot.pipeline)  # type: ignore[arg-type]
        finally:
            slot.lock.release()

    def _tenant_pipeline(self, tenant: str | None) -> tuple[Pipeline, threading.Lock]:
        """``tenant``'s pipeline (made on first use, see :meth:`_spawn_tenant`) and the lock that serialises its
        calls (stateful tasks only). The pipeline is the tenant's until a :meth:`reload` or :meth:`reset_state`:
        read it again with the lock held before using it.

        Raises:
            ConfigError: the task is stateless (one shared pipeline, no per-tenant state).
        """
        if self._tenants is None:
            raise ConfigError(f"Task {self.spec.name!r} is stateless: it keeps no state per tenant.")
        slot = self._tenants.enter(tenant)
        try:
            return slot.pipeline, slot.lock  # type: ignore[return-value]
        finally:
            slot.lock.release()

    # --- calling -------------------------------------------------------------------------------------------------

    def __call__(self, inputs: Any, *, context: CallContext | None = None) -> Any:
        """Run the task on one item (dict, input model, or a string for a text task) or a list of items.

        Returns one output-model instance (a dict with ``as_dict=True``) for one item, a list for a list, tuple or
        iterator (a generator, ``map``; read whole, see :meth:`stream` for long ones), in the same order.

        Raises:
            InvalidInputError: an item does not fit the input model (``details`` lists rows and fields), or a set
                (no order, so result ``i`` could not answer item ``i``).
        """
        single, items = _as_items(inputs)
        results = self.run(items, context=context)
        return results[0] if single else results

    def run(self, items: Sequence[Any], *, context: CallContext | None = None, first_row: int = 1) -> list[Any]:
        """Run the task on a list of items; always returns a list (one item alone, e.g. a string, is a list of one).
        ``first_row`` numbers rows in errors."""
        items = _as_items(items)[1]
        context = _check_context(context)
        pipeline, meta = self._current
        start = time.perf_counter()
        call_id = next(_CALL_IDS)
        try:
            validated = validate_items(self.spec.input_model, items, first_row=first_row, context=self.input_context)
        except InvalidInputError as exc:
            plugins.emit(TaskEvent("call_failed", self.spec.name, context, meta, n_items=len(items),
                                   error=f"InvalidInputError: {exc}", call_id=call_id))
            raise
        plugins.emit(TaskEvent("call_started", self.spec.name, context, meta, n_items=len(validated),
                               inputs=validated, call_id=call_id))
        try:
            if self._tenants is not None:  # the tenant's own pipeline, one call of the tenant at a time
                slot = self._tenants.enter(context.tenant)
                try:
                    pipeline, meta = slot.pipeline, slot.meta  # type: ignore[assignment]
                    first, slot.used = not slot.used, True
                    try:
                        outputs = self._execute(pipeline, validated)
                        if self.state_store is not None:  # durable before the caller sees the results
                            self._keeper(context.tenant).record(pipeline, validated,
                                                                seconds=time.perf_counter() - start)
                    except BaseException:
                        if first:
                            slot.used = False
                            self._tenants.discard_unused(slot)
                        raise
                finally:
                    slot.lock.release()
            else:
                outputs = self._execute(pipeline, validated)
        except BaseException as exc:  # also Ctrl-C (KeyboardInterrupt) and stops: every started call gets its end
            try:
                plugins.emit(TaskEvent("call_failed", self.spec.name, context, meta, n_items=len(validated),
                                       inputs=validated, error=f"{type(exc).__name__}: {exc}".rstrip(": "),
                                       duration_ms=(time.perf_counter() - start) * 1000, call_id=call_id))
            except Exception:
                if isinstance(exc, Exception):  # as before: an observer's failure is the caller's error
                    raise
            raise
        for out in outputs:
            # Set the field directly: pydantic's __setattr__ costs about 5 us a result (a tenth of the AML per-
            # transaction budget) and refuses frozen output models; meta is a validated ResultMeta already.
            out.__dict__["meta"] = meta
            out.__pydantic_fields_set__.add("meta")
        plugins.emit(TaskEvent("call_finished", self.spec.name, context, meta, n_items=len(validated),
                               inputs=validated, outputs=outputs, duration_ms=(time.perf_counter() - start) * 1000,
                               call_id=call_id))
        if self.as_dict:
            return [out.model_dump(mode="json") for out in outputs]
        return outputs

    def _execute(self, pipeline: Pipeline, items: list[BaseModel]) -> list[Any]:
        if not items:
            return []
        features = pipeline.preprocess(items)
        if len(features) != len(items):
            raise RuntimeError(f"{type(pipeline).__name__}.preprocess returned {len(features)} features for "
                               f"{len(items)} items")
        raw: list[Any] = []
        order = self._batch_order(pipeline, features)
        if order is None:
            for begin in range(0, len(features), self.batch_size):
                raw.extend(pipeline.forward(features[begin:begin + self.batch_size]))
        else:  # batches of similar items (Pipeline.batch_key), raw outputs put back in input order
            raw = [None] * len(features)
            for begin in range(0, len(order), self.batch_size):
                rows = order[begin:begin + self.batch_size]
                outs = pipeline.forward([features[i] for i in rows])
                if len(outs) != len(rows):
                    raise RuntimeError(f"{type(pipeline).__name__}.forward returned {len(outs)} outputs for "
                                       f"{len(rows)} features")
                for i, out in zip(rows, outs):
                    raw[i] = out
        outputs = pipeline.postprocess(items, raw)
        if len(outputs) != len(items):
            raise RuntimeError(f"{type(pipeline).__name__}.postprocess returned {len(outputs)} results for "
                               f"{len(items)} items")
        return outputs

    def _batch_order(self, pipeline: Pipeline, features: list[Any]) -> list[int] | None:
        """Feature indices sorted by ``pipeline.batch_key`` (stable), or ``None`` for arrival order: a stateful
        task, a call that fits one batch, or a pipeline without a key."""
        if (self.spec.stateful or len(features) <= self.batch_size
                or type(pipeline).batch_key is Pipeline.batch_key):
            return None
        keys = [pipeline.batch_key(f) for f in features]
        if any(k is None for k in keys):
            return None
        return sorted(range(len(features)), key=keys.__getitem__)

    def stream(self, iterable: Iterable[Any], *, chunk_size: int | None = None,
               context: CallContext | None = None) -> Iterator[Any]:
        """Yield one result per input item, in order, holding at most ``chunk_size`` items (default
        ``batch_size``) in memory at a time."""
        size = self.batch_size if chunk_size is None else chunk_size  # chunk_size=0 is refused, not the default
        if not _is_int(size) or size < 1:
            raise ConfigError(f"chunk_size={chunk_size!r}: give a positive integer (items held at a time), or leave "
                              "it out for batch_size.")
        size = int(size)
        iterator = iter(_as_items(iterable)[1] if _is_one_item(iterable) or isinstance(iterable, (set, frozenset))
                        else iterable)
        row = 1
        while chunk := list(itertools.islice(iterator, size)):
            yield from self.run(chunk, context=context, first_row=row)
            row += len(chunk)

    def reset_state(self, tenant: str | None = None, *, context: CallContext | None = None) -> bool:
        """Forget the state ``tenant`` (``None``: the default tenant) keeps across calls of a stateful task; other
        tenants' state is untouched. Waits for the tenant's running call. Emits a ``state_reset`` task event (with
        ``context``, the caller; ``details``: ``tenant``, ``had_state``). Returns whether the tenant held state (had
        run a call since it was first used or last reset). A stateless task has nothing to forget: ``False``.

        Raises:
            ConfigError: ``tenant`` is neither ``None`` nor a string, or ``context`` is no ``CallContext``.
        """
        if tenant is not None and not isinstance(tenant, str):
            raise ConfigError(f"tenant={tenant!r} ({type(tenant).__name__}): give a tenant name (str), or None for "
                              "the default tenant.")
        context = _check_context(context)
        if self._tenants is None:
            self._current[0].reset_state()
            return False
        if self.state_store is not None:  # the stored state too, with the tenant's lock held
            keeper = self._keeper(tenant)
            had = self._tenants.reset(tenant, also=lambda pipeline: keeper.reset(pipeline))
        else:
            had = self._tenants.reset(tenant)
        plugins.emit(TaskEvent("state_reset", self.spec.name, context, self.meta,
                               details={"tenant": tenant, "had_state": had}))
        return had

    def tenants(self) -> list[str | None]:
        """The tenants holding state of this stateful task (each has run a call since it was first used or last
        reset): ``None`` (the default tenant) first, then the others sorted. ``[]`` for a stateless task."""
        return self._tenants.tenants() if self._tenants is not None else []

    # --- introspection -------------------------------------------------------------------------------------------

    @property
    def pipeline(self) -> Pipeline:
        """The live pipeline (swapped by :meth:`reload`); of a stateful task, the default tenant's."""
        return self._current[0]

    @property
    def meta(self) -> ResultMeta:
        """Which model answers now: task, plugin, bundle name, version and SHA-256, device, precision."""
        return self._current[1]

    def schema(self) -> dict[str, Any]:
        """JSON Schema of the task's input item and output item: ``{"input": {...}, "output": {...}}``."""
        return self.spec.schema()

    @staticmethod
    def tasks() -> list[dict[str, Any]]:
        """Every registered task: name, aliases, plugin, version, languages, devices, precisions, description."""
        return [spec.summary() for _, spec in sorted(plugins.registered_tasks().items())]

    def __repr__(self) -> str:
        return (f"Taskflow({self.spec.name!r}, device={str(self.device)!r}, precision={self.precision!r}, "
                f"batch_size={self.batch_size}, model={self.meta.model_name}@{self.meta.model_version})")
