"""Move the CLINC150 out-of-scope operating point to the in-scope accuracy the target allows (issue 6; validation only).

Bundle 0.3.0's rule (``calibrate_distance``: best in-scope accuracy among thresholds whose oos_val recall is >= 75 % at
the Wilson lower end) spends only 0.7 points of validation in-scope accuracy (96.50 against the 97.23 ceiling) on
out-of-scope detection, while issue 6's target (in scope >= 95) leaves more; and oos_val (84 % caught) proved easier
than oos_test (65.1 %). This script moves the point the other way round: as much oos_val recall as an in-scope floor
allows.

Decision rule, fixed before any number of this experiment was computed (also in ``/tmp/cs_stack/RULE_OOS.md``,
30 Nov 2026 12:10 UTC):

- Data: CLINC150 ``val`` (3,000 in scope) and ``oos_val`` (100); statistics from ``train`` (15,000 in scope). The
  vectors are ``compare_stacked.py``'s cache (MiniLM as served, e5 as shipped); the test splits are never read.
- Verdicts: the shipped ensemble (``e5_heads.safetensors``: ``combine("clinc150", MiniLM logits, e5 vector)``). A val
  message counts right iff the ensemble's top class is its label and it is not flagged (a fallback counts as wrong);
  a message is out of scope iff the detector's score is above the threshold or the ensemble's top class is ``oos``.
- Sanity gate: validation accuracy of the top class 97.23 and, at 0.3.0's ``distance_threshold``, in scope 96.50 and
  oos_val 84 / 100 must be reproduced, else nothing is written.
- Detectors: (a) the shipped Mahalanobis distance (the bundle's ``oos_clinc150.safetensors`` on the MiniLM vector);
  (b) kNN k = 1, one minus the best cosine similarity to the 15,000 train vectors; (c) the logistic regression over
  five scores of ``compare_oos_scores.py`` ((a), (b), minus the top in-scope logit, energy, ``oos`` probability; the
  MiniLM head's logits as there; out of fold on val + oos_val, 10 folds x 5 seeds; its oos_val figure is optimistic,
  it learns from oos_val).
- Operating point per detector: among the thresholds (the observed scores) whose validation in-scope accuracy is
  >= 95.5 % (the target 95 plus a 0.5 margin), the one that catches the most oos_val messages; ties: the higher
  in-scope accuracy.
- Winner: the most oos_val messages caught; ties and differences of <= 2 messages go to (a) (runtime kept simple);
  a tie between (b) and (c) goes to (b), which (c) contains (added after that tie was seen; it is not in the rule).
  Ship (bundle 0.3.1, ``--write``: ``calibration.json``'s CLINC150 distance threshold, validation metrics and rule;
  manifest version, metrics, provenance, hashes; banking77 untouched) iff the winner catches more than 0.3.0's 84.
  (b) has runtime code (``oos.NearestNeighbourScorer``: the 15,000 train vectors, unit length, float16, in
  ``oos_clinc150_knn.safetensors``; the threshold is then chosen again by the same rule on those stored float16
  scores, which the runtime reproduces); (c) has none and ``--write`` refuses it.

Printed: the sanity figures; per detector, the best in-scope accuracy for each number of oos_val messages caught
(the validation curve) and the operating point; the decision.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python plugins/customer_service/scripts/fit_oos_operating_point.py \
        [--cache /tmp/cs_stack] [--write --version 0.3.1]

Output of the run that decided 0.3.1 (30 Nov 2026 12:10 UTC, cached vectors; deterministic) -- validation curve,
best in-scope accuracy (%) for at least N of the 100 oos_val messages caught (the ensemble's ``oos`` class alone
catches 52):

    | N caught | mahalanobis (shipped) | kNN cosine distance, k=1 | logistic over 5 scores (out of fold) |
    |---|---|---|---|
    | 80 | 96.77 | 96.60 | 96.73 |
    | 81 | 96.67 | 96.53 | 96.70 |
    | 82 | 96.67 | 96.43 | 96.67 |
    | 83 | 96.60 | 96.30 | 96.67 |
    | 84 | 96.50 | 96.20 | 96.67 |
    | 85 | 96.43 | 96.13 | 96.63 |
    | 86 | 96.33 | 96.03 | 96.53 |
    | 87 | 96.17 | 96.00 | 96.53 |
    | 88 | 96.03 | 95.93 | 96.47 |
    | 89 | 95.67 | 95.90 | 96.40 |
    | 90 | 94.93 | 95.87 | 96.20 |
    | 91 | 94.87 | 95.80 | 96.17 |
    | 92 | 94.83 | 95.80 | 95.87 |
    | 93 | 94.63 | 95.33 | 95.37 |
    | 94 | 94.63 | 94.87 | 95.20 |
    | 95 | 93.43 | 93.80 | 94.97 |
    | 96 | 93.40 | 92.87 | 94.83 |
    | 97 | 92.77 | 92.53 | 94.80 |
    | 98 | 91.10 | 92.27 | 94.00 |
    | 99 | 89.93 | 90.57 | 93.53 |
    | 100 | 59.23 | 57.83 | 49.80 |

Operating points (val in-scope >= 95.5): Mahalanobis 89 caught at 95.67 (threshold 1253.0), kNN k = 1 92 at 95.80
(0.3443; the same on the stored float16 vectors), logistic 92 at 95.87 -> kNN (3 more than the Mahalanobis distance);
ship (0.3.0 caught 84). Trade on validation: 25 val messages right with 0.3.0 now get the fallback, 4 flagged by
0.3.0 are now answered; oos_val caught 84 -> 92. Test (benchmarks/cs_eval.py, run once afterwards): CLINC150 in
scope 95.42, oos_test recall 79.90.
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
sys.path.insert(0, str(HERE / "scripts"))

from compare_stacked import encode_e5, encode_minilm, splits
from scipy.special import logsumexp
from sectorflow import load_bundle, write_manifest
from sectorflow_customer_service import datasets
from sectorflow_customer_service.ensemble import E5Heads, log_softmax
from sectorflow_customer_service.oos import (
    MahalanobisScorer,
    NearestNeighbourScorer,
    wilson_lower,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

FLOOR = 0.955  # validation in-scope accuracy floor: issue 6's 95 plus a 0.5-point margin
SHIPPED = "mahalanobis (shipped)"
KNN = "kNN cosine distance, k=1"
LOGISTIC = "logistic over 5 scores (out of fold)"
MIN_GAIN = 3  # messages another detector must catch beyond the Mahalanobis distance to win
KNN_FILE = "oos_clinc150_knn.safetensors"
MAHALANOBIS_FILE = "oos_clinc150.safetensors"


def curve(s_in: np.ndarray, s_out: np.ndarray, right: np.ndarray, forced_in: np.ndarray,
          forced_out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every candidate threshold (the observed scores, ascending) with its in-scope accuracy and oos_val count caught.

    Out of scope: score > threshold or forced. Returns ``(thresholds [m], accuracy [m], caught [m])``.
    """
    ts = np.unique(np.r_[s_in, s_out])
    kept = np.sort(s_in[right & ~forced_in])
    acc = np.searchsorted(kept, ts, side="right") / len(s_in)
    free = np.sort(s_out[~forced_out])
    caught = int(forced_out.sum()) + len(free) - np.searchsorted(free, ts, side="right")
    return ts, acc, caught


