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
   process's resident memory (``/proc/self/statm``) grew from call 100 to the last.

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


def median_ms(pool: Any, feed: dict[str, np.ndarray], runs: int) -> float:
    for _ in range(20):
        pool.run(feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        pool.run(feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def memory_growth(pool: Any, feed: dict[str, np.ndarray], calls: int) -> dict[str, float]:
    for _ in range(100):
        pool.run(feed)
    before = rss_bytes()
    for _ in range(calls - 100):
        pool.run(feed)
    after = rss_bytes()
    return {"rss_mib_after_100": round(before / 2**20, 1), f"rss_mib_after_{calls}": round(after / 2**20, 1),
            "growth_pct": round(100 * (after - before) / before, 2)}


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
    memory = {name: memory_growth(pools[name], feeds[1], args.calls) for name in (reference, "int8 ONNX Runtime")}

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
