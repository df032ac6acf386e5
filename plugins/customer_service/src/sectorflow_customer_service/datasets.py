"""Readers for the public intent datasets the models are trained and measured on (read in place, never copied).

- banking77 (Casanueva et al. 2020, CC BY 4.0): ``train.csv`` / ``test.csv`` with columns ``text,category``;
  77 intents. It has no validation split: :func:`banking77` holds out a stratified slice of train (seeded).
- CLINC150 (Larson et al. 2019, CC BY 3.0): ``data_full.json`` with ``train``/``val``/``test`` (150 intents) and
  ``oos_train``/``oos_val``/``oos_test`` (out-of-scope queries, label ``oos``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from sectorflow import ConfigError

OOS = "oos"


def _need(path: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"Dataset file {path} not found (expected the shared data folder layout, "
                          f"e.g. ../shared/data/banking77/train.csv).")
    return path


def banking77(folder: str | Path, val_fraction: float = 0.1, seed: int = 13) -> dict[str, list[tuple[str, str]]]:
    """``{"train", "val", "test"}`` -> list of (text, intent); val is ``val_fraction`` of each intent's train rows."""
    folder = Path(folder)

    def read(name: str) -> list[tuple[str, str]]:
        with _need(folder / name).open(encoding="utf-8", newline="") as handle:
            return [(row["text"], row["category"]) for row in csv.DictReader(handle)]

    train, test = read("train.csv"), read("test.csv")
    rng = np.random.default_rng(seed)
    by_label: dict[str, list[int]] = {}
    for i, (_, label) in enumerate(train):
        by_label.setdefault(label, []).append(i)
    val_idx: set[int] = set()
    for label in sorted(by_label):
        idx = by_label[label]
        take = max(1, int(round(len(idx) * val_fraction)))
        val_idx.update(int(i) for i in rng.choice(idx, size=take, replace=False))
    return {"train": [r for i, r in enumerate(train) if i not in val_idx],
            "val": [r for i, r in enumerate(train) if i in val_idx], "test": test}


def banking77_labels(folder: str | Path) -> list[str]:
    """The 77 intent names in the dataset's own order (``categories.json``)."""
    return list(json.loads(_need(Path(folder) / "categories.json").read_text(encoding="utf-8")))


def clinc150(folder: str | Path) -> dict[str, list[tuple[str, str]]]:
    """Every split of ``data_full.json``; out-of-scope rows keep the label ``oos``."""
    raw = json.loads(_need(Path(folder) / "data_full.json").read_text(encoding="utf-8"))
    return {split: [(text, label) for text, label in rows] for split, rows in raw.items()}