def operating_point(s_in, s_out, right, forced_in, forced_out, floor: float = FLOOR) -> dict:
    """The rule's point: most oos_val caught with in-scope accuracy >= ``floor``; ties: higher accuracy."""
    ts, acc, caught = curve(s_in, s_out, right, forced_in, forced_out)
    ok = np.flatnonzero(acc >= floor)
    if not len(ok):
        raise SystemExit(f"no threshold keeps validation in-scope accuracy >= {floor}")
    best = max(ok, key=lambda i: (caught[i], acc[i], ts[i]))
    n = len(s_out)
    return {"threshold": float(ts[best]), "val_in_scope_accuracy": round(float(acc[best]), 4),
            "caught": int(caught[best]), "val_oos_recall": round(int(caught[best]) / n, 4),
            "val_oos_recall_wilson_lower": round(wilson_lower(int(caught[best]), n), 4)}


def detectors(x_tr, x_in, x_out, l_in, l_out, scorer: MahalanobisScorer, oos_id: int) -> dict:
    """Scores (higher = more out of scope) of val and oos_val for detectors (a), (b), (c) of the module docstring."""
    out = {SHIPPED: (scorer.distance(x_in), scorer.distance(x_out))}
    unit = x_tr / np.linalg.norm(x_tr, axis=1, keepdims=True)

    def knn(x: np.ndarray) -> np.ndarray:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return 1.0 - np.concatenate([(x[i:i + 500] @ unit.T).max(1) for i in range(0, len(x), 500)])

    out[KNN] = (knn(x_in), knn(x_out))
    ins = np.array([i for i in range(l_in.shape[1]) if i != oos_id])
    extra = []
    for f in (lambda z: -z[:, ins].max(1), lambda z: -logsumexp(z[:, ins], axis=1),
              lambda z: np.exp(log_softmax(z))[:, oos_id]):
        extra.append((f(l_in), f(l_out)))
    cols = [out[SHIPPED], out[KNN], *extra]
    feats = np.c_[tuple(np.r_[a, b] for a, b in cols)]
    n_in = len(x_in)
    feats = (feats - feats[:n_in].mean(0)) / feats[:n_in].std(0)
    truth = np.r_[np.zeros(n_in), np.ones(len(x_out))]
    oof = np.zeros(len(truth))
    for seed in range(5):
        for fit, held in StratifiedKFold(10, shuffle=True, random_state=seed).split(feats, truth):
            model = LogisticRegression(class_weight="balanced", max_iter=1000).fit(feats[fit], truth[fit])
            oof[held] += model.decision_function(feats[held]) / 5
    out[LOGISTIC] = (oof[:n_in], oof[n_in:])
    return out


