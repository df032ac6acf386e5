"""The account risk model as a small neural network (``sectorflow aml train --model mlp``; the federated model).

Same rows, split, calibration and bundle layout as the LightGBM account model (:mod:`sectorflow_aml.account_training`):
the account feature rows of :func:`~sectorflow_aml.account_training.replay`, the seeded stratified account split
with the time hold-out (:func:`~sectorflow_aml.account_training.split_accounts`), Platt scaling on the validation
accounts' account-month maxima, account-level average precision. Only the model differs, and it is parametric, so
institutions can average it (FedAvg, :mod:`sectorflow_aml.account_federated`).

- Input: each feature ``x`` becomes ``sign(x) * log(1 + |x|)`` (counts and day spans span orders of magnitude), then
  is standardised with the mean and standard deviation of the **training rows** (stored in the bundle).
- Network: ``Linear(F, 64) - ReLU - Linear(64, 32) - ReLU - Linear(32, 1)`` (PaddlePaddle, Adam, weight decay
  1e-5), the logit is the margin.
- Loss: binary cross-entropy with positive rows weighted ``negatives / positives`` (both classes weigh the same, as
  the GBDT's sample weights).
- Early stopping: after every epoch, account-level AP (an account's max margin) on the validation accounts; the best
  epoch's weights are kept, training stops after ``patience`` epochs without gain.
- Bundle (format ``account-mlp``): ``account_mlp.safetensors`` (the layer weights and the standardisation, float32;
  no pickle), ``account_model.json`` (``model_kind: "mlp"``, features, lookback, calibration, threshold) and
  ``manifest.json``. Serving computes the network in NumPy (:class:`MLPMargin`): no Paddle at serving time, the
  float32 arithmetic of training up to summation order, and batch-invariant (a row scores the same in any batch).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .account_features import ACCOUNT_FEATURES, N_ACCOUNT_FEATURES
from .account_training import (Replay, _stack, account_max, fit_platt, labels_of, period_max, platt, ranking_metrics,
                               split_accounts)
from .labels import Labels, check_overlap
from .metrics import average_precision, best_f1

WEIGHTS_FILE = "account_mlp.safetensors"
FORMAT = "account-mlp"
HIDDEN = (64, 32)
MLP_PARAMS: dict[str, Any] = {"hidden": list(HIDDEN), "lr": 2e-3, "batch_size": 1024, "max_epochs": 60,
                              "patience": 8, "weight_decay": 1e-5, "input": "signed log1p, then standardised"}
"""Training settings of ``--model mlp`` (chosen on the validation split of AMLGentex dev_s101, see docs/aml.md)."""


def transform(x: np.ndarray) -> np.ndarray:
    """``sign(x) * log1p(|x|)`` as float32 (``[n, F]`` -> ``[n, F]``)."""
    x = np.asarray(x, dtype=np.float32)
    return np.sign(x) * np.log1p(np.abs(x))


def moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and second moments ``(E[t], E[t^2])`` (float32 ``[F]`` each) of the transformed rows ``t``."""
    t = transform(x).astype(np.float64)
    if not t.shape[0]:
        return np.zeros(N_ACCOUNT_FEATURES, np.float32), np.ones(N_ACCOUNT_FEATURES, np.float32)
    return t.mean(axis=0).astype(np.float32), (t * t).mean(axis=0).astype(np.float32)


