"""Task specifications, result metadata and task events: the data that flows through the hooks."""

from __future__ import annotations

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
# on (see core/io.py).
Reader = Callable[[Any], Iterator[tuple[int, "dict[str, Any] | InvalidInputError"]]]

# A reader factory makes a reader that renames columns: ``factory(mapping=..., defaults=...) -> Reader``, with
# ``mapping`` ``{input_field: source_column}`` (or None) and ``defaults`` ``{input_field: value}`` (or None: values
# for fields the file lacks or leaves empty). `sectorflow run --column/--default` use it (core/io.py reader_for).
ReaderFactory = Callable[..., Reader]


@dataclass(frozen=True)
class ValidationSet:
    """Labelled model inputs on which ``sectorflow models quantize`` compares an INT8 model with its fp32 original.

    Built by a task's :attr:`TaskSpec.validation` from the plugin's validation split (never its test split: the
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


@dataclass
class TaskSpec:
    """What a plugin registers for one task.

    Attributes:
        name: the task name users type (``"aml"``); lower case, letters, digits and ``_``.
        input_model: pydantic model of one input item.
        output_model: pydantic model of one result; must subclass :class:`TaskResult`.
        pipeline: the :class:`~sectorflow.pipeline.Pipeline` subclass that runs the task.
        version: the task implementation's version (usually the plugin distribution's).
        description: one line for ``sectorflow tasks``.
        aliases: other names that resolve to this task.
        default_bundle: folder of the default model bundle (shipped inside the plugin package), or ``None`` when the
            task has no model.
        devices: device kinds the task can run on (subset of :data:`DEVICE_KINDS`).
        precisions: precisions the task can run at (subset of :data:`PRECISIONS`).
        languages: ISO 639-1 codes of the languages handled (``["zh", "en"]``).
        readers: extra input formats for ``sectorflow run --format NAME`` (``jsonl`` and ``csv`` are built in).
        reader_factories: formats whose columns can be renamed: ``{format: factory}`` where
            ``factory(mapping=None, defaults=None) -> Reader`` takes ``mapping`` ``{input_field: source_column}`` and
            ``defaults`` ``{input_field: value}`` (text, for fields the file lacks or leaves empty) and raises
            :class:`~sectorflow.errors.ConfigError` for a mapping it cannot apply (its reader should raise it, while
            iterating, for a mapped column the file lacks). ``sectorflow run --column FIELD=COLUMN --default
            FIELD=VALUE`` use the factory of the chosen format; a format of the task without one refuses these
            options. A format here but not in ``readers`` is read by ``factory()`` when no option is given. The
            built-in ``csv`` and ``jsonl`` have factories unless ``readers`` replaces them. A factory that declares
            a keyword parameter ``context`` is also handed the run's :attr:`input_context` (read-only, ``{}`` when
            the task has none) and then reads its format on every run, options or not
            (:func:`sectorflow.io.reader_for`); factories without it are called as before.
        options: names of the extra keyword options ``Taskflow(task, **options)`` accepts, with one-line help.
        examples: a few valid input items (dicts); used by docs, ``sectorflow schema``, the server's OpenAPI examples
            and the offline test that runs every registered task with sockets blocked.
        stateful: ``True`` when calls depend on earlier calls (e.g. a sliding transaction window); the runtime then
            serialises calls on one Taskflow instead of running them concurrently.
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
        input_context: ``input_context(options) -> dict``: the pydantic validation context for raw input items
            (dicts, file rows), built once from the ``Taskflow`` options, e.g. ``{"input_timezone": ZoneInfo(...)}``
            for a task whose option says how to read timestamps without a UTC offset; the input model's validators
            read it as ``info.context``. Raises :class:`~sectorflow.errors.ConfigError` for a bad option. Items
            passed as input-model instances are already validated and are taken as they are. ``None``: no context.
        model_switch: the name of the boolean option that turns the task's model off (``"model"`` for aml,
            ``Taskflow("aml", model=False)``), or ``None``. With that option ``False`` the runtime loads no bundle at
            all: the pipeline gets ``bundle=None``, results name no model, and ``precision="int8"`` needs no INT8
            bundle (no model runs).
        plugin: filled in by the registry: the name of the plugin that registered the spec.
    """

    name: str
    input_model: type[BaseModel]
    output_model: type[TaskResult]
    pipeline: type[Pipeline]
    version: str = "0.0.0"
    description: str = ""
    aliases: tuple[str, ...] = ()
    default_bundle: Path | None = None
    devices: tuple[str, ...] = ("cpu",)
    precisions: tuple[str, ...] = ("fp32",)
    languages: tuple[str, ...] = ("en",)
    readers: dict[str, Reader] = field(default_factory=dict)
    reader_factories: dict[str, ReaderFactory] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    examples: tuple[dict[str, Any], ...] = ()
    stateful: bool = False
    validation: Callable[[Bundle], ValidationSet] | None = None
    inference_bundle: Callable[[Bundle], Bundle] | None = None
    quantize_ops: tuple[str, ...] = ("MatMul",)
    input_context: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    model_switch: str | None = None
    plugin: str = ""

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
    "config_changed",
    "plugin_loaded",
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
