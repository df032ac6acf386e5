"""The learned risk scorer: graph and behaviour features -> a Paddle inference predictor -> risk in [0, 1].

The bundle (``sectorflow_aml/bundle/``, made by ``plugins/aml/scripts/train_scorer.py``) holds:

- ``model.json`` + ``model.pdiparams``: the ``paddle.jit.save`` program (input ``[None, F]`` float32, output
  ``[None, 1]`` in ``[0, 1]``), run through :class:`sectorflow.PredictorPool` (oneDNN on CPU).
- ``model.pdparams``: the same weights as a state dict (for audits and the eager-equality test; never executed).
- ``scorer.json``: the feature names in order, the window lookback and cycle settings the model was trained with,
  and the decision ``threshold`` chosen on validation accounts (see docs/aml.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sectorflow import Bundle, BundleError, InvalidInputError, PredictorPool

from .features import FEATURE_NAMES, N_FEATURES, FeatureExtractor

if TYPE_CHECKING:  # pragma: no cover
    from .schema import Transaction
    from .window import TransactionWindow

SCORER_CONFIG = "scorer.json"


def _cpu_pool(bundle: Bundle, num_threads: int = 1) -> PredictorPool:
    """A CPU predictor pool (oneDNN) for ``bundle``, for callers that do not pass the pipeline's own pool."""
    from ._paddle import import_paddle

    inference = import_paddle().inference
    prefix = bundle.manifest.get("model_prefix", "model")
    config = inference.Config(str(bundle.file(f"{prefix}.json")), str(bundle.file(f"{prefix}.pdiparams")))
    config.disable_glog_info()
    config.disable_gpu()
    config.enable_mkldnn()
    config.set_cpu_math_library_num_threads(max(1, int(num_threads)))
    return PredictorPool(config)


class RiskScorer:
    """Per-transaction features and their model score.

    Args:
        bundle: a verified ``aml`` bundle of format ``paddle-inference`` with ``scorer.json``.
        pool: the pipeline's predictor pool for this bundle (``Pipeline.predictor_pool()``); ``None`` builds a
            one-thread CPU pool.

    Attributes:
        threshold: the transaction score at or above which the scorer's evaluation flags the transaction's sender
            and receiver (chosen on validation accounts; see docs/aml.md).
        lookback_days: the window lookback the model was trained with (give the window the same).
        feature_names: the names of the feature vector's entries.

    Raises:
        BundleError: the bundle has another format, no ``scorer.json``, or was trained on other features than this
            code computes (train/serve skew).
    """

    def __init__(self, bundle: Bundle, pool: PredictorPool | None = None) -> None:
        if bundle.format != "paddle-inference":
            raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}; the risk scorer needs "
                              f"'paddle-inference'.")
        config: dict[str, Any] = bundle.read_json(SCORER_CONFIG)
        names = tuple(config.get("feature_names") or ())
        if names != FEATURE_NAMES:
            raise BundleError(f"Bundle {bundle.path} was trained on features {list(names)}, but this version of "
                              f"sectorflow_aml computes {list(FEATURE_NAMES)}. Retrain with "
                              f"plugins/aml/scripts/train_scorer.py or install the matching plugin version.")
        self.bundle = bundle
        self.feature_names = FEATURE_NAMES
        self.threshold = float(config["threshold"])
        self.lookback_days = float(config["lookback_days"])
        self._extractor = FeatureExtractor(self.lookback_days * 86_400.0)
        self.pool = pool if pool is not None else _cpu_pool(bundle)
        self._input = self.pool.input_names[0]

    def features(self, txn: Transaction, window: TransactionWindow) -> np.ndarray:
        """Feature vector of ``txn``: float32 ``[F]``, ``F = len(FEATURE_NAMES)``.

        Stateful: call once per transaction, in arrival order, right after ``window.add(txn)``.

        Raises:
            ConfigError: called without ``window.add(txn)`` first, or the window's lookback is not
                ``lookback_days``.
        """
        return self._extractor.vector(txn, window)

    def feature_row(self, txn: Transaction, window: TransactionWindow) -> list[float]:
        """Same as :meth:`features` but a Python list (faster; collect rows and call :meth:`score_rows`)."""
        return self._extractor.row(txn, window)

    def score(self, batch: np.ndarray) -> np.ndarray:
        """Risk scores of a feature batch.

        Args:
            batch: float32 (or castable) array ``[n, F]``.

        Returns:
            float32 array ``[n]`` with values in ``[0, 1]``.

        Raises:
            InvalidInputError: the batch is not two-dimensional with ``F`` columns, or holds NaN or infinity.
        """
        x = np.asarray(batch, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != N_FEATURES:
            raise InvalidInputError(f"RiskScorer.score needs an array [n, {N_FEATURES}]; got shape {x.shape}.")
        if x.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        if not np.isfinite(x).all():
            raise InvalidInputError("RiskScorer.score got NaN or infinite features.")
        out = self.pool.run({self._input: x})[0]
        return np.clip(out.reshape(-1), 0.0, 1.0).astype(np.float32, copy=False)

    def score_rows(self, rows: list[list[float]]) -> np.ndarray:
        """:meth:`score` of rows from :meth:`feature_row`."""
        if not rows:
            return np.zeros(0, dtype=np.float32)
        return self.score(np.asarray(rows, dtype=np.float32))

    def reset(self) -> None:
        """Forget the feature state kept across transactions (call with the window's ``reset``)."""
        self._extractor.reset()
