"""Compare out-of-scope scores for the CLINC150 intent set on validation data only (issue 6; nothing is shipped).

Every score reads the bundle's own outputs (no retraining): the sentence vector (unit length, 384 floats) and the
clinc150 head's logits, as served (Paddle Inference, fp32). In scope: CLINC150 ``val`` (3,000); out of scope:
``oos_val`` (100). Statistics come from CLINC150 ``train`` (15,000 in-scope messages). The test splits are never
read.

Scores (higher = more out of scope):

- squared Mahalanobis distance to the nearest intent mean, shared Ledoit-Wolf covariance (the shipped rule, ``oos.py``;
  Lee et al. 2018); the vectors are unit length already, so "Mahalanobis on normalised vectors" is the same score;
- relative Mahalanobis (Ren et al. 2021, arXiv:2106.09022): the above minus the distance to one global Gaussian;
- k-nearest-neighbour cosine distance to the train vectors (Sun et al. 2022, ICML), k = 1, 5, 10, 50;
- softmax: 1 - top probability, 1 - top in-scope probability, the ``oos`` class probability; logits: minus the top
  in-scope logit, energy (minus log-sum-exp of the in-scope logits; Liu et al. 2020);
- combinations: sums of scores standardised on the in-scope validation messages, and a logistic regression over five
  scores, fitted on val + oos_val and scored out of fold (10-fold, 5 shuffles averaged).

Columns: validation AUROC (oos_val against val); the shipped operating rule (``calibrate_distance``: the best in-scope
accuracy among thresholds whose oos_val recall is >= 75 % at the Wilson 95 % lower end; a message is also out of
scope when the head's top class is ``oos``); the oos_val recall at the lowest threshold that keeps in-scope accuracy
>= 95 %; and, against the shipped score, the paired bootstrap (1,000 resamples of val and oos_val, thresholds chosen
again in each) of the in-scope accuracy difference under the operating rule.

    OMP_NUM_THREADS=2 .venv/bin/python plugins/customer_service/scripts/compare_oos_scores.py [--cache /tmp/oos_vectors]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "src"))

from scipy.special import logsumexp
from sectorflow_customer_service import datasets
from sectorflow_customer_service.oos import (
    MahalanobisScorer,
    calibrate_distance,
    wilson_lower,
)
from sklearn.covariance import LedoitWolf
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

SHIPPED = "mahalanobis (shipped)"


def encode_splits(bundle_dir: Path, data_dir: Path, cache: Path, threads: int) -> dict[str, dict[str, np.ndarray]]:
    """Sentence vectors and clinc150 logits of train (in scope), val, oos_val; cached as ``cache/<split>.npz``."""
    out = {}
    missing = [s for s in ("train", "val", "oos_val") if not (cache / f"{s}.npz").is_file()]
    if missing:
        from sectorflow import load_bundle
        from sectorflow.bundle import PredictorPool, make_predictor_config
        from sectorflow.device import resolve_device
        from sectorflow_customer_service.runtime import (
            PredictorEncoder,
            inference_bundle,
            tokenizer_of,
        )

        bundle = load_bundle(bundle_dir, expected_task="customer_service")
        pool = PredictorPool(make_predictor_config(inference_bundle(bundle), resolve_device("cpu", ("cpu",), None),
                                                   "fp32", threads))
        encoder = PredictorEncoder(pool, tokenizer_of(bundle), bundle.name, batch_size=64)
        head = [name for name, _ in bundle.manifest["heads"]].index("clinc150")
        clinc = datasets.clinc150(data_dir / "clinc150")
        cache.mkdir(parents=True, exist_ok=True)
        for split in missing:
            rows = [(t, y) for t, y in clinc[split] if split != "train" or y != datasets.OOS]
            res = encoder.run([t for t, _ in rows])
            np.savez(cache / f"{split}.npz", x=res[0], logits=res[1 + head], y=np.array([y for _, y in rows]))
            print(f"{split}: {len(rows)} messages encoded", flush=True)
    for split in ("train", "val", "oos_val"):
        with np.load(cache / f"{split}.npz") as z:
            out[split] = {k: z[k] for k in z.files}
    return out


def scores(v: dict[str, dict[str, np.ndarray]], oos_id: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every score of the module docstring: name -> (val scores ``[3000]``, oos_val scores ``[100]``)."""
    xtr, ytr = v["train"]["x"].astype(np.float64), v["train"]["y"]
    xs = [v[s]["x"].astype(np.float64) for s in ("val", "oos_val")]
    logits = [v[s]["logits"].astype(np.float64) for s in ("val", "oos_val")]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pair = lambda f, items: (f(items[0]), f(items[1]))
    md = MahalanobisScorer.fit(xtr, ytr)
    out[SHIPPED] = pair(md.distance, xs)
    mu0 = xtr.mean(0)
    p0 = LedoitWolf().fit(xtr - mu0).precision_
    out["relative mahalanobis"] = pair(lambda x: md.distance(x) - np.einsum("ij,jk,ik->i", x - mu0, p0, x - mu0), xs)
    train_unit = xtr / np.linalg.norm(xtr, axis=1, keepdims=True)
    top = pair(lambda x: -np.sort(-(x / np.linalg.norm(x, axis=1, keepdims=True)) @ train_unit.T, axis=1)[:, :50], xs)
    for k in (1, 5, 10, 50):
        out[f"kNN cosine distance, k={k}"] = (1 - top[0][:, k - 1], 1 - top[1][:, k - 1])
    ins = np.array([i for i in range(logits[0].shape[1]) if i != oos_id])

    def softmax(z: np.ndarray) -> np.ndarray:
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    out["1 - top probability"] = pair(lambda z: 1 - softmax(z).max(1), logits)
    out["1 - top in-scope probability"] = pair(lambda z: 1 - softmax(z)[:, ins].max(1), logits)
    out["oos class probability"] = pair(lambda z: softmax(z)[:, oos_id], logits)
    out["- top in-scope logit"] = pair(lambda z: -z[:, ins].max(1), logits)
    out["energy (in-scope logits)"] = pair(lambda z: -logsumexp(z[:, ins], axis=1), logits)

    def z(name: str) -> tuple[np.ndarray, np.ndarray]:
        a, b = out[name]
        return (a - a.mean()) / a.std(), (b - a.mean()) / a.std()

    for other in ("kNN cosine distance, k=1", "- top in-scope logit", "energy (in-scope logits)"):
        (a0, b0), (a1, b1) = z(SHIPPED), z(other)
        out[f"z(mahalanobis) + z({other})"] = (a0 + a1, b0 + b1)
    cols = [SHIPPED, "kNN cosine distance, k=1", "- top in-scope logit", "energy (in-scope logits)",
            "oos class probability"]
    feats = np.c_[tuple(np.r_[out[c]] for c in cols)]
    feats = (feats - feats[: len(xs[0])].mean(0)) / feats[: len(xs[0])].std(0)
    truth = np.r_[np.zeros(len(xs[0])), np.ones(len(xs[1]))]
    oof = np.zeros(len(truth))
    for seed in range(5):
        for fit, held in StratifiedKFold(10, shuffle=True, random_state=seed).split(feats, truth):
            model = LogisticRegression(class_weight="balanced", max_iter=1000).fit(feats[fit], truth[fit])
            oof[held] += model.decision_function(feats[held]) / 5
    out["logistic over 5 scores (out of fold)"] = (oof[: len(xs[0])], oof[len(xs[0]):])
    return out


