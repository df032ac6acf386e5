"""INT8 encoders in the English cascade (issue 30, "the default path"): what they cost in accuracy, on validation only.

The default English path (bundle 0.3.3) runs MiniLM (fp32 Paddle predictor) on every message and
multilingual-e5-small (fp32 Paddle predictor) on the messages whose MiniLM top probability is under the bundle's
``ensemble_gate``. Issue 30 asks for >= 1.5x PaddleNLP's throughput on that path; INT8 on CPU (ONNX Runtime dynamic
quantization, ``sectorflow.models.quantize.quantize_onnx``, as ``sectorflow models quantize`` builds it) is the
candidate. This script measures, on validation splits only (the test splits are never read):

- each encoder variant (MiniLM: fp32 on Paddle, fp32 on ONNX Runtime (``fp32-onnx``), INT8 ``MatMul,Gather``, INT8
  ``MatMul``; e5: fp32, INT8 ``MatMul``): the largest logit difference to Paddle fp32, the
  MiniLM banking77 head's validation accuracy and its ratio to fp32 (the INT8 rule of ``sectorflow models quantize``:
  >= 99.5 % of fp32's metric, relative);
- the cascade for each pair and gate (0.50 ... 1.01): top-intent accuracy and the share of messages sent to e5,
  on the banking77 validation slice (1,003; scored with bundle 0.3.1's banking77 e5 head, which did not see the
  slice: ``--e5-heads``) and CLINC150 val (3,000);
- the out-of-scope rules as shipped (calibration.json, unchanged) fed by each MiniLM variant: banking77 fallback
  (share of the slice flagged, CLINC150 oos_val recall, off-domain recall) and CLINC150 (kNN distance on the MiniLM
  vector, the ensemble's ``oos`` class; in-scope accuracy on val, oos_val recall).

Usage (encodings cached under ``--cache``; about 10 minutes on 2 shared cores the first time)::

    git show cfcab8c^:plugins/customer_service/src/sectorflow_customer_service/bundle/e5_heads.safetensors \\
        > /tmp/e5_heads_0.3.1.safetensors
    OMP_NUM_THREADS=2 nice -n 10 .venv/bin/python plugins/customer_service/scripts/fit_int8_cascade.py \\
        --e5-heads /tmp/e5_heads_0.3.1.safetensors [--cache /tmp/cs_cascade] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_stacked import encode_e5, encode_minilm, splits  # noqa: E402
from fit_ensemble_gate import gated_accuracy, softmax  # noqa: E402
from sectorflow import load_bundle  # noqa: E402
from sectorflow_customer_service import datasets as data  # noqa: E402
from sectorflow_customer_service.ensemble import E5Heads  # noqa: E402
from sectorflow_customer_service.oos import load_scorer  # noqa: E402

MINILM_VARIANTS = {"int8-MatMul,Gather": ("MatMul", "Gather"), "int8-MatMul": ("MatMul",)}
E5_VARIANTS = {"int8-MatMul": ("MatMul",)}


def onnx_models(cache: Path, threads: int) -> dict[str, Path]:
    """fp32 ONNX of both encoders (paddle2onnx of the exported Paddle programs) and their INT8 variants."""
    from sectorflow.models.export import paddle_to_onnx
    from sectorflow.models.quantize import quantize_onnx
    from sectorflow_customer_service.e5.encoder import WEIGHTS, default_cache_dir, export_inference
    from sectorflow_customer_service.plugin import BUNDLE_DIR
    from sectorflow_customer_service.runtime import inference_bundle

    folder = cache / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    sources = {"minilm": inference_bundle(load_bundle(BUNDLE_DIR, expected_task="customer_service")),
               "e5": export_inference(load_bundle(WEIGHTS, expected_task="sentence-embedding"), default_cache_dir())}
    for name, bundle in sources.items():
        fp32 = folder / f"{name}-fp32.onnx"
        if not fp32.is_file():
            paddle_to_onnx(bundle, fp32)
        out[f"{name}/fp32-onnx"] = fp32
        for variant, ops in (MINILM_VARIANTS if name == "minilm" else E5_VARIANTS).items():
            target = folder / f"{name}-{variant.replace(',', '-')}.onnx"
            if not target.is_file():
                t0 = time.perf_counter()
                quantize_onnx(fp32, target, ops)
                print(f"quantized {name} {variant} in {time.perf_counter() - t0:.0f} s", flush=True)
            out[f"{name}/{variant}"] = target
    return out


def encode_minilm_onnx(rows: dict, cache: Path, model: Path, tag: str, threads: int) -> dict[str, dict]:
    from sectorflow.onnx_runtime import OnnxSessionPool
    from sectorflow_customer_service.plugin import BUNDLE_DIR
    from sectorflow_customer_service.runtime import PredictorEncoder, tokenizer_of

    folder = cache / f"minilm-{tag.replace(',', '-')}"
    folder.mkdir(parents=True, exist_ok=True)
    missing = [s for s in rows if not (folder / f"{s}.npz").is_file()]
    if missing:
        bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
        encoder = PredictorEncoder(OnnxSessionPool(model, threads), tokenizer_of(bundle), bundle.name, batch_size=32)
        heads = [name for name, _ in bundle.manifest["heads"]]
        for s in missing:
            t0 = time.perf_counter()
            o = encoder.run([t for t, _ in rows[s]])
            np.savez(folder / f"{s}.npz", x=o[0], b77=o[1 + heads.index("banking77")],
                     clinc=o[1 + heads.index("clinc150")])
            print(f"minilm {tag} {s}: {len(rows[s])} messages in {time.perf_counter() - t0:.0f} s", flush=True)
    return {s: dict(np.load(folder / f"{s}.npz")) for s in rows}


def encode_e5_onnx(rows: dict, cache: Path, model: Path, tag: str, threads: int) -> dict[str, np.ndarray]:
    from sectorflow.onnx_runtime import OnnxSessionPool
    from sectorflow_customer_service.e5 import E5Encoder

    folder = cache / f"e5-{tag.replace(',', '-')}"
    folder.mkdir(parents=True, exist_ok=True)
    missing = [s for s in rows if not (folder / f"{s}.npy").is_file()]
    if missing:
        enc = E5Encoder(num_threads=threads)
        enc._pool = OnnxSessionPool(model, threads)  # same run() interface as the Paddle pool
        for s in missing:
            t0 = time.perf_counter()
            np.save(folder / f"{s}.npy", enc.encode([t for t, _ in rows[s]], batch_size=32))
            print(f"e5 {tag} {s}: {len(rows[s])} messages in {time.perf_counter() - t0:.0f} s", flush=True)
    return {s: np.load(folder / f"{s}.npy") for s in rows}


def cascade(heads: E5Heads, name: str, logits: np.ndarray, vectors: np.ndarray, y: np.ndarray) -> list[dict]:
    """fit_ensemble_gate's gated accuracy per gate, MiniLM's probabilities in float64 (INT8 logits vary more)."""
    return gated_accuracy(heads, name, logits.astype(np.float64), vectors, y)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache", default="/tmp/cs_cascade")
    ap.add_argument("--e5-heads", required=True, help="bundle 0.3.1's e5_heads.safetensors (see the docstring)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from sectorflow_customer_service.plugin import BUNDLE_DIR

    cache = Path(args.cache)
    rows = {k: v for k, v in splits(Path(args.data)).items() if k in ("b77_val", "clinc_val", "clinc_oos_val")}
    minilm = {"fp32": encode_minilm(rows, cache, BUNDLE_DIR)}
    e5 = {"fp32": encode_e5(rows, cache)}
    models = onnx_models(cache, args.threads)
    for tag in ("fp32-onnx", *MINILM_VARIANTS):
        minilm[tag] = encode_minilm_onnx(rows, cache, models[f"minilm/{tag}"], tag, args.threads)
    for tag in E5_VARIANTS:
        e5[tag] = encode_e5_onnx(rows, cache, models[f"e5/{tag}"], tag, args.threads)

    labels = json.loads((BUNDLE_DIR / "labels.json").read_text())
    cal = json.loads((BUNDLE_DIR / "calibration.json").read_text())
    heads = E5Heads.load(args.e5_heads)
    shipped_heads = E5Heads.load(BUNDLE_DIR / "e5_heads.safetensors")  # clinc150 head: same as 0.3.1's
    bi = {lab: i for i, lab in enumerate(labels["banking77"])}
    ci = {lab: i for i, lab in enumerate(labels["clinc150"])}
    yb = np.array([bi[lab] for _, lab in rows["b77_val"]])
    yc = np.array([ci[lab] for _, lab in rows["clinc_val"]])
    domains = json.loads((Path(args.data) / "clinc150" / "domains.json").read_text())
    bank_like = set(domains.get("banking", [])) | set(domains.get("credit_cards", []))
    bank_ids = np.array([lab in bank_like for lab in labels["clinc150"]])
    oos_id = ci[data.OOS]
    off = np.array([lab not in bank_like for _, lab in rows["clinc_val"]])
    b = cal["banking77"]
    knn = load_scorer(cal["clinc150"]["method"], BUNDLE_DIR / cal["clinc150"]["statistics"])
    report: dict = {"minilm": {}, "cascade": {}}

    for tag, m in minilm.items():
        acc_b = float(np.mean(m["b77_val"]["b77"].argmax(1) == yb))
        acc_c = float(np.mean(m["clinc_val"]["clinc"].argmax(1) == yc))

        def flags(split: str, subset: np.ndarray | None = None) -> np.ndarray:
            pb, pc = softmax(m[split]["b77"].astype(np.float64)), softmax(m[split]["clinc"].astype(np.float64))
            if subset is not None:
                pb, pc = pb[subset], pc[subset]
            top, prob = pc.argmax(1), pc.max(1)
            return ((pb.max(1) < b["threshold"]) | ((top == oos_id) & (prob >= b.get("oos_label_min_probability", 0)))
                    | (~bank_ids[top] & (top != oos_id) & (prob >= b["gate_min_probability"])))

        report["minilm"][tag] = {
            "banking77_val_head_accuracy": round(acc_b, 4), "banking77_val_right": int(np.sum(m["b77_val"]["b77"].argmax(1) == yb)),
            "clinc150_val_head_accuracy": round(acc_c, 4),
            "banking77_fallback": {"val_flagged": round(float(flags("b77_val").mean()), 4),
                                   "oos_val_recall": round(float(flags("clinc_oos_val").mean()), 4),
                                   "off_domain_recall": round(float(flags("clinc_val", off).mean()), 4)}}
        fp = report["minilm"]["fp32"]
        report["minilm"][tag]["relative_to_fp32"] = round(acc_b / fp["banking77_val_head_accuracy"], 4)
        report["minilm"][tag]["largest_logit_difference_to_fp32"] = round(float(max(
            np.abs(m[s][k].astype(np.float64) - minilm["fp32"][s][k]).max() for s in rows for k in ("b77", "clinc"))), 6)
        for etag, v in e5.items():
            key = f"minilm {tag} + e5 {etag}"
            rb = cascade(heads, "banking77", m["b77_val"]["b77"], v["b77_val"], yb)
            rc = cascade(shipped_heads, "clinc150", m["clinc_val"]["clinc"], v["clinc_val"], yc)
            # CLINC150 with its out-of-scope rule at the shipped gate: kNN distance on MiniLM's vector, ensemble's oos
            g = cal["clinc150"]["ensemble_gate"]
            thr = cal["clinc150"]["distance_threshold"]

            def clinc_oos(split: str) -> tuple[np.ndarray, np.ndarray]:
                lg = m[split]["clinc"].astype(np.float64)
                unsure = softmax(lg).max(1) < g
                lg[unsure] = shipped_heads.combine("clinc150", m[split]["clinc"][unsure], v[split][unsure])
                pred = lg.argmax(1)
                return pred, (knn.distance(m[split]["x"]) > thr) | (pred == oos_id)

            pred, oos = clinc_oos("clinc_val")
            _, oos_out = clinc_oos("clinc_oos_val")
            report["cascade"][key] = {
                "banking77": rb, "clinc150": rc,
                "clinc150_at_shipped_gate": {"in_scope_accuracy": round(float(np.mean((pred == yc) & ~oos)), 4),
                                             "oos_val_recall": round(float(oos_out.mean()), 4)}}
    print(json.dumps(report["minilm"], indent=1))
    for key, r in report["cascade"].items():
        print(f"\n{key}: CLINC150 at shipped gate {r['clinc150_at_shipped_gate']}")
        for rb, rc in zip(r["banking77"], r["clinc150"]):
            print(f"  gate {rb['gate']:.2f}: banking77 {100 * rb['accuracy']:.2f} ({rb['right']}) e5 on "
                  f"{100 * rb['e5_share']:5.1f} % | clinc150 {100 * rc['accuracy']:.2f} e5 on {100 * rc['e5_share']:5.1f} %")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
