"""The account MLP as a federated :class:`sectorflow.Trainable` over one bank's own files (task ``aml``, name
``account_mlp``; ``sectorflow federate aml``).

An institution is its own **transactions** (any file ``sectorflow run aml`` reads, with the same column options) and
its own **labels** (a file ``sectorflow aml train --labels`` takes). Partition keys (a ``[[institutions]]`` table in
simulation; the SuperNode's ``--node-config`` in deployment, dashes read as underscores):

- ``transactions`` (required), ``labels`` (required), ``format`` (default: guessed), ``columns`` (a table
  ``{transaction_field = "source column"}``, or flat ``column_<field> = "source column"`` keys as a node config
  allows), ``defaults`` (``{field = value}``), ``input_timezone``, ``lookback_days`` (30), ``seed``, ``val_share``
  (0.25), ``max_transactions`` (first N, for quick tests), ``cache_dir`` (replays cached as ``.npz``; default
  ``~/.cache/sectorflow/aml-account-federated``).
- Simulation of several banks on one shared file: ``bank = "bank_a"`` keeps only the transactions that touch an
  account of that bank (a cross-bank transfer is seen by both banks, as in reality) and only that bank's labels;
  ``bank_accounts`` names the file holding ``ACCOUNT_ID,BANK_ID`` (default: the labels file, e.g. AMLGentex
  ``accounts.csv.gz``).

Training is :mod:`sectorflow_aml.account_mlp`'s: the same rows, split (seeded stratified validation accounts, the
time hold-out) and loss as ``sectorflow aml train --model mlp``. The standardisation travels with the weights as the
first and second moments of the transformed training rows (``input.mean``, ``input.sq``): in round 1 each bank
returns its own, so the example-weighted average is the pooled moments (exact, also under SecAgg+); from round 2 on
every bank standardises with the pooled moments it received in round 2 and returns them unchanged. Under local DP
they are clipped and noised like every other weight (the guarantee covers all that a bank sends): the bundle's
moments then carry one round's noise (it does not add up over rounds, since every round returns the frozen ones;
in deployment a SuperNode keeps no state between rounds, so there each round starts from the moments it received
and the noise does add up, docs/federated.md Limits). :meth:`AccountMLPTrainable.evaluate` returns account-level validation AP and, as ``count.*`` metrics
(summed, not averaged, by the federated layer), histograms of the validation account-month maximum margins per class,
from which :func:`export` fits the Platt calibration of the bundle: no account's score leaves its bank.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import ConfigError, TrainableSpec

from .account_mlp import (HIDDEN, MLP_PARAMS, MLPMargin, TrainedMLP, make_net, moments, net_weights, optimizer,
                          pos_weight_of, set_net_weights, std_of, train_epochs, transform, write_mlp_bundle)
from .account_training import Replay, _stack, account_max, fit_platt, labels_of, period_max, replay, split_accounts
from .labels import Labels, read_labels
from .learn_cli import bundle_identity, check_label_overlap

FEDERATED_NAME = "aml-account-mlp-federated"
"""The model name of a bundle ``sectorflow federate aml`` writes (results' ``meta.model_name``); its version is
``<UTC date>+<digest>`` as for ``aml train``'s own bundles (:func:`sectorflow_aml.learn_cli.bundle_identity`)."""
from .metrics import average_precision

BINS = np.linspace(-16.0, 16.0, 65)
"""Edges of the calibration histograms (margin clipped to [-16, 16], 64 bins of 0.5)."""
CENTRES = (BINS[:-1] + BINS[1:]) / 2
MOMENT_SCALE = np.float32(4.0)
"""The moments travel as those of ``t / 4`` (SecAgg+ clips every value sent to ``secagg.clipping_range``, 8 by
default: ``E[t^2]`` of a count near 100 is about 21)."""


def _bank_accounts(path: Path, bank: str) -> set[str]:
    """Accounts whose ``BANK_ID`` (or ``bank_id``) is ``bank`` in a CSV(.gz).

    Raises:
        ConfigError: no such file or column, or no account of that bank.
    """
    import csv

    try:
        handle = gzip.open(path, "rt", newline="") if str(path).endswith(".gz") else open(path, newline="")
    except FileNotFoundError:
        raise ConfigError(f"bank_accounts file {path} not found.") from None
    with handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        acc = next((c for c in ("ACCOUNT_ID", "account_id") if c in fields), None)
        col = next((c for c in ("BANK_ID", "bank_id", "bank") if c in fields), None)
        if acc is None or col is None:
            raise ConfigError(f"{path} has no ACCOUNT_ID and BANK_ID columns (header {','.join(fields)!r}): give "
                              "bank_accounts = a file listing each account's bank.")
        out = {row[acc] for row in reader if row[col] == bank}
    if not out:
        raise ConfigError(f"No account of bank {bank!r} in {path}.")
    return out


def _mapping(partition: Mapping[str, Any]) -> dict[str, str] | None:
    cols = dict(partition.get("columns") or {})
    cols.update({k[len("column_"):]: str(v) for k, v in partition.items() if k.startswith("column_")})
    return cols or None


def check(partition: Mapping[str, Any]) -> None:
    """Checks before any Flower process starts: required keys, files exist, the labels file reads; then the
    institution's view is read (:func:`load_view`, cached for the run's clients) so that labels of another dataset
    are refused here, as ``aml train`` refuses them, not inside a Flower client.

    Raises:
        ConfigError: a missing key or file, an unknown format. LabelsError: a labels file that cannot be read, or
            labels of which fewer than half of the accounts transact in the file
            (:func:`sectorflow_aml.learn_cli.check_label_overlap`).
    """
    _check_files(partition)
    load_view(partition)


def _check_files(partition: Mapping[str, Any]) -> None:
    """The cheap part of :func:`check` (no transaction read)."""
    from .loaders import READERS

    for key in ("transactions", "labels"):
        if not partition.get(key):
            raise ConfigError(f"The aml account_mlp trainable needs {key!r} (the institution's own "
                              f"{'transaction file' if key == 'transactions' else 'account labels file'}).")
    path = Path(str(partition["transactions"]))
    if not path.is_file():
        raise ConfigError(f"transactions file {path} not found.")
    fmt = partition.get("format")
    if fmt and fmt not in READERS:
        raise ConfigError(f"format {fmt!r}: give one of {', '.join(sorted(READERS))}.")
    labels = read_labels(str(partition["labels"]))
    if partition.get("bank"):
        own = _bank_accounts(Path(str(partition.get("bank_accounts") or partition["labels"])), str(partition["bank"]))
        if not own & set(labels.label):
            raise ConfigError(f"None of bank {partition['bank']!r}'s accounts is labelled in {partition['labels']}.")


def load_view(partition: Mapping[str, Any]) -> tuple[Replay, Labels]:
    """The institution's replay and labels (cached as ``.npz`` by the file's size, time and the settings).

    Raises:
        ConfigError / LabelsError / InvalidInputError: as :func:`check` and the loaders. LabelsError: labels of
            another dataset, fewer than half of them transact in the file (as ``aml train`` refuses them,
            :func:`sectorflow_aml.learn_cli.check_label_overlap`).
    """
    from .account_features import ACCOUNT_FEATURES
    from .loaders import guess_format, load_transactions

    _check_files(partition)
    path = Path(str(partition["transactions"]))
    labels = read_labels(str(partition["labels"]))
    bank = str(partition.get("bank") or "")
    own: set[str] | None = None
    if bank:
        own = _bank_accounts(Path(str(partition.get("bank_accounts") or partition["labels"])), bank)
        labels = Labels({a: v for a, v in labels.label.items() if a in own},
                        {a: t for a, t in labels.typologies.items() if a in own}, labels.source)
    lookback = float(partition.get("lookback_days", 30.0))
    max_tx = int(partition["max_transactions"]) if partition.get("max_transactions") else None
    st = path.stat()
    key = hashlib.sha256(json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns, bank, lookback, max_tx,
                                     partition.get("format"), _mapping(partition), partition.get("defaults"),
                                     partition.get("input_timezone"), list(ACCOUNT_FEATURES)],
                                    sort_keys=True, default=str).encode()).hexdigest()[:24]
    cache = Path(str(partition.get("cache_dir") or Path.home() / ".cache" / "sectorflow" / "aml-account-federated"))
    file = cache / f"view-{key}.npz"
    if file.is_file():
        with np.load(file, allow_pickle=False) as z:
            rep = Replay(str(path), z["x"], z["account"], z["day"], z["month"], z["snapshot"],
                         [str(a) for a in z["accounts"]], int(z["n"]), 0.0, str(z["digest"]))
        check_label_overlap(labels, set(rep.accounts), str(path), str(partition["labels"]))
        return rep, labels
    fmt = partition.get("format") or guess_format(path)
    options: dict[str, Any] = {}
    if partition.get("defaults"):
        options["defaults"] = dict(partition["defaults"])
    txns, _ = load_transactions(path, format=fmt, mapping=_mapping(partition),
                                input_timezone=partition.get("input_timezone"), **options)
    if max_tx:
        txns = txns[:max_tx]
    if own is not None:
        txns = [t for t in txns if t.sender_account in own or t.receiver_account in own]
    rep = replay(txns, lookback, name=str(path))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, x=rep.x, account=rep.account, day=rep.day, month=rep.month, snapshot=rep.snapshot,
             accounts=np.asarray(rep.accounts, dtype=str), n=rep.n_transactions, digest=rep.digest)
    os.replace(tmp, file)
    check_label_overlap(labels, set(rep.accounts), str(path), str(partition["labels"]))
    return rep, labels


