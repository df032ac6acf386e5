"""Train the CUAD clause classifier and write the shipped bundle.

Usage (from the repository root; a few minutes on 2 cores)::

    .venv/bin/python plugins/legal_extraction/scripts/train_clause_classifier.py

Data: ``../shared/data/cuad`` (CUAD v1, CC BY 4.0), read in place. Contracts are split by contract
(``sectorflow_legal_extraction.cuad.split_of``: 60 % train, 20 % validation, 20 % test). Each contract is cut into
sentence-like segments (``text.segments``); a segment is positive for a category when it overlaps an annotated
clause of that category (master_clauses.csv's clause-text columns, located in the text after collapsing
whitespace) over at least half of the segment or half of the clause.

The model trains on train contracts; the epoch count and each category's decision threshold (best F1) are chosen on
validation contracts; the per-category average precision (AUPR) on test contracts is reported in the manifest and
printed. This is a segment-classification AUPR, not CUAD's span-extraction AUPR (DeBERTa-xlarge 47.8 in Hendrycks
et al. 2021): the two are not the same task and must not be compared as equals.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.metrics import average_precision_score, f1_score  # noqa: E402

from sectorflow import import_paddle, write_manifest  # noqa: E402
from sectorflow_legal_extraction import cuad  # noqa: E402
from sectorflow_legal_extraction.clauses import batch_arrays  # noqa: E402
from sectorflow_legal_extraction.calibration import labelled_segments  # noqa: E402

PLUGIN = Path(__file__).resolve().parents[1]
REPO = PLUGIN.parents[1]
DATA = REPO.parent / "shared" / "data" / "cuad"
BUNDLE = PLUGIN / "src" / "sectorflow_legal_extraction" / "bundle"


def build_model(paddle, buckets: int, dim: int, n_labels: int, dropout: float = 0.0):
    nn = paddle.nn

    class ClauseClassifier(nn.Layer):
        """Embedding bag (weighted sum of hashed n-gram vectors) -> ReLU -> linear -> sigmoid per category."""

        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(buckets, dim, padding_idx=0)
            self.dropout = nn.Dropout(dropout)
            self.out = nn.Linear(dim, n_labels)

        def logits(self, ids, weights):
            pooled = (self.embedding(ids) * weights.unsqueeze(-1)).sum(axis=1)
            return self.out(self.dropout(nn.functional.relu(pooled)))

        def forward(self, ids, weights):  # jit.save needs the first argument to be named self
            return nn.functional.sigmoid(self.logits(ids, weights))

    return ClauseClassifier()


def predict(paddle, model, arrays: dict[str, np.ndarray], batch: int = 512) -> np.ndarray:
    model.eval()
    outs = []
    with paddle.no_grad():
        for i in range(0, len(arrays["ids"]), batch):
            outs.append(model(paddle.to_tensor(arrays["ids"][i:i + batch]),
                              paddle.to_tensor(arrays["weights"][i:i + batch])).numpy())
    return np.concatenate(outs)


def aupr(labels: np.ndarray, scores: np.ndarray, cats: list[str]) -> dict[str, float | None]:
    return {c: (round(float(average_precision_score(labels[:, k], scores[:, k])), 4) if labels[:, k].sum() else None)
            for k, c in enumerate(cats)}


MIN_F1 = 0.1
"""Below this best validation F1 a category's threshold is not a calibrated decision (its labels would be noise)."""


def calibrate(val_y: np.ndarray, val_scores: np.ndarray, cats: list[str]) -> tuple[dict, dict]:
    """Each category's decision threshold: the grid point (0.05 ... 0.95) with the best validation F1. A category
    with no validation positive, or whose best validation F1 is under :data:`MIN_F1` (0 for six categories, which
    used to give the grid's lowest point, 0.05), has no calibrated threshold: ``None``, and the pipeline never labels
    a segment with it."""
    grid = np.linspace(0.05, 0.95, 19)
    thresholds, best = {}, {}
    for k, cat in enumerate(cats):
        f1s = [f1_score(val_y[:, k], val_scores[:, k] >= t, zero_division=0) for t in grid]
        top = int(np.argmax(f1s))
        best[cat] = round(float(f1s[top]), 4)
        thresholds[cat] = round(float(grid[top]), 2) if val_y[:, k].sum() and f1s[top] >= MIN_F1 else None
    return thresholds, best


