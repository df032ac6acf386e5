"""The learned risk scorer: graph and behaviour features -> a Paddle inference predictor -> risk in [0, 1].

The bundle (``sectorflow_aml/bundle/``, made by ``plugins/aml/scripts/train_scorer.py``) holds:

- ``model.json`` + ``model.pdiparams``: the ``paddle.jit.save`` program (input ``[None, F]`` float32, output
  ``[None, 1]`` in ``[0, 1]``), run through :class:`sectorflow.PredictorPool` (oneDNN on CPU).
- ``model.pdparams``: the same weights as a state dict (for audits and the eager-equality test; never executed).
- ``scorer.json``: the feature names in order, the window lookback and cycle settings the model was trained with,
  and the decision ``threshold`` chosen on validation accounts (see docs/aml.md).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np

from sectorflow import Bundle, BundleError, ConfigError, InvalidInputError, PredictorPool

from .features import FEATURE_NAMES, N_FEATURES, FeatureExtractor

if TYPE_CHECKING:  # pragma: no cover
    from .schema import Transaction
    from .window import TransactionWindow

SCORER_CONFIG = "scorer.json"
ROW_BLOCK = 8
"""Rows per block that :meth:`RiskScorer.score` pads a batch to (zero rows, dropped from the result)."""


def _cpu_pool(bundle: Bundle, num_threads: int = 1) -> PredictorPool:
    """A one-thread CPU predictor pool for ``bundle`` (oneDNN unless the manifest says ``cpu_onednn: false``), for
    callers that do not pass the pipeline's own pool."""
    from sectorflow import import_paddle

    inference = import_paddle().inference
    prefix = bundle.manifest.get("model_prefix", "model")
    config = inference.Config(str(bundle.file(f"{prefix}.json")), str(bundle.file(f"{prefix}.pdiparams")))
    config.disable_glog_info()
    config.disable_gpu()
    if bundle.manifest.get("cpu_onednn", True):
        config.enable_mkldnn()
    else:  # as the core's make_predictor_config: the bundle opted out of oneDNN (per-run overhead, docs/aml.md)
        config.disable_mkldnn()
    config.set_cpu_math_library_num_threads(max(1, int(num_threads)))
    return PredictorPool(config)


