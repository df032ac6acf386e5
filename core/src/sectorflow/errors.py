"""The one exception hierarchy of sectorflow.

Every error that a user can cause or fix is a :class:`SectorflowError`. Each subclass says what is wrong and
what to do about it, so that the CLI can print it and the server can map it to a 4xx status
(:attr:`SectorflowError.http_status`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class SectorflowError(Exception):
    """Base class of every error sectorflow raises on purpose.

    Attributes:
        http_status: the HTTP status a server answers with for this error (always 4xx for user errors).
        details: machine-readable detail (JSON-serialisable), e.g. the failing rows of an input file.
    """

    http_status: int = 400

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class UnknownTaskError(SectorflowError, KeyError):
    """A task name that no installed plugin registers. Lists the known tasks and the closest match."""

    http_status = 404

    def __init__(self, name: str, known: Sequence[str], closest: str | None = None) -> None:
        hint = f" Did you mean {closest!r}?" if closest else ""
        listing = ", ".join(sorted(known)) or "(none: install a plugin, e.g. `pip install plugins/aml`)"
        super().__init__(f"Unknown task {name!r}.{hint} Known tasks: {listing}.",
                         details={"task": name, "known": sorted(known), "closest": closest})
        self.name = name
        self.known = sorted(known)
        self.closest = closest

    def __str__(self) -> str:  # KeyError would otherwise print the repr
        return self.message


class PluginConflictError(SectorflowError):
    """Two plugins register the same task name or alias."""

    http_status = 409


class PluginError(SectorflowError):
    """A plugin failed to load or registered something malformed."""

    http_status = 500


class InvalidInputError(SectorflowError, ValueError):
    """An input that does not match the task's input model.

    ``details`` is a list of ``{"row": int | None, "field": str, "reason": str}`` entries; ``row`` is the
    1-based row number in the input file or list.
    """

    http_status = 422


class DeviceUnavailableError(SectorflowError):
    """An explicitly requested device (``gpu:0``, ``npu``, ...) is not present, or its name is malformed."""

    http_status = 400


class UnsupportedPrecisionError(SectorflowError):
    """A precision the task's model or the chosen device cannot run. Never silently replaced by another."""

    http_status = 400


class BundleError(SectorflowError):
    """A model bundle that cannot be read: missing folder, missing or malformed manifest."""

    http_status = 400


class BundleIntegrityError(BundleError):
    """A bundle file whose SHA-256 differs from its manifest (or that is missing). Names the file."""


class UnsafePickleError(BundleError):
    """A pickle (``.pdparams``) that asks for anything but arrays, dicts, lists and scalars."""


class ConfigError(SectorflowError):
    """A bad option or configuration value (unknown option, out-of-range batch size, ...)."""


class QuantizationError(SectorflowError):
    """A quantized model that cannot be built or is refused: it loses more accuracy than the allowed margin, the
    task gives no validation data, or the bundle's format cannot be quantized. ``details`` holds the figures."""

    http_status = 422


class ExportMismatchError(SectorflowError):
    """An exported model whose outputs differ from the Paddle predictor's by more than the stated tolerance.
    ``details`` holds the largest absolute difference, the tolerance and the output it was seen on."""

    http_status = 422


__all__ = [
    "SectorflowError",
    "UnknownTaskError",
    "PluginConflictError",
    "PluginError",
    "InvalidInputError",
    "DeviceUnavailableError",
    "UnsupportedPrecisionError",
    "BundleError",
    "BundleIntegrityError",
    "UnsafePickleError",
    "ConfigError",
    "QuantizationError",
    "ExportMismatchError",
]


class PathNotWritableError(ConfigError):
    """A file sectorflow must write (audit store, key file, PNG, report, weights) cannot be written there: a parent
    is a file, the folder is read-only or not ours, or the path is a folder. The message names the path, the cause
    and the fix; ``details`` holds ``{"path", "reason"}``."""
