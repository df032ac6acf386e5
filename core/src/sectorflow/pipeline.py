"""The pipeline base class: preprocess / forward / postprocess, as in Hugging Face pipelines.

The runtime (:class:`~sectorflow.taskflow.Taskflow`) calls, for each call with a list of validated input items:

1. ``preprocess(items) -> features``: one feature object per item (tokenise, look up state, build vectors).
2. ``forward(batch) -> raw``: once per batch of at most ``batch_size`` features; the only place batching lives, and
   the only place a model runs. Returns one raw output per feature.
3. ``postprocess(items, raw) -> results``: one output-model instance per item.

A subclass sets up heavy state (predictors, rule tables) in :meth:`load`, which the runtime calls once.

A stateful task (``TaskSpec.stateful``) keeps its state per tenant (``CallContext.tenant``): the loaded pipeline
serves the default tenant, and :meth:`spawn` makes each other tenant's pipeline on its first call (same model and
settings, empty state). :meth:`reset_state` and :meth:`adopt_state` act on one tenant's pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from .bundle import Bundle, PredictorPool, load_bundle, make_predictor_config
from .device import Device
from .errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .spec import TaskSpec

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


class Pipeline(Generic[In, Out]):
    """Base class of every task's pipeline.

    Attributes set by the runtime before :meth:`load`:
        spec: the task spec.
        bundle: the verified model bundle, or ``None`` for tasks without a model.
        device: the resolved device.
        precision: ``fp32``, ``fp16``, ``bf16`` or ``int8``.
        batch_size: the most features per :meth:`forward` call.
        num_threads: CPU threads for the predictor.
        options: the task-specific keyword options given to ``Taskflow(...)``.

    A task whose options can turn its model off declares that option as ``TaskSpec.model_switch``; the runtime then
    passes ``bundle=None`` (and results name no model).
    """

    def __init__(self, spec: TaskSpec, bundle: Bundle | None, device: Device, precision: str, batch_size: int,
                 num_threads: int, options: dict[str, Any]) -> None:
        self.spec = spec
        self.bundle = bundle
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.options = options

    def load(self) -> None:
        """Set up predictors and tables. Default: nothing. Raise a ``SectorflowError`` for a bad bundle/option."""

    def model_identity(self) -> dict[str, str | None] | None:
        """After :meth:`load`: the model that produces the results, when it is not the bundle's manifest ``name`` and
        ``version`` (a bundle holding several models, of which the options pick some), as ``{"model_name",
        "model_version", "bundle_sha256"}`` for the results' ``meta`` and the audit trail; ``None`` (the default):
        the bundle's own."""
        return None

    def predictor_pool(self) -> PredictorPool:
        """A thread-safe predictor pool for this pipeline's bundle and device.

        A ``paddle-inference`` bundle gets a :class:`PredictorPool`; an ``onnx`` bundle (``sectorflow models
        quantize`` or ``export``) an ONNX Runtime pool with the same ``run``, ``input_names`` and ``output_names``.
        At ``precision="int8"`` on CPU, an fp32 ``paddle-inference`` bundle (one a plugin built from its own format)
        gets the ONNX Runtime pool of its INT8 bundle from the store (:mod:`sectorflow.models.int8_store`), or an
        ``UnsupportedPrecisionError`` giving the ``sectorflow models quantize`` command that builds it.
        """
        assert self.bundle is not None, "predictor_pool() needs a model bundle"
        if self.bundle.format == "onnx" or (
                self.precision == "int8" and self.device.kind == "cpu" and self.bundle.format == "paddle-inference"
                and self.bundle.manifest.get("precision", "fp32") != "int8"):
            from .models.int8_store import find_int8_bundle
            from .onnx_runtime import OnnxSessionPool

            bundle = self.bundle
            if bundle.format != "onnx":  # a paddle-inference bundle the plugin built itself: its INT8 ONNX twin
                found = find_int8_bundle(self.spec.name, bundle.path, default_bundle=self.spec.default_bundle)
                bundle = load_bundle(found, expected_task=self.spec.name)
            return OnnxSessionPool.for_bundle(bundle, self.device, self.precision,  # type: ignore[return-value]
                                              self.num_threads)
        return PredictorPool(make_predictor_config(self.bundle, self.device, self.precision, self.num_threads))

    def preprocess(self, items: Sequence[In]) -> list[Any]:
        """Features for each item (same length and order). Default: the items themselves."""
        return list(items)

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        """Run the model on one batch (``len(batch) <= batch_size``); one raw output per feature."""
        raise NotImplementedError

    def batch_key(self, feature: Any) -> Any:
        """Sort key of one feature for cutting a call into forward batches, or ``None`` (the default) to keep arrival
        order. A text model returns its length (tokens or characters), so each batch holds texts of similar length and
        pads less; a call of 512 banking77 messages at batch 32 padded 2.3x more token positions in arrival order.
        Outputs keep the input order either way. Stateful pipelines (whose forward passes depend on order) must keep
        the default."""
        return None

    def postprocess(self, items: Sequence[In], raw: Sequence[Any]) -> list[Out]:
        """Turn raw outputs into output-model instances (same length and order as ``items``)."""
        raise NotImplementedError

    def spawn(self) -> Pipeline[In, Out]:
        """A new, loaded pipeline of the same task and settings with EMPTY state: the pipeline of another tenant of a
        stateful task (``Taskflow`` calls it on a tenant's first call, and on :meth:`~sectorflow.Taskflow.reload`
        for every tenant holding state, before :meth:`adopt_state`).

        It may run while calls run on this pipeline, in other threads: read only this pipeline's settings (model,
        predictor pool, rule tables, options), never its state. Default: a new instance with the same constructor
        arguments, then :meth:`load` (safe, but it loads the model and reads the option files again); a task whose
        load is costly overrides it to share what does not change (a predictor pool is thread-safe) and make only
        new state. Raise a ``SectorflowError`` when a pipeline cannot be made (the call or reload then fails).
        """
        other = type(self)(self.spec, self.bundle, self.device, self.precision, self.batch_size, self.num_threads,
                           dict(self.options))
        other.load()
        return other

    def reset_state(self) -> None:
        """Forget state kept across calls (stateful tasks such as a transaction window). Default: nothing."""

    def state_dict(self) -> dict[str, Any]:
        """The state kept across calls, exactly, as JSON values: ``str``, ``int``, ``float`` (finite; JSON's repr
        round-trips it), ``bool``, ``None``, lists and dicts with ``str`` keys (no pickle: a state file is a user
        file). It carries a format version and the task / bundle identity, so that :meth:`load_state_dict` can
        refuse a state it cannot continue. A stateless task (``spec.stateful`` false) returns ``{}``.

        Raises:
            ConfigError: a stateful task whose pipeline does not implement it (its state cannot be saved: keep the
                process running, or feed the history again).
        """
        if not self.spec.stateful:
            return {}
        raise ConfigError(f"Task {self.spec.name!r} keeps state across calls but its pipeline "
                          f"({type(self).__name__}) does not implement state_dict(): its state cannot be saved or "
                          "restored (no --state, no state store).")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the state kept across calls by ``state`` (from :meth:`state_dict` of a pipeline of the same task
        and options), so that the next call's results equal those of the pipeline that wrote it. Default: accept
        ``{}`` for a stateless task.

        Raises:
            ConfigError: a state this pipeline cannot continue (another format version, task, window length or
                model features) or, as :meth:`state_dict`, a stateful pipeline that does not implement it.
        """
        if not self.spec.stateful and not state:
            return
        raise ConfigError(f"Task {self.spec.name!r}'s pipeline ({type(self).__name__}) does not implement "
                          "load_state_dict(): its state cannot be restored.")

    def item_keys(self, items: Sequence[In], ids_by_row: bool = False) -> list[str] | None:
        """One key per validated item that identifies it across inputs, or ``None`` (items not identified): a
        ``sectorflow run --state`` remembers the keys of the items it fed, and does not run again an item of a later
        input whose key is already in the state (a file fed twice under another name, or overlapping the last
        one). ``ids_by_row``: the items come from a format whose ids are row numbers
        (:attr:`~sectorflow.InputFormat.ids_by_row`), so an id does not identify an item across files. Default: the
        values of the task's :attr:`~sectorflow.TaskSpec.id_fields` (aml: the transaction id; the AML pipeline
        keys row-numbered ids by content); ``None`` without them, or with ``ids_by_row``."""
        fields = self.spec.id_fields
        if not fields or ids_by_row:
            return None
        return ["\x1f".join(str(getattr(item, name)) for name in fields) for item in items]

    def refusals(self, items: Sequence[In]) -> list[dict[str, Any]]:
        """The validated items a call with ``items`` would refuse before changing any state, as the entries of such a
        refusal's ``details["items"]``: ``{"item": index in items, "field", "reason"}`` (aml: a transaction in a
        currency with no FX rate). Reads configuration only, never state. ``sectorflow run --on-error reject`` calls it
        on the rows that do not run once the input is rejected, so that its error lists them with the other bad
        rows. Default: none."""
        return []

    def journal_rows(self, items: Sequence[In]) -> list[Any]:
        """The validated input items of one call as JSON values, for a state store's journal
        (:mod:`sectorflow.state_store`). Default: ``model_dump(mode="json")`` of each item; a task with a cheaper exact
        encoding overrides this and :meth:`journal_items`."""
        return [item.model_dump(mode="json") for item in items]

    def journal_items(self, rows: list[Any]) -> list[In]:
        """The input items of :meth:`journal_rows`' values, for replay. Default: validated against the input model.

        Raises:
            ConfigError: a row that no longer validates (a damaged journal, or an input model that changed).
        """
        from pydantic import ValidationError

        try:
            return [self.spec.input_model.model_validate(row) for row in rows]  # type: ignore[misc]
        except ValidationError as exc:
            raise ConfigError(f"A journalled {self.spec.name} item no longer validates ({exc.error_count()} "
                              "error(s)): the journal is damaged or the input model changed; reset the state.") from exc

    def adopt_state(self, previous: Pipeline) -> None:
        """Take over the state of the pipeline this one replaces (``Taskflow.reload`` of a stateful task).

        Called on the new, loaded pipeline with the old one, while no call runs, just before the swap; afterwards
        the old pipeline is dropped. A model swap should not forget the history its task keeps (an AML window of 30
        days). Default: nothing, so the new pipeline starts empty. Raise a ``SectorflowError`` when the state cannot
        be carried over (e.g. another window length): the reload then fails and the old pipeline keeps serving.
        """
