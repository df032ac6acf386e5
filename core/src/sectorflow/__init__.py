"""sectorflow: one-line, offline, auditable ML pipelines on PaddlePaddle.

Public API (plugins import only these names)::

    from sectorflow import Taskflow, TaskSpec, TaskResult, Pipeline, hookimpl
"""

from __future__ import annotations

from pkgutil import extend_path

# `sectorflow.compliance` and `sectorflow.federated` are distributions of their own (compliance/, federated/) whose
# packages are portions of this one: installed from wheels they sit in this folder, installed editable in
# <folder>/src/sectorflow/ on sys.path, which this adds to the package's search path.
__path__ = extend_path(__path__, __name__)

from ._paddle import import_paddle, paddle_notes_filtered
from .collector import declare_gc_frozen, gc_frozen, gc_frozen_by_host, withdraw_gc_frozen
from .bundle import Bundle, PredictorPool, load_bundle, load_pdparams, sha256_file, write_manifest
from .device import Device, DeviceProbe, resolve_device, set_default_probe
from .env import Settings, home, settings
from .errors import (
    BundleError,
    BundleIntegrityError,
    ConfigError,
    DeviceUnavailableError,
    ExportMismatchError,
    InvalidInputError,
    PathNotWritableError,
    PluginConflictError,
    PluginError,
    QuantizationError,
    SectorflowError,
    UnknownTaskError,
    UnsafePickleError,
    UnsupportedPrecisionError,
)
from .hookspecs import hookimpl, may_block
from .cli_args import field_pairs, option_values
from .input_files import check_columns_and_defaults, csv_file_records, csv_records, open_text, parse_json_line, read_text, whole_file_reader
from .items import TextItem
from .paths import writable_file
from .pipeline import Pipeline
from .spec import (AccessDecision, CallContext, InputFormat, Int8Spec, ResultMeta, TaskEvent, TaskResult, TaskSpec,
                   ValidationSet, input_formats)
from .taskflow import Taskflow
from .state_admin import export_state, reset_stored_state, state_summary
from .state_keeper import StateKeeper
from .state_lock import state_lock, state_lock_holder
from .state_store import StateStore, default_state_path, open_state_store, shown_store
from .trainable import Trainable, TrainableSpec

__version__ = "0.1.0"

__all__ = [
    "Taskflow", "TaskSpec", "TaskResult", "ResultMeta", "TaskEvent", "CallContext", "Pipeline", "hookimpl",
    "AccessDecision", "may_block", "Settings", "settings", "home", "InputFormat", "input_formats", "Int8Spec",
    "Bundle", "PredictorPool", "load_bundle", "load_pdparams", "sha256_file", "write_manifest",
    "Device", "DeviceProbe", "resolve_device", "set_default_probe", "Trainable", "TrainableSpec",
    "SectorflowError", "UnknownTaskError", "PluginConflictError", "PluginError", "InvalidInputError",
    "DeviceUnavailableError", "UnsupportedPrecisionError", "BundleError", "BundleIntegrityError", "UnsafePickleError",
    "ConfigError", "PathNotWritableError", "writable_file", "import_paddle", "paddle_notes_filtered", "open_text", "csv_records", "csv_file_records", "parse_json_line", "__version__",
    "ValidationSet", "QuantizationError", "ExportMismatchError", "TextItem", "whole_file_reader", "field_pairs",
    "option_values", "read_text", "check_columns_and_defaults",
    "StateStore", "StateKeeper", "open_state_store", "shown_store", "default_state_path", "state_summary", "export_state",
    "reset_stored_state", "state_lock", "state_lock_holder", "gc_frozen", "gc_frozen_by_host", "declare_gc_frozen", "withdraw_gc_frozen",
]
