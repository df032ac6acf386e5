"""Task specifications, result metadata, task events and access decisions: the data that flows through the hooks."""

from __future__ import annotations

import importlib

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .bundle import Bundle
    from .pipeline import Pipeline

DEVICE_KINDS = ("cpu", "gpu", "npu", "mlu", "xpu")
"""Device kinds a task may declare. ``npu``/``mlu`` and other custom devices run through Paddle's custom-device
plugins; ``gpu`` is CUDA/ROCm; ``xpu`` is Kunlun."""

PRECISIONS = ("fp32", "fp16", "bf16", "int8")
"""Precisions a task may declare. What a task does not declare is refused with
:class:`~sectorflow.errors.UnsupportedPrecisionError`, never replaced."""


class ResultMeta(BaseModel):
    """Provenance carried by every result, so a user can prove which model answered.

    ``bundle_sha256`` is the SHA-256 of the bundle's ``manifest.json``, which itself lists the SHA-256 of every
    weight file; ``None`` for tasks without a model bundle (pure rule engines).
    """

    model_config = ConfigDict(frozen=True)

    task: str
    plugin: str
    model_name: str | None = None
    model_version: str | None = None
    bundle_sha256: str | None = None
    device: str = "cpu"
    precision: str = "fp32"


class FieldAccess:
    """Read-only mapping access to a pydantic model's fields, as PaddleNLP and Hugging Face pipeline users type it:
    ``r["intent"]`` is ``r.intent``; ``"intent" in r``, ``r.get("intent", default)`` and ``r.keys()`` (the field
    names, then any extra keys). Iteration stays pydantic's (``(name, value)`` pairs), and ``dict(r)`` is the same
    ``{name: value}`` either way.

    Raises:
        KeyError: ``r[name]`` for a name that is not a field; the message lists the fields.
        TypeError: ``r[name] = value`` or ``del r[name]``: results are read-only (``r.model_copy(update=...)`` makes
            a changed copy).
    """

    def keys(self) -> list[str]:
        fields = list(type(self).model_fields)  # type: ignore[attr-defined]
        return fields + [key for key in (getattr(self, "model_extra", None) or {}) if key not in fields]

    def __getitem__(self, name: str) -> Any:
        if isinstance(name, str) and name in self.keys():
            return getattr(self, name)
        raise KeyError(f"{name!r} is not a field of {type(self).__name__}; its fields: {', '.join(self.keys())}")

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.keys()

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __setitem__(self, name: str, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} results are read-only: r[{name!r}] cannot be assigned; make a changed "
                        f"copy with r.model_copy(update={{{name!r}: ...}}).")

    def __delitem__(self, name: str) -> None:
        raise TypeError(f"{type(self).__name__} results are read-only: r[{name!r}] cannot be deleted.")


class TaskResult(FieldAccess, BaseModel):
    """Base class of every task's output model. ``meta`` is filled in by the runtime. Fields read as attributes
    (``r.intent``) or, read-only, by name (``r["intent"]``: :class:`FieldAccess`)."""

    meta: ResultMeta | None = Field(default=None, description="Which task, plugin and model bundle answered.")


# A reader turns a file (path or open binary stream) into (row_number, raw_record) pairs; the runtime validates each
# raw record against the task's input model. Row numbers are the file's line numbers where it has lines (CSV: the line
# a row begins on, the header being line 1; JSON lines: the line), else 1-based positions (Parquet; AMLSim and AMLworld
# number rows after the header, and their ids are made from that number). A row that cannot even be parsed is yielded
# as (row_number, InvalidInputError) instead of raising, so that `sectorflow run --on-error skip` can report it and go
# on (see core/src/sectorflow/input_files.py).
Reader = Callable[[Any], Iterator[tuple[int, "dict[str, Any] | InvalidInputError"]]]

# A reader factory makes a reader that renames columns: ``factory(mapping=..., defaults=...) -> Reader``, with
# ``mapping`` ``{input_field: source_column}`` (or None) and ``defaults`` ``{input_field: value}`` (or None: values
# for fields the file lacks or leaves empty). `sectorflow run --column/--default` use it (core/src/sectorflow/input_files.py reader_for).
ReaderFactory = Callable[..., Reader]


