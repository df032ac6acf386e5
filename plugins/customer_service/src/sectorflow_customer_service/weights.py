"""Compact weight storage and the rebuild of a Paddle Inference program from it.

Storage (``weights.safetensors``): every 2-D float matrix with at least 4096 entries is stored as int8 with one
fp32 scale per output channel (symmetric, ``w = q * scale``; Linear weights are ``[in, out]``, so the channel is
the last axis; embedding tables ``[vocab, hidden]`` take one scale per row), under ``<name>.q8`` and
``<name>.scale``; everything else as fp16 under ``<name>.f16``. About 4x smaller than fp32.

At load the weights are dequantised to fp32, set into the Paddle layer and exported once with ``paddle.jit.save``
to a cache folder keyed by the bundle's SHA-256 (``$SECTORFLOW_HOME/customer_service/inference/<sha>``), which
becomes a ``paddle-inference`` bundle with its own manifest; the predictor runs fp32 kernels.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

_EMBED_HINTS = ("word.weight", "pos.weight", "token_type.weight")


def quantize(state: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """fp32 state dict -> storage dict (int8 + scales for large matrices, fp16 for the rest)."""
    out: dict[str, np.ndarray] = {}
    for name, value in state.items():
        w = np.asarray(value, dtype=np.float32)
        if w.ndim == 2 and w.size >= 4096:
            axis = 1 if name.endswith(_EMBED_HINTS) else 0  # reduce over this axis
            scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
            scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
            out[name + ".q8"] = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
            out[name + ".scale"] = scale
        else:
            out[name + ".f16"] = w.astype(np.float16)
    return out


def dequantize(stored: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Storage dict -> fp32 state dict."""
    out: dict[str, np.ndarray] = {}
    for key, value in stored.items():
        if key.endswith(".q8"):
            name = key[:-3]
            out[name] = (value.astype(np.float32) * stored[name + ".scale"]).astype(np.float32)
        elif key.endswith(".f16"):
            out[key[:-4]] = value.astype(np.float32)
    return out


def home() -> Path:
    """``$SECTORFLOW_HOME`` or ``~/.cache/sectorflow`` (the core's convention for files built on a machine)."""
    raw = os.environ.get("SECTORFLOW_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".cache" / "sectorflow"
