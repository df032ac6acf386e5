"""Training of the risk scorer on IBM AMLSim runs (used by ``scripts/train_scorer.py`` and ``benchmarks/aml_eval.py``).

Data: ``../shared/data/amlsim_sample/<run>/{transactions,nodes}.csv.gz`` (IBM/AMLSim, Apache-2.0; Suzumura &
Kanezashi 2021). Labels are per account (``nodes.csv.gz``: ``isFraud``).

- Replay: each run goes, in file (= time) order, through the same :class:`~sectorflow_aml.window.TransactionWindow`
  and :class:`~sectorflow_aml.features.FeatureExtractor` that serve ``Taskflow("aml")``: no train/serve skew.
- Transaction label: 1 when both sender and receiver are laundering accounts (flagging a transaction flags both of
  its accounts, so a transfer between a laundering and a normal account must not be learned as positive).
- Split: within each training run a seeded 20 % of accounts is held out; the model trains on transactions between
  the other accounts, and the threshold is chosen on the held-out accounts. The evaluation run is never seen.
- Account-level decision: an account is flagged when any transaction it sends or receives scores at or above the
  threshold (:func:`account_scores`).
- Class imbalance: positive transactions are weighted by ``n_neg / n_pos`` in the BCE loss.
"""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from .features import FEATURE_NAMES, FeatureExtractor, stack
from .schema import Transaction
from .window import TransactionWindow

AMLSIM_EPOCH = datetime(2017, 1, 1, tzinfo=timezone.utc)
"""Step 0 of an AMLSim run; one AMLSim step is one day (AMLSim's own convention)."""

RUNS = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")
LOOKBACK_DAYS = 30.0
SEED = 20211


@dataclass
class Replayed:
    """One AMLSim run replayed through the window and feature code."""

    name: str
    x: np.ndarray                 # [n_tx, F] float32
    src: np.ndarray               # [n_tx] int64 node ids
    dst: np.ndarray               # [n_tx] int64 node ids
    fraud: np.ndarray             # [n_accounts] bool, indexed by node id
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def y(self) -> np.ndarray:
        """Transaction labels: both accounts are laundering accounts."""
        return (self.fraud[self.src] & self.fraud[self.dst]).astype(np.float32)


def read_amlsim_csv(folder: Path) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray]:
    """Parse an AMLSim run folder: ``(src, dst, value_texts, step, fraud)``.

    ``value_texts`` keeps the amount text as written (it becomes a ``Decimal`` exactly); ``fraud`` is a bool array
    indexed by node id.

    Raises:
        FileNotFoundError: the folder lacks ``transactions.csv.gz`` or ``nodes.csv.gz``.
    """
    src, dst, values, steps = [], [], [], []
    with gzip.open(folder / "transactions.csv.gz", "rt", encoding="ascii") as handle:
        next(handle)
        for line in handle:
            a, b, v, t = line.rstrip("\n").split(",")
            src.append(int(a))
            dst.append(int(b))
            values.append(v)
            steps.append(int(float(t)))
    ids, flags = [], []
    with gzip.open(folder / "nodes.csv.gz", "rt", encoding="ascii") as handle:
        next(handle)
        for line in handle:
            parts = line.split(",")
            ids.append(int(parts[0]))
            flags.append(parts[1] == "1")
    fraud = np.zeros(max(ids) + 1, dtype=bool)
    fraud[np.asarray(ids)] = np.asarray(flags)
    return np.asarray(src), np.asarray(dst), values, np.asarray(steps), fraud


def amlsim_transactions(src: np.ndarray, dst: np.ndarray, values: list[str], steps: np.ndarray) -> list[Transaction]:
    """AMLSim rows as :class:`Transaction` objects (account ids are the node ids as text; step ``k`` is
    ``AMLSIM_EPOCH + k days``; currency CNY; channel transfer). Built without re-validation: the CSV is trusted."""
    out = []
    construct = Transaction.model_construct
    day_cache: dict[int, datetime] = {}
    for i, (a, b, v, k) in enumerate(zip(src.tolist(), dst.tolist(), values, steps.tolist())):
        ts = day_cache.get(k)
        if ts is None:
            ts = day_cache[k] = AMLSIM_EPOCH + timedelta(days=k)
        out.append(construct(transaction_id=f"tx-{i}", timestamp=ts, sender_account=str(a),
                             receiver_account=str(b), amount=Decimal(v), currency="CNY"))
    return out


EVERYDAY_SEEDS = (101, 102, 103, 104)
"""Seeds of the generated everyday banks added to training (:mod:`sectorflow_aml.everyday`); the benchmark
``benchmarks/aml_everyday.py`` reports false alarms on seed 7, never trained on."""