@dataclass(frozen=True)
class ValidationSet:
    """Labelled model inputs on which ``sectorflow models quantize`` compares an INT8 model with its fp32 original.

    Built by a task's :attr:`Int8Spec.validation` from the plugin's validation split (never its test split: the
    margin check is a model-selection decision).

    Attributes:
        batches: model input batches, each ``{input name: array}`` with the batch on the first axis, named and typed
            as the bundle's predictor expects (what the pipeline's ``forward`` feeds ``PredictorPool.run``).
        labels: the reference answers, in the form ``metric`` reads (usually one label per row of all batches).
        metric: ``metric(outputs, labels) -> float`` in ``[0, 1]``, higher is better; ``outputs[b]`` is the list of
            model outputs (in output order) for ``batches[b]``. :meth:`argmax_accuracy` serves classifiers.
        metric_name: what ``metric`` measures (``"accuracy"``, ``"f1"``), recorded in the INT8 bundle's manifest.
        split: which data this is (dataset, split, seed), recorded in the manifest.
    """

    batches: Sequence[Mapping[str, np.ndarray]]
    labels: Any
    metric: Callable[[list[list[np.ndarray]], Any], float]
    metric_name: str = "accuracy"
    split: str = "validation"

    @staticmethod
    def argmax_accuracy(outputs: list[list[np.ndarray]], labels: Any) -> float:
        """Accuracy of ``argmax`` over the last axis of the first output, all batches concatenated, against
        integer ``labels`` (one per row)."""
        import numpy as np

        scores = np.concatenate([np.asarray(batch[0]) for batch in outputs], axis=0)
        predicted = scores.reshape(len(scores), -1).argmax(axis=-1)
        truth = np.asarray(labels).reshape(-1)
        if len(truth) != len(predicted):
            raise ValueError(f"argmax_accuracy: {len(predicted)} predictions but {len(truth)} labels")
        return float((predicted == truth).mean()) if len(truth) else 0.0


@dataclass(frozen=True)
class InputFormat:
    """One input format of ``sectorflow run --format NAME`` (:attr:`TaskSpec.formats`).

    Attributes:
        read: the reader, ``read(source) -> (row, record) pairs``, used when no ``--column``/``--default`` is given
            (and the factory does not take the context); ``None``: ``factory()`` reads the format then.
        factory: ``factory(mapping=None, defaults=None) -> Reader``: a reader that renames columns, ``mapping``
            ``{input_field: source_column}`` and ``defaults`` ``{input_field: value}`` (text, for fields the file lacks
            or leaves empty); it raises :class:`~sectorflow.errors.ConfigError` for a mapping it cannot apply (its
            reader should raise it, while iterating, for a mapped column the file lacks). ``None``: the format has
            fixed columns, and ``--column``/``--default`` are refused for it.
        takes_context: whether ``factory`` is also handed the run's input context (:meth:`TaskSpec.input_context`,
            read-only, ``{}`` for a task without one) as ``context=``; it then reads the format on every run,
            options or not, so that the reader knows how its rows will be read (aml's ``input_timezone``). Default:
            whether ``factory`` declares a keyword parameter named ``context`` (``**kwargs`` does not count).
        ids_by_row: its readers make each item's id of its row number in the file (aml's ``amlsim``: ``amlsim-12``),
            so an id names another item in the next file: ``sectorflow run --state`` then asks
            :meth:`~sectorflow.Pipeline.item_keys` for keys that do not rest on the ids.

    Raises:
        ValueError: neither ``read`` nor ``factory``.
    """

    read: Reader | None = None
    factory: ReaderFactory | None = None
    takes_context: bool | None = None
    ids_by_row: bool = False

    def __post_init__(self) -> None:
        if self.read is None and self.factory is None:
            raise ValueError("InputFormat: give read, factory or both")
        if self.takes_context is None:
            object.__setattr__(self, "takes_context", self.factory is not None and takes_context(self.factory))


def takes_context(factory: Any) -> bool:
    """Whether reader factory ``factory`` takes the task's input context: it has a parameter named ``context`` that
    can be passed by keyword (``def make(mapping=None, defaults=None, *, context=None)``). A ``**kwargs`` catch-all
    does not count, so a factory written before the context existed is never handed an argument it does not expect;
    a callable whose signature cannot be read (some built-ins) does not take it either."""
    import inspect

    try:
        parameter = inspect.signature(factory).parameters.get("context")
    except (TypeError, ValueError):  # a callable whose signature cannot be read (some built-ins)
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


