"""The AML risk scorer as a federated :class:`sectorflow.Trainable`: one bank's share of IBM AMLSim runs.

Offered to ``sectorflow.federated`` through the ``sectorflow_register_trainables`` hook (task ``aml``, name
``risk_mlp``). The model is the shipped scorer's network (:class:`~sectorflow_aml.scorer_model.RiskMLP`), trained
with the same weighted loss as :func:`~sectorflow_aml.training.train_mlp` on features from the same window and
feature code that serve ``Taskflow("aml")``.

Banks from AMLSim (Suzumura & Kanezashi 2021, Apache-2.0; ``../shared/data/amlsim_sample``):

- Accounts: every account of every run is owned by exactly one bank (disjoint account sets). Run ``r``'s accounts go
  to bank ``b`` with weight 4 when ``b % n_runs == r`` and 1 otherwise, so each bank has a different typology mix
  (bank 0 mostly the cycle run, bank 1 mostly fan-in, bank 2 mostly the mixed run, ...). Seeded.
- Transactions: a bank sees the transactions its own accounts send, replayed in time order through its own
  window (a bank does not see other banks' books).
- Splits: per run, a seeded stratified 60/20/20 % split of accounts (train/validation/test). Training rows are
  transactions between training accounts; validation and test are account-level (an account is flagged when any
  transaction of the bank's view that it sends or receives scores at or above the threshold).
- Standardisation statistics stay local (each bank standardises with its own training rows, as FedBN keeps
  normalisation local: Li et al., ICLR 2021); only the MLP's weights travel.

Partition keys (``build(partition)``): ``data`` (amlsim_sample folder, required), ``bank`` (0-based) and
``num_banks``, optional ``own_run_weight`` (typology skew, default 4), ``runs`` (run folder names, default the
three sample runs), ``max_transactions`` (first N
transactions of each run, for quick tests), ``seed``, ``cache_dir`` (replayed features are cached there as ``.npz``,
default ``~/.cache/sectorflow/aml-federated``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import ConfigError, TrainableSpec

from .training import (LOOKBACK_DAYS, RUNS, SEED, account_scores, amlsim_transactions, best_threshold, prf,
                       read_amlsim_csv)

SPLITS = ("train", "val", "test")
OWN_RUN_WEIGHT = 4.0


@dataclass
class BankData:
    """One bank's replayed view. Account ids are ``run_index * 10**6 + node id``.

    ``x`` ``[n_tx, F]`` float32 features, ``src``/``dst`` ``[n_tx]`` int64, ``fraud`` ``[n_ids]`` bool,
    ``split`` ``[n_ids]`` int8 (0 train, 1 validation, 2 test: the run's split, the same at every bank),
    ``own`` ``[n_ids]`` bool (accounts of this bank).
    """

    x: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    fraud: np.ndarray
    split: np.ndarray
    own: np.ndarray

    @property
    def y(self) -> np.ndarray:
        """Transaction labels: both accounts are laundering accounts (as in ``training.Replayed.y``)."""
        return (self.fraud[self.src] & self.fraud[self.dst]).astype(np.float32)


def bank_of_accounts(n_accounts: int, run_index: int, n_runs: int, num_banks: int, seed: int,
                     own_run_weight: float = OWN_RUN_WEIGHT) -> np.ndarray:
    """Owner bank of each node id of one run (``[n_accounts]`` int64): seeded, weighted by typology mix (weight
    ``own_run_weight`` for the bank whose number is the run's index modulo the runs, 1 for the others)."""
    weights = np.array([own_run_weight if b % n_runs == run_index else 1.0 for b in range(num_banks)])
    rng = np.random.default_rng([seed, run_index, num_banks])
    return rng.choice(num_banks, size=n_accounts, p=weights / weights.sum())


def account_splits(fraud: np.ndarray, seed: int, run_index: int) -> np.ndarray:
    """Seeded, stratified 60/20/20 split of one run's node ids: 0 train, 1 validation, 2 test (``[n]`` int8)."""
    rng = np.random.default_rng([seed, run_index, 7])
    split = np.zeros(fraud.shape[0], dtype=np.int8)
    for cls in (False, True):
        ids = np.flatnonzero(fraud == cls)
        rng.shuffle(ids)
        n_val = int(round(len(ids) * 0.2))
        split[ids[:n_val]] = 1
        split[ids[n_val:2 * n_val]] = 2
    return split


def _replay_subset(src: np.ndarray, dst: np.ndarray, values: list[str], steps: np.ndarray) -> np.ndarray:
    from .features import FeatureExtractor, stack
    from .window import TransactionWindow

    window = TransactionWindow(lookback_days=LOOKBACK_DAYS)
    extractor = FeatureExtractor(window.lookback)
    rows = []
    for txn in amlsim_transactions(src, dst, values, steps):
        window.add(txn)
        rows.append(extractor.row(txn, window))
    return stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def load_bank(data: Path, bank: int, num_banks: int, runs: tuple[str, ...] = RUNS, max_transactions: int | None = None,
              seed: int = SEED, cache_dir: Path | None = None, own_run_weight: float = OWN_RUN_WEIGHT) -> BankData:
    """Replay bank ``bank``'s view of ``runs`` (cached as ``.npz`` in ``cache_dir``).

    Raises:
        ConfigError: the data folder or a run is missing, or ``bank`` is not in ``[0, num_banks)``.
    """
    if not 0 <= bank < num_banks:
        raise ConfigError(f"bank must be in [0, num_banks={num_banks}), got {bank}.")
    folders = [Path(data) / run for run in runs]
    missing = [str(f) for f in folders if not (f / "transactions.csv.gz").is_file()]
    if missing:
        raise ConfigError(f"AMLSim run folder(s) {missing} not found: point 'data' at amlsim_sample.")
    from .features import FEATURE_NAMES

    parts: tuple[Any, ...] = (sorted((f.name, (f / "transactions.csv.gz").stat().st_size) for f in folders), bank,
                              num_banks, max_transactions, seed, LOOKBACK_DAYS, 2, FEATURE_NAMES)
    if own_run_weight != OWN_RUN_WEIGHT:
        parts += (float(own_run_weight),)
    key = hashlib.sha256(repr(parts).encode()).hexdigest()[:20]
    cache = Path(cache_dir or Path.home() / ".cache" / "sectorflow" / "aml-federated")
    path = cache / f"bank-{key}.npz"
    if path.is_file():
        with np.load(path) as z:
            return BankData(z["x"], z["src"], z["dst"], z["fraud"], z["split"], z["own"])
    xs, srcs, dsts, frauds, splits, owns = [], [], [], [], [], []
    base = 10 ** 6
    for r, folder in enumerate(folders):
        src, dst, values, steps, fraud = read_amlsim_csv(folder)
        if max_transactions is not None:
            src, dst, values, steps = src[:max_transactions], dst[:max_transactions], values[:max_transactions], \
                steps[:max_transactions]
        owner = bank_of_accounts(fraud.shape[0], r, len(folders), num_banks, seed, own_run_weight)
        keep = np.flatnonzero(owner[src] == bank)
        x = _replay_subset(src[keep], dst[keep], [values[i] for i in keep], steps[keep])
        xs.append(x)
        srcs.append(src[keep] + r * base)
        dsts.append(dst[keep] + r * base)
        padded = np.zeros(base, dtype=bool)
        padded[: fraud.shape[0]] = fraud
        frauds.append(padded)
        split = np.full(base, -1, dtype=np.int8)
        split[: fraud.shape[0]] = account_splits(fraud, seed, r)
        splits.append(split)
        own = np.zeros(base, dtype=bool)
        own[: fraud.shape[0]] = owner == bank
        owns.append(own)
    out = BankData(np.concatenate([x for x in xs if x.size]).astype(np.float32), np.concatenate(srcs),
                   np.concatenate(dsts), np.concatenate(frauds), np.concatenate(splits), np.concatenate(owns))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, x=out.x, src=out.src, dst=out.dst, fraud=out.fraud, split=out.split, own=out.own)
    os.replace(tmp, path)
    return out


class AMLTrainable:
    """One bank's risk scorer (implements :class:`sectorflow.Trainable`).

    Weights: the MLP's parameters (``mlp.0.weight`` ``[F, 64]`` ...), float32. ``fit`` config: ``lr`` (2e-3),
    ``batch_size`` (512), ``proximal_mu`` (FedProx term ``mu/2 * ||w - w_global||^2``, 0 = off), ``seed``.
    ``evaluate`` returns ``(n validation accounts, weighted BCE on validation transactions, {f1, precision, recall,
    threshold})`` with the threshold chosen on those accounts.
    """

    def __init__(self, data: BankData, *, seed: int = SEED, hidden: tuple[int, ...] = (64, 32)) -> None:
        from .scorer_model import RiskMLP, paddle, transform_np

        self.data = data
        self.seed = seed
        self._paddle = paddle
        # Training rows: transactions between training accounts (of any bank), as in training.fit.
        self.train_rows = np.flatnonzero((data.split[data.src] == 0) & (data.split[data.dst] == 0))
        xt = transform_np(data.x[self.train_rows]) if len(self.train_rows) else transform_np(data.x)
        mean, std = xt.mean(axis=0), xt.std(axis=0)
        std[std < 1e-6] = 1.0
        paddle.seed(seed)
        self.model = RiskMLP(mean, std, hidden)
        y = data.y[self.train_rows]
        pos = float(y.sum())
        self.pos_weight = (len(y) - pos) / max(pos, 1.0)
        self._round = 0

    def get_weights(self) -> dict[str, np.ndarray]:
        return {f"mlp.{k}": v.numpy().astype(np.float32).copy() for k, v in self.model.mlp.state_dict().items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        own = self.model.mlp.state_dict()
        names = {f"mlp.{k}" for k in own}
        if set(weights) != names:
            raise ValueError(f"weights {sorted(weights)} do not match the model's {sorted(names)}")
        for k, v in own.items():
            new = np.asarray(weights[f"mlp.{k}"], dtype=np.float32)
            if tuple(new.shape) != tuple(v.shape):
                raise ValueError(f"mlp.{k}: shape {new.shape} != {tuple(v.shape)}")
            v.set_value(new)

    def standardisation(self) -> tuple[np.ndarray, np.ndarray]:
        """The local standardisation ``(mean, std)`` (``[F]`` each) of the model's input transform."""
        return self.model.feat_mean.numpy().copy(), self.model.feat_std.numpy().copy()

    def set_standardisation(self, mean: np.ndarray, std: np.ndarray) -> None:
        """Use another model's standardisation (to evaluate that model, e.g. a bank's own, on this bank's data)."""
        self.model.feat_mean.set_value(np.asarray(mean, dtype=np.float32))
        self.model.feat_std.set_value(np.asarray(std, dtype=np.float32))

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, float]]:
        paddle = self._paddle
        lr = float(config.get("lr", 2e-3))
        batch_size = int(config.get("batch_size", 512))
        mu = float(config.get("proximal_mu", 0.0))
        self._round += 1
        # the round the server names, not this object's count: a simulated bank may be served by a fresh process
        # in any round, and the same seed and data must give the same model (docs/federated.md, reproducible)
        seed = int(config.get("seed", self.seed)) + int(config.get("server_round", self._round))
        paddle.seed(seed)
        rng = np.random.default_rng(seed)
        rows = self.train_rows
        if len(rows) == 0:
            return 0, {"loss": 0.0}
        params = self.model.mlp.parameters()
        anchor = [p.detach().clone() for p in params] if mu > 0 else []
        opt = paddle.optimizer.Adam(learning_rate=lr, parameters=params, weight_decay=1e-5)
        xt = paddle.to_tensor(self.data.x[rows])
        yt = paddle.to_tensor(self.data.y[rows].reshape(-1, 1))
        pos_weight = paddle.to_tensor([self.pos_weight], dtype="float32")
        self.model.train()
        total, count = 0.0, 0
        for _ in range(int(epochs)):
            order = paddle.to_tensor(rng.permutation(len(rows)))
            for begin in range(0, len(rows), batch_size):
                idx = order[begin:begin + batch_size]
                logits = self.model.logits(paddle.gather(xt, idx))
                loss = paddle.nn.functional.binary_cross_entropy_with_logits(
                    logits, paddle.gather(yt, idx), pos_weight=pos_weight)
                if mu > 0:
                    loss = loss + mu / 2 * sum(((p - a) ** 2).sum() for p, a in zip(params, anchor))
                loss.backward()
                opt.step()
                opt.clear_grad()
                total += float(loss) * len(idx)
                count += len(idx)
        self.model.eval()
        return len(rows), {"loss": total / max(count, 1)}

    def tx_scores(self) -> np.ndarray:
        """Scores in ``[0, 1]`` of every transaction of the bank's view (``[n_tx]``)."""
        paddle = self._paddle
        self.model.eval()
        with paddle.no_grad():
            return self.model(paddle.to_tensor(self.data.x)).numpy().reshape(-1)

    def account_view(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, truth)`` of this bank's accounts in ``split`` (``train``/``val``/``test``): each account's
        highest transaction score (``-1`` without transactions) and its laundering flag."""
        code = SPLITS.index(split)
        ids = np.flatnonzero((self.data.split == code) & self.data.own)
        best = account_scores(self.data.src, self.data.dst, self.tx_scores(), self.data.fraud.shape[0])
        return best[ids], self.data.fraud[ids]

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, float]]:
        paddle = self._paddle
        scores, truth = self.account_view(str(config.get("split", "val")))
        rows = np.flatnonzero((self.data.split[self.data.src] == 1) & (self.data.split[self.data.dst] == 1))
        loss = 0.0
        if len(rows):
            with paddle.no_grad():
                logits = self.model.logits(paddle.to_tensor(self.data.x[rows]))
                loss = float(paddle.nn.functional.binary_cross_entropy_with_logits(
                    logits, paddle.to_tensor(self.data.y[rows].reshape(-1, 1)),
                    pos_weight=paddle.to_tensor([self.pos_weight], dtype="float32")))
        threshold = float(config["threshold"]) if "threshold" in config else best_threshold(scores, truth)
        m = prf(scores >= threshold, truth)
        return int(len(truth)), loss, {"f1": m["f1"], "precision": m["precision"], "recall": m["recall"],
                                       "threshold": threshold}


def build(partition: dict[str, Any]) -> AMLTrainable:
    """``TrainableSpec.build`` for the AML scorer (partition keys in the module docstring).

    Raises:
        ConfigError: ``data`` missing or not an AMLSim sample folder, or a bad bank number.
    """
    if "data" not in partition:
        raise ConfigError("The aml trainable needs partition['data']: the amlsim_sample folder.")
    seed = int(partition.get("seed", SEED))
    runs = tuple(partition.get("runs") or RUNS)
    max_tx = partition.get("max_transactions")
    data = load_bank(Path(partition["data"]), int(partition.get("bank", partition.get("partition_id", 0))),
                     int(partition.get("num_banks", partition.get("num_partitions", 1))), runs,
                     int(max_tx) if max_tx else None, seed,
                     Path(partition["cache_dir"]) if partition.get("cache_dir") else None,
                     float(partition.get("own_run_weight", OWN_RUN_WEIGHT)))
    return AMLTrainable(data, seed=seed)


def check(partition: dict[str, Any]) -> None:
    """Cheap checks of a partition before any Flower process starts (``TrainableSpec.check``).

    Raises:
        ConfigError: no ``data``, a missing run folder, or a bank number out of range.
    """
    if "data" not in partition:
        raise ConfigError("The aml risk_mlp trainable needs partition['data']: the amlsim_sample folder.")
    runs = tuple(partition.get("runs") or RUNS)
    missing = [str(Path(partition["data"]) / r) for r in runs
               if not (Path(partition["data"]) / r / "transactions.csv.gz").is_file()]
    if missing:
        raise ConfigError(f"AMLSim run folder(s) {missing} not found: point 'data' at amlsim_sample.")
    bank = int(partition.get("bank", partition.get("partition_id", 0)))
    num_banks = int(partition.get("num_banks", partition.get("num_partitions", 1)))
    if not 0 <= bank < num_banks:
        raise ConfigError(f"bank must be in [0, num_banks={num_banks}), got {bank}.")


KEYS = ("data", "bank", "num_banks", "own_run_weight", "runs", "max_transactions", "seed", "cache_dir")
"""The partition keys ``build`` reads (module docstring); ``sectorflow federate`` refuses any other
(``partition_id``, ``num_partitions``, ``name`` and ``institution`` are always accepted)."""


def trainable_spec() -> TrainableSpec:
    """The spec the plugin registers: task ``aml``, name ``risk_mlp``."""
    return TrainableSpec(task="aml", name="risk_mlp", build=build, check=check, keys=KEYS,
                         path_keys=("data", "cache_dir"),
                         description="AML risk-scorer MLP over one bank's AMLSim accounts (features from its own "
                                     "transaction window)")


def merge_banks(banks: list[BankData]) -> BankData:
    """All banks' views as one (pooled, centralised training: the comparison federated training is measured
    against). Account ids, labels and splits are shared, so they are taken from the first bank; ``own`` is the union."""
    if not banks:
        raise ConfigError("merge_banks needs at least one bank.")
    own = np.zeros_like(banks[0].own)
    for b in banks:
        own |= b.own
    return BankData(np.concatenate([b.x for b in banks]), np.concatenate([b.src for b in banks]),
                    np.concatenate([b.dst for b in banks]), banks[0].fraud, banks[0].split, own)
