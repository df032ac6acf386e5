"""Validation data of the AML risk scorer, for ``sectorflow models quantize aml`` (``Int8Spec.validation``).

Every transaction of the first two training runs (``../shared/data/amlsim_sample``: IBM/AMLSim, Apache-2.0;
Suzumura & Kanezashi 2021) replayed through the plugin's feature code (:func:`sectorflow_aml.training.replay`);
metric: account-level F1 at the bundle's threshold on the held-out 20% of accounts, the split
(:func:`~sectorflow_aml.training.account_split`, seed + run index) and metric the bundle's manifest reports. Never the
test run (``RUNS[2]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sectorflow import QuantizationError, ValidationSet

DATA = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "amlsim_sample"
"""Where the AMLSim runs are read in place (``../shared/data/amlsim_sample`` next to the repository)."""

BATCH = 8192


def validation(bundle: Any, *, data: Path | None = None, limit: int | None = None) -> ValidationSet:
    """The scorer's validation set.

    Args:
        bundle: the fp32 ``aml`` bundle (its ``scorer.json`` gives the decision threshold).
        data: folder of the AMLSim runs (default :data:`DATA`).
        limit: keep only the first ``limit`` transactions of each run (a quick check; the metric then covers the
            validation accounts seen in them). ``None``: every transaction.

    Returns:
        batches ``{"features": float32 [<=8192, 28]}``; metric: account-level F1 (in ``[0, 1]``).

    Raises:
        QuantizationError: the AMLSim runs are not there (the message names the folder).
    """
    from .training import RUNS, SEED, account_scores, account_split, prf, replay

    root = Path(data) if data is not None else DATA
    missing = [name for name in RUNS[:2] if not (root / name / "transactions.csv.gz").is_file()]
    if missing:
        raise QuantizationError(f"The aml validation data is missing: {[str(root / m) for m in missing]} "
                                f"(IBM/AMLSim runs; place ../shared/data/amlsim_sample next to the repository or "
                                f"pass data=).", details={"task": "aml", "data": str(root)})
    threshold = float(bundle.read_json("scorer.json")["threshold"])
    runs = [replay(root / name) for name in RUNS[:2]]
    batches, pieces = [], []
    for i, run in enumerate(runs):
        n = len(run.x) if limit is None else min(len(run.x), int(limit))
        for begin in range(0, n, BATCH):
            batches.append({"features": np.ascontiguousarray(run.x[begin:min(begin + BATCH, n)], np.float32)})
            pieces.append(i)

    def metric(outputs: list[list[np.ndarray]], labels: Any) -> float:
        scores, truth = [], []
        for i, run in enumerate(runs):
            tx = np.concatenate([o[0].reshape(-1) for o, p in zip(outputs, pieces) if p == i])
            n = len(tx)
            best = account_scores(run.src[:n], run.dst[:n], tx, run.fraud.shape[0])
            val = account_split(run.fraud, SEED + i)
            scores.append(best[val])
            truth.append(run.fraud[val])
        return float(prf(np.concatenate(scores) >= threshold, np.concatenate(truth))["f1"])

    what = " + ".join(RUNS[:2]) + ("" if limit is None else f", first {limit} transactions each")
    return ValidationSet(batches=batches, labels=None, metric=metric, metric_name="account-level F1",
                         split=f"held-out 20% of accounts (seeded, stratified) of {what}")