class AccountMLPTrainable:
    """One institution's account MLP (implements :class:`sectorflow.Trainable`; see the module docstring).

    Weights: ``l0.weight`` ``[F, 64]`` ... ``l2.bias`` ``[1]`` and ``input.mean`` / ``input.sq`` ``[F]`` (the moments
    of ``t / 4``, :data:`MOMENT_SCALE`), float32.
    ``fit`` config: ``lr`` (2e-3), ``batch_size``, ``proximal_mu`` (FedProx), ``seed``. ``evaluate`` returns
    ``(validation accounts, weighted BCE of validation rows, {"average_precision", "count.pos.i", "count.neg.i",
    ...})``.
    """

    def __init__(self, rep: Replay, labels: Labels, *, seed: int = 20211, val_share: float = 0.25,
                 time_holdout: float = 0.2, hidden: tuple[int, ...] = HIDDEN) -> None:
        self.rep, self.labels, self.seed = rep, labels, seed
        y = labels_of(rep, labels)
        val = split_accounts(y, val_share, seed)
        self.xt, self.yt, self.xv, self.av, self.mv, self.yv_acc = _stack([rep], [y], [val], time_holdout)
        if not self.yt.size or self.yt.sum() in (0, self.yt.size) or not np.any(self.yv_acc > 0):
            from sectorflow import InvalidInputError

            raise InvalidInputError(f"{rep.name}: this institution's training split has {self.yt.size} rows "
                                    f"({int(self.yt.sum())} of laundering accounts) and its validation split "
                                    f"{int(np.sum(self.yv_acc > 0))} laundering accounts: it needs labelled "
                                    "laundering and legitimate accounts that transact (more data or more labels).")
        self.local_mean, self.local_sq = moments(self.xt)
        self.mean, self.sq = self.local_mean.copy(), self.local_sq.copy()
        self.net = make_net(hidden, seed)
        self.pos_weight = pos_weight_of(self.yt)
        self._round = 0
        self.frozen: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def std(self) -> np.ndarray:
        return std_of(self.mean, self.sq)

    def get_weights(self) -> dict[str, np.ndarray]:
        # sent as the moments of t / 4 (E[t] / 4, E[t^2] / 16): within SecAgg+'s clipping range (8) up to |t| = 11
        return {**net_weights(self.net), "input.mean": self.mean / MOMENT_SCALE,
                "input.sq": self.sq / MOMENT_SCALE ** 2}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        own = self.get_weights()
        if set(weights) != set(own):
            raise ValueError(f"weights {sorted(weights)} do not match the model's {sorted(own)}")
        set_net_weights(self.net, weights)
        self.mean = np.asarray(weights["input.mean"], np.float32) * MOMENT_SCALE
        self.sq = np.asarray(weights["input.sq"], np.float32) * MOMENT_SCALE ** 2

    def margin(self) -> MLPMargin:
        return MLPMargin(net_weights(self.net), self.mean, self.std)

    def fit(self, epochs: int = 1, **config: Any) -> tuple[int, dict[str, Any]]:
        import paddle

        self._round += 1
        server_round = int(config.get("server_round", self._round))
        if server_round >= 2:
            if self.frozen is None:  # the first pooled moments: kept for the rest of the run
                self.frozen = (self.mean.copy(), self.sq.copy())
            self.mean, self.sq = self.frozen[0].copy(), self.frozen[1].copy()
        seed = int(config.get("seed", self.seed)) + server_round  # the same in deployment (a process per round)
        paddle.seed(seed)
        mu = float(config.get("proximal_mu", 0.0))
        anchors = [p.detach().clone() for p in self.net.parameters()] if mu > 0 else []
        z = (transform(self.xt) - self.mean) / self.std
        opt = optimizer(self.net, float(config.get("lr", MLP_PARAMS["lr"])), MLP_PARAMS["weight_decay"])
        loss = train_epochs(self.net, opt, z, self.yt, epochs=int(epochs),
                            batch_size=int(config.get("batch_size", MLP_PARAMS["batch_size"])),
                            pos_weight=self.pos_weight, rng=np.random.default_rng(seed),
                            proximal=(mu, anchors) if mu > 0 else None)
        if server_round <= 1:
            # round 1 returns this bank's own moments: their example-weighted average is the pooled moments; later
            # rounds train with and return the pooled moments of round 1, frozen (under local DP, each round's
            # noise on them then does not add up over the rounds, and clipping spends almost nothing on them)
            self.mean, self.sq = self.local_mean.copy(), self.local_sq.copy()
        return int(self.yt.size), {"loss": loss, "data_sha256": self.rep.digest,
                                   "transactions": self.rep.n_transactions}

    def evaluate(self, **config: Any) -> tuple[int, float, dict[str, Any]]:
        vmask = self.yv_acc >= 0
        raw = self.margin()(self.xv) if self.xv.shape[0] else np.zeros(0)
        y_rows = self.yv_acc[self.av].astype(np.float64) if raw.size else np.zeros(0)
        w = np.where(y_rows > 0, self.pos_weight, 1.0)
        loss = float(np.sum(w * (np.logaddexp(0, raw) - y_rows * raw)) / max(w.sum(), 1e-9)) if raw.size else 0.0
        acc = account_max(raw, self.av, self.yv_acc.size)[vmask]
        acc[~np.isfinite(acc)] = -16.0
        y = self.yv_acc[vmask]
        ap = average_precision(acc, y) if y.size and y.sum() else 0.0
        metrics: dict[str, Any] = {"average_precision": ap, "count.accounts": int(y.size),
                                   "count.laundering": int(y.sum())}
        if raw.size:
            pm, pa = period_max(raw, self.av, self.mv)
            py = self.yv_acc[pa]
            for cls, name in ((1, "pos"), (0, "neg")):
                counts = np.histogram(np.clip(pm[py == cls], -15.99, 15.99), BINS)[0]
                metrics.update({f"count.{name}.{i}": int(c) for i, c in enumerate(counts) if c})
        return int(y.size), loss, metrics


