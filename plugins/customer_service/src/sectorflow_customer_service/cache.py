"""Where the plugin keeps what it builds on a machine.

The shipped bundle's ``weights.safetensors`` is int8 weight-only storage (``sectorflow_text_encoder.quantize_state_int8``; format
in ``sectorflow_text_encoder``). At load the weights are dequantised to fp32, set into the Paddle layer and exported
once with ``paddle.jit.save`` to a cache folder keyed by the bundle's SHA-256
(``$SECTORFLOW_HOME/customer_service/inference/<sha>``), which becomes a ``paddle-inference`` bundle with its own
manifest; the predictor runs fp32 kernels (:mod:`.runtime`).
"""

from __future__ import annotations

from pathlib import Path

import sectorflow


def home() -> Path:
    """``$SECTORFLOW_HOME`` or ``~/.cache/sectorflow``: :func:`sectorflow.home`, where files built on a machine go."""
    return sectorflow.home()
