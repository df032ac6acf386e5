"""Throughput and latency of ``Taskflow("aml")`` on one thread, every rule and the model on.

- Batch: transactions per second for one call on ``--n`` transactions of an AMLSim run (already-validated
  ``Transaction`` objects from the amlsim reader, so input parsing is not counted), ``batch_size`` per forward.
- Streaming: per-call latency of one transaction per call (``tf(txn)``) over ``--n-stream`` transactions, p50/p99.
- Breakdown: the same transactions through the sliding window alone, window + scorer features, and the model on
  the feature matrix, so the time of each stage is visible. ``--profile`` adds a cProfile of the batch call.

Targets (issue 3): >= 50,000 tx/s batch, p99 <= 2 ms streaming.

Usage::

    .venv/bin/python benchmarks/aml_throughput.py [--run 20K_fanin200cycle200] [--n 60000] [--batch-size 1024]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from sectorflow import Taskflow, load_bundle  # noqa: E402
from sectorflow_aml.features import FeatureExtractor, stack  # noqa: E402
from sectorflow_aml.loaders import load_transactions  # noqa: E402
from sectorflow_aml.scorer import RiskScorer  # noqa: E402
from sectorflow_aml.window import TransactionWindow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"
BUNDLE = REPO / "plugins" / "aml" / "src" / "sectorflow_aml" / "bundle"


def breakdown(txns: list, bundle_dir: Path, batch_size: int) -> dict[str, float]:
    """Microseconds per transaction of the window, the scorer's features and the model forward.

    The window and feature loops run with the cyclic garbage collector paused, as the pipeline's preprocess loop
    does, so their figures do not carry collection pauses that the pipeline does not have.
    """
    gc.collect()
    gc.disable()
    try:
        window = TransactionWindow(lookback_days=30.0)
        start = time.perf_counter()
        for t in txns:
            window.add(t)
        t_window = time.perf_counter() - start
        window = TransactionWindow(lookback_days=30.0)
        extractor = FeatureExtractor(window.lookback)
        rows = []
        start = time.perf_counter()
        for t in txns:
            window.add(t)
            rows.append(extractor.row(t, window))
        t_both = time.perf_counter() - start
    finally:
        gc.enable()
    scorer = RiskScorer(load_bundle(bundle_dir), None)
    x = stack(rows)
    scorer.score(x[:batch_size])
    start = time.perf_counter()
    for begin in range(0, len(x), batch_size):
        scorer.score(x[begin:begin + batch_size])
    t_model = time.perf_counter() - start
    n = len(txns) / 1e6
    return {"window": t_window / n, "features": (t_both - t_window) / n, "model": t_model / n}


def predictor_latency(bundle_dir: Path, calls: int = 500) -> dict[str, float]:
    """Median microseconds of one ``paddle.inference`` run of the scorer at batch 1, oneDNN on and off."""
    from sectorflow import PredictorPool
    from sectorflow import import_paddle

    inference = import_paddle().inference
    x = np.random.default_rng(0).random((1, 28), dtype=np.float32)
    out = {}
    for onednn in (True, False):
        config = inference.Config(str(bundle_dir / "model.json"), str(bundle_dir / "model.pdiparams"))
        config.disable_glog_info()
        config.disable_gpu()
        config.enable_mkldnn() if onednn else config.disable_mkldnn()
        config.set_cpu_math_library_num_threads(1)
        pool = PredictorPool(config)
        name = pool.input_names[0]
        times = []
        for i in range(calls + 20):
            start = time.perf_counter()
            pool.run({name: x})
            if i >= 20:
                times.append(time.perf_counter() - start)
        out["onednn" if onednn else "plain"] = float(np.median(times)) * 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--n", type=int, default=60000, help="transactions for the batch figure")
    parser.add_argument("--n-stream", type=int, default=5000, help="transactions fed one per call")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--profile", action="store_true", help="cProfile the batch call and print the top 25")
    args = parser.parse_args(argv)

    txns, problems = load_transactions(args.data / args.run / "transactions.csv.gz", "amlsim")
    assert not problems, problems[:3]
    batch = txns[: args.n]
    tf = Taskflow("aml", batch_size=args.batch_size, num_threads=1)
    tf(txns[:2000])  # warm-up: predictor, oneDNN kernels
    tf.reset_state()

    start = time.perf_counter()
    tf(batch)
    batch_s = time.perf_counter() - start
    tf.reset_state()

    # streaming: the first n_stream - 1000 calls of the run after a warm prefix fed the same way
    latencies = []
    for t in txns[: args.n_stream]:
        start = time.perf_counter()
        tf(t)
        latencies.append(time.perf_counter() - start)
    lat = np.array(latencies[1000:]) * 1000.0
    parts = breakdown(batch, BUNDLE, args.batch_size)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"Taskflow num_threads=1, batch_size={args.batch_size}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"run {args.run}; every rule and the model on (default options)")
    rate = len(batch) / batch_s
    print(f"batch:     {len(batch)} transactions in {batch_s:.2f} s = {rate:,.0f} tx/s "
          f"(target >= 50,000: {'met' if rate >= 50000 else 'MISSED'})")
    print(f"streaming: {len(lat)} calls of one transaction: p50 {np.percentile(lat, 50):.3f} ms, "
          f"p99 {np.percentile(lat, 99):.3f} ms (target p99 <= 2 ms: "
          f"{'met' if np.percentile(lat, 99) <= 2.0 else 'MISSED'})")
    total = 1e6 / rate
    print(f"breakdown per transaction (us): whole batch call {total:.1f}; window.add {parts['window']:.1f}; "
          f"scorer features {parts['features']:.1f}; model forward {parts['model']:.2f}; "
          f"rest (typology rules, reports, result objects, garbage collection) {total - sum(parts.values()):.1f} "
          f"(window and features timed with the garbage collector paused, as in the pipeline)")
    probe = predictor_latency(BUNDLE)
    print(f"one predictor run at batch 1 (median of 500): oneDNN {probe['onednn']:.0f} us, without oneDNN "
          f"{probe['plain']:.0f} us")
    if args.profile:
        tf.reset_state()
        prof = cProfile.Profile()
        prof.enable()
        tf(batch)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
