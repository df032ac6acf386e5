"""Decide, on validation only, where the second encoder runs and the banking77 out-of-scope operating point.

Two decisions of ``calibration.json`` (bundle 0.3.3; issue 30), both from validation splits, never test:

1. ``ensemble_gate`` per intent set: multilingual-e5-small (the second encoder, 2x MiniLM's cost) runs only for the
   messages whose MiniLM top probability (of that intent set's head) is under the gate; the others keep the MiniLM
   head's answer. Candidates 0.50, 0.60, ..., 0.90, 0.95, 0.98, 0.99, 1.01 (1.01: every message, as before). Rule:
   **the lowest gate whose validation accuracy (top intent) equals the always-ensemble's** (no validation message
   lost). A first rule allowed 0.10 points less (gates 0.90 / 0.80); it was replaced before any test figure was
   looked at, because issue 30's test targets leave no margin (banking77 93.70 against >= 93.7; CLINC150 "no worse"). Validation sets: the banking77
   slice (10 % of train, seed 13; 1,003 messages) scored with bundle 0.3.1's banking77 e5 head (``--e5-heads``, fit
   on the other 9,000 rows: the shipped 0.3.2 head saw the slice), and CLINC150 val (3,000; its e5 head never saw
   val).
2. banking77's out-of-scope fallback (MiniLM top probability threshold ``threshold`` and CLINC150-head gate
   ``gate_min_probability``; it reads the MiniLM heads' probabilities only, so decision 1 does not move it).
   Before: the best in-scope accuracy with out-of-scope recall >= 75 % in *each* group (oos_val and the off-domain
   CLINC150 val messages), which flagged 7.2 % of banking77's in-scope test messages. Rule (issue 30's objective:
   in-scope messages answered out of scope under 3 %, CLINC150 out-of-scope recall >= 75 %), written before the
   sweep: among the points that flag at most 2 % of the banking77 validation slice and catch at least 75 % of
   CLINC150 oos_val, **the highest mean of the two out-of-scope recalls** (oos_val and the off-domain CLINC150 val
   messages, each kind weighing the same, as the old objective did), then the higher oos_val recall; refused
   (nothing written) when no point qualifies. (The first version maximised oos_val recall alone: it chose a point
   that caught 80 % of oos_val but 64 % of off-domain messages, "what's the weather in Paris tomorrow" answered with
   a banking intent; the mean picks 76 % / 88 % at the same flag rate. Both on validation, before any test figure.) The grid:
   threshold 0.00-0.80, CLINC150 gate as before, and (new) ``oos_label_min_probability``: the CLINC150 head's
   ``oos`` verdict counts only at this probability or more (before: always). Without it no point flagged under
   2.59 % of the slice (the CLINC150 head calls 2.6 % of banking77 messages ``oos``). 2 % and not 3 %: at the old
   point the slice's flag rate (5.68 %) was under the test's 7.2 %, so validation needs room; 1.5 % was tried first
   and reached only 73 % oos_val recall (under the 75 % floor: refused).

Usage (encodings cached in ``--cache``; about 3 minutes on 2 cores the first time)::

    git show cfcab8c^:plugins/customer_service/src/sectorflow_customer_service/bundle/e5_heads.safetensors \\
        > /tmp/e5_heads_0.3.1.safetensors
    .venv/bin/python plugins/customer_service/scripts/fit_ensemble_gate.py --e5-heads /tmp/e5_heads_0.3.1.safetensors \\
        [--write]      # --write: update the bundle's calibration.json and manifest (version 0.3.3)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_stacked import encode_e5, encode_minilm, splits  # noqa: E402
from sectorflow import load_bundle, write_manifest  # noqa: E402
from sectorflow_customer_service import datasets as data  # noqa: E402
from sectorflow_customer_service.ensemble import E5Heads  # noqa: E402

GATES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 1.01)
THRESHOLDS = tuple(round(x, 2) for x in np.arange(0.0, 0.81, 0.01))
CLINC_GATES = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.01)
OOS_LABEL_MIN = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.01)
MAX_FLAGGED_VAL = 0.02
MIN_OOS_RECALL = 0.75


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def gated_accuracy(heads: E5Heads, name: str, logits: np.ndarray, vectors: np.ndarray, y: np.ndarray) -> list[dict]:
    """Accuracy of the top intent (and the number right) and share of messages sent to e5, per gate."""
    minilm = softmax(logits)
    ensemble = softmax(heads.combine(name, logits, vectors))
    out = []
    for gate in GATES:
        unsure = minilm.max(1) < gate
        pred = np.where(unsure, ensemble.argmax(1), minilm.argmax(1))
        out.append({"gate": gate, "e5_share": round(float(unsure.mean()), 4), "right": int(np.sum(pred == y)),
                    "accuracy": round(float(np.mean(pred == y)), 4)})
    return out


def choose_gate(rows: list[dict]) -> dict:
    always = next(r for r in rows if r["gate"] == 1.01)["accuracy"]
    return next(r for r in rows if r["accuracy"] >= always - 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=str(HERE / "src" / "sectorflow_customer_service" / "bundle"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache", default="/tmp/cs_gate", help="encoded validation splits (compare_stacked.py's format)")
    ap.add_argument("--e5-heads", required=True, help="bundle 0.3.1's e5_heads.safetensors (see the docstring)")
    ap.add_argument("--write", action="store_true", help="update calibration.json and the manifest (0.3.3)")
    args = ap.parse_args()
    folder = Path(args.bundle)
    rows = {k: v for k, v in splits(Path(args.data)).items() if k in ("b77_val", "clinc_val", "clinc_oos_val")}
    e5 = encode_e5(rows, Path(args.cache))
    mini = encode_minilm(rows, Path(args.cache), folder)
    labels = json.loads((folder / "labels.json").read_text())
    heads = E5Heads.load(args.e5_heads)
    bi = {lab: i for i, lab in enumerate(labels["banking77"])}
    ci = {lab: i for i, lab in enumerate(labels["clinc150"])}
    yb = np.array([bi[lab] for _, lab in rows["b77_val"]])
    yc = np.array([ci[lab] for _, lab in rows["clinc_val"]])
    report: dict = {}

    # 1. where e5 runs
    for name, split, key, y in (("banking77", "b77_val", "b77", yb), ("clinc150", "clinc_val", "clinc", yc)):
        table = gated_accuracy(heads, name, mini[split][key], e5[split], y)
        chosen = choose_gate(table)
        report[name] = {"candidates": table, "chosen": chosen}
        print(f"{name} ({split}, {len(y)} messages): MiniLM alone {np.mean(mini[split][key].argmax(1) == y):.4f}")
        for r in table:
            mark = "  <- chosen" if r is chosen else ""
            print(f"  gate {r['gate']:.2f}: e5 on {100 * r['e5_share']:5.1f} %  accuracy {100 * r['accuracy']:.2f}{mark}")

    # 2. banking77's out-of-scope operating point (MiniLM probabilities, as the pipeline reads them)
    domains = json.loads((Path(args.data) / "clinc150" / "domains.json").read_text())
    bank_like = set(domains.get("banking", [])) | set(domains.get("credit_cards", []))
    bank_ids = np.array([lab in bank_like for lab in labels["clinc150"]])
    oos_id = ci[data.OOS]
    off = np.array([lab not in bank_like for _, lab in rows["clinc_val"]])
    mb = {s: softmax(mini[s]["b77"]) for s in rows}
    mc = {s: softmax(mini[s]["clinc"]) for s in rows}

    def flags(split: str, t: float, g: float, subset: np.ndarray | None = None, q: float = 0.0) -> np.ndarray:
        """The pipeline's banking77 fallback (pipeline._intent): MiniLM top banking77 probability under t, or the
        CLINC150 head's top class is ``oos`` with probability >= q, or an off-domain CLINC150 intent with
        probability >= g."""
        pb, pc = mb[split], mc[split]
        if subset is not None:
            pb, pc = pb[subset], pc[subset]
        top, prob = pc.argmax(1), pc.max(1)
        return (pb.max(1) < t) | ((top == oos_id) & (prob >= q)) | (~bank_ids[top] & (top != oos_id) & (prob >= g))

    calibration = json.loads((folder / "calibration.json").read_text())
    old = calibration["banking77"]
    old_point = {"threshold": old["threshold"], "gate_min_probability": old["gate_min_probability"],
                 "val_in_scope_flagged": round(float(flags("b77_val", old["threshold"],
                                                           old["gate_min_probability"]).mean()), 4),
                 "val_oos_recall": round(float(flags("clinc_oos_val", old["threshold"],
                                                     old["gate_min_probability"]).mean()), 4),
                 "val_off_domain_recall": round(float(flags("clinc_val", old["threshold"],
                                                            old["gate_min_probability"], off).mean()), 4)}
    print(f"banking77 fallback before: {old_point}")
    points = []
    for q in OOS_LABEL_MIN:
        for g in CLINC_GATES:
            for t in THRESHOLDS:
                points.append({"threshold": t, "gate_min_probability": g, "oos_label_min_probability": q,
                               "val_in_scope_flagged": round(float(flags("b77_val", t, g, q=q).mean()), 4),
                               "val_oos_recall": round(float(flags("clinc_oos_val", t, g, q=q).mean()), 4),
                               "val_off_domain_recall": round(float(flags("clinc_val", t, g, off, q=q).mean()), 4)})
    for g in CLINC_GATES:  # the frontier at q = 0 (the CLINC150 head's oos verdict always counts), for the record
        row = [p for p in points if p["gate_min_probability"] == g and p["oos_label_min_probability"] == 0.0]
        print(f"  gate {g:.2f}: " + "; ".join(f"t {p['threshold']:.2f} flags {100 * p['val_in_scope_flagged']:.2f} % "
                                              f"oos {100 * p['val_oos_recall']:.0f} % off {100 * p['val_off_domain_recall']:.0f} %"
                                              for p in row[::10]))
    feasible = [p for p in points if p["val_in_scope_flagged"] <= MAX_FLAGGED_VAL
                and p["val_oos_recall"] >= MIN_OOS_RECALL]
    if not feasible:
        sys.exit(f"no operating point flags <= {MAX_FLAGGED_VAL:.1%} of the slice with oos_val recall >= "
                 f"{MIN_OOS_RECALL:.0%} (lowest flag rate: {min(p['val_in_scope_flagged'] for p in points):.2%}): "
                 f"nothing written")
    best = max(feasible, key=lambda p: (round(p["val_oos_recall"] + p["val_off_domain_recall"], 4),
                                        p["val_oos_recall"], -p["val_in_scope_flagged"]))
    best = {k: (float(v) if isinstance(v, float) else v) for k, v in best.items()}
    print(f"banking77 fallback chosen: {best}")
    report["banking77_fallback"] = {"before": old_point, "chosen": best}
    if not args.write:
        print(json.dumps(report, indent=1))
        return
    rule = ("ensemble_gate: the lowest gate on the MiniLM top probability whose validation accuracy equals the "
            "always-ensemble's (scripts/fit_ensemble_gate.py; banking77 slice scored with 0.3.1's e5 head, which did "
            "not see it)")
    for name in ("banking77", "clinc150"):
        calibration[name]["ensemble_gate"] = report[name]["chosen"]["gate"]
        calibration[name]["ensemble_gate_validation"] = {**report[name]["chosen"], "rule": rule}
    calibration["banking77"].update(
        threshold=best["threshold"], gate_min_probability=best["gate_min_probability"],
        oos_label_min_probability=best["oos_label_min_probability"],
        val_in_scope_flagged=best["val_in_scope_flagged"], val_oos_recall=best["val_oos_recall"],
        val_oos_recall_by_group={"oos_val": best["val_oos_recall"], "off_domain_val": best["val_off_domain_recall"]},
        rule=(f"issue 30: among the points flagging <= {MAX_FLAGGED_VAL:.1%} of the banking77 validation slice with "
              f"CLINC150 oos_val recall >= 0.75, the highest mean of the oos_val and off-domain recalls "
              f"(scripts/fit_ensemble_gate.py)"),
        previous_operating_point=old_point)
    calibration["banking77"].pop("val_in_scope_accuracy", None)
    (folder / "calibration.json").write_text(json.dumps(calibration, indent=1) + "\n")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest = {k: v for k, v in manifest.items() if k != "files"}
    manifest["version"] = "0.3.3"
    manifest["provenance"]["ensemble_gate"] = (
        "bundle 0.3.3 = 0.3.2 with calibration.json's ensemble_gate (e5 runs where MiniLM's top probability is under "
        "it) and a new banking77 out-of-scope operating point, both decided on validation by "
        "plugins/customer_service/scripts/fit_ensemble_gate.py; weights unchanged")
    (folder / "manifest.json").unlink()
    write_manifest(folder, **manifest)
    print(f"wrote {folder / 'calibration.json'} and the manifest (0.3.3)")


if __name__ == "__main__":
    main()
