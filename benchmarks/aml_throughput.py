"""Throughput and latency of ``Taskflow("aml")`` on one thread, every rule and the model on.

- Batch: transactions per second for one call on ``--n`` transactions of an AMLSim run (already-validated
  ``Transaction`` objects from the amlsim reader, so input parsing is not counted), ``batch_size`` per forward.
- Streaming: per-call latency of one transaction per call (``tf(txn)``), p50/p99 over ``--n-stream`` calls, taken in
  steady state: after the run's first ``--stream-after`` transactions filled the window and 200 untimed calls.
- File: ``sectorflow run aml FILE --format amlsim --output OUT`` (the CLI's own ``main``, in-process) on the first
  ``--n`` rows of the run: reading, validation, the pipeline in 1,024-row calls and JSON-lines writing.
- Breakdown: the same transactions through the sliding window alone, window + scorer features, and the model on
  the feature matrix, so the time of each stage is visible. ``--profile`` adds a cProfile of the batch call.
- ``--instructions REV``: instructions executed (Valgrind's callgrind ``I refs``, which machine load does not move) by
  the per-transaction stages alone (window, the nine rules, the scorer's features, the report engine; no Paddle) over
  the first ``--n-instr`` transactions, for the plugin at ``REV`` and the working tree, each minus the same
  process without the loop; prints the ratio old/new. Needs ``valgrind`` on the PATH (minutes per run).
- ``--compare REV``: the batch and file figures of the plugin as it was at git revision ``REV`` (its
  ``plugins/aml/src`` extracted with ``git archive``; the same core, venv and data) and of the working tree, measured
  back to back in fresh subprocesses, alternating, ``--reps`` times each; prints medians and the ratio new/old of
  wall and CPU time (CPU time, ``time.process_time``, is steadier on a shared machine).

Targets (issue 3): >= 50,000 tx/s batch, p99 <= 2 ms streaming.

Usage::

    .venv/bin/python benchmarks/aml_throughput.py [--run 20K_fanin200cycle200] [--n 60000] [--batch-size 1024]
        [--compare 1c73f84 --reps 3] [--instructions 116f132 --n-instr 20000]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import gzip
import io
import itertools
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
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
GIT_REPO = Path(os.environ.get("SECTORFLOW_GIT_REPO", REPO))
"""Where ``--compare`` reads the old revision from (default this checkout)."""
BUNDLE = REPO / "plugins" / "aml" / "src" / "sectorflow_aml" / "bundle"
STREAM_WARMUP = 200
"""One-transaction calls before the timed ones (the batch-1 predictor's first runs build its kernels)."""


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give an integer of at least 1")
    return value


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
    width = len(RiskScorer(load_bundle(bundle_dir), None).feature_names)  # the model's input: one feature row
    x = np.random.default_rng(0).random((1, width), dtype=np.float32)
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


def head_file(source: Path, n: int, folder: Path) -> Path:
    """The header and first ``n`` rows of a gzipped CSV, as a new gzipped file in ``folder``."""
    path = folder / f"head{n}.csv.gz"
    with gzip.open(source, "rt", newline="") as src, gzip.open(path, "wt", newline="") as out:
        out.writelines(itertools.islice(src, n + 1))
    return path


def measure(source: Path, n: int, batch_size: int) -> dict[str, float]:
    """Wall and CPU seconds of one batch call on ``n`` validated transactions and of the CLI run over ``source``."""
    from sectorflow.cli import main as cli_main

    txns, problems = load_transactions(source, "amlsim")
    assert not problems and len(txns) == n, (len(txns), problems[:3])
    tf = Taskflow("aml", batch_size=batch_size, num_threads=1)
    tf(txns[:2000])
    tf.reset_state()
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    tf(txns)
    out = {"batch_wall": time.perf_counter() - wall, "batch_cpu": time.process_time() - cpu}
    del tf, txns
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out.jsonl"
        wall, cpu = time.perf_counter(), time.process_time()
        code = cli_main(["run", "aml", str(source), "--format", "amlsim", "--output", str(target),
                         "--batch-size", str(batch_size), "--num-threads", "1"])
        out.update(file_wall=time.perf_counter() - wall, file_cpu=time.process_time() - cpu)
        assert code == 0 and sum(1 for _ in open(target, encoding="utf-8")) == n
    return out


def extract_plugin(rev: str, old_root: Path) -> Path:
    """``plugins/aml/src`` as it was at git revision ``rev``, extracted under ``old_root`` (returned)."""
    old_root.mkdir()
    archive = subprocess.run(["git", "-C", str(GIT_REPO), "archive", rev, "plugins/aml/src"], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(old_root, filter="data")
    return old_root


def compare(rev: str, source: Path, n: int, batch_size: int, reps: int) -> None:
    """Batch and file figures of the plugin at ``rev`` and of the working tree, alternating in fresh processes."""
    with tempfile.TemporaryDirectory() as tmp:
        old_root = extract_plugin(rev, Path(tmp) / "old")
        runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for _ in range(reps):
            for which in ("old", "new"):
                env = dict(os.environ)
                if which == "old":
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(old_root / "plugins/aml/src"),
                                                                      env.get("PYTHONPATH")]))
                done = subprocess.run([sys.executable, __file__, "--measure-only", str(source), "--n", str(n),
                                       "--batch-size", str(batch_size)], env=env, capture_output=True, text=True,
                                      check=True)
                runs[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"compare: plugin at {rev} (old) vs working tree (new), {n} transactions, {reps} alternating runs each in "
          f"fresh processes; medians:")
    for key, label in (("batch", "batch call (validated Transactions)"),
                       ("file", "sectorflow run aml FILE --format amlsim (read, validate, score, write)")):
        parts = []
        for unit in ("wall", "cpu"):
            old = statistics.median(r[f"{key}_{unit}"] for r in runs["old"])
            new = statistics.median(r[f"{key}_{unit}"] for r in runs["new"])
            parts.append(f"{unit}: old {n / old:,.0f} tx/s, new {n / new:,.0f} tx/s, new/old speed {old / new:.2f}x")
        print(f"  {label}: " + "; ".join(parts))