def operating_points(d_in, d_out, right, forced_in, forced_out) -> tuple[float, float]:
    """(in-scope accuracy under the shipped rule, oos recall at the lowest threshold with in-scope accuracy >= 0.95)."""
    ts = np.unique(np.r_[d_in, d_out])
    kept = np.sort(d_in[right & ~forced_in])
    acc = np.searchsorted(kept, ts, side="right") / len(d_in)
    free = np.sort(d_out[~forced_out])
    caught = forced_out.sum() + len(free) - np.searchsorted(free, ts, side="right")
    floor = np.array([wilson_lower(c, len(d_out)) >= 0.75 for c in range(len(d_out) + 1)])[caught]
    ok = acc >= 0.95
    return float(acc[floor].max()), float((caught[ok] / len(d_out)).max()) if ok.any() else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=str(HERE / "src" / "sectorflow_customer_service" / "bundle"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache", default="/tmp/oos_vectors", help="folder for the encoded splits (reused when present)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()
    folder = Path(args.bundle)
    labels = json.loads((folder / "labels.json").read_text())["clinc150"]
    oos_id = labels.index(datasets.OOS)
    v = encode_splits(folder, Path(args.data), Path(args.cache), args.threads)
    index = {label: i for i, label in enumerate(labels)}
    pred_in, pred_out = v["val"]["logits"].argmax(1), v["oos_val"]["logits"].argmax(1)
    right = pred_in == np.array([index[y] for y in v["val"]["y"]])
    forced_in, forced_out = pred_in == oos_id, pred_out == oos_id
    table = scores(v, oos_id)
    n_in, n_out = len(right), len(forced_out)
    truth = np.r_[np.zeros(n_in), np.ones(n_out)]
    rng = np.random.default_rng(0)
    draws = [(rng.integers(0, n_in, n_in), rng.integers(0, n_out, n_out)) for _ in range(args.bootstrap)]

    def boot(name: str) -> np.ndarray:
        d_in, d_out = table[name]
        return np.array([operating_points(d_in[i], d_out[o], right[i], forced_in[i], forced_out[o])[0]
                         for i, o in draws])

    base = boot(SHIPPED)
    print(f"CLINC150 validation: {n_in} in scope (top-intent accuracy {right.mean():.4f}; the head says 'oos' for "
          f"{forced_in.sum()}), {n_out} oos_val (head says 'oos' for {forced_out.sum()}); ceiling of the in-scope "
          f"accuracy under the rule: {np.mean(right & ~forced_in):.4f}")
    print("| score | val AUROC | in-scope acc. at the shipped rule (oos_val recall) | vs shipped, bootstrap 95% "
          "| P(better) | oos_val recall at in-scope acc. >= 95% |")
    print("|---|---|---|---|---|---|")
    for name, (d_in, d_out) in table.items():
        auroc = roc_auc_score(truth, np.r_[d_in, d_out])
        cal = calibrate_distance(d_in, right, forced_in, d_out, forced_out)
        _, recall95 = operating_points(d_in, d_out, right, forced_in, forced_out)
        diff = boot(name) - base
        lo, hi = np.percentile(diff, [2.5, 97.5])
        print(f"| {name} | {auroc:.4f} | {100 * cal['val_in_scope_accuracy']:.2f} ({100 * cal['val_oos_recall']:.0f}) "
              f"| {100 * lo:+.2f} .. {100 * hi:+.2f} | {np.mean(diff > 0):.2f} | {100 * recall95:.0f} |", flush=True)


if __name__ == "__main__":
    main()