def input_formats(readers: Mapping[str, Reader] | None = None,
                  factories: Mapping[str, ReaderFactory] | None = None) -> dict[str, InputFormat]:
    """``{name: InputFormat}`` of a dict of plain readers and one of reader factories (a name in either or both),
    for :attr:`TaskSpec.formats`: ``formats=input_formats(READERS, READER_FACTORIES)``."""
    readers, factories = dict(readers or {}), dict(factories or {})
    return {name: InputFormat(readers.get(name), factories.get(name)) for name in {**readers, **factories}}


@dataclass(frozen=True)
class Int8Spec:
    """What ``sectorflow models quantize|export`` need of a task (:attr:`TaskSpec.int8`).

    Attributes:
        validation: ``validation(bundle) -> ValidationSet``: labelled model inputs from the plugin's validation split
            for the given (fp32) bundle, or ``None``. ``sectorflow models quantize`` needs it to measure the INT8
            model against fp32 (docs/performance.md); called only there, so it may read data files lazily.
        inference_bundle: ``inference_bundle(bundle) -> Bundle`` for a task whose shipped bundle is not itself a
            ``paddle-inference`` bundle (e.g. compact int8 weights rebuilt into one at first load): returns the fp32
            ``paddle-inference`` bundle the pipeline serves, so ``sectorflow models quantize|export TASK`` start from
            it without ``--task-path``.
        quantize_ops: the operators ``sectorflow models quantize`` quantizes when ``--ops`` is not given
            (``MatMul``; ``("MatMul", "Gather")`` also stores embedding tables int8, for a model whose MatMul-only INT8
            loses more than the margin; ``("MatMulWeightOnly",)`` keeps activations float32, for a small model
            whose dynamically quantized activations lose more than the margin).
    """

    validation: Callable[[Bundle], ValidationSet] | None = None
    inference_bundle: Callable[[Bundle], Bundle] | None = None
    quantize_ops: tuple[str, ...] = ("MatMul",)


