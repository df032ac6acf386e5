"""Throughput of ``Taskflow("customer_service")``'s English cascade with each encoder on another runtime (issue 30).

One process, one ``Taskflow("customer_service")`` (defaults: banking77, the bundle's cascade), its two predictors
swapped between variants and the variants alternated ``--reps`` times, so that every variant meets the same
machine load; the figures to read are the **ratios to the shipped path** in the last table. Variants:

- ``shipped``: MiniLM and multilingual-e5-small on the fp32 Paddle predictor (oneDNN), e5 where MiniLM's top
  banking77 probability is under the bundle's gate (0.95);
- ``minilm ort-fp32 + e5 int8``: MiniLM's program converted to ONNX (paddle2onnx) and run by ONNX Runtime fp32
  (outputs within 1e-4 of Paddle's), e5 INT8 (ONNX Runtime dynamic quantization of its MatMul weights);
- ``minilm int8 + e5 int8``: MiniLM INT8 (``MatMul,Gather``, as ``sectorflow models quantize customer_service``
  builds it) and e5 INT8;
- ``minilm ort-fp32 alone`` / ``minilm paddle alone``: gate 0 (no e5), the floor the cascade cannot go below.

The swap sets the pipeline's internal pools (``pipeline.main.pool``, ``pipeline.e5._pool``): no public option selects
these runtimes. Accuracy of each variant on validation: ``plugins/customer_service/scripts/fit_int8_cascade.py``,
which also builds the ONNX files used here (``--cache``). Messages: ``--texts`` banking77 test messages shuffled with
seed 0 (as ``benchmarks/paddlenlp_compare.py``), one call at batch 32 (the core cuts it into batches by length, the
plugin's ``batch_key``), and half as many in one call at batch 1. For the ratio to PaddleNLP, run
``benchmarks/paddlenlp_compare.py --roles sf-fp32,pnlp-meanpool`` beside it and multiply.

    OMP_NUM_THREADS=2 nice -n 10 .venv/bin/python benchmarks/cs_int8_cascade.py [--threads 2] [--texts 512] \\
        [--reps 2] [--cache /tmp/cs_cascade]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "customer_service" / "scripts"))
DATA = ROOT.parent / "shared" / "data" / "banking77"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--texts", type=int, default=512)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--cache", default="/tmp/cs_cascade", help="fit_int8_cascade.py's cache (ONNX files)")
    args = ap.parse_args()
    from fit_int8_cascade import onnx_models
    from sectorflow import Taskflow
    from sectorflow.onnx_runtime import OnnxSessionPool

    with (DATA / "test.csv").open(encoding="utf-8", newline="") as fh:
        rows = [r["text"] for r in csv.DictReader(fh)]
    random.Random(0).shuffle(rows)
    texts = rows[:args.texts]
    models = onnx_models(Path(args.cache), args.threads)
    tf = Taskflow("customer_service", num_threads=args.threads, batch_size=32)
    p = tf.pipeline
    gate = p.ensemble_gate

    def pool(key: str) -> OnnxSessionPool:
        return OnnxSessionPool(models[key], args.threads)

    mf, mi, ei = pool("minilm/fp32-onnx"), pool("minilm/int8-MatMul,Gather"), pool("e5/int8-MatMul")
    variants = {"shipped": (p.main.pool, p.e5._pool, gate),
                "minilm paddle + e5 int8": (p.main.pool, ei, gate),
                "minilm paddle + e5 int8 g0.90": (p.main.pool, ei, 0.90),
                "minilm ort-fp32 + e5 int8": (mf, ei, gate),
                "minilm int8 + e5 int8": (mi, ei, gate),
                "minilm paddle alone": (p.main.pool, ei, 0.0)}
    results: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    print(f"{len(texts)} banking77 test messages, {args.threads} threads, gate {gate}", flush=True)
    for rep in range(args.reps):
        for name, (main_pool, e5_pool, g) in variants.items():
            p.main.pool, p.e5._pool, p.ensemble_gate = main_pool, e5_pool, g
            tf.batch_size = p.main.batch_size = 32
            tf(texts[:64])  # warm-up: this runtime's shapes
            for batch in (32, 1):
                tf.batch_size = p.main.batch_size = batch
                part = texts if batch == 32 else texts[:len(texts) // 2]
                t0, c0 = time.perf_counter(), time.process_time()
                tf(part)
                rate = len(part) / (time.perf_counter() - t0)
                cpu_rate = len(part) / (time.process_time() - c0)
                results.setdefault((name, batch), []).append(rate)
                cpu.setdefault((name, batch), []).append(cpu_rate)
                print(f"rep {rep + 1} {name:30s} batch {batch:2d}: {rate:7.1f} msg/s, {cpu_rate:7.1f} per CPU-second "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    # Wall-clock rates on a shared machine move with the other jobs; messages per CPU-second (this process's user +
    # system time, all threads) count the work done and move much less with the load (with 1 thread they are the
    # single-core rate; with more, threads that wait busy inflate the CPU time).
    print(f"\n{'variant':30s} | batch 32: msg/s, x shipped | per CPU-s, x shipped | batch 1: msg/s, x shipped "
          f"| per CPU-s, x shipped")
    for name in variants:
        cells = []
        for b in (32, 1):
            for table in (results, cpu):
                value, base = statistics.median(table[(name, b)]), statistics.median(table[("shipped", b)])
                cells.append(f"{value:7.1f}, {value / base:5.2f}x")
        print(f"{name:30s} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