def replay_everyday(seed: int, lookback_days: float = LOOKBACK_DAYS, customers: int = 300,
                    days: int = 150) -> Replayed:
    """Features of a generated everyday bank (:func:`sectorflow_aml.everyday.everyday_bank`, no laundering: every
    account labelled normal), computed as at serving time; account ids become integers in order of appearance."""
    from .everyday import everyday_bank

    start = time.perf_counter()
    txns = everyday_bank(seed, customers, days)
    ids: dict[str, int] = {}
    src = np.asarray([ids.setdefault(t.sender_account, len(ids)) for t in txns], dtype=np.int64)
    dst = np.asarray([ids.setdefault(t.receiver_account, len(ids)) for t in txns], dtype=np.int64)
    window = TransactionWindow(lookback_days=lookback_days)
    extractor = FeatureExtractor(window.lookback)
    rows = []
    for txn in txns:
        window.add(txn)
        rows.append(extractor.row(txn, window))
    x = stack(rows)
    scored = np.asarray([not t.channel.is_cash for t in txns])  # the pipeline scores no cash (see pipeline.py)
    return Replayed(f"everyday-{seed}", x[scored], src[scored], dst[scored], np.zeros(len(ids), dtype=bool),
                    time.perf_counter() - start, {"customers": customers, "days": days})


def replay(folder: Path, lookback_days: float = LOOKBACK_DAYS) -> Replayed:
    """Features of every transaction of one AMLSim run, computed in arrival order as at serving time."""
    start = time.perf_counter()
    src, dst, values, steps, fraud = read_amlsim_csv(folder)
    txns = amlsim_transactions(src, dst, values, steps)
    window = TransactionWindow(lookback_days=lookback_days)
    extractor = FeatureExtractor(window.lookback)
    rows = []
    add = window.add
    row = extractor.row
    for txn in txns:
        add(txn)
        rows.append(row(txn, window))
    return Replayed(folder.name, stack(rows), src, dst, fraud, time.perf_counter() - start,
                    {"steps": (int(steps.min()), int(steps.max())) if len(steps) else None})


def account_split(fraud: np.ndarray, seed: int, val_fraction: float = 0.2) -> np.ndarray:
    """Bool mask over node ids: ``True`` for validation accounts (a seeded, stratified ``val_fraction``)."""
    rng = np.random.default_rng(seed)
    val = np.zeros(fraud.shape[0], dtype=bool)
    for cls in (False, True):
        ids = np.flatnonzero(fraud == cls)
        rng.shuffle(ids)
        val[ids[: int(round(len(ids) * val_fraction))]] = True
    return val


def account_scores(src: np.ndarray, dst: np.ndarray, tx_scores: np.ndarray, n_accounts: int) -> np.ndarray:
    """Per account, the highest score of any transaction it sends or receives (``-1`` for an account without
    transactions). Shape ``[n_accounts]``."""
    best = np.full(n_accounts, -1.0, dtype=np.float64)
    np.maximum.at(best, src, tx_scores)
    np.maximum.at(best, dst, tx_scores)
    return best