def stages_loop(source: Path, n: int, loop: bool) -> None:
    """The per-transaction stages without the model (what ``--instructions`` counts): window, every rule, the
    scorer's feature row and the report engine over the first ``n`` transactions of ``source``."""
    from sectorflow_aml.features import FeatureExtractor as Features
    from sectorflow_aml.loaders import READERS
    from sectorflow_aml.reports import ReportEngine
    from sectorflow_aml.typologies import build_rules

    txns = [t for _, t in itertools.islice(READERS["amlsim"](source), n)]
    window = TransactionWindow(lookback_days=30.0)
    checks = [rule.check for rule in build_rules()]
    features = Features(window.lookback)
    engine = ReportEngine("CN")
    if not loop:  # everything but the loop (imports, reading, construction): subtracted from the loop's count
        return
    for t in txns:
        edge = window.add(t)
        for check in checks:
            check(window, edge)
        features.row(t, window)
        engine.observe(t)


def instructions(rev: str, source: Path, n: int) -> None:
    """Callgrind instruction counts of :func:`stages_loop` for the plugin at ``rev`` and the working tree."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed; skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        old_root = extract_plugin(rev, Path(tmp) / "old")
        running: dict[tuple[str, bool], subprocess.Popen] = {}
        for which in ("old", "new"):  # the four runs at once (each is single-threaded; counts do not depend on load)
            for loop in (False, True):
                env = dict(os.environ)
                if which == "old":
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(old_root / "plugins/aml/src"),
                                                                      env.get("PYTHONPATH")]))
                running[which, loop] = subprocess.Popen(
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
                     "--stages-only", str(source), "--n-instr", str(n), "--loop", "1" if loop else "0"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        counts: dict[tuple[str, bool], int] = {}
        for key, proc in running.items():
            _, err = proc.communicate()
            if proc.returncode:
                raise RuntimeError(f"valgrind run {key} failed: {err[-2000:]}")
            counts[key] = int(re.search(r"I\s+refs:\s+([\d,]+)", err).group(1).replace(",", ""))
    old = counts["old", True] - counts["old", False]
    new = counts["new", True] - counts["new", False]
    print(f"instructions (callgrind I refs) of window + 9 rules + features + report engine, first {n} transactions: "
          f"old {old / n:,.0f} per transaction, new {new / n:,.0f}; old/new {old / new:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--n", type=positive_int, default=60000, help="transactions for the batch figure")
    parser.add_argument("--n-stream", type=positive_int, default=5000, help="timed one-transaction calls")
    parser.add_argument("--stream-after", type=positive_int, default=60000,
                        help="transactions fed in one call before the streaming figure, so it is taken with a full "
                             "window (default 60,000: about 100 days of the run, the lookback is 30)")
    parser.add_argument("--batch-size", type=positive_int, default=1024)
    parser.add_argument("--profile", action="store_true", help="cProfile the batch call and print the top 25")
    parser.add_argument("--compare", metavar="REV", help="also measure the plugin at git revision REV (see above)")
    parser.add_argument("--reps", type=int, default=3, help="alternating runs per side for --compare")
    parser.add_argument("--instructions", metavar="REV", help="callgrind instruction counts at REV and now (see above)")
    parser.add_argument("--n-instr", type=int, default=20000, help="transactions for --instructions")
    parser.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stages-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--loop", default="1", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stages_only:
        stages_loop(args.stages_only, args.n_instr, args.loop == "1")
        return 0
    if args.instructions:
        instructions(args.instructions, args.data / args.run / "transactions.csv.gz", args.n_instr)
        return 0
    if args.measure_only:
        print(json.dumps(measure(args.measure_only, args.n, args.batch_size)))
        return 0

    txns, problems = load_transactions(args.data / args.run / "transactions.csv.gz", "amlsim")
    assert not problems, problems[:3]
    if args.n > len(txns):
        parser.error(f"--n {args.n} exceeds the run's {len(txns):,} transactions")
    if args.stream_after + STREAM_WARMUP + args.n_stream > len(txns):
        parser.error(f"--stream-after {args.stream_after} + {STREAM_WARMUP} warm-up calls + --n-stream "
                     f"{args.n_stream} exceed the run's {len(txns):,} transactions")
    batch = txns[: args.n]
    tf = Taskflow("aml", batch_size=args.batch_size, num_threads=1)
    tf(txns[:2000])  # warm-up: predictor, oneDNN kernels
    tf.reset_state()

    start, cpu = time.perf_counter(), time.process_time()
    tf(batch)
    batch_s = time.perf_counter() - start
    batch_cpu = time.process_time() - cpu
    tf.reset_state()

    # streaming in steady state: the window is first filled with the run's first --stream-after transactions (one
    # call; the state equals feeding them one at a time), 200 one-transaction calls warm the batch-1 predictor and
    # are not counted, then --n-stream one-transaction calls are timed
    tf(txns[: args.stream_after])
    for t in txns[args.stream_after: args.stream_after + STREAM_WARMUP]:
        tf(t)
    latencies = []
    for t in txns[args.stream_after + STREAM_WARMUP: args.stream_after + STREAM_WARMUP + args.n_stream]:
        start = time.perf_counter()
        tf(t)
        latencies.append(time.perf_counter() - start)
    lat = np.array(latencies) * 1000.0
    parts = breakdown(batch, BUNDLE, args.batch_size)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"Taskflow num_threads=1, batch_size={args.batch_size}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"run {args.run}; every rule and the model on (default options); load average at start "
          f"{os.getloadavg()[0]:.1f}")
    rate = len(batch) / batch_s
    print(f"batch:     {len(batch)} transactions in {batch_s:.2f} s = {rate:,.0f} tx/s wall, "
          f"{len(batch) / batch_cpu:,.0f} tx/s CPU (target >= 50,000: {'met' if rate >= 50000 else 'MISSED'})")
    print(f"streaming: {len(lat)} calls of one transaction: p50 {np.percentile(lat, 50):.3f} ms, "
          f"p99 {np.percentile(lat, 99):.3f} ms (target p99 <= 2 ms: "
          f"{'met' if np.percentile(lat, 99) <= 2.0 else 'MISSED'})")
    total = 1e6 / rate
    print(f"breakdown per transaction (us): whole batch call {total:.1f}; window.add {parts['window']:.1f}; "
          f"scorer features {parts['features']:.1f}; model forward {parts['model']:.2f}; "
          f"rest (typology rules, reports, result objects, garbage collection) {total - sum(parts.values()):.1f} "
          f"(window and features timed with the garbage collector paused, as in the pipeline)")
    with tempfile.TemporaryDirectory() as tmp:
        head = head_file(args.data / args.run / "transactions.csv.gz", args.n, Path(tmp))
        timing = measure(head, args.n, args.batch_size)
        print(f"file:      sectorflow run aml (first {args.n} rows, --format amlsim, --batch-size {args.batch_size}): "
              f"{args.n / timing['file_wall']:,.0f} tx/s wall, {args.n / timing['file_cpu']:,.0f} tx/s CPU "
              f"(reading, validation, scoring and JSON-lines writing)")
        if args.compare:
            compare(args.compare, head, args.n, args.batch_size, args.reps)
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
