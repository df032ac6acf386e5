"""Figures of ``Taskflow("customer_service")``: intent accuracy, out-of-scope recall, Chinese examples, speed.

Everything runs through the shipped bundle and the Paddle Inference predictor, exactly as served:

- banking77 test (3,080 messages): accuracy of the top intent (``top_k[0]``, the figure comparable with
  Casanueva et al. 2020's 93.66 for BERT-base) and accuracy when the out-of-scope fallback is on (a message
  flagged out of scope counts wrong).
- CLINC150 test with ``intent_set="clinc150"``: in-scope accuracy (4,500 messages; out-of-scope verdicts count
  wrong) and out-of-scope recall (oos_test, 1,000 messages), the two figures of Larson et al. 2019.
- Chinese: the project-written held-out set ``samples/customer_service/intents_zh_eval.jsonl`` (60 in-scope
  messages for 30 banking77 intents, 10 off-domain): accuracy and out-of-scope recall, with the encoder named.
- Speed: latency per message at batch 1 (the encoders only: the MiniLM predictor alone, and MiniLM + e5 as the
  bundle's ensemble runs them for English; and the whole pipeline call), and throughput at batch 32 (encoders only,
  and whole pipeline) on banking77 test messages; machine, threads and sequence length stated.

Usage::

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/cs_eval.py [--threads 2] [--limit N] [--json out.json]

``--limit`` takes the first N messages of each set (a quick smoke run; figures then are not the reported ones).
``--speed-only`` skips the accuracy sets (no labels read) and measures speed only, e.g. again on a quieter machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402

from sectorflow import Taskflow  # noqa: E402
from sectorflow_customer_service import datasets  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
ZH_EVAL = REPO / "samples" / "customer_service" / "intents_zh_eval.jsonl"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_all(tf, texts, chunk=256):
    out = []
    for s in range(0, len(texts), chunk):
        out += tf(texts[s:s + chunk])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", default="")
    ap.add_argument("--speed-only", action="store_true", help="measure speed only (no accuracy sets)")
    args = ap.parse_args()
    if not (DATA / "banking77").is_dir():
        sys.exit(f"{DATA} is absent: the benchmark reads ../shared/data (banking77, clinc150)")
    cut = (lambda rows: rows[:args.limit]) if args.limit else (lambda rows: rows)
    report: dict = {"machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "threads": args.threads,
                                "max_seq_len": 64, "python": platform.python_version(),
                                "load_average_at_start": [round(x, 1) for x in os.getloadavg()]}}

    tf = Taskflow("customer_service", num_threads=args.threads, batch_size=32)
    report["bundle"] = {"name": tf.meta.model_name, "version": tf.meta.model_version,
                        "sha256": tf.meta.bundle_sha256}
    b77 = datasets.banking77(DATA / "banking77")
    if args.speed_only:
        speed(tf, b77, report, args)
        return
    test = cut(b77["test"])
    t0 = time.perf_counter()
    res = run_all(tf, [t for t, _ in test])
    elapsed = time.perf_counter() - t0
    report["banking77_test"] = {
        "n": len(test),
        "accuracy_top1": round(float(np.mean([r.top_k[0].label == y for r, (_, y) in zip(res, test)])), 4),
        "accuracy_with_fallback": round(float(np.mean([r.intent == y for r, (_, y) in zip(res, test)])), 4),
        "flagged_out_of_scope": round(float(np.mean([r.out_of_scope for r in res])), 4),
        "pipeline_messages_per_s": round(len(test) / elapsed, 1)}
    print(json.dumps(report["banking77_test"]), flush=True)

    tfc = Taskflow("customer_service", num_threads=args.threads, batch_size=32, intent_set="clinc150")
    clinc = datasets.clinc150(DATA / "clinc150")
    ins, oos = cut(clinc["test"]), cut(clinc["oos_test"])
    r_in = run_all(tfc, [t for t, _ in ins])
    r_out = run_all(tfc, [t for t, _ in oos])
    report["clinc150_test"] = {
        "n_in_scope": len(ins), "n_oos": len(oos),
        "in_scope_accuracy": round(float(np.mean([r.intent == y for r, (_, y) in zip(r_in, ins)])), 4),
        "in_scope_accuracy_top1_no_threshold": round(float(np.mean([r.top_k[0].label == y
                                                                   for r, (_, y) in zip(r_in, ins)])), 4),
        "oos_recall": round(float(np.mean([r.out_of_scope for r in r_out])), 4),
        "rule": {k: v for k, v in tfc.pipeline.calibration["clinc150"].items()
                 if k in ("method", "distance_threshold", "threshold")}}
    print(json.dumps(report["clinc150_test"]), flush=True)

    rows = [json.loads(line) for line in ZH_EVAL.read_text(encoding="utf-8").splitlines() if line.strip()]
    r_zh = tf([r["text"] for r in rows])
    zin = [(r, x) for r, x in zip(r_zh, rows) if x["label"] != "oos"]
    zout = [r for r, x in zip(r_zh, rows) if x["label"] == "oos"]
    report["zh_examples"] = {
        "encoder": r_zh[0].encoder, "n_in_scope": len(zin), "n_oos": len(zout),
        "in_scope_accuracy": round(float(np.mean([r.intent == x["label"] for r, x in zin])), 4),
        "in_scope_accuracy_top1": round(float(np.mean([r.top_k[0].label == x["label"] for r, x in zin])), 4),
        "oos_recall": round(float(np.mean([r.out_of_scope for r in zout])), 4),
        "threshold": tf.pipeline.zh_calibration}
    print(json.dumps(report["zh_examples"], ensure_ascii=False), flush=True)

    speed(tf, b77, report, args)


def speed(tf, b77, report: dict, args) -> None:
    """Latency and throughput on the first 320 banking77 test messages (texts only); writes ``report``."""
    texts = [t for t, _ in b77["test"]][:320]
    minilm, e5 = tf.pipeline.main, tf.pipeline.e5

    def encoders(batch):  # what forward() runs for English: MiniLM, and e5 when the bundle has e5 heads
        minilm.run(batch)
        if e5 is not None:
            e5.encode(batch)

    for t in texts[:5]:
        encoders([t])  # warm-up
    lat_minilm = []
    for t in texts[:100]:
        s = time.perf_counter()
        minilm.run([t])
        lat_minilm.append(time.perf_counter() - s)
    lat = []
    for t in texts[:100]:
        s = time.perf_counter()
        encoders([t])
        lat.append(time.perf_counter() - s)
    lat_tf = []
    for t in texts[:100]:
        s = time.perf_counter()
        tf([t])
        lat_tf.append(time.perf_counter() - s)
    s = time.perf_counter()
    for k in range(0, len(texts), 32):
        encoders(texts[k:k + 32])
    pred32 = len(texts) / (time.perf_counter() - s)
    s = time.perf_counter()
    for k in range(0, len(texts), 32):
        tf(texts[k:k + 32])
    tf32 = len(texts) / (time.perf_counter() - s)
    lengths = (tf.pipeline.tokenizer.encode_batch(texts, 64) != 0).sum(1)
    report["speed_en"] = {
        "messages": len(texts), "mean_tokens": round(float(lengths.mean()), 1),
        "encoders": ["minilm"] + (["e5"] if e5 is not None else []),
        "minilm_predictor_batch1_ms_p50": round(1000 * float(np.median(lat_minilm)), 2),
        "encoders_batch1_ms_p50": round(1000 * float(np.median(lat)), 2),
        "encoders_batch1_ms_p90": round(1000 * float(np.percentile(lat, 90)), 2),
        "pipeline_batch1_ms_p50": round(1000 * float(np.median(lat_tf)), 2),
        "encoders_batch32_msgs_per_s": round(pred32, 1), "pipeline_batch32_msgs_per_s": round(tf32, 1)}
    print(json.dumps(report["speed_en"]), flush=True)
    report["machine"]["load_average_at_end"] = [round(x, 1) for x in os.getloadavg()]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)  # out/ is git-ignored: absent in a fresh clone
        Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
