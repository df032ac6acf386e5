"""Add the e5 heads (``ensemble.py``) to a customer_service bundle and recalibrate its out-of-scope rules.

Bundle 0.3.0 = 0.2.1 + this step (the MiniLM weights and the CLINC150 Mahalanobis statistics are unchanged):

1. sentence vectors as in ``compare_stacked.py`` (cached under ``--cache``): the bundle's MiniLM as served (vector and
   both heads' logits) and multilingual-e5-small's frozen vector, for banking77 train / validation slice and
   CLINC150 train + oos_train / val / oos_val; the test splits are never read;
2. per intent set, a multinomial logistic regression on the standardised e5 vectors of the train split (C from
   {0.1, 1, 10} by 5-fold CV on train, as in ``compare_stacked.py``), standardisation folded into the weights ->
   ``e5_heads.safetensors``;
3. the ensemble's intents (argmax of the mean log-probability of the two heads) on validation, and with them the
   operating points of ``build_bundle.py`` (banking77: top-probability threshold and CLINC150 gate, both on the
   MiniLM heads' own probabilities, calibration key ``probabilities: minilm``) and ``fit_oos.py`` (CLINC150:
   Mahalanobis distance threshold, best in-scope accuracy with oos_val recall >= 75 % at the Wilson lower end; a
   message is also out of scope when the ensemble's top class is ``oos``), since which messages are right and
   which the head calls ``oos`` changed;
4. ``calibration.json`` and ``manifest.json`` (``e5_heads``, version, validation metrics, hashes).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python plugins/customer_service/scripts/fit_e5_heads.py [--version 0.3.0] \
        [--c 0.1]

Bundle 0.3.2 = 0.3.1 + ``--refit-banking77-on-all-train`` (``refit_e5.py``): final refit of the banking77 e5 head on all
of banking77 train (the 9,000 rows + the 1,003-row validation slice = all 10,003 rows of ``train.csv``) with the C
chosen earlier (0.1, 5-fold CV on the 9,000) and the same standardisation; shipped as 0.3.2 whatever the test figure
is (decided before it is seen); the test split read once by ``benchmarks/cs_eval.py``. Everything else (MiniLM, the
CLINC150 e5 head, out-of-scope detectors, ``calibration.json``) stays as in 0.3.1; see ``refit_e5.py`` for the
checks that could have stopped it.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python plugins/customer_service/scripts/fit_e5_heads.py \
        --refit-banking77-on-all-train --version 0.3.2
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

from build_bundle import best_threshold, calibrate_banking77  # noqa: E402
from compare_stacked import encode_e5, encode_minilm, fit_head, splits  # noqa: E402
from sectorflow import load_bundle, write_manifest  # noqa: E402
from sectorflow_customer_service import datasets  # noqa: E402
from sectorflow_customer_service.ensemble import E5Heads, log_softmax  # noqa: E402
from sectorflow_customer_service.oos import MahalanobisScorer, calibrate_distance  # noqa: E402

E5_HEADS = "e5_heads.safetensors"


def softmax(scores: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(scores))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=str(HERE / "src" / "sectorflow_customer_service" / "bundle"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache", default="/tmp/cs_stack", help="folder of the encoded splits (compare_stacked.py's)")
    ap.add_argument("--version", default="0.3.0")
    ap.add_argument("--c", type=float, default=None,
                    help="C of the logistic regressions; default: 5-fold CV on train over 0.1, 1, 10 "
                         "(chose 0.1 for both)")
    ap.add_argument("--refit-banking77-on-all-train", action="store_true",
                    help="bundle 0.3.2: refit only the banking77 e5 head of a 0.3.1 bundle on train + the validation "
                         "slice with C = 0.1 (refit_e5.py); nothing else changes")
    args = ap.parse_args()
    folder = Path(args.bundle)
    if args.refit_banking77_on_all_train:
        from refit_e5 import refit_banking77

        refit_banking77(folder, Path(args.data), Path(args.cache), args.version, args.c if args.c else 0.1)
        return
    bundle = load_bundle(folder, expected_task="customer_service")
    if E5_HEADS in bundle.manifest.get("files", {}):
        sys.exit(f"{folder} has e5 heads already: the cached MiniLM logits would be the ensemble's; start from 0.2.1")
    rows = splits(Path(args.data))
    e5 = encode_e5(rows, Path(args.cache))
    mini = encode_minilm(rows, Path(args.cache), folder)
    labels = json.loads((folder / "labels.json").read_text())
    fitted, report = {}, {}
    for task, train in (("banking77", "b77_train"), ("clinc150", "clinc_train")):
        index = {label: i for i, label in enumerate(labels[task])}
        y = np.array([index[lab] for _, lab in rows[train]])
        print(f"{task} e5 head", flush=True)
        scaler, model, cv = fit_head(e5[train], y, c_value=args.c)
        assert list(model.classes_) == list(range(len(labels[task])))
        w = model.coef_ / scaler.scale_[None, :]
        b = model.intercept_ - w @ scaler.mean_
        probe = e5[train][:50]
        assert np.allclose(log_softmax(probe @ w.T + b), model.predict_log_proba(scaler.transform(probe)), atol=1e-6)
        fitted[task] = (w, b)
        report[task] = cv
    heads = E5Heads(fitted)

    def scores(split: str) -> dict[str, np.ndarray]:
        key = {"banking77": "b77", "clinc150": "clinc"}
        return {t: heads.combine(t, mini[split][key[t]], e5[split]) for t in fitted}

    s_b77, s_val, s_oos = scores("b77_val"), scores("clinc_val"), scores("clinc_oos_val")
    bi = {lab: i for i, lab in enumerate(labels["banking77"])}
    ci = {lab: i for i, lab in enumerate(labels["clinc150"])}
    oos_id = ci[datasets.OOS]
    yb = np.array([bi[lab] for _, lab in rows["b77_val"]])
    yc = np.array([ci[lab] for _, lab in rows["clinc_val"]])

    # banking77: as build_bundle.py; the out-of-scope signals (top probability, CLINC150 gate) stay the MiniLM heads'
    # own probabilities, the intent shown (right or wrong) is the ensemble's. (The ensemble's probabilities as the
    # signals were compared too, see the docs: off-topic messages got more confident banking intents.)
    domains = json.loads((Path(args.data) / "clinc150" / "domains.json").read_text())
    bank_like = set(domains.get("banking", [])) | set(domains.get("credit_cards", []))
    bank_ids = np.array([lab in bank_like for lab in labels["clinc150"]])
    off = np.array([lab not in bank_like for _, lab in rows["clinc_val"]])
    mb = {s: softmax(mini[s]["b77"]) for s in ("b77_val", "clinc_val", "clinc_oos_val")}
    mc = {s: softmax(mini[s]["clinc"]) for s in ("b77_val", "clinc_val", "clinc_oos_val")}
    pb_out = np.concatenate([mb["clinc_oos_val"].max(1), mb["clinc_val"][off].max(1)])
    top_out = np.concatenate([mc["clinc_oos_val"].argmax(1), mc["clinc_val"].argmax(1)[off]])
    prob_out = np.concatenate([mc["clinc_oos_val"].max(1), mc["clinc_val"].max(1)[off]])
    cal_b = calibrate_banking77(mb["b77_val"], yb, pb_out, mc["b77_val"], top_out, prob_out,
                                len(mb["clinc_oos_val"]), bank_ids, oos_id,
                                right_in=s_b77["banking77"].argmax(1) == yb)
    cal_b["probabilities"] = "minilm"
    pc_val, pc_oos = softmax(s_val["clinc150"]), softmax(s_oos["clinc150"])

    # CLINC150: the shipped Mahalanobis statistics (MiniLM vector), threshold recalibrated on the ensemble's verdicts
    calibration = json.loads((folder / "calibration.json").read_text())
    cal_c_old = calibration["clinc150"]
    scorer = MahalanobisScorer.load(folder / cal_c_old["statistics"])
    a_val, a_oos = pc_val.argmax(1), pc_oos.argmax(1)
    cal_d = calibrate_distance(scorer.distance(mini["clinc_val"]["x"]), a_val == yc, a_val == oos_id,
                               scorer.distance(mini["clinc_oos_val"]["x"]), a_oos == oos_id)
    cal_p = best_threshold(pc_val.max(1), a_val == yc, pc_oos.max(1), a_val == oos_id, a_oos == oos_id)
    ensemble_note = ("English intents: ensemble of the MiniLM head and a logistic head over multilingual-e5-small's "
                     "frozen sentence vector (mean of the two log-probabilities; scripts/fit_e5_heads.py); thresholds "
                     "on the "
                     "ensemble's probabilities")
    calibration["banking77"] = {**calibration["banking77"], **cal_b}
    calibration["clinc150"] = {**cal_c_old, **cal_d, "threshold": cal_p["threshold"],
                               "val_accuracy_argmax": round(float(np.mean(a_val == yc)), 4)}
    calibration["ensemble"] = ensemble_note
    heads.save(folder / E5_HEADS)
    back = E5Heads.load(folder / E5_HEADS)
    for t, (w, b) in fitted.items():  # what the pipeline will read
        assert np.allclose(back.heads[t][0], w, atol=1e-5) and np.allclose(back.heads[t][1], b, atol=1e-5)
    (folder / "calibration.json").write_text(json.dumps(calibration, indent=1) + "\n")
    manifest = dict(bundle.manifest)
    manifest.pop("files", None)
    manifest["version"] = args.version
    manifest["e5_heads"] = E5_HEADS
    manifest["metrics"] = {
        **manifest.get("metrics", {}),
        "banking77_val_accuracy_minilm_head": manifest["metrics"]["banking77_val_accuracy"],
        "clinc150_val_accuracy_minilm_head": manifest["metrics"]["clinc150_val_accuracy"],
        "banking77_val_accuracy": cal_b["val_accuracy_argmax"],
        "clinc150_val_accuracy": calibration["clinc150"]["val_accuracy_argmax"],
        "clinc150_val_in_scope_accuracy_with_threshold": cal_d["val_in_scope_accuracy"],
        "clinc150_oos_val_recall": cal_d["val_oos_recall"]}
    manifest["provenance"] = {**manifest.get("provenance", {}), "e5_heads": (
        "plugins/customer_service/scripts/fit_e5_heads.py: logistic regression (scikit-learn, "
        + (f"C = {args.c} given (the 5-fold CV on train of compare_stacked.py chose 0.1 for both sets)" if args.c
           else f"C by 5-fold CV on train: {json.dumps(report)}")
        + ") on multilingual-e5-small vectors (sectorflow_customer_service.e5) of "
        "banking77 train minus the validation slice and CLINC150 train + oos_train; " + ensemble_note)}
    write_manifest(folder, **manifest)
    print(json.dumps({"banking77": {k: v for k, v in cal_b.items() if k != "gate_candidates"},
                      "clinc150": calibration["clinc150"], "cv": report}, indent=1, default=str))
    print(f"wrote {folder / E5_HEADS}, calibration.json, manifest.json (version {args.version})")


if __name__ == "__main__":
    main()