def std_of(mean: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Standard deviation from moments, floored at about 0.03 (a constant feature, or moments noised by DP, must not
    blow the input up; the transformed account features of AMLGentex vary by 0.03 to 1)."""
    var = np.asarray(second, np.float64) - np.asarray(mean, np.float64) ** 2
    return np.sqrt(np.maximum(var, 1e-3)).astype(np.float32)


def layer_names(hidden: Sequence[int] = HIDDEN) -> list[str]:
    """Weight names of the network, input to output: ``l0.weight``, ``l0.bias``, ..."""
    return [f"l{i}.{p}" for i in range(len(hidden) + 1) for p in ("weight", "bias")]


class MLPMargin:
    """The network's margin in NumPy: ``__call__(x [n, F] float) -> float64 [n]``.

    Args:
        weights: ``l{i}.weight`` ``[in, out]`` and ``l{i}.bias`` ``[out]`` (Paddle's ``Linear`` layout).
        mean, std: the standardisation of the transformed input (``[F]``).
    """

    def __init__(self, weights: Mapping[str, np.ndarray], mean: np.ndarray, std: np.ndarray) -> None:
        n = sum(1 for k in weights if k.endswith(".weight"))
        self.layers = [(np.asarray(weights[f"l{i}.weight"], np.float32), np.asarray(weights[f"l{i}.bias"], np.float32))
                       for i in range(n)]
        self.mean = np.asarray(mean, np.float32)
        self.std = np.asarray(std, np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        # einsum without BLAS: each row's sums run in one fixed order, so a row scores the same alone, in a chunk
        # or in any batch (BLAS matrix products change the order with the batch shape: differences near 1e-5)
        h = (transform(x) - self.mean) / self.std
        for i, (w, b) in enumerate(self.layers):
            h = np.einsum("ij,jk->ik", h, w, optimize=False) + b
            if i < len(self.layers) - 1:
                np.maximum(h, 0, out=h)
        return h[:, 0].astype(np.float64)


# --- Paddle training ---------------------------------------------------------------------------------------------

def make_net(hidden: Sequence[int] = HIDDEN, seed: int = 20211) -> Any:
    """The Paddle network (``Sequential`` of ``Linear``/``ReLU``), seeded."""
    import paddle

    paddle.seed(seed)
    layers: list[Any] = []
    width = N_ACCOUNT_FEATURES
    for h in hidden:
        layers += [paddle.nn.Linear(width, h), paddle.nn.ReLU()]
        width = h
    layers.append(paddle.nn.Linear(width, 1))
    return paddle.nn.Sequential(*layers)


def net_weights(net: Any) -> dict[str, np.ndarray]:
    """The network's weights by :func:`layer_names` (float32 copies)."""
    linears = [m for m in net if hasattr(m, "weight")]
    out: dict[str, np.ndarray] = {}
    for i, m in enumerate(linears):
        out[f"l{i}.weight"] = m.weight.numpy().astype(np.float32).copy()
        out[f"l{i}.bias"] = m.bias.numpy().astype(np.float32).copy()
    return out


def set_net_weights(net: Any, weights: Mapping[str, np.ndarray]) -> None:
    """Load :func:`layer_names` weights into the network.

    Raises:
        ValueError: a missing name or another shape.
    """
    linears = [m for m in net if hasattr(m, "weight")]
    for i, m in enumerate(linears):
        for part in ("weight", "bias"):
            name = f"l{i}.{part}"
            if name not in weights:
                raise ValueError(f"weight {name} missing")
            value = np.asarray(weights[name], dtype=np.float32)
            param = getattr(m, part)
            if tuple(value.shape) != tuple(param.shape):
                raise ValueError(f"{name}: shape {value.shape} != {tuple(param.shape)}")
            param.set_value(value)


def train_epochs(net: Any, opt: Any, z: np.ndarray, y: np.ndarray, *, epochs: int, batch_size: int, pos_weight: float,
                 rng: np.random.Generator, proximal: tuple[float, list[Any]] | None = None) -> float:
    """``epochs`` passes of weighted BCE over standardised rows ``z`` ``[n, F]`` with labels ``y`` ``[n]``; returns
    the mean loss. ``proximal = (mu, anchors)`` adds FedProx's ``mu / 2 * ||w - w_global||^2``."""
    import paddle

    if not z.shape[0]:
        return 0.0
    zt = paddle.to_tensor(np.ascontiguousarray(z, dtype=np.float32))
    yt = paddle.to_tensor(np.asarray(y, dtype=np.float32).reshape(-1, 1))
    pw = paddle.to_tensor([pos_weight], dtype="float32")
    params = net.parameters()
    net.train()
    total, count = 0.0, 0
    for _ in range(int(epochs)):
        order = paddle.to_tensor(rng.permutation(z.shape[0]))
        for begin in range(0, z.shape[0], batch_size):
            idx = order[begin:begin + batch_size]
            logits = net(paddle.gather(zt, idx))
            loss = paddle.nn.functional.binary_cross_entropy_with_logits(logits, paddle.gather(yt, idx),
                                                                         pos_weight=pw)
            if proximal is not None and proximal[0] > 0:
                loss = loss + proximal[0] / 2 * sum(((p - a) ** 2).sum() for p, a in zip(params, proximal[1]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += float(loss) * int(idx.shape[0])
            count += int(idx.shape[0])
    net.eval()
    return total / max(count, 1)


def optimizer(net: Any, lr: float, weight_decay: float = 1e-5) -> Any:
    """Adam over the network's parameters."""
    import paddle

    return paddle.optimizer.Adam(learning_rate=lr, parameters=net.parameters(), weight_decay=weight_decay)


def pos_weight_of(y: np.ndarray) -> float:
    """``negatives / positives`` of training labels (1.0 without positives)."""
    pos = float(np.sum(y))
    return (y.size - pos) / pos if pos else 1.0


# --- the centralised trainer (`sectorflow aml train --model mlp`) -----------------------------------------------

@dataclass
class TrainedMLP:
    """A trained account MLP: weights (:func:`layer_names`), standardisation, Platt ``(a, b)``, validation metrics."""

    weights: dict[str, np.ndarray]
    mean: np.ndarray
    std: np.ndarray
    platt: tuple[float, float]
    metrics: dict[str, Any]
    params: dict[str, Any]

    def margin(self) -> MLPMargin:
        """The NumPy margin of this model."""
        return MLPMargin(self.weights, self.mean, self.std)


def calibrate(margin: Callable[[np.ndarray], np.ndarray], xv: np.ndarray, av: np.ndarray, mv: np.ndarray,
              yv_acc: np.ndarray) -> tuple[tuple[float, float], dict[str, Any]]:
    """Platt on validation account-month maxima, then account-level metrics of the calibrated scores (as the GBDT)."""
    vmask = yv_acc >= 0
    raw = margin(xv)
    pm, pa = period_max(raw, av, mv)
    a, b = fit_platt(pm, yv_acc[pa])
    scores = platt(account_max(raw, av, yv_acc.size)[vmask], a, b)
    metrics = ranking_metrics(scores, yv_acc[vmask])
    metrics["threshold_best_f1"] = round(best_f1(scores, yv_acc[vmask])[1], 6)
    return (a, b), metrics


def train_mlp(reps: Sequence[Replay], labels: Sequence[Labels], *, seed: int = 20211, val_share: float = 0.25,
              time_holdout: float = 0.2, params: Mapping[str, Any] | None = None,
              log: Callable[[str], None] | None = None) -> TrainedMLP:
    """Train, early-stop, calibrate and measure the account MLP (rows and split of
    :func:`~sectorflow_aml.account_training.train`).

    Raises:
        InvalidInputError: a training or validation split without both classes.
    """
    from sectorflow import InvalidInputError

    p = dict(MLP_PARAMS, **(params or {}))
    ys = [labels_of(r, lab) for r, lab in zip(reps, labels)]
    for i, (rep, lab) in enumerate(zip(reps, labels)):
        check_overlap(lab, set(rep.accounts), f"training file {i + 1}")
    vals = [split_accounts(y, val_share, seed + i) for i, y in enumerate(ys)]
    xt, yt, xv, av, mv, yv_acc = _stack(reps, ys, vals, time_holdout)
    if yt.sum() == 0 or yt.sum() == yt.size:
        raise InvalidInputError("The training split has labelled accounts of one class only: label laundering (1) "
                                "and legitimate (0) accounts that transact in the files.")
    vmask = yv_acc >= 0
    if yv_acc[vmask].sum() == 0:
        raise InvalidInputError("The validation split holds no laundering account: label more laundering accounts "
                                "(at least 4 in the validation split; from Python, or a larger val_share).")
    mean, second = moments(xt)
    std = std_of(mean, second)
    zt = (transform(xt) - mean) / std
    net = make_net(tuple(p["hidden"]), seed)
    opt = optimizer(net, float(p["lr"]), float(p["weight_decay"]))
    rng = np.random.default_rng(seed)
    pw = pos_weight_of(yt)
    best_ap, best_epoch, best_w, history = -1.0, 0, net_weights(net), []
    for epoch in range(1, int(p["max_epochs"]) + 1):
        loss = train_epochs(net, opt, zt, yt, epochs=1, batch_size=int(p["batch_size"]), pos_weight=pw, rng=rng)
        w = net_weights(net)
        ap = average_precision(account_max(MLPMargin(w, mean, std)(xv), av, yv_acc.size)[vmask], yv_acc[vmask])
        history.append((epoch, round(ap, 4)))
        if log:
            log(f"epoch {epoch}: loss {loss:.4f}, validation account AP {ap:.4f}")
        if ap > best_ap + 1e-4:
            best_ap, best_epoch, best_w = ap, epoch, w
        elif epoch - best_epoch >= int(p["patience"]):
            break
    ab, metrics = calibrate(MLPMargin(best_w, mean, std), xv, av, mv, yv_acc)
    metrics.update(train_rows=int(yt.size), train_positive_rows=int(yt.sum()), validation_rows=int(xv.shape[0]),
                   epochs=best_epoch, history=history,
                   split=f"seeded stratified {val_share:.0%} of labelled accounts per file held out; training "
                         f"rows: the other accounts' daily snapshots before the last {time_holdout:.0%} of each "
                         f"file's period")
    return TrainedMLP(best_w, mean, std, ab, metrics, dict(p, seed=seed))


# --- bundle ------------------------------------------------------------------------------------------------------

def save_weights(tensors: dict[str, np.ndarray], path: Path) -> None:
    """Write ``tensors`` to ``path`` (safetensors) with one metadata entry, ``format``: safetensors keeps header
    metadata in a hash map whose order changes from process to process, so two entries made identical trainings
    give files of different bytes and bundle digests (fresh-user report, 3 Dec 2026); the input transform is in
    the bundle's config instead."""
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata={"format": FORMAT})


def write_mlp_bundle(out: str | Path, trained: TrainedMLP, *, lookback_days: float, datasets: list[dict[str, Any]],
                     command: str, name: str = "aml-account-mlp", version: str = "1.0.0",
                     metrics: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> Path:
    """Write an ``account-mlp`` bundle (layout in the module docstring); returns the manifest path.

    ``metrics`` replaces the manifest's ``metrics`` (default ``{"account_level": {"validation": trained.metrics}}``);
    ``extra`` is merged into ``provenance`` (the federated run puts its ``federation`` record there).

    Raises:
        ConfigError: ``out`` exists and is not an empty folder or an account bundle (never overwrites other files).
    """
    from sectorflow import ConfigError, __version__ as core_version, write_manifest

    from . import __version__
    from .account_scorer import ACCOUNT_CONFIG

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / ACCOUNT_CONFIG).is_file():
        raise ConfigError(f"--out {out} exists and is not an account model bundle: give a new or empty folder.")
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("account_model.txt",):  # a GBDT bundle rewritten as an MLP one keeps no other model file
        (out / stale).unlink(missing_ok=True)
    tensors = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in trained.weights.items()}
    tensors["input.mean"] = np.ascontiguousarray(trained.mean, np.float32)
    tensors["input.std"] = np.ascontiguousarray(trained.std, np.float32)
    save_weights(tensors, out / WEIGHTS_FILE)
    config = {"feature_names": list(ACCOUNT_FEATURES), "lookback_days": float(lookback_days), "model_kind": "mlp",
              "model_file": WEIGHTS_FILE, "hidden": [int(trained.weights[f"l{i}.bias"].shape[0])
                                                     for i in range(len(trained.weights) // 2 - 1)],
              "calibration": {"method": "platt", "a": trained.platt[0], "b": trained.platt[1],
                              "fitted_on": "validation account-month maxima"},
              "threshold": trained.metrics.get("threshold_best_f1"), "input": "signed log1p, standardised"}
    (out / ACCOUNT_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    try:
        import paddle

        paddle_version = paddle.__version__
    except ImportError:  # pragma: no cover
        paddle_version = None
    return write_manifest(
        out, task="aml", name=name, version=version, format=FORMAT, labels=["laundering_risk"],
        metrics=metrics if metrics is not None else {"account_level": {"validation": trained.metrics}},
        features=list(ACCOUNT_FEATURES),
        provenance={"command": command, "datasets": datasets, "lookback_days": float(lookback_days),
                    "params": {k: v for k, v in trained.params.items()},
                    "training_rows": "one snapshot per account per UTC day it is active (its row after its last "
                                     "transaction that day), labelled with the account label",
                    "versions": {"sectorflow": core_version, "sectorflow_aml": __version__, "paddle": paddle_version,
                                 "python": platform.python_version()},
                    "trained_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                    **(extra or {})})


def load_margin(path: Path) -> MLPMargin:
    """The :class:`MLPMargin` of an ``account_mlp.safetensors`` file.

    Raises:
        BundleError: not a safetensors file of this layout, or another input width than the features.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    from sectorflow import BundleError

    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise BundleError(f"{path} is not a safetensors file of the account MLP: {exc}") from exc
    n = sum(1 for k in tensors if k.startswith("l") and k.endswith(".weight"))
    needed = layer_names([0] * (n - 1)) + ["input.mean", "input.std"]
    missing = [k for k in needed if k not in tensors]
    if n < 1 or missing:
        raise BundleError(f"{path}: tensors {missing or ['l0.weight']} missing (an account MLP has "
                          f"{', '.join(needed)}).")
    if tensors["l0.weight"].shape[0] != N_ACCOUNT_FEATURES or tensors["input.mean"].shape != (N_ACCOUNT_FEATURES,):
        raise BundleError(f"{path}: input width {tensors['l0.weight'].shape[0]}, not {N_ACCOUNT_FEATURES} features.")
    return MLPMargin({k: v for k, v in tensors.items() if not k.startswith("input.")}, tensors["input.mean"],
                     tensors["input.std"])