def build(partition: dict[str, Any]) -> AccountMLPTrainable:
    """``TrainableSpec.build``: the institution's trainable (partition keys in the module docstring)."""
    rep, labels = load_view(partition)
    return AccountMLPTrainable(rep, labels, seed=int(partition.get("seed", 20211)),
                               val_share=float(partition.get("val_share", 0.25)))


def global_margin(arrays: list[np.ndarray]) -> MLPMargin:
    """The NumPy margin of a federated run's global weights (``arrays`` in :func:`names` order)."""
    w = dict(zip(names(), arrays))
    mean = np.asarray(w["input.mean"], np.float32) * MOMENT_SCALE
    return MLPMargin({k: v for k, v in w.items() if not k.startswith("input.")}, mean,
                     std_of(mean, np.asarray(w["input.sq"], np.float32) * MOMENT_SCALE ** 2))


def names() -> list[str]:
    """The trainable's weight names in the order the federated layer sends them (sorted)."""
    return sorted([*(f"l{i}.{p}" for i in range(len(HIDDEN) + 1) for p in ("weight", "bias")),
                   "input.mean", "input.sq"])


def platt_from_counts(metrics: Mapping[str, Any]) -> tuple[float, float]:
    """Platt ``(a, b)`` fitted on the summed ``count.pos.i`` / ``count.neg.i`` histograms (bin centres)."""
    margins, ys = [], []
    for cls, name in ((1, "pos"), (0, "neg")):
        counts = np.asarray([int(round(float(metrics.get(f"count.{name}.{i}", 0)))) for i in range(CENTRES.size)])
        margins.append(np.repeat(CENTRES, counts))
        ys.append(np.full(int(counts.sum()), cls))
    m, y = np.concatenate(margins), np.concatenate(ys)
    if not y.size or y.min() == y.max():
        raise ConfigError("The federated run's validation histograms hold one class only: cannot calibrate.")
    return fit_platt(m, y)