def check_runtime(data_dir: Path, folder: Path) -> None:
    """The pipeline as a user runs it on CLINC150 val (3,000) and oos_val (100) against ``calibration.json``'s
    validation figures (they agree when the runtime reproduces the calibration's scores and verdicts)."""
    from sectorflow import Taskflow

    clinc = datasets.clinc150(data_dir / "clinc150")
    tf = Taskflow("customer_service", intent_set="clinc150", batch_size=32)
    r_in = [r for i in range(0, 3000, 256) for r in tf([t for t, _ in clinc["val"][i:i + 256]])]
    r_out = tf([t for t, _ in clinc["oos_val"]])
    cal = json.loads((folder / "calibration.json").read_text())["clinc150"]
    acc = float(np.mean([r.intent == y for r, (_, y) in zip(r_in, clinc["val"])]))
    caught = sum(r.out_of_scope for r in r_out)
    print(f"runtime on validation: in scope {100 * acc:.2f} ({len(r_in)} messages), oos_val {caught}/{len(r_out)}; "
          f"calibration.json ({cal['method']}): {100 * cal['val_in_scope_accuracy']:.2f}, "
          f"{round(100 * cal['val_oos_recall'])}/100")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=str(HERE / "src" / "sectorflow_customer_service" / "bundle"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache", default="/tmp/cs_stack", help="compare_stacked.py's encoded splits")
    ap.add_argument("--write", action="store_true", help="apply the decision to the bundle")
    ap.add_argument("--version", default="0.3.1")
    ap.add_argument("--check-runtime", action="store_true",
                    help="only run the installed pipeline (Taskflow, intent_set='clinc150') on val + oos_val and print "
                         "its in-scope accuracy and oos_val recall, to compare with calibration.json")
    args = ap.parse_args()
    if args.check_runtime:
        check_runtime(Path(args.data), Path(args.bundle))
        return
    folder = Path(args.bundle)
    bundle = load_bundle(folder, expected_task="customer_service")
    rows = {k: v for k, v in splits(Path(args.data)).items() if k.startswith("clinc")}
    mini = encode_minilm(rows, Path(args.cache), folder)
    e5 = encode_e5(rows, Path(args.cache))
    labels = json.loads((folder / "labels.json").read_text())["clinc150"]
    index = {label: i for i, label in enumerate(labels)}
    oos_id = index[datasets.OOS]
    heads = E5Heads.load(folder / bundle.manifest["e5_heads"])
    a_in = heads.combine("clinc150", mini["clinc_val"]["clinc"], e5["clinc_val"]).argmax(1)
    a_out = heads.combine("clinc150", mini["clinc_oos_val"]["clinc"], e5["clinc_oos_val"]).argmax(1)
    y_in = np.array([index[label] for _, label in rows["clinc_val"]])
    right, forced_in, forced_out = a_in == y_in, a_in == oos_id, a_out == oos_id
    calibration = json.loads((folder / "calibration.json").read_text())
    old = calibration["clinc150"]
    if old.get("method") != "mahalanobis" and "previous_operating_point" in old:  # a rerun on 0.3.1: check 0.3.0's
        old = {**old, **old["previous_operating_point"], "method": "mahalanobis"}
    scorer = MahalanobisScorer.load(folder / MAHALANOBIS_FILE)
    train_in = np.array([label != datasets.OOS for _, label in rows["clinc_train"]])
    scores = detectors(mini["clinc_train"]["x"][train_in].astype(np.float64), mini["clinc_val"]["x"],
                       mini["clinc_oos_val"]["x"], mini["clinc_val"]["clinc"].astype(np.float64),
                       mini["clinc_oos_val"]["clinc"].astype(np.float64), scorer, oos_id)

    d_in, d_out = scores[SHIPPED]
    t0 = old["distance_threshold"]
    acc0 = float(np.mean(right & (d_in <= t0) & ~forced_in))
    caught0 = int(np.sum((d_out > t0) | forced_out))
    print(f"sanity: val top-class accuracy {100 * right.mean():.2f} (0.3.0 says {100 * old['val_accuracy_argmax']:.2f}); "
          f"at 0.3.0's distance threshold {t0:.1f}: in scope {100 * acc0:.2f}, oos_val {caught0}/100 "
          f"(0.3.0 says {100 * old['val_in_scope_accuracy']:.2f}, {round(100 * old['val_oos_recall'])}); the ensemble "
          f"says 'oos' for {forced_in.sum()} val and {forced_out.sum()} oos_val messages; ceiling "
          f"{100 * np.mean(right & ~forced_in):.2f}")
    sane = (round(float(right.mean()), 4) == old["val_accuracy_argmax"] and round(acc0, 4) == old["val_in_scope_accuracy"]
            and caught0 == round(100 * old["val_oos_recall"]))
    if not sane:
        raise SystemExit("sanity gate failed: the cached vectors or heads are not the bundle's; nothing written")

    points, curves = {}, {}
    for name, (s_in, s_out) in scores.items():
        points[name] = operating_point(s_in, s_out, right, forced_in, forced_out)
        _, acc, caught = curve(s_in, s_out, right, forced_in, forced_out)
        curves[name] = {c: float(acc[caught >= c].max()) for c in range(80, 101) if (caught >= c).any()}
    print(f"\nvalidation curve: best in-scope accuracy (%) for at least N of the 100 oos_val messages caught "
          f"(floor {100 * FLOOR:.1f})")
    print("| N caught | " + " | ".join(scores) + " |")
    print("|---" * (len(scores) + 1) + "|")
    for c in range(80, 101):
        print(f"| {c} | " + " | ".join(f"{100 * curves[n][c]:.2f}" if c in curves[n] else "-" for n in scores) + " |")
    print("\noperating points (most oos_val caught with val in-scope accuracy >= 95.5):")
    for name, p in points.items():
        print(f"  {name}: {json.dumps(p)}")
    base = points[SHIPPED]["caught"]
    others = [n for n in (KNN, LOGISTIC) if points[n]["caught"] >= base + MIN_GAIN]
    # a tie between (b) and (c) goes to (b): (c) contains (b) and more (not in the rule of 12:10; the tie was seen)
    winner = max(others, key=lambda n: points[n]["caught"]) if others else SHIPPED
    ship = points[winner]["caught"] > caught0
    print(f"\ndecision: winner {winner} ({points[winner]['caught']} caught; the Mahalanobis distance {base}); "
          f"{'SHIP' if ship else 'do not ship'} (0.3.0 caught {caught0})")
    w_in, w_out = scores[winner]
    t1 = points[winner]["threshold"]
    flag0 = (d_in > t0) | forced_in
    flag1 = (w_in > t1) | forced_in
    lost = right & flag1 & ~flag0
    won = right & flag0 & ~flag1
    caught_new = ((w_out > t1) | forced_out) & ~((d_out > t0) | forced_out)
    caught_lost = ((d_out > t0) | forced_out) & ~((w_out > t1) | forced_out)
    by_intent: dict[str, int] = {}
    for i in np.flatnonzero(lost):
        by_intent[rows["clinc_val"][i][1]] = by_intent.get(rows["clinc_val"][i][1], 0) + 1
    print(f"\ntrade against 0.3.0 (validation): {lost.sum()} val messages right in 0.3.0 now get the fallback, "
          f"{won.sum()} flagged in 0.3.0 are now answered right; flagged val messages {flag0.sum()} -> {flag1.sum()}; "
          f"oos_val newly caught {caught_new.sum()}, no longer caught {caught_lost.sum()}")
    print("  newly flagged right answers by intent: " + ", ".join(
        f"{k} {v}" for k, v in sorted(by_intent.items(), key=lambda kv: (-kv[1], kv[0]))))
    print("  examples: " + " | ".join(rows["clinc_val"][i][0] for i in np.flatnonzero(lost)[:8]))
    if not args.write:
        return
    if not ship:
        raise SystemExit("the rule says do not ship; nothing written")
    if winner == LOGISTIC:
        raise SystemExit(f"{winner} won but has no runtime code in src; nothing written")
    previous = {"version": old.get("version", bundle.manifest.get("version")), "method": "mahalanobis",
                "distance_threshold": t0,
                "val_in_scope_accuracy": old["val_in_scope_accuracy"], "val_oos_recall": old["val_oos_recall"],
                "val_accuracy_argmax": old["val_accuracy_argmax"]}
    entry = {k: v for k, v in calibration["clinc150"].items() if k != "previous_operating_point"}
    if winner == KNN:  # the runtime reads float16 unit vectors: calibrate on exactly those scores
        knn = NearestNeighbourScorer(mini["clinc_train"]["x"][train_in])
        knn.save(folder / KNN_FILE)
        knn = NearestNeighbourScorer.load(folder / KNN_FILE)
        s_in, s_out = knn.distance(mini["clinc_val"]["x"]), knn.distance(mini["clinc_oos_val"]["x"])
        p = operating_point(s_in, s_out, right, forced_in, forced_out)
        auroc = round(float(roc_auc_score(np.r_[np.zeros(len(s_in)), np.ones(len(s_out))], np.r_[s_in, s_out])), 4)
        print(f"kNN on the stored float16 vectors ({KNN_FILE}): {json.dumps(p)}; val AUROC {auroc}")
        entry.update({"method": "knn", "statistics": KNN_FILE, "mahalanobis_statistics": MAHALANOBIS_FILE,
                      "val_auroc": {**old.get("val_auroc", {}), "knn_cosine": auroc},
                      "fitted_on": "CLINC150 data_full train, in-scope rows (15,000), sentence vectors as served, "
                                   "unit length, float16",
                      "rule": "out of scope when the ensemble's top class is 'oos' or the cosine distance to the "
                              "nearest CLINC150 train message (k = 1) is above distance_threshold: the threshold that "
                              "catches the most oos_val messages while CLINC150 val in-scope accuracy (a fallback "
                              f"counts as wrong) stays >= {FLOOR} (scripts/fit_oos_operating_point.py; the "
                              "top-probability threshold is used only when the oos_threshold option is given)"})
    else:
        p = points[SHIPPED]
        entry["rule"] = ("out of scope when the ensemble's top class is 'oos' or the squared Mahalanobis distance to "
                         "the nearest intent mean is above distance_threshold: the threshold that catches the most "
                         f"oos_val messages while CLINC150 val in-scope accuracy stays >= {FLOOR} "
                         "(scripts/fit_oos_operating_point.py)")
    entry.update({"distance_threshold": p["threshold"], "val_in_scope_accuracy": p["val_in_scope_accuracy"],
                  "val_oos_recall": p["val_oos_recall"], "val_oos_recall_wilson_lower": p["val_oos_recall_wilson_lower"],
                  "previous_operating_point": previous})
    calibration["clinc150"] = entry
    (folder / "calibration.json").write_text(json.dumps(calibration, indent=1) + "\n")
    manifest = dict(bundle.manifest)
    manifest.pop("files", None)
    manifest["version"] = args.version
    manifest["metrics"] = {**manifest.get("metrics", {}),
                           "clinc150_val_in_scope_accuracy_with_threshold": p["val_in_scope_accuracy"],
                           "clinc150_oos_val_recall": p["val_oos_recall"]}
    manifest["provenance"] = {**manifest.get("provenance", {}), "out_of_scope_operating_point": (
        f"plugins/customer_service/scripts/fit_oos_operating_point.py: CLINC150 detector {entry['method']} "
        f"({entry['statistics']}), threshold at the most oos_val recall with val in-scope accuracy >= {FLOOR} "
        "(rule written before the curve was computed)")}
    write_manifest(folder, **manifest)
    print(f"wrote calibration.json and manifest.json (version {args.version})")


if __name__ == "__main__":
    main()