class RiskScorer:
    """Per-transaction features and their model score.

    Args:
        bundle: a verified ``aml`` bundle with ``scorer.json``: format ``paddle-inference`` (fp32), or ``onnx`` (the
            INT8 bundle ``sectorflow models quantize aml`` writes, which copies ``scorer.json``).
        pool: the pipeline's predictor pool for this bundle (``Pipeline.predictor_pool()``: a Paddle predictor pool,
            or at ``precision="int8"`` an ONNX Runtime session pool with the same ``run``/``input_names``); ``None``
            builds a one-thread CPU Paddle pool (``paddle-inference`` bundles only).

    Attributes:
        threshold: the transaction score at or above which the scorer's evaluation flags the transaction's sender
            and receiver (chosen on validation accounts; see docs/aml.md).
        lookback_days: the window lookback the model was trained with (give the window the same).
        feature_names: the names of the feature vector's entries.

    Raises:
        BundleError: the bundle has another format, no ``scorer.json``, was trained on other features than this
            code computes (train/serve skew), or is an ``onnx`` bundle given without its pool.
    """

    def __init__(self, bundle: Bundle, pool: PredictorPool | None = None) -> None:
        if bundle.format not in ("paddle-inference", "onnx"):
            raise BundleError(f"Bundle {bundle.path} has format {bundle.format!r}; the risk scorer needs "
                              f"'paddle-inference' or 'onnx'.")
        if pool is None and bundle.format != "paddle-inference":
            raise BundleError(f"Bundle {bundle.path} is an ONNX bundle; give the risk scorer its pool "
                              f"(Taskflow('aml', task_path=..., precision='int8') builds it).")
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
        """Risk scores of a feature batch, padded with zero rows to a multiple of :data:`ROW_BLOCK` rows.

        Without the padding a row's score moved in the 7th decimal with the number of rows scored with it (the CPU
        matrix kernels handle a last partial block of rows another way), so one-at-a-time, chunked and one-batch runs
        differed in ``model_score`` at 6 decimals (a fresh-user check: 1 of 752 results); padded, they are equal (a
        test compares batch sizes 1 to 1,000 on AMLSim rows). The padding costs nothing measurable at batch 1.

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
        n = x.shape[0]
        padded = -(-n // ROW_BLOCK) * ROW_BLOCK
        if padded != n:  # zero rows up to a whole block: a row's score then does not depend on the batch around it
            x = np.concatenate([x, np.zeros((padded - n, x.shape[1]), dtype=np.float32)])
        out = self.pool.run({self._input: x})[0]
        return np.clip(out.reshape(-1)[:n], 0.0, 1.0).astype(np.float32, copy=False)

    def score_rows(self, rows: list[list[float]]) -> np.ndarray:
        """:meth:`score` of rows from :meth:`feature_row`."""
        if not rows:
            return np.zeros(0, dtype=np.float32)
        return self.score(np.asarray(rows, dtype=np.float32))

    def describe(self, row: list[float] | np.ndarray, limit: int = 3) -> list[tuple[str, str, str]]:
        """Notable feature values of one transaction, for the reasons of a high model score.

        These state what the model saw (facts of the feature row), not an attribution of the score. Returns up to
        ``limit`` ``(code, en, zh)`` tuples, most specific first; codes are ``model.feature.<name>``.
        """
        f = dict(zip(FEATURE_NAMES, (float(v) for v in row)))
        out: list[tuple[str, str, str]] = []
        days = int(self.lookback_days)
        if f["cycle_closed"]:
            out.append(("model.feature.cycle_closed", "closes a loop of at most 4 accounts within "
                        f"{days} days", f"{days}天内构成不超过4个账户的资金闭环"))
        elif f["s_in_cycle"] or f["r_in_cycle"]:
            out.append(("model.feature.in_cycle", f"an account of this transfer lay on a fund loop within {days} "
                        "days", f"交易账户{days}天内处于资金闭环中"))
        if f["pair_cnt"] >= 2:
            n = int(f["pair_cnt"])
            out.append(("model.feature.pair_cnt", f"{n} transfers between the same two accounts within {days} days",
                        f"同一对账户{days}天内转账{n}笔"))
        if f["r_in_deg"] >= 5:
            n = int(f["r_in_deg"])
            out.append(("model.feature.r_in_deg", f"receiver got money from {n} distinct accounts within {days} "
                        "days", f"收款账户{days}天内有{n}个不同的付款方"))
        if f["s_out_deg"] >= 5:
            n = int(f["s_out_deg"])
            out.append(("model.feature.s_out_deg", f"sender paid {n} distinct accounts within {days} days",
                        f"付款账户{days}天内向{n}个不同账户付款"))
        if 0.5 <= f["amount_over_last_in"] <= 1.0 and f["s_hours_since_in"] <= 48:
            pct, hours = round(100 * f["amount_over_last_in"]), round(f["s_hours_since_in"])
            out.append(("model.feature.pass_through", f"forwards {pct}% of money received {hours} h earlier",
                        f"转出{hours}小时前收到资金的{pct}%"))
        if f["s_in_deg"] and 0.9 <= f["s_out_over_in"] <= 1.1:
            pct = round(100 * f["s_out_over_in"])
            out.append(("model.feature.s_out_over_in", f"sender paid out {pct}% of what it received within {days} "
                        "days", f"付款账户{days}天内转出金额为转入金额的{pct}%"))
        if len(out) < limit:  # always say what the model saw of both accounts, so an analyst has facts to check
            so, si, ri, ro = (int(f[k]) for k in ("s_out_deg", "s_in_deg", "r_in_deg", "r_out_deg"))
            out.append(("model.feature.profile",
                        f"within {days} days the sender paid {so} and was paid by {si} distinct accounts, the "
                        f"receiver was paid by {ri} and paid {ro}",
                        f"{days}天内付款账户向{so}个账户付款、收到{si}个账户转入，收款账户收到{ri}个账户转入、向{ro}个账户付款"))
        return out[:limit]

    def spawn(self) -> RiskScorer:
        """A scorer of another transaction stream (another tenant's): the same bundle, threshold and predictor pool
        (thread-safe, shared), with its own empty feature state."""
        other = copy.copy(self)
        other._extractor = FeatureExtractor(self.lookback_days * 86_400.0)
        return other

    def reset(self) -> None:
        """Forget the feature state kept across transactions (call with the window's ``reset``)."""
        self._extractor.reset()

    def state_dict(self) -> dict[str, Any]:
        """The feature extractor's state (:meth:`FeatureExtractor.state_dict`) with the feature names."""
        return {"feature_names": list(self.feature_names), "extractor": self._extractor.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`state_dict` wrote.

        Raises:
            ConfigError: the state was made for other model features (another bundle), or is damaged.
        """
        if tuple(state.get("feature_names") or ()) != tuple(self.feature_names):
            raise ConfigError("The state's feature history was made for other model features (another model "
                              "bundle): run with the bundle the state was made with, or reset the state.")
        self._extractor.load_state_dict(state["extractor"])
