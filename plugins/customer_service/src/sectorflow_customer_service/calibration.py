"""Validation data of the customer-service intent model, for ``sectorflow models quantize customer_service``.

The banking77 validation slice (10% of each intent's train rows, seed 13: :func:`~.datasets.banking77`, the split of
``scripts/train_intents.py``; banking77: CC BY 4.0, Casanueva et al. 2020, read in place from
``../shared/data/banking77``), tokenized as the pipeline tokenizes (the shipped bundle's WordPiece vocabulary, at most
64 pieces), batches of 32 sorted by length; metric: accuracy of the ``banking77`` head. Never the test split.

The bundle quantized is the ``paddle-inference`` bundle the pipeline builds from the shipped one at load
(``$SECTORFLOW_HOME/customer_service/inference/<hash>``); the ``UnsupportedPrecisionError`` of
``Taskflow("customer_service", precision="int8")`` gives the exact ``sectorflow models quantize customer_service
--task-path ...`` command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sectorflow import QuantizationError, ValidationSet, load_bundle

DATA = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "banking77"
"""Where banking77 is read in place (``../shared/data/banking77`` next to the repository)."""

SHIPPED = Path(__file__).resolve().parent / "bundle"
"""The shipped bundle, whose vocabulary the pipeline tokenizes with."""

BATCH = 32
MAX_LEN = 64


def validation(bundle: Any, *, data: Path | None = None, limit: int | None = None) -> ValidationSet:
    """The intent model's validation set.

    Args:
        bundle: the built ``paddle-inference`` bundle (its manifest ``outputs`` name the heads).
        data: the banking77 folder (default :data:`DATA`).
        limit: keep every ``len // limit``-th text only, about ``limit`` texts over all lengths (a quick check).
            ``None``: the whole slice (1,000 texts).

    Returns:
        batches ``{"input_ids": int64 [<=32, <=64]}``; metric: banking77 accuracy in ``[0, 1]``.

    Raises:
        QuantizationError: banking77 is not there, or ``bundle`` has no ``banking77`` output (not the bundle the
            pipeline builds from a shipped intent bundle).
    """
    from .datasets import banking77, banking77_labels
    from .runtime import tokenizer_of

    outputs = list(bundle.manifest.get("outputs") or [])
    if "banking77" not in outputs:
        raise QuantizationError(
            f"{bundle.path}: no 'banking77' output in the manifest ({outputs}); quantize the paddle-inference bundle "
            f"the pipeline builds from its shipped intent bundle (the --task-path that "
            f"Taskflow('customer_service', precision='int8') names).", details={"task": "customer_service"})
    root = Path(data) if data is not None else DATA
    if not (root / "train.csv").is_file():
        raise QuantizationError(f"The customer_service validation data is missing: {root / 'train.csv'} (banking77; "
                                f"place ../shared/data/banking77 next to the repository or pass data=).",
                                details={"task": "customer_service", "data": str(root)})
    head = outputs.index("banking77")
    tokenizer = tokenizer_of(load_bundle(SHIPPED, expected_task="customer_service"))
    index = {name: i for i, name in enumerate(banking77_labels(root))}
    rows = sorted(banking77(root)["val"], key=lambda r: len(r[0]))
    if limit is not None:
        rows = rows[::max(1, len(rows) // max(1, int(limit)))]
    batches, truth = [], []
    for begin in range(0, len(rows), BATCH):
        part = rows[begin:begin + BATCH]
        batches.append({"input_ids": tokenizer.encode_batch([t for t, _ in part], MAX_LEN)})
        truth.extend(index[label] for _, label in part)

    def metric(outs: list[list[np.ndarray]], labels: Any) -> float:
        predicted = np.concatenate([o[head].argmax(axis=-1) for o in outs])
        return float((predicted == np.asarray(labels)).mean())

    return ValidationSet(batches=batches, labels=np.asarray(truth), metric=metric, metric_name="banking77 accuracy",
                         split=f"banking77 validation slice (10% of train, seed 13), {len(rows)} texts")
