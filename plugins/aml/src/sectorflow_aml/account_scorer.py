"""The account risk model at serving time: account feature rows -> LightGBM margin -> calibrated risk in [0, 1].

A bundle carries the account model as two files (written by ``sectorflow aml train`` or
``plugins/aml/scripts/train_account_model.py``):

- ``account_model.txt``: the LightGBM text model (never pickled);
- ``account_model.json``: ``{"feature_names": [...], "lookback_days": 30.0, "calibration": {"method": "platt", "a":
  ..., "b": ...}, "model_file": "account_model.txt", ...}``. The calibrated score is
  ``1 / (1 + exp(-(a * margin + b)))``, the probability that an account-month whose highest score it is is
  laundering (Platt scaling fitted on the validation accounts' monthly maxima).

A bundle whose ``format`` is ``lightgbm`` holds only the account model; the shipped bundle holds it beside the
per-transaction Paddle scorer (:mod:`sectorflow_aml.scorer`).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

from sectorflow import Bundle, BundleError

from .account_features import ACCOUNT_FEATURES, N_ACCOUNT_FEATURES, AccountFeatureExtractor

ACCOUNT_CONFIG = "account_model.json"


def has_account_model(bundle: Bundle | None) -> bool:
    """Whether ``bundle`` lists an account model (``account_model.json``)."""
    return bundle is not None and ACCOUNT_CONFIG in bundle.manifest.get("files", {})


class AccountScorer:
    """Calibrated account risk from account feature rows.

    Args:
        bundle: a verified bundle with ``account_model.json`` and its LightGBM text model (or, with ``model_kind:
            "mlp"``, the network of :mod:`sectorflow_aml.account_mlp`).

    Attributes:
        lookback_days: the window the model was trained with (the pipeline's window gets the same).
        feature_names: :data:`~sectorflow_aml.account_features.ACCOUNT_FEATURES`.
        threshold: the calibrated score of best F1 on the validation accounts (``None`` if not recorded).

    Raises:
        BundleError: no ``account_model.json``, another feature list than this code computes (train/serve skew), or
            a model file that LightGBM cannot read.
    """

    def __init__(self, bundle: Bundle) -> None:
        if not has_account_model(bundle):
            raise BundleError(f"Bundle {bundle.path} has no {ACCOUNT_CONFIG}: it holds no account model.")
        config: dict[str, Any] = bundle.read_json(ACCOUNT_CONFIG)
        names = tuple(config.get("feature_names") or ())
        if names != ACCOUNT_FEATURES:
            raise BundleError(f"Bundle {bundle.path} was trained on account features {list(names)}, but this version "
                              f"of sectorflow_aml computes {list(ACCOUNT_FEATURES)}: retrain it with `sectorflow aml "
                              "train` or install the matching plugin version.")
        calibration = config.get("calibration") or {}
        if calibration.get("method") != "platt":
            raise BundleError(f"Bundle {bundle.path}: unknown calibration {calibration!r} (expected method 'platt').")
        self.a = float(calibration["a"])
        self.b = float(calibration["b"])
        self.lookback_days = float(config["lookback_days"])
        self.threshold = config.get("threshold")
        self.training_points = str(config.get("training_points", "daily"))  # bundles before 2 Dec 2026: daily
        self.feature_names = ACCOUNT_FEATURES
        path = bundle.file(config.get("model_file", "account_model.txt"))
        if config.get("model_kind") == "mlp":  # ``sectorflow aml train --model mlp`` or a federated run
            from .account_mlp import load_margin

            self._margin = load_margin(path)
        else:
            import lightgbm as lgb

            try:
                self.booster = lgb.Booster(model_str=path.read_text(encoding="utf-8"))
            except lgb.basic.LightGBMError as exc:
                raise BundleError(f"Bundle {bundle.path}: {path.name} is not a LightGBM text model: {exc}") from exc
            if self.booster.num_feature() != N_ACCOUNT_FEATURES:
                raise BundleError(f"Bundle {bundle.path}: {path.name} has {self.booster.num_feature()} features, "
                                  f"not {N_ACCOUNT_FEATURES}.")
            self._margin = functools.partial(self.booster.predict, raw_score=True, num_threads=1)
        self.extractor = AccountFeatureExtractor(self.lookback_days * 86_400.0)

    def score_rows(self, rows: list[list[float]]) -> np.ndarray:
        """Calibrated risk of feature rows: float64 ``[n]`` in [0, 1] (each row scored alone: equal in any batch)."""
        if not rows:
            return np.zeros(0)
        return self.score_matrix(np.asarray(rows, dtype=np.float32))  # float32 as in training

    def score_matrix(self, x: np.ndarray) -> np.ndarray:
        """Calibrated risk of a float32 feature matrix ``[n, 38]`` (:func:`~sectorflow_aml.account_features.
        feature_matrix`): float64 ``[n]`` in [0, 1], each row scored alone (equal in any batch)."""
        if not len(x):
            return np.zeros(0)
        margin = self._margin(x)
        return 1.0 / (1.0 + np.exp(-np.clip(self.a * margin + self.b, -35.0, 35.0)))

    def spawn(self) -> AccountScorer:
        """Another tenant's scorer: the same booster and calibration (shared, read-only), an empty feature state."""
        other = copy.copy(self)
        other.extractor = AccountFeatureExtractor(self.lookback_days * 86_400.0)
        return other

    def reset(self) -> None:
        """Forget the account feature state."""
        self.extractor.reset()


def describe_account(row: list[float], lookback_days: float, limit: int = 3) -> list[tuple[str, str, str]]:
    """Notable values of an account's feature row (:data:`ACCOUNT_FEATURES`), for the reasons of a high account
    score: facts of what the model saw over the window, not an attribution. Up to ``limit`` ``(code, en, zh)``
    tuples; codes are ``model.account.<name>``."""
    f = dict(zip(ACCOUNT_FEATURES, (float(v) for v in row)))
    days = f"{lookback_days:g}"
    out: list[tuple[str, str, str]] = []
    if f["n_tout"] and f["fast_forward_share"] >= 0.5:
        pct = round(100 * f["fast_forward_share"])
        out.append(("model.account.fast_forward_share", f"{pct}% of its transfers out followed a transfer in within "
                    "a day", f"{pct}%的转出发生在转入后一天内"))
    if f["n_tin"] and f["n_tout"] and 0.8 <= f["pass_through"] <= 1.2:
        pct = round(100 * f["pass_through"])
        out.append(("model.account.pass_through", f"paid out {pct}% of what came in within {days} days",
                    f"{days}天内转出金额为转入金额的{pct}%"))
    if f["deg_in"] >= 5 and f["one_off_in_share"] >= 0.5:
        out.append(("model.account.deg_in", f"paid by {int(f['deg_in'])} distinct accounts within {days} days, "
                    f"{round(100 * f['one_off_in_share'])}% of them once", f"{days}天内有{int(f['deg_in'])}个不同的付款方"))
    if f["deg_out"] >= 5 and f["one_off_out_share"] >= 0.5:
        out.append(("model.account.deg_out", f"paid {int(f['deg_out'])} distinct accounts within {days} days, "
                    f"{round(100 * f['one_off_out_share'])}% of them once", f"{days}天内向{int(f['deg_out'])}个不同账户付款"))
    if len(out) < limit:  # always say what the model saw, so an analyst has facts to check
        tin, tout, cin, cout = (int(f[k]) for k in ("n_tin", "n_tout", "n_cin", "n_cout"))
        out.append(("model.account.profile", f"within {days} days {tin} transfers in, {tout} out, {cin} cash "
                    f"deposits and {cout} cash withdrawals or spending, on {int(f['active_days'])} active days",
                    f"{days}天内转入{tin}笔、转出{tout}笔、现金存入{cin}笔、现金支出{cout}笔，活跃{int(f['active_days'])}天"))
    return out[:limit]