def export(arrays: list[np.ndarray], run: dict[str, Any], out: Path) -> Path:
    """Write the federated run's kept global model (``arrays``: the round ``run["selection"]`` names, else the last)
    as an ``account-mlp`` bundle (same layout and manifest as ``sectorflow aml train --model mlp``;
    ``provenance.federation`` = ``run``, the federated layer's record: rounds, strategy, SecAgg+/DP and budget,
    institutions' digests and example counts, audit event ids, the selection). The calibration and
    ``metrics.account_level.validation`` are of that round (``validation.round``). Returns the manifest path.

    Raises:
        ConfigError: arrays of another model, no evaluated round (nothing to calibrate on).
    """
    weights = dict(zip(names(), arrays))
    if len(arrays) != len(weights) or tuple(weights["l0.weight"].shape) != (len(weights["input.mean"]), HIDDEN[0]):
        raise ConfigError(f"The run's {len(arrays)} arrays are not the account MLP's {names()}.")
    rounds = [r for r in run.get("rounds", []) if r.get("eval_metrics")]
    if not rounds:
        raise ConfigError("The federated run evaluated no round (fraction_evaluate = 0?): nothing to calibrate the "
                          "bundle on.")
    chosen = (run.get("selection") or {}).get("round")
    kept = next((r for r in rounds if r["round"] == chosen), rounds[-1])  # the round whose model ``arrays`` are
    last = {**kept["eval_metrics"], **(run.get("counts") or {})}
    ab = platt_from_counts(last)
    net = {k: v for k, v in weights.items() if not k.startswith("input.")}
    mean = np.asarray(weights["input.mean"], np.float32) * MOMENT_SCALE
    std = std_of(mean, np.asarray(weights["input.sq"], np.float32) * MOMENT_SCALE ** 2)
    margins = np.repeat(CENTRES, [int(round(float(last.get(f"count.pos.{i}", 0)))) for i in range(CENTRES.size)])
    validation = {"average_precision": round(float(last.get("average_precision", 0.0)), 4),
                  "average_precision_is": "mean over institutions of each one's validation-account AP, weighted by "
                                          "its validation accounts",
                  "n_accounts": int(float(last.get("count.accounts", 0))),
                  "laundering_accounts": int(float(last.get("count.laundering", 0))),
                  "by_institution": kept.get("eval_by_institution", []),
                  "round": kept["round"],
                  "history": [(r["round"], round(float(r["eval_metrics"].get("average_precision", 0.0)), 4))
                              for r in rounds],
                  "threshold_best_f1": None,
                  "calibrated_positive_period_margins": int(margins.size)}
    params = dict(MLP_PARAMS, seed=run.get("seed"), lr=run.get("lr"), local_epochs=run.get("local_epochs"))
    trained = TrainedMLP(net, mean, std, ab, validation, params)
    datasets = [{"institution": p.get("institution"), "sha256_as_read": p.get("data_sha256"),
                 "training_rows": p.get("num_examples")} for p in run.get("institutions", [])]
    # the identity of aml train's own bundles (aml-account-mlp-own), for a federated one: never the shipped
    # model's, and a version per data (date + digest of the institutions' data digests), not a fixed 1.0.0
    name, version = bundle_identity("mlp", datasets, FEDERATED_NAME)
    return write_mlp_bundle(out, trained, lookback_days=float(run.get("lookback_days", 30.0)), datasets=datasets,
                            command=str(run.get("command", "sectorflow federate aml")),
                            name=name, version=version, extra={"federation": run})


KEYS = ("transactions", "labels", "format", "columns", "column_*", "defaults", "input_timezone",
        "lookback_days", "seed", "val_share", "bank", "bank_accounts", "max_transactions", "cache_dir")
"""The partition keys ``build`` reads (module docstring); ``sectorflow federate`` refuses any other
(``partition_id``, ``num_partitions``, ``name`` and ``institution`` are always accepted)."""


def trainable_spec() -> TrainableSpec:
    """The spec the plugin registers: task ``aml``, name ``account_mlp``."""
    return TrainableSpec(task="aml", name="account_mlp", build=build, check=check, export=export, keys=KEYS,
                         path_keys=("transactions", "labels", "bank_accounts", "cache_dir"),
                         description="account risk MLP over one bank's own transaction and label files (same "
                                     "trainer as `sectorflow aml train --model mlp`; ends in a servable bundle)")