def recalibrate(args) -> int:
    """``--recalibrate``: the shipped model's thresholds chosen again on validation contracts (:func:`calibrate`);
    the weights and the test figures are left as they are, the manifest is rewritten with the new hashes."""
    paddle = import_paddle()
    cats = cuad.categories(args.data)
    config = json.loads((args.out / "classifier.json").read_text(encoding="utf-8"))
    texts, val_y, _ = labelled_segments([c for c in cuad.load(args.data) if c.split == "validation"], cats)
    arrays = batch_arrays(texts, config["buckets"])
    model = paddle.jit.load(str(args.out / "model"))
    val_scores = predict(paddle, model, arrays)
    config["thresholds"], config["validation_f1"] = calibrate(val_y, val_scores, cats)
    (args.out / "classifier.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    manifest.pop("files", None)
    manifest["provenance"]["thresholds"] = ("recalibrated on validation contracts: python plugins/legal_extraction/"
                                            "scripts/train_clause_classifier.py --recalibrate")
    write_manifest(args.out, **manifest)
    print({c: t for c, t in config["thresholds"].items()})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=BUNDLE)
    parser.add_argument("--buckets", type=int, default=1 << 14)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--weight-decay", type=float, default=0.0, help="L2 on all weights (Adam)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--recalibrate", action="store_true",
                        help="only choose the shipped model's thresholds again on validation contracts")
    args = parser.parse_args(argv)
    if not (args.data / "master_clauses.csv").is_file():
        print(f"CUAD not found at {args.data}", file=sys.stderr)
        return 2
    if args.recalibrate:
        return recalibrate(args)

    paddle = import_paddle()
    paddle.seed(args.seed)
    np.random.seed(args.seed)
    cats = cuad.categories(args.data)
    contracts = cuad.load(args.data)
    parts = {s: [c for c in contracts if c.split == s] for s in ("train", "validation", "test")}
    data = {}
    for split, group in parts.items():
        texts, labels, _ = labelled_segments(group, cats)
        data[split] = (batch_arrays(texts, args.buckets), labels)
        print(f"{split}: {len(group)} contracts, {len(texts)} segments, {int(labels.sum())} positive labels",
              flush=True)

    model = build_model(paddle, args.buckets, args.dim, len(cats), args.dropout)
    optimizer = paddle.optimizer.Adam(learning_rate=args.lr, parameters=model.parameters(),
                                      weight_decay=args.weight_decay or None)
    train_x, train_y = data["train"]
    pos = train_y.sum(0)
    pos_weight = paddle.to_tensor(np.clip(np.sqrt((len(train_y) - pos) / np.maximum(pos, 1)), 1, 30)
                                  .astype(np.float32))
    best = (-1.0, 0, None)
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = np.random.permutation(len(train_y))
        for i in range(0, len(order), 64):
            idx = order[i:i + 64]
            logits = model.logits(paddle.to_tensor(train_x["ids"][idx]), paddle.to_tensor(train_x["weights"][idx]))
            loss = paddle.nn.functional.binary_cross_entropy_with_logits(
                logits, paddle.to_tensor(train_y[idx]), pos_weight=pos_weight)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
        val_scores = predict(paddle, model, data["validation"][0])
        val = aupr(data["validation"][1], val_scores, cats)
        mean = float(np.mean([v for v in val.values() if v is not None]))
        print(f"epoch {epoch}: loss {float(loss):.4f}, validation mean AUPR {mean:.4f}", flush=True)
        if mean > best[0]:
            best = (mean, epoch, {k: v.numpy().copy() for k, v in model.state_dict().items()})
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in best[2].items()})
    print(f"best epoch {best[1]} (validation mean AUPR {best[0]:.4f})")

    val_y = data["validation"][1]
    val_scores = predict(paddle, model, data["validation"][0])
    thresholds, val_f1 = calibrate(val_y, val_scores, cats)
    test_y = data["test"][1]
    test_scores = predict(paddle, model, data["test"][0])
    test_aupr = aupr(test_y, test_scores, cats)
    scored = [v for v in test_aupr.values() if v is not None]
    macro = round(float(np.mean(scored)), 4)
    for cat in cats:
        print(f"  {cat:40s} test AUPR {test_aupr[cat]}  positives {int(test_y[:, cats.index(cat)].sum())}")
    print(f"test macro AUPR over {len(scored)} categories with positives: {macro}")

    with tempfile.TemporaryDirectory() as tmp:
        model.eval()
        spec = [paddle.static.InputSpec([None, None], "int64", name="ids"),
                paddle.static.InputSpec([None, None], "float32", name="weights")]
        paddle.jit.save(model, str(Path(tmp) / "model"), input_spec=spec)
        if args.out.exists():
            shutil.rmtree(args.out)
        args.out.mkdir(parents=True)
        for name in ("model.json", "model.pdiparams"):
            shutil.copy(Path(tmp) / name, args.out / name)
    (args.out / "classifier.json").write_text(json.dumps(
        {"buckets": args.buckets, "features": "sectorflow_legal_extraction.clauses.features", "categories": cats,
         "thresholds": thresholds, "validation_f1": val_f1}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_manifest(
        args.out, task="legal_extraction", name="cuad-clause-classifier", version="1.0.0", format="paddle-inference",
        precision="fp32", model_prefix="model", labels=cats,
        metrics={"test_aupr": test_aupr, "test_macro_aupr": macro, "validation_macro_aupr": round(best[0], 4),
                 "best_epoch": best[1], "n_segments": {s: int(len(d[1])) for s, d in data.items()},
                 "n_contracts": {s: len(g) for s, g in parts.items()},
                 "note": "segment-classification AUPR on held-out contracts; not CUAD's span-extraction AUPR "
                         "(DeBERTa-xlarge 47.8, Hendrycks et al. 2021), a different task"},
        provenance={"dataset": "CUAD v1 master_clauses.csv + full_contract_txt (302 contracts with text)",
                    "licence": "CC BY 4.0, The Atticus Project",
                    "citation": "Hendrycks, Burns, Chen, Ball (2021). CUAD: An Expert-Annotated NLP Dataset for Legal "
                                "Contract Review. NeurIPS Datasets and Benchmarks.",
                    "split": f"by contract, sha256 of name with salt {cuad.SPLIT_SEED!r}, 60/20/20",
                    "seed": args.seed, "script": "plugins/legal_extraction/scripts/train_clause_classifier.py",
                    "command": "python plugins/legal_extraction/scripts/train_clause_classifier.py "
                               f"--buckets {args.buckets} --dim {args.dim} --epochs {args.epochs} --seed {args.seed} "
                               f"--dropout {args.dropout} --weight-decay {args.weight_decay} --lr {args.lr}"})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
