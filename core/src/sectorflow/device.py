"""Device choice: ``cpu``, ``gpu[:N]``, ``npu[:N]``, ``mlu[:N]`` (any Paddle custom device), ``xpu[:N]`` or ``auto``.

The choice never calls ``paddle.set_device``: each predictor is configured for its own device, so one Taskflow's
device does not leak into another's. What hardware exists is asked of a :class:`DeviceProbe`; tests inject a fake
one (there is no GPU or NPU on the CI machine).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from ._paddle import import_paddle
from .errors import DeviceUnavailableError

log = logging.getLogger("sectorflow.device")
_DEVICE_RE = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<index>\d+))?$")


class DeviceProbe(Protocol):
    """What hardware this process can use."""

    def gpu_count(self) -> int:
        """Number of CUDA/ROCm GPUs Paddle can use (0 when Paddle is a CPU build)."""

    def custom_devices(self) -> dict[str, int]:
        """Paddle custom devices (``{"npu": 8, "mlu": 0}``): type -> count."""

    def xpu_count(self) -> int:
        """Number of Kunlun XPUs."""


class PaddleDeviceProbe:
    """The real probe: asks the installed Paddle build."""

    def gpu_count(self) -> int:
        paddle = import_paddle()

        if not paddle.is_compiled_with_cuda() and not paddle.is_compiled_with_rocm():
            return 0
        return int(paddle.device.cuda.device_count())

    def custom_devices(self) -> dict[str, int]:
        paddle = import_paddle()

        found: dict[str, int] = {}
        for kind in paddle.device.get_all_custom_device_type() or []:
            found[kind] = len([d for d in paddle.device.get_available_custom_device() if d.startswith(kind)])
        return found

    def xpu_count(self) -> int:
        paddle = import_paddle()

        if not paddle.is_compiled_with_xpu():
            return 0
        return int(paddle.device.xpu.device_count())


_default_probe: DeviceProbe = PaddleDeviceProbe()


def set_default_probe(probe: DeviceProbe) -> DeviceProbe:
    """Replace the process-wide probe (tests); returns the previous one."""
    global _default_probe
    previous, _default_probe = _default_probe, probe
    return previous


@dataclass(frozen=True)
class Device:
    """A resolved device: ``kind`` is ``cpu``, ``gpu``, ``xpu`` or a custom device type; ``index`` its ordinal."""

    kind: str
    index: int = 0

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    @property
    def family(self) -> str:
        """The task-level device kind: ``cpu``, ``gpu``, ``xpu`` or the custom type (``npu``, ``mlu``, ...)."""
        return self.kind


CUSTOM_DEVICE_PREFERENCE = ("npu", "mlu")
"""The order ``auto`` tries custom devices in; other custom types follow alphabetically."""


def _custom_rank(kind: str) -> tuple[int, str]:
    order = CUSTOM_DEVICE_PREFERENCE
    return (order.index(kind) if kind in order else len(order), kind)


_SYNONYMS = {"cuda": "gpu", "rocm": "gpu", "hip": "gpu", "ascend": "npu", "cambricon": "mlu", "kunlun": "xpu",
             "kunlunxin": "xpu"}
"""Names users type for a device kind (PyTorch's ``cuda``, vendor names): only used to word the error."""


def _device_hint(text: str, supported: tuple[str, ...]) -> str:
    """`` Did you mean 'gpu:0'?`` for ``cuda:0``, ``GPU0`` or ``gpu 0`` when the task runs on that kind; else empty."""
    found = re.fullmatch(r"([a-z]+)\s*[:\-_ ]?\s*(\d*)", text)
    if not found:
        return ""
    kind = _SYNONYMS.get(found[1], found[1])
    if kind not in supported:
        return ""
    guess = f"{kind}:{int(found[2])}" if found[2] and kind != "cpu" else kind
    return f" Did you mean {guess!r}?" if guess != text else ""


VALID_DEVICES = "cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto"
"""The device strings :func:`resolve_device` reads, as its error messages list them."""


def resolve_device(requested: str | None = "auto", supported: tuple[str, ...] = ("cpu",),
                   probe: DeviceProbe | None = None) -> Device:
    """Turn a user's device string into a :class:`Device`.

    ``auto`` tries GPU, then custom devices (npu, then mlu, then any other type alphabetically), then xpu, then CPU,
    keeping only kinds in ``supported``, and logs a warning when it falls back to CPU; ``None`` is ``auto``.
    An explicit device is honoured exactly (case and surrounding spaces aside).

    Raises:
        DeviceUnavailableError: not a string, an empty or blank string (almost always an unset environment variable
            in the caller's configuration, so it is not taken as ``auto``), a malformed string, a kind the task does
            not support, or a device that is not present (e.g. ``gpu:1`` with one GPU). A name close to a supported
            one (``cuda:0``, ``GPU0``) gets "Did you mean 'gpu:0'?".
    """
    probe = probe or _default_probe
    if requested is not None and not isinstance(requested, str):
        raise DeviceUnavailableError(f"device={requested!r} ({type(requested).__name__}) is not a string: give "
                                     f"one of {VALID_DEVICES} (e.g. device='gpu:0').")
    text = "auto" if requested is None else requested.strip().lower()
    if not text:
        raise DeviceUnavailableError(
            f"device={requested!r} is {'blank' if requested else 'empty'}: give one of {VALID_DEVICES} (this task "
            f"runs on {', '.join(supported)}). "
            "An empty device is usually an unset environment variable in the configuration; leave the option out "
            "for its default.")
    if text == "auto":
        if "gpu" in supported and probe.gpu_count() > 0:
            return Device("gpu", 0)
        custom = probe.custom_devices()
        for kind in sorted(custom, key=_custom_rank):
            if kind in supported and custom[kind] > 0:
                return Device(kind, 0)
        if "xpu" in supported and probe.xpu_count() > 0:
            return Device("xpu", 0)
        log.warning("device='auto': no accelerator usable by this task was found (task supports %s); using CPU",
                    ", ".join(supported))
        return Device("cpu", 0)
    match = _DEVICE_RE.match(text)
    if not match:
        raise DeviceUnavailableError(
            f"Device {requested!r} is not of the form {VALID_DEVICES}."
            f"{_device_hint(text, supported)}")
    kind, index = match["kind"], int(match["index"] or 0)
    if kind not in supported:
        raise DeviceUnavailableError(
            f"This task runs on {', '.join(supported)}; device {requested!r} is not supported by it."
            f"{_device_hint(text, supported)}")
    if kind == "cpu":
        if index != 0:
            raise DeviceUnavailableError(f"Device {requested!r}: use plain 'cpu' (CPU threads are set by num_threads).")
        return Device("cpu", 0)
    if kind == "gpu":
        count = probe.gpu_count()
    elif kind == "xpu":
        count = probe.xpu_count()
    else:
        count = probe.custom_devices().get(kind, 0)
    if index >= count:
        raise DeviceUnavailableError(
            f"Device {requested!r} is not available: this machine has {count} {kind} device(s). "
            f"Use device='cpu' or device='auto'.")
    return Device(kind, index)
