"""INT8 against fp32 for one task's model: size, validation accuracy, latency at batch 1 and 32, resident memory.

For the task's ``paddle-inference`` bundle (or ``--model-bundle``) this script

1. builds the INT8 bundle exactly as ``sectorflow models quantize`` does (paddle2onnx opset 17, ONNX Runtime
   dynamic quantization of MatMul weights, per channel) into a temporary folder, with the margin check off so that
   a loss is reported rather than refused, and takes size and accuracy from its manifest record;
2. times one model run (``pool.run``, the call a pipeline's ``forward`` makes) at batch 1 and batch 32 for: the fp32
   Paddle predictor with oneDNN, the fp32 Paddle predictor as the bundle configures it (when it opts out of
   oneDNN), fp32 ONNX Runtime (to separate the runtime from the quantization) and INT8 ONNX Runtime; median of
   ``--runs`` after 20 warm-up runs, inputs cut from the validation batches;
3. runs ``--calls`` (default 10,000) batch-1 calls on the INT8 and the fp32 Paddle pools and reports how much the
   process's resident memory (``/proc/self/statm``) grew from call 100 to the last.

Validation data is the task's ``TaskSpec.validation``. For plugins that do not provide one yet the script builds it:
``aml``: every transaction of the two training runs replayed through the plugin's feature code, metric =
account-level F1 at the bundle's threshold on the held-out 20% validation accounts (the split and metric the
bundle's manifest reports); ``customer_service``: the banking77 validation slice of the plugin's training script,
accuracy of the ``banking77`` head; ``legal_extraction``: segments of the CUAD validation contracts, macro AUPR. Targets (issue 10): INT8 <= 0.3x size, >= 99.5% of fp32 accuracy,
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

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def aml_validation(bundle: Any) -> Any:
    """The AML scorer's validation set: transactions of the training runs, account-level F1 at the bundle's
    threshold on the held-out accounts (``sectorflow_aml.training.fit``'s split: seed + run index, 20%)."""
    from sectorflow import ValidationSet
    from sectorflow_aml.training import RUNS, SEED, account_scores, account_split, prf, replay

    threshold = float(bundle.read_json("scorer.json")["threshold"])
    runs = [replay(DATA / "amlsim_sample" / name) for name in RUNS[:2]]
    batches, pieces = [], []
    for i, run in enumerate(runs):
        for begin in range(0, len(run.x), 8192):
            batches.append({"features": run.x[begin:begin + 8192]})
            pieces.append(i)

    def metric(outputs: list[list[np.ndarray]], labels: Any) -> float:
        scores, truth = [], []
        for i, run in enumerate(runs):
            tx = np.concatenate([o[0].reshape(-1) for o, p in zip(outputs, pieces) if p == i])
            best = account_scores(run.src, run.dst, tx, run.fraud.shape[0])
            val = account_split(run.fraud, SEED + i)
            scores.append(best[val])
            truth.append(run.fraud[val])
        return float(prf(np.concatenate(scores) >= threshold, np.concatenate(truth))["f1"])

    return ValidationSet(batches=batches, labels=None, metric=metric, metric_name="account-level F1",
                         split="held-out 20% of accounts (seeded, stratified) of " + " + ".join(RUNS[:2]))


def customer_service_validation(bundle: Any) -> Any:
    """The customer-service intent model's validation set: the banking77 validation slice (10% of train, seed 13:
    the plugin's training split), word pieces of the shipped vocabulary, batches of 32 sorted by length; metric:
    accuracy of the ``banking77`` head (the output of that name in the built bundle's manifest ``outputs``)."""
    from sectorflow import ValidationSet, plugins
    from sectorflow_customer_service import data
    from sectorflow_customer_service.tokenize import WordPiece

    outputs = list(bundle.manifest.get("outputs") or [])
    if "banking77" not in outputs:
        raise SystemExit(f"{bundle.path}: no 'banking77' output in the manifest ({outputs}); give the "
                         f"paddle-inference bundle the plugin builds from its shipped intent bundle")
    head = outputs.index("banking77")
    shipped = plugins.get_task("customer_service").default_bundle
    tokenizer = WordPiece(Path(shipped) / "vocab.txt")
    labels = data.banking77_labels(DATA / "banking77")
    index = {name: i for i, name in enumerate(labels)}
    rows = sorted(data.banking77(DATA / "banking77")["val"], key=lambda r: len(r[0]))
    batches, truth = [], []
    for begin in range(0, len(rows), 32):
        part = rows[begin:begin + 32]
        batches.append({"input_ids": tokenizer.encode_batch([t for t, _ in part], max_len=64)})
        truth.extend(index[label] for _, label in part)

    def metric(outs: list[list[np.ndarray]], labels_: Any) -> float:
        predicted = np.concatenate([o[head].argmax(axis=-1) for o in outs])
        return float((predicted == np.asarray(labels_)).mean())

    return ValidationSet(batches=batches, labels=np.asarray(truth), metric=metric, metric_name="banking77 accuracy",
                         split=f"banking77 validation slice (10% of train, seed 13), {len(rows)} texts")


def legal_validation(bundle: Any) -> Any:
    """The CUAD clause classifier's validation set: segments of the validation contracts (the plugin's by-contract
    split), labelled as its training script labels them; metric: macro average precision (AUPR) over the categories
    with positives, the figure the training script selects its epoch on."""
    import importlib.util

    from sklearn.metrics import average_precision_score

    from sectorflow import ValidationSet
    from sectorflow_legal_extraction import cuad
    from sectorflow_legal_extraction.clauses import batch_arrays

    script = REPO / "plugins" / "legal_extraction" / "scripts" / "train_clause_classifier.py"
    module_spec = importlib.util.spec_from_file_location("train_clause_classifier", script)
    train = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(train)
    buckets = int(bundle.read_json("classifier.json")["buckets"])
    cats = cuad.categories(DATA / "cuad")
    contracts = [c for c in cuad.load(DATA / "cuad") if c.split == "validation"]
    texts, labels, _ = train.labelled_segments(contracts, cats)
    batches = [batch_arrays(texts[i:i + 512], buckets) for i in range(0, len(texts), 512)]

    def metric(outs: list[list[np.ndarray]], y: np.ndarray) -> float:
        scores = np.concatenate([o[0] for o in outs])
        aps = [average_precision_score(y[:, k], scores[:, k]) for k in range(y.shape[1]) if y[:, k].sum()]
        return float(np.mean(aps))

    return ValidationSet(batches=batches, labels=labels, metric=metric, metric_name="macro AUPR",
                         split=f"CUAD validation contracts ({len(contracts)} contracts, {len(texts)} segments)")


def rows_of(validation: Any, n: int) -> dict[str, np.ndarray]:
    """The first ``n`` rows of the middle validation batch (batches sorted by length give a typical length there)."""
    batch = validation.batches[len(validation.batches) // 2]
    if len(next(iter(batch.values()))) < n:
        raise SystemExit(f"validation batches hold fewer than {n} rows; the latency figures need {n}")
    return {name: np.asarray(array)[:n] for name, array in batch.items()}


BUILDERS = {"aml": aml_validation, "customer_service": customer_service_validation,
            "legal_extraction": legal_validation}
"""Validation sets this script builds for plugins that do not give ``TaskSpec.validation`` yet."""


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
    parser.add_argument("--validation", choices=["task", *BUILDERS], default=None,
                        help="validation data: the task's own (default), or the script's builder for a plugin that "
                             "has none yet (aml, customer_service)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=300, help="timed runs per latency figure")
    parser.add_argument("--calls", type=int, default=10_000, help="calls for the resident-memory figure")
    parser.add_argument("--ops", default="MatMul", help="operators to quantize (MatMul, Gather), comma-separated")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from sectorflow import PredictorPool, load_bundle, plugins
    from sectorflow.bundle import make_predictor_config
    from sectorflow.device import Device
    from sectorflow.export import paddle_to_onnx
    from sectorflow.onnx_runtime import OnnxSessionPool
    from sectorflow.quantize import quantize_bundle

    spec = plugins.get_task(args.task)
    source = args.model_bundle or spec.default_bundle
    bundle = load_bundle(source)
    use = args.validation or (args.task if args.task in BUILDERS and spec.validation is None else "task")
    if use != "task":
        import dataclasses

        spec = dataclasses.replace(spec, validation=BUILDERS[use])
    validation = spec.validation(bundle) if spec.validation else None
    if validation is None:
        print(f"task {args.task!r} has no validation data; give --validation", file=sys.stderr)
        return 2
    cached = validation
    spec = __import__("dataclasses").replace(spec, validation=lambda _bundle: cached)

    work = Path(tempfile.mkdtemp(prefix="int8-bench-"))
    start = time.perf_counter()
    record = quantize_bundle(spec, task_path=source, out=work / "int8", margin=100.0, num_threads=args.threads,
                             op_types=tuple(args.ops.split(",")))
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