@dataclass
class TaskSpec:
    """What a plugin registers for one task.

    Attributes:
        name: the task name users type (``"aml"``); lower case, letters, digits and ``_``.
        input_model: pydantic model of one input item.
        output_model: pydantic model of one result; must subclass :class:`TaskResult`.
        pipeline: the :class:`~sectorflow.pipeline.Pipeline` subclass that runs the task, or its import path
            ``"package.module:ClassName"``, imported on first use (:meth:`pipeline_class`): a plugin whose pipeline
            imports a deep-learning runtime (Paddle: about 2 s) then costs nothing to commands and servers that do
            not run its task (``sectorflow run aml`` does not import the customer-service encoders).
        version: the task implementation's version (usually the plugin distribution's).
        description: one line for ``sectorflow tasks``.
        aliases: other names that resolve to this task.
        default_bundle: folder of the default model bundle (shipped inside the plugin package), or ``None`` when the
            task has no model.
        devices: device kinds the task can run on (subset of :data:`DEVICE_KINDS`).
        precisions: precisions the task can run at (subset of :data:`PRECISIONS`).
        languages: ISO 639-1 codes of the languages handled (``["zh", "en"]``).
        formats: the task's own input formats for ``sectorflow run --format NAME``: ``{name: InputFormat}`` (a
            plain reader, a reader factory for ``--column``/``--default``, and whether that factory takes the run's
            input context; see :class:`InputFormat`). ``jsonl`` and ``csv`` are built in (with factories); a
            format of that name here replaces the built-in one whole. :func:`input_formats` builds the mapping from
            a dict of readers and one of factories.
        options: names of the extra keyword options ``Taskflow(task, **options)`` accepts, with one-line help.
        examples: a few valid input items (dicts); used by docs, ``sectorflow schema``, the server's OpenAPI examples
            and the offline test that runs every registered task with sockets blocked.
        stateful: ``True`` when calls depend on earlier calls (e.g. a sliding transaction window); the runtime then
            serialises calls on one Taskflow instead of running them concurrently.
        int8: what ``sectorflow models quantize|export`` need of the task (:class:`Int8Spec`: validation data,
            the fp32 bundle to start from, the operators to quantize).
        context_from_options: ``context_from_options(options) -> dict``: the pydantic validation context for raw
            input items (dicts, file rows), built once from the ``Taskflow`` options (:meth:`input_context`), e.g.
            ``{"input_timezone": ZoneInfo(...)}`` for a task whose option says how to read timestamps without a UTC
            offset; the input model's validators read it as ``info.context``. Raises
            :class:`~sectorflow.errors.ConfigError` for a bad option. Items passed as input-model instances are
            already validated and are taken as they are. ``None``: no context.
        model_switch: the name of the boolean option that turns the task's model off (``"model"`` for aml,
            ``Taskflow("aml", model=False)``), or ``None``. With that option ``False`` the runtime loads no bundle at
            all: the pipeline gets ``bundle=None``, results name no model, and ``precision="int8"`` needs no INT8
            bundle (no model runs).
        id_fields: the input fields that identify an item (aml: ``("transaction_id",)``): each item has its own
            value, so ``sectorflow run --default FIELD=VALUE`` refuses them (one value for every row made each row
            after the first a repeat of the first); the missing-column message asks for ``--column`` instead.
        state_reset: the command that forgets one tenant's stored state (aml: ``"sectorflow aml state reset"``), or
            ``None``; a ``sectorflow run --state`` message that suggests it prints it as it must be typed, with
            ``--state STATE --tenant TENANT --yes`` (:func:`sectorflow.cli_state.reset_hint`).
        plugin: filled in by the registry: the name of the plugin that registered the spec.
    """

    name: str
    input_model: type[BaseModel]
    output_model: type[TaskResult]
    pipeline: type[Pipeline] | str
    version: str = "0.0.0"
    description: str = ""
    aliases: tuple[str, ...] = ()
    default_bundle: Path | None = None
    devices: tuple[str, ...] = ("cpu",)
    precisions: tuple[str, ...] = ("fp32",)
    languages: tuple[str, ...] = ("en",)
    formats: dict[str, InputFormat] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    examples: tuple[dict[str, Any], ...] = ()
    stateful: bool = False
    int8: Int8Spec = field(default_factory=Int8Spec)
    context_from_options: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    model_switch: str | None = None
    id_fields: tuple[str, ...] = ()
    state_reset: str | None = None
    plugin: str = ""

    def pipeline_class(self) -> type[Pipeline]:
        """The pipeline class: :attr:`pipeline` itself, or the class its import path names, imported now (once per
        process; Python caches the module).

        Raises:
            PluginError: the path is not ``"module:ClassName"``, the module cannot be imported, it has no such name,
                or the name is not a :class:`~sectorflow.pipeline.Pipeline` subclass; the message names the task,
                its plugin and the path.
        """
        from .errors import PluginError
        from .pipeline import Pipeline

        if not isinstance(self.pipeline, str):
            return self.pipeline
        where = f"task {self.name!r} of plugin {self.plugin!r}: pipeline {self.pipeline!r}"
        module_name, _, attr = self.pipeline.partition(":")
        if not module_name or not attr:
            raise PluginError(f"{where} must be a Pipeline subclass or its import path 'package.module:ClassName'.")
        try:
            found = getattr(importlib.import_module(module_name), attr)
        except ImportError as exc:
            raise PluginError(f"{where} cannot be imported: {type(exc).__name__}: {exc}") from exc
        except AttributeError as exc:
            raise PluginError(f"{where}: module {module_name!r} has no {attr!r}.") from exc
        if not (isinstance(found, type) and issubclass(found, Pipeline)):
            raise PluginError(f"{where} names {found!r}, not a sectorflow.Pipeline subclass.")
        return found

    @property
    def readers(self) -> dict[str, Reader]:
        """The plain readers of the task's own formats (``{name: reader}``, formats without one left out)."""
        return {name: fmt.read for name, fmt in self.formats.items() if fmt.read is not None}

    def input_context(self, options: Mapping[str, Any]) -> dict[str, Any] | None:
        """The validation context of raw input items under ``options`` (the ``Taskflow`` keyword options, or
        ``sectorflow run -O``): :attr:`context_from_options` of the options the task declares (an undeclared one is
        left to ``Taskflow``, which names it), as a new dict; ``None`` for a task without one. ``Taskflow`` builds it
        once per instance (:attr:`Taskflow.input_context`), and ``sectorflow run`` and the server use that one.

        Raises:
            ConfigError: from :attr:`context_from_options` for a bad option value (aml: an unknown ``input_timezone``).
        """
        if self.context_from_options is None:
            return None
        return dict(self.context_from_options({key: value for key, value in options.items() if key in self.options}))

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the task's input item and output item: ``{"task": name, "input": {...}, "output":
        {...}}`` (``sectorflow schema TASK``, :meth:`Taskflow.schema`)."""
        return {"task": self.name, "input": self.input_model.model_json_schema(),
                "output": self.output_model.model_json_schema()}

    def summary(self) -> dict[str, Any]:
        """JSON-ready row for ``Taskflow.tasks()`` and ``sectorflow tasks``."""
        return {
            "task": self.name,
            "aliases": list(self.aliases),
            "plugin": self.plugin,
            "version": self.version,
            "languages": list(self.languages),
            "devices": list(self.devices),
            "precisions": list(self.precisions),
            "description": self.description,
            "default_bundle": str(self.default_bundle) if self.default_bundle else None,
        }


@dataclass(frozen=True)
class CallContext:
    """Who asked, from where: attached to every task event so that audit records can name the actor.

    ``actor`` is a user or service id (an API key id over HTTP), ``tenant`` the organisation, ``source`` an IP
    address, host or federated node id, ``request_id`` a unique id per call (generated when not given).
    """

    actor: str = "local"
    tenant: str | None = None
    source: str = "local"
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    channel: Literal["python", "cli", "http", "grpc", "federated"] = "python"


EventKind = Literal[
    "call_started",
    "call_finished",
    "call_failed",
    "model_loaded",
    "model_unloaded",
    "model_load_failed",
    "state_reset",
    "training_run_started",
    "training_round",
    "training_run_finished",
    "training_run_failed",
    "state_shown",
    "state_exported",
]


@dataclass
class TaskEvent:
    """One thing that happened to a task, passed to the ``sectorflow_task_event`` hook.

    Attributes:
        kind: what happened (see :data:`EventKind`).
        task: the task name.
        call_id: on call events, the same id for a call's ``call_started`` and its ``call_finished`` or
            ``call_failed`` (unique in the process), so that observers pair them (the audit log digests a call's
            inputs once); ``None`` on other events.
        context: who asked and from where.
        meta: the model bundle involved, if any.
        time: UTC time of the event.
        n_items: number of input items in the call (0 for model events).
        duration_ms: wall time of the call or load, for ``*_finished``/``*_loaded`` events.
        inputs: the validated input items (only on call events). Observers must not keep them in clear: the audit
            log stores keyed digests.
        outputs: the result items (only on ``call_finished``).
        error: ``"ErrorClass: message"`` for failures.
        details: free-form JSON-ready extra data (e.g. the changed configuration keys).
    """

    kind: EventKind
    task: str
    context: CallContext
    meta: ResultMeta | None = None
    time: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    n_items: int = 0
    duration_ms: float | None = None
    inputs: list[Any] | None = None
    outputs: list[Any] | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    call_id: int | None = None


@dataclass(frozen=True)
class AccessDecision:
    """One access-control decision (authentication or authorisation, allowed or denied), passed to the
    ``sectorflow_access_decision`` hook.

    Attributes:
        actor: the API key id, ``"anonymous"`` when no key was presented (or an unknown one).
        tenant: the key's tenant, ``None`` for a key without one (or no key).
        resource: the task name (``task:NAME`` scopes) or the admin resource asked for (``admin``,
            ``authenticated`` for a route that only needs a key).
        action: the route, ``"POST /v1/tasks/{name}"``, ``"grpc ModelInfer"``.
        allowed: the outcome.
        reason: why (``"ok"``, ``"no API key"``, ``"key lacks scope 'task:aml'"``, ...).
        source: the client address.
        request_id: the request's id.
        roles: the key's scopes.
        channel: ``"http"`` or ``"grpc"``.
    """

    actor: str
    tenant: str | None
    resource: str
    action: str
    allowed: bool
    reason: str | None
    source: str | None
    request_id: str | None
    roles: tuple[str, ...] = ()
    channel: str = "http"
