"""INT8 against fp32 for one task's model: size, validation accuracy, latency at batch 1 and 32, resident memory.

For the task's ``paddle-inference`` bundle (or ``--model-bundle``) this script

1. builds the INT8 bundle exactly as ``sectorflow models quantize`` does (paddle2onnx opset 17, then the task's
   ``Int8Spec.quantize_ops`` or ``--ops``: e.g. ONNX Runtime dynamic quantization of MatMul weights per channel, or
   weight-only ``MatMulWeightOnly`` for aml) into a temporary folder, with the margin check off so that
   a loss is reported rather than refused, and takes size and accuracy from its manifest record;
2. times one model run (``pool.run``, the call a pipeline's ``forward`` makes) at batch 1 and batch 32 for: the fp32
   Paddle predictor with oneDNN, the fp32 Paddle predictor as the bundle configures it (when it opts out of
   oneDNN), fp32 ONNX Runtime (to separate the runtime from the quantization) and INT8 ONNX Runtime; median of
   ``--runs`` after 20 warm-up runs, inputs cut from the validation batches;
3. runs ``--calls`` (default 10,000) batch-1 calls on the INT8 and the fp32 Paddle pools and reports how much the
   process's resident memory (``/proc/self/statm``) grew from call 100 to the last. The calls cycle through every
   validation row, each cut to its own length (trailing padding of integer inputs removed), so that the inputs vary
   in shape as a service's messages do (a predictor keeps work buffers per input shape: one repeated row hid a 7 %
   growth); ``--bucket K`` pads each row's length up to a multiple of K as ``sectorflow_customer_service``'s
   ``PredictorEncoder`` does (its ``LENGTH_BUCKET``), ``--bucket 1`` measures exact lengths. ``--memory-only``
   measures only this (the fp32 Paddle pool; no quantization, no latency).

Validation data is the task's ``Int8Spec.validation`` (``sectorflow_aml.calibration``: account-level F1 on the
held-out 20% of accounts of two AMLSim runs; ``sectorflow_customer_service.calibration``: the banking77 validation
slice, accuracy of the ``banking77`` head; ``sectorflow_legal_extraction.calibration``: segments of the CUAD
validation contracts, macro AUPR). Targets (issue 10): INT8 <= 0.3x size, >= 99.5% of fp32 accuracy,
<= 0.67x latency; memory growth <= 5%.

Usage::

    .venv/bin/python benchmarks/int8_bench.py --task aml --threads 2
    .venv/bin/python benchmarks/int8_bench.py --task customer_service --model-bundle DIR   # a paddle-inference bundle

Prints a Markdown table (docs/performance.md) and, with ``--json PATH``, the raw figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def rows_of(validation: Any, n: int) -> dict[str, np.ndarray]:
    """The first ``n`` rows of the middle validation batch (batches sorted by length give a typical length there)."""
    batch = validation.batches[len(validation.batches) // 2]
    if len(next(iter(batch.values()))) < n:
        raise SystemExit(f"validation batches hold fewer than {n} rows; the latency figures need {n}")
    return {name: np.asarray(array)[:n] for name, array in batch.items()}


def varied_rows(validation: Any, bucket: int = 1, max_len: int = 64) -> list[dict[str, np.ndarray]]:
    """Every validation row as a batch-1 feed cut to its own length: a 2-D integer input loses its trailing zeros
    (padding), rounded up to a multiple of ``bucket`` but at most ``max_len`` (what a pipeline with length buckets
    feeds); other inputs keep their shape."""
    feeds = []
    for batch in validation.batches:
        arrays = {name: np.asarray(a) for name, a in batch.items()}
        for i in range(len(next(iter(arrays.values())))):
            row = {}
            for name, a in arrays.items():
                r = a[i:i + 1]
                if r.ndim == 2 and np.issubdtype(r.dtype, np.integer):
                    nonzero = np.flatnonzero(r[0])
                    length = int(nonzero[-1]) + 1 if len(nonzero) else 1
                    width = max(length, min(max_len, -(-length // bucket) * bucket))
                    r = np.zeros((1, width), dtype=a.dtype)
                    r[0, :length] = a[i, :length]
                row[name] = r
            feeds.append(row)
    np.random.default_rng(0).shuffle(feeds)  # arrival order, not the validation batches' length order
    return feeds


def median_ms(pool: Any, feed: dict[str, np.ndarray], runs: int) -> float:
    for _ in range(20):
        pool.run(feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        pool.run(feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def memory_growth(pool: Any, feeds: list[dict[str, np.ndarray]], calls: int) -> dict[str, float]:
    """Resident memory after call 100 and after call ``calls`` of batch-1 runs cycling through ``feeds``."""
    for k in range(100):
        pool.run(feeds[k % len(feeds)])
    before = rss_bytes()
    for k in range(100, calls):
        pool.run(feeds[k % len(feeds)])
    after = rss_bytes()
    shapes = len({tuple(tuple(a.shape) for a in f.values()) for f in feeds})
    return {"rss_mib_after_100": round(before / 2**20, 1), f"rss_mib_after_{calls}": round(after / 2**20, 1),
            "growth_pct": round(100 * (after - before) / before, 2), "input_shapes": shapes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--model-bundle", type=Path, help="paddle-inference bundle (default: the task's bundle)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=300, help="timed runs per latency figure")
    parser.add_argument("--calls", type=int, default=10_000, help="calls for the resident-memory figure")
    parser.add_argument("--ops", help="operators to quantize, comma-separated (MatMul, Gather, GRU, "
                                      "MatMulWeightOnly); default: the task's own choice, as `models quantize`")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--bucket", type=int, default=8, help="memory calls: pad each row's length up to a multiple "
                        "of this (8: the customer-service PredictorEncoder's LENGTH_BUCKET; 1: exact lengths)")
    parser.add_argument("--memory-only", action="store_true", help="only the resident-memory figure of the fp32 "
                        "Paddle pool (oneDNN), no quantization")
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from sectorflow import PredictorPool, load_bundle, plugins
    from sectorflow.bundle import make_predictor_config
    from sectorflow.device import Device
    from sectorflow.models.export import paddle_to_onnx
    from sectorflow.onnx_runtime import OnnxSessionPool
    from sectorflow.models.quantize import quantize_bundle

    spec = plugins.get_task(args.task)
    source = args.model_bundle or spec.default_bundle
    bundle = load_bundle(source)
    if spec.int8.validation is None:
        print(f"task {args.task!r} gives no validation data (Int8Spec.validation)", file=sys.stderr)
        return 2
    validation = spec.int8.validation(bundle)
    cached = validation
    dc = __import__("dataclasses")
    spec = dc.replace(spec, int8=dc.replace(spec.int8, validation=lambda _bundle: cached))

    if args.memory_only:
        pool = PredictorPool(make_predictor_config(bundle, Device("cpu"), "fp32", args.threads))
        mem = memory_growth(pool, varied_rows(validation, args.bucket), args.calls)
        print(f"Resident memory, fp32 Paddle predictor (bundle setting), {args.calls} batch-1 calls of varied rows "
              f"(--bucket {args.bucket}), load average {os.getloadavg()[0]:.1f}: {mem}")
        return 0
    work = Path(tempfile.mkdtemp(prefix="int8-bench-"))
    start = time.perf_counter()
    record = quantize_bundle(spec, task_path=source, out=work / "int8", margin=100.0, num_threads=args.threads,
                             op_types=tuple(args.ops.split(",")) if args.ops else None)
    build_s = time.perf_counter() - start
    int8_file = work / "int8" / "model.onnx"
    fp32_onnx = paddle_to_onnx(bundle, work / "fp32.onnx")

    cpu = Device("cpu")
    pools: dict[str, Any] = {}
    config = make_predictor_config(bundle, cpu, "fp32", args.threads)
    config.enable_mkldnn()
    pools["fp32 Paddle predictor, oneDNN"] = PredictorPool(config)
    if not bundle.manifest.get("cpu_onednn", True):
        pools["fp32 Paddle predictor, bundle setting (oneDNN off)"] = PredictorPool(
            make_predictor_config(bundle, cpu, "fp32", args.threads))
    pools["fp32 ONNX Runtime"] = OnnxSessionPool(fp32_onnx, args.threads)
    pools["int8 ONNX Runtime"] = OnnxSessionPool(int8_file, args.threads)

    feeds = {b: rows_of(validation, b) for b in (1, 32)}
    latency = {name: {b: round(median_ms(pool, feeds[b], args.runs), 4) for b in feeds} for name, pool in pools.items()}
    reference = "fp32 Paddle predictor, oneDNN"
    varied = varied_rows(validation, args.bucket)
    memory = {name: memory_growth(pools[name], varied, args.calls) for name in (reference, "int8 ONNX Runtime")}

    shape = {name: list(a.shape) for name, a in feeds[32].items()}
    figures = {
        "task": args.task, "bundle": f"{bundle.name}@{bundle.version}", "bundle_sha256": bundle.sha256,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores visible, {platform.processor() or 'cpu'}",
        "cpu_model": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                           if line.startswith("model name")), "?"),
        "threads": args.threads, "op_types": record["op_types"], "input_shape_batch32": shape, "timed_runs": args.runs,
        "size": record["size"], "accuracy": record["accuracy"], "max_abs_diff": record["max_abs_diff"],
        "validation_rows": sum(len(next(iter(b.values()))) for b in validation.batches),
        "build_seconds": round(build_s, 1), "latency_ms": latency, "memory": memory, "calls": args.calls,
        "tools": record["tools"],
    }
    acc = record["accuracy"]
    print(f"## {args.task}: {figures['bundle']}\n")
    print(f"Quantized: {', '.join(record['op_types'])}. Machine: {figures['cpu_model']} ({figures['machine']}), "
          f"{args.threads} threads; input at batch 32: "
          f"{shape}; median of {args.runs} runs after 20 warm-up runs.\n")
    print("| | size | " + f"{acc['metric']} | latency batch 1 | latency batch 32 |")
    print("|---|---|---|---|---|")
    ref = latency[reference]
    for name, lat in latency.items():
        size = record["size"]["int8_bytes"] if name.startswith("int8") else record["size"]["fp32_bytes"]
        score = acc["int8"] if name.startswith("int8") else acc["fp32"]
        print(f"| {name} | {size / 1024:.1f} KiB | {100 * score:.2f} | {lat[1]:.3f} ms ({lat[1] / ref[1]:.2f}x) | "
              f"{lat[32]:.3f} ms ({lat[32] / ref[32]:.2f}x) |")
    print(f"\nINT8/fp32: size {record['size']['ratio']:.2f}x (target <= 0.3x), accuracy "
          f"{100 * (acc['relative'] or 0):.2f}% of fp32 (target >= 99.5%), loss {acc['loss_points']:.2f} points on "
          f"{acc['split']} ({figures['validation_rows']} input rows); largest output difference "
          f"{record['max_abs_diff']['value']:.3g}.")
    int8 = latency["int8 ONNX Runtime"]
    for name, lat in latency.items():
        if not name.startswith("int8"):
            print(f"INT8 latency / {name}: batch 1 {int8[1] / lat[1]:.2f}x, batch 32 {int8[32] / lat[32]:.2f}x "
                  f"(target <= 0.67x)")
    for name, mem in memory.items():
        print(f"Resident memory, {name}, {args.calls} batch-1 calls: {mem}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