def prf(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Precision, recall, F1 and counts of boolean predictions against boolean truth."""
    tp = int((pred & truth).sum())
    fp = int((pred & ~truth).sum())
    fn = int((~pred & truth).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "tp": tp, "fp": fp, "fn": fn}


def best_threshold(scores: np.ndarray, truth: np.ndarray) -> float:
    """The account-score threshold with the highest F1 on (validation) accounts; ties go to the higher threshold.
    Candidates are the scores rounded to 4 decimals, below 1 (a threshold of 1 leaves no room above it)."""
    candidates = np.unique(np.round(scores[scores >= 0], 4))
    candidates = candidates[candidates < 1.0]
    best_t, best_f = 0.5, -1.0
    for t in candidates[::-1]:
        f = prf(scores >= t, truth)["f1"]
        if f > best_f:
            best_t, best_f = float(t), f
    return best_t


def train_mlp(x: np.ndarray, y: np.ndarray, *, epochs: int = 12, batch_size: int = 512, lr: float = 2e-3,
              seed: int = SEED, hidden: tuple[int, ...] = (64, 32)) -> Any:
    """Train :class:`~sectorflow_aml.scorer_model.RiskMLP` with positive-class weight ``n_neg / n_pos``.

    Returns the trained layer (eval mode). Deterministic for a given seed on CPU.
    """
    from .scorer_model import RiskMLP, paddle, transform_np

    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    xt_np = transform_np(x)
    mean = xt_np.mean(axis=0)
    std = xt_np.std(axis=0)
    std[std < 1e-6] = 1.0
    model = RiskMLP(mean, std, hidden)
    pos = float(y.sum())
    pos_weight = paddle.to_tensor([(len(y) - pos) / max(pos, 1.0)], dtype="float32")
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=model.parameters(), weight_decay=1e-5)
    xt = paddle.to_tensor(x)
    yt = paddle.to_tensor(y.reshape(-1, 1))
    model.train()
    for _ in range(epochs):
        order = paddle.to_tensor(rng.permutation(len(y)))
        for begin in range(0, len(y), batch_size):
            idx = order[begin:begin + batch_size]
            logits = model.logits(paddle.gather(xt, idx))
            loss = paddle.nn.functional.binary_cross_entropy_with_logits(logits, paddle.gather(yt, idx),
                                                                         pos_weight=pos_weight)
            loss.backward()
            opt.step()
            opt.clear_grad()
    model.eval()
    return model


def export(model: Any, folder: Path) -> None:
    """``paddle.jit.save`` the layer to ``folder/model.{json,pdiparams}`` (input ``[None, F]`` float32) and
    ``paddle.save`` its state dict to ``folder/model.pdparams``."""
    from .scorer_model import paddle

    folder.mkdir(parents=True, exist_ok=True)
    spec = [paddle.static.InputSpec([None, len(FEATURE_NAMES)], "float32", "features")]
    paddle.jit.save(model, str(folder / "model"), input_spec=spec)
    paddle.save(model.state_dict(), str(folder / "model.pdparams"))


def predict_files(folder: Path, x: np.ndarray, batch_size: int = 8192) -> np.ndarray:
    """Scores of ``x`` through a ``paddle.inference`` predictor on ``folder/model.{json,pdiparams}`` (oneDNN)."""
    from .scorer_model import paddle

    config = paddle.inference.Config(str(folder / "model.json"), str(folder / "model.pdiparams"))
    config.disable_glog_info()
    config.disable_gpu()
    config.enable_mkldnn()
    config.set_cpu_math_library_num_threads(1)
    predictor = paddle.inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    out = []
    for begin in range(0, len(x), batch_size):
        chunk = np.ascontiguousarray(x[begin:begin + batch_size])
        handle.reshape(chunk.shape)
        handle.copy_from_cpu(chunk)
        predictor.run()
        out.append(predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu().reshape(-1))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


def write_scorer_config(folder: Path, threshold: float, lookback_days: float = LOOKBACK_DAYS) -> None:
    """Write ``scorer.json`` (feature names, lookback, cycle search settings, decision threshold)."""
    config = {"feature_names": list(FEATURE_NAMES), "lookback_days": lookback_days, "threshold": threshold,
              "threshold_rule": "account flagged when any transaction it sends or receives scores >= threshold"}
    (folder / "scorer.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


@dataclass
class FitResult:
    """What :func:`fit` produced: the validated threshold and the validation figures."""

    threshold: float
    validation: dict[str, Any]
    n_train_tx: int
    n_pos_train_tx: int
    seconds: float


def fit(runs: list[Replayed], out_dir: Path, *, seed: int = SEED, epochs: int = 12,
        lookback_days: float = LOOKBACK_DAYS) -> FitResult:
    """Train on ``runs`` (minus a held-out 20 % of each run's accounts), export to ``out_dir`` and choose the
    account-level threshold on the held-out accounts. Writes ``model.json``, ``model.pdiparams``,
    ``model.pdparams`` and ``scorer.json`` (not the manifest: the caller adds its metrics and provenance).
    ``lookback_days`` must be the window lookback the runs were replayed with (it is recorded in ``scorer.json``)."""
    start = time.perf_counter()
    xs, ys, vals = [], [], []
    for i, run in enumerate(runs):
        val = account_split(run.fraud, seed + i)
        keep = ~val[run.src] & ~val[run.dst]
        xs.append(run.x[keep])
        ys.append(run.y[keep])
        vals.append(val)
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    model = train_mlp(x, y, epochs=epochs, seed=seed)
    export(model, out_dir)
    val_scores, val_truth = [], []
    for run, val in zip(runs, vals):
        best = account_scores(run.src, run.dst, predict_files(out_dir, run.x), run.fraud.shape[0])
        val_scores.append(best[val])
        val_truth.append(run.fraud[val])
    scores = np.concatenate(val_scores)
    truth = np.concatenate(val_truth)
    threshold = best_threshold(scores, truth)
    write_scorer_config(out_dir, threshold, lookback_days)
    validation = {"split": "held-out 20% of accounts (seeded, stratified) of " + " + ".join(r.name for r in runs),
                  "n_accounts": int(len(truth)), **prf(scores >= threshold, truth)}
    return FitResult(threshold, validation, int(len(y)), int(y.sum()), time.perf_counter() - start)


def evaluate_files(run: Replayed, folder: Path, threshold: float) -> dict[str, Any]:
    """Account-level precision, recall and F1 of the exported model in ``folder`` on a whole run (every account,
    including those without transactions, which are never flagged)."""
    best = account_scores(run.src, run.dst, predict_files(folder, run.x), run.fraud.shape[0])
    return {"split": f"all accounts of {run.name} (not used in training or threshold choice)",
            "n_accounts": int(run.fraud.shape[0]), **prf(best >= threshold, run.fraud)}
