"""Fit the CLINC150 out-of-scope detector of a customer_service bundle and calibrate it (validation data only).

Steps (``sectorflow_customer_service.oos``):

1. sentence vectors of CLINC150 ``train`` (in-scope rows only, 15,000) through the bundle's served predictor
   (Paddle Inference, the int8-stored weights dequantised to fp32, as served);
2. intent means and the Ledoit-Wolf-shrunk shared covariance -> ``oos_clinc150.safetensors``;
3. the distance threshold on CLINC150 ``val`` (in scope) and ``oos_val`` (out of scope): the best in-scope accuracy
   among thresholds whose out-of-scope recall is at least 75 % with 95 % confidence (Wilson lower bound; issue 6's
   target is 75 % on oos_test, and oos_val has only 100 messages);
4. ``calibration.json`` (``clinc150`` gains ``method``, ``statistics``, ``distance_threshold`` ...; the top-probability
   ``threshold`` stays, for the ``oos_threshold`` option) and ``manifest.json`` (new version, hashes, metrics).

Prints the validation AUROC of the distance and of the top softmax probability (oos_val against val). The test
splits are never read here (``benchmarks/cs_eval.py`` reports them).

    OMP_NUM_THREADS=2 .venv/bin/python plugins/customer_service/scripts/fit_oos.py [--bundle DIR] [--version 0.2.1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "src"))

from sklearn.metrics import roc_auc_score  # noqa: E402

from sectorflow import load_bundle, write_manifest  # noqa: E402
from sectorflow.bundle import PredictorPool, make_predictor_config  # noqa: E402
from sectorflow.device import resolve_device  # noqa: E402
from sectorflow_customer_service import datasets  # noqa: E402
from sectorflow_customer_service.oos import MahalanobisScorer, calibrate_distance  # noqa: E402
from sectorflow_customer_service.runtime import PredictorEncoder, inference_bundle, tokenizer_of  # noqa: E402

STATISTICS = "oos_clinc150.safetensors"


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=str(HERE / "src" / "sectorflow_customer_service" / "bundle"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--version", default="0.2.1", help="version written into the bundle's manifest")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="smoke run: every n-th message, about N per split")
    args = ap.parse_args()
    folder = Path(args.bundle)
    bundle = load_bundle(folder, expected_task="customer_service")
    served = inference_bundle(bundle)
    pool = PredictorPool(make_predictor_config(served, resolve_device("cpu", ("cpu",), None), "fp32", args.threads))
    encoder = PredictorEncoder(pool, tokenizer_of(bundle), bundle.name, batch_size=64)
    labels = json.loads((folder / "labels.json").read_text())["clinc150"]
    index = {label: i for i, label in enumerate(labels)}
    head = [name for name, _ in bundle.manifest["heads"]].index("clinc150")
    clinc = datasets.clinc150(Path(args.data) / "clinc150")
    if args.limit:
        clinc = {k: v[::max(1, len(v) // args.limit)] for k, v in clinc.items()}

    def encode(split: str) -> tuple[np.ndarray, np.ndarray]:
        start = time.perf_counter()
        out = encoder.run([text for text, _ in clinc[split]])
        print(f"{split}: {len(clinc[split])} messages encoded in {time.perf_counter() - start:.0f} s", flush=True)
        return out[0], softmax(out[1 + head])

    train = [(text, label) for text, label in clinc["train"] if label != datasets.OOS]
    clinc["train"] = train
    x_train, _ = encode("train")
    scorer = MahalanobisScorer.fit(x_train, np.array([label for _, label in train]))
    x_val, p_val = encode("val")
    x_oos, p_oos = encode("oos_val")
    d_val, d_oos = scorer.distance(x_val), scorer.distance(x_oos)
    y_val = np.array([index[label] for _, label in clinc["val"]])
    oos_id = index[datasets.OOS]
    truth = np.r_[np.zeros(len(d_val)), np.ones(len(d_oos))]
    auroc = {"mahalanobis": round(float(roc_auc_score(truth, np.r_[d_val, d_oos])), 4),
             "top_probability": round(float(roc_auc_score(truth, -np.r_[p_val.max(1), p_oos.max(1)])), 4)}
    cal = calibrate_distance(d_val, p_val.argmax(1) == y_val, p_val.argmax(1) == oos_id, d_oos,
                             p_oos.argmax(1) == oos_id)
    print(json.dumps({"val_auroc_oos_val_vs_val": auroc, **cal}, indent=1))

    scorer.save(folder / STATISTICS)
    calibration = json.loads((folder / "calibration.json").read_text())
    calibration["clinc150"].update({
        "method": "mahalanobis", "statistics": STATISTICS, **cal, "val_auroc": auroc,
        "rule": "out of scope when the head's top class is 'oos' or the squared Mahalanobis distance to the nearest "
                "intent mean is above distance_threshold: the best in-scope accuracy among thresholds whose oos_val "
                "recall is >= 0.75 at the Wilson 95% lower bound (the top-probability threshold is used only when "
                "the oos_threshold option is given)",
        "fitted_on": "CLINC150 data_full train, in-scope rows (15,000), sentence vectors as served"})
    (folder / "calibration.json").write_text(json.dumps(calibration, indent=1) + "\n")
    manifest = dict(bundle.manifest)
    manifest.pop("files", None)
    manifest["version"] = args.version
    manifest["metrics"] = {**manifest.get("metrics", {}),
                           "clinc150_val_in_scope_accuracy_with_threshold": cal["val_in_scope_accuracy"],
                           "clinc150_oos_val_recall": cal["val_oos_recall"],
                           "clinc150_oos_val_auroc_mahalanobis": auroc["mahalanobis"],
                           "clinc150_oos_val_auroc_top_probability": auroc["top_probability"]}
    provenance = dict(manifest.get("provenance", {}))
    provenance["out_of_scope"] = ("plugins/customer_service/scripts/fit_oos.py: Mahalanobis statistics on CLINC150 "
                                  "train, threshold on CLINC150 val + oos_val")
    manifest["provenance"] = provenance
    write_manifest(folder, **manifest)
    print(f"wrote {folder / STATISTICS}, calibration.json and manifest.json (version {args.version})")


if __name__ == "__main__":
    main()
