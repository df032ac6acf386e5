"""The risk scorer's network: standardisation, a small MLP and a sigmoid, as one Paddle layer.

Used by the training script (to train and ``paddle.jit.save`` it) and by tests (to compare an eager forward with the
inference predictor). Serving never builds this layer: it runs the exported program through
:class:`sectorflow.PredictorPool` (see :mod:`sectorflow_aml.scorer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sectorflow import import_paddle
from .features import transform_spec

paddle = import_paddle()
nn = paddle.nn


def transform_np(x: np.ndarray) -> np.ndarray:
    """The model's fixed input transform in numpy: clip to ``[0, cap]``, ``log1p`` on the log features
    (:func:`sectorflow_aml.features.transform_spec`). Used to compute the standardisation statistics."""
    caps, mask = transform_spec()
    clipped = np.minimum(np.maximum(x, 0.0), caps)
    return np.where(mask > 0, np.log1p(clipped), clipped).astype(np.float32)


class RiskMLP(nn.Layer):
    """``sigmoid(MLP((T(x) - mean) / std))``: input ``[n, F]`` raw features (float32), output ``[n, 1]`` in
    ``[0, 1]``; ``T`` is :func:`transform_np` (clip, ``log1p``).

    Args:
        mean, std: per-feature standardisation of ``T(x)`` (``[F]``, from the training rows; stored as
            non-trainable buffers with the caps and log mask so the exported bundle is self-contained).
        hidden: widths of the hidden ReLU layers.
    """

    def __init__(self, mean: np.ndarray, std: np.ndarray, hidden: Sequence[int] = (64, 32)) -> None:
        super().__init__()
        n_features = int(mean.shape[0])
        caps, mask = transform_spec()
        self.register_buffer("feat_caps", paddle.to_tensor(caps))
        self.register_buffer("feat_logmask", paddle.to_tensor(mask))
        self.register_buffer("feat_mean", paddle.to_tensor(np.asarray(mean, dtype=np.float32)))
        self.register_buffer("feat_std", paddle.to_tensor(np.asarray(std, dtype=np.float32)))
        layers: list[Any] = []
        width = n_features
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            width = int(h)
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def logits(self, x: Any) -> Any:
        """Pre-sigmoid scores ``[n, 1]`` (training uses these with a weighted BCE-with-logits loss)."""
        clipped = paddle.minimum(paddle.nn.functional.relu(x), self.feat_caps)
        t = self.feat_logmask * paddle.log1p(clipped) + (1.0 - self.feat_logmask) * clipped
        return self.mlp((t - self.feat_mean) / self.feat_std)

    def forward(self, x: Any) -> Any:
        return paddle.nn.functional.sigmoid(self.logits(x))
