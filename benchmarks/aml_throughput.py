"""Throughput and latency of ``Taskflow("aml")`` on one thread, default options (every rule, the account model, the
case book).

- Batch, whole file: transactions per second (CPU time, ``time.process_time``, beside wall time) of one call on the
  first ``--n`` transactions of an AMLSim run from an empty state (already-validated ``Transaction`` objects from the
  amlsim reader, so input parsing is not counted), ``batch_size`` per forward; the window fills during the call.
- Batch, steady state: the same on the ``--n`` transactions after the first ``--fill`` (default 30,000: about 37 days
  of the run, more than the 30-day lookback), fed first in an untimed call, so every timed transaction meets a full
  window (what a bank's daily run with ``--history`` or ``--state`` sees).
- Both also with ``account_model=False`` (no account rows: the per-transaction scorer instead) in the same process,
  with the ratio, so a loaded machine moves both alike.
- Streaming: per-call latency of one transaction per call (``tf(txn)``), p50/p99 over ``--n-stream`` calls, taken in
  steady state: after the run's first ``--stream-after`` transactions filled the window and 200 untimed calls.
- File: ``sectorflow run aml FILE --format amlsim --output OUT`` (the CLI's own ``main``, in-process) on the first
  ``--n`` rows of the run: reading, validation, the pipeline in 1,024-row calls and JSON-lines writing.
- Breakdown: the same transactions through the sliding window alone, window + the account features' state update
  and snapshots, the batch feature matrix (numpy), the LightGBM account model and the case book (its ``update``
  calls of a default call, recorded and replayed alone), and the garbage collector's time inside the timed
  whole-file call (``gc.callbacks``), so the time of each stage shows. ``--profile`` adds a cProfile of the batch
  call.
- ``--instructions REV``: instructions executed (Valgrind's callgrind ``I refs``, which machine load does not move) by
  the per-transaction stages alone (window, the rules, the account feature snapshots, the report engine; no model)
  over the first ``--n-instr`` transactions, for the plugin at ``REV`` and the working tree, each minus the same
  process without the loop; prints the ratio old/new. Needs ``valgrind`` on the PATH (minutes per run).
- ``--input FILE --input-format FMT``: another transaction file than the AMLSim run (e.g. an AMLGentex run,
  ``--input-format amlgentex``) for the batch, breakdown, file and ``--compare`` figures; its bad rows are skipped
  (the file figure runs ``sectorflow run aml FILE --format FMT --on-error skip`` on its first ``--n`` rows and
  counts the results it wrote: an AMLGentex head has opening-balance rows, which are not transactions). The
  streaming figure stays on the AMLSim run.
- ``--compare REV``: the batch (whole file and steady state) and file figures of the plugin as it was at git revision
  ``REV`` (its ``plugins/aml/src`` extracted with ``git archive``; the same core, venv and data) and of the working
  tree, measured back to back in fresh subprocesses, alternating, ``--reps`` times each; prints medians and the
  ratio new/old of wall and CPU time.

Targets (issue 21): batch no more than 20 % slower than 18,000 tx/s (CPU, one thread), i.e. >= 14,400 tx/s;
p99 <= 2 ms streaming.

Usage::

    .venv/bin/python benchmarks/aml_throughput.py [--run 20K_fanin200cycle200] [--n 60000] [--fill 30000]
        [--batch-size 1024] [--compare 1c73f84 --reps 3] [--instructions 116f132 --n-instr 20000]
        [--input ../shared/data/amlgentex_dev/dev_s303/transactions.csv.gz --input-format amlgentex]
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
from sectorflow_aml.loaders import load_transactions  # noqa: E402
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
    """Microseconds per transaction (CPU) of the window, the account features' state and snapshots, the batch
    feature matrix and the account model (LightGBM), in ``batch_size`` chunks as the pipeline's forward.

    The window and feature loops run with the cyclic garbage collector paused, as the pipeline's preprocess loop
    does, so their figures do not carry collection pauses that the pipeline does not have.
    """
    from sectorflow_aml.account_features import AccountFeatureExtractor, feature_matrix
    from sectorflow_aml.account_scorer import AccountScorer

    gc.collect()
    gc.disable()
    try:
        window = TransactionWindow(lookback_days=30.0)
        start = time.process_time()
        for t in txns:
            window.add(t)
        t_window = time.process_time() - start
        window = TransactionWindow(lookback_days=30.0)
        extractor = AccountFeatureExtractor(window.lookback)
        snaps: list = []
        start = time.process_time()
        for t in txns:
            snaps.extend(snap for _, snap in extractor.snapshots(window.add(t), window))
        t_both = time.process_time() - start
    finally:
        gc.enable()
    scorer = AccountScorer(load_bundle(bundle_dir))
    rows = 2 * batch_size  # about two account rows a transaction
    start = time.process_time()
    blocks = [feature_matrix(snaps[i:i + rows]) for i in range(0, len(snaps), rows)]
    t_matrix = time.process_time() - start
    start = time.process_time()
    for x in blocks:
        scorer.score_matrix(x)
    t_model = time.process_time() - start
    n = len(txns) / 1e6
    return {"window": t_window / n, "features": (t_both - t_window) / n, "matrix": t_matrix / n,
            "model": t_model / n, "rows_per_tx": len(snaps) / len(txns), "trees": scorer.booster.num_trees()}


def head_file(source: Path, n: int, folder: Path) -> Path:
    """The header and first ``n`` rows of a gzipped CSV, as a new gzipped file in ``folder``."""
    path = folder / f"head{n}.csv.gz"
    with gzip.open(source, "rt", newline="") as src, gzip.open(path, "wt", newline="") as out:
        out.writelines(itertools.islice(src, n + 1))
    return path


def batch_figures(txns: list, n: int, fill: int, batch_size: int, **options: object) -> dict[str, float]:
    """Wall and CPU seconds of one call on ``txns[:n]`` from an empty state (``whole_*``) and of one call on
    ``txns[fill:fill + n]`` after an untimed call on ``txns[:fill]`` (``steady_*``)."""
    tf = Taskflow("aml", batch_size=batch_size, num_threads=1, **options)
    tf(txns[:2000])  # warm-up: predictor, imports
    out: dict[str, float] = {}
    for name, before, timed in (("whole", [], txns[:n]), ("steady", txns[:fill], txns[fill:fill + n])):
        tf.reset_state()
        if before:
            tf(before)
        gc.collect()
        collections = _CollectorClock()
        gc.callbacks.append(collections)
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            tf(timed)
            out[f"{name}_wall"] = time.perf_counter() - wall
            out[f"{name}_cpu"] = time.process_time() - cpu
        finally:
            gc.callbacks.remove(collections)
        out[f"{name}_gc_cpu"] = collections.cpu
        out[f"{name}_gc_full"] = collections.full
    return out


class _CollectorClock:
    """A ``gc.callbacks`` entry: CPU seconds spent in the cyclic garbage collector, and how many full (oldest
    generation) collections ran, while it is registered."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.full = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.cpu += time.process_time() - self._start
            self.full += info.get("generation") == 2


def case_book_cost(txns: list, batch_size: int) -> float:
    """Microseconds per transaction (CPU) of the case book alone: the ``CaseBook.update`` calls of one default
    call on ``txns`` (recorded), replayed on an empty book with the same settings, collector paused."""
    from sectorflow_aml.cases import CaseBook

    calls: list = []
    update = CaseBook.update

    def recording(book: CaseBook, *args: object, **kwargs: object) -> object:
        calls.append((args, kwargs))
        return update(book, *args, **kwargs)

    tf = Taskflow("aml", batch_size=batch_size, num_threads=1)
    CaseBook.update = recording  # type: ignore[method-assign]
    try:
        tf(txns)
    finally:
        CaseBook.update = update  # type: ignore[method-assign]
    book = tf.pipeline.case_book.spawn()
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for args, kwargs in calls:
            book.update(*args, **kwargs)
        spent = time.process_time() - start
    finally:
        gc.enable()
    return 1e6 * spent / len(txns)


def file_figure(source: Path, fmt: str, n: int, batch_size: int) -> tuple[int, float, float]:
    """``sectorflow run aml`` (the CLI's ``main``, in-process) on the first ``n`` rows of ``source`` in format
    ``fmt``, bad rows skipped: ``(results written, wall seconds, CPU seconds)``."""
    from sectorflow.cli import main as cli_main

    with tempfile.TemporaryDirectory() as tmp:
        head = head_file(source, n, Path(tmp))
        target = Path(tmp) / "out.jsonl"
        wall, cpu = time.perf_counter(), time.process_time()
        code = cli_main(["run", "aml", str(head), "--format", fmt, "--output", str(target), "--on-error", "skip",
                         "--batch-size", str(batch_size), "--num-threads", "1", "--no-progress"])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert code == 0
        written = sum(1 for _ in open(target, encoding="utf-8"))
    return written, wall, cpu


def measure(source: Path, n: int, fill: int, batch_size: int, fmt: str = "amlsim") -> dict[str, float]:
    """:func:`batch_figures` of the run ``source`` and the CLI's wall and CPU seconds per result over its first
    ``n`` rows (``file_*``: seconds scaled to ``n`` results)."""
    txns, problems = load_transactions(source, fmt)
    assert (fmt != "amlsim" or not problems) and len(txns) >= fill + n, (len(txns), problems[:3])
    out = batch_figures(txns, n, fill, batch_size)
    del txns
    gc.collect()
    written, wall, cpu = file_figure(source, fmt, n, batch_size)
    assert fmt != "amlsim" or written == n
    out.update(file_wall=wall * n / written, file_cpu=cpu * n / written)
    return out


def extract_plugin(rev: str, old_root: Path) -> Path:
    """``plugins/aml/src`` as it was at git revision ``rev``, extracted under ``old_root`` (returned)."""
    old_root.mkdir()
    archive = subprocess.run(["git", "-C", str(GIT_REPO), "archive", rev, "plugins/aml/src"], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(old_root, filter="data")
    return old_root


def compare(rev: str, source: Path, n: int, fill: int, batch_size: int, reps: int, fmt: str = "amlsim") -> None:
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
                                       "--fill", str(fill), "--batch-size", str(batch_size), "--input-format", fmt],
                                      env=env,
                                      capture_output=True, text=True, check=True)
                runs[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"compare: plugin at {rev} (old) vs working tree (new), {n} transactions, {reps} alternating runs each in "
          f"fresh processes, default options, {source.name} ({fmt}); medians (load average now "
          f"{os.getloadavg()[0]:.1f}):")
    for key, label in (("whole", "batch call, whole file from empty"),
                       ("steady", f"batch call, steady state (after {fill} transactions)"),
                       ("file", f"sectorflow run aml FILE --format {fmt} (read, validate, score, write)")):
        parts = []
        for unit in ("wall", "cpu"):
            old = statistics.median(r[f"{key}_{unit}"] for r in runs["old"])
            new = statistics.median(r[f"{key}_{unit}"] for r in runs["new"])
            parts.append(f"{unit}: old {n / old:,.0f} tx/s, new {n / new:,.0f} tx/s, new/old speed {old / new:.2f}x")
        print(f"  {label}: " + "; ".join(parts))


def stages_loop(source: Path, n: int, loop: bool) -> None:
    """The per-transaction stages without the model (what ``--instructions`` counts): window, every rule, the
    account features' snapshots and the report engine over the first ``n`` transactions of ``source``."""
    from sectorflow_aml.account_features import AccountFeatureExtractor as Features
    from sectorflow_aml.loaders import READERS
    from sectorflow_aml.reports import ReportEngine
    from sectorflow_aml.typologies import build_rules

    txns = [t for _, t in itertools.islice(READERS["amlsim"](source), n)]
    window = TransactionWindow(lookback_days=30.0)
    checks = [rule.check for rule in build_rules()]
    features = Features(window.lookback)
    engine = ReportEngine("CN")
    step = getattr(features, "snapshots", None) or features.rows  # a revision before snapshots: its rows
    if not loop:  # everything but the loop (imports, reading, construction): subtracted from the loop's count
        return
    for t in txns:
        edge = window.add(t)
        for check in checks:
            check(window, edge)
        step(edge, window)
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
    print(f"instructions (callgrind I refs) of window + rules + account snapshots + report engine, first {n} transactions: "
          f"old {old / n:,.0f} per transaction, new {new / n:,.0f}; old/new {old / new:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--n", type=positive_int, default=60000, help="transactions for the batch figures")
    parser.add_argument("--fill", type=positive_int, default=30000,
                        help="transactions fed (untimed) before the steady-state batch figure (default 30,000: "
                             "about 37 days of the run, more than the 30-day lookback)")
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
    parser.add_argument("--input", type=Path, help="transaction file for the batch, breakdown, file and --compare "
                        "figures instead of the AMLSim run (bad rows skipped; see above)")
    parser.add_argument("--input-format", default="amlsim", help="format of --input (default amlsim)")
    parser.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stages-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--loop", default="1", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stages_only:
        stages_loop(args.stages_only, args.n_instr, args.loop == "1")
        return 0
    source = args.data / args.run / "transactions.csv.gz"
    if args.instructions:
        instructions(args.instructions, source, args.n_instr)
        return 0
    if args.measure_only:
        print(json.dumps(measure(args.measure_only, args.n, args.fill, args.batch_size, args.input_format)))
        return 0

    stream_txns, problems = load_transactions(source, "amlsim")
    assert not problems, problems[:3]
    fmt = "amlsim"
    txns = stream_txns
    if args.input is not None:  # the batch, breakdown, file and --compare figures on this file, bad rows skipped
        source, fmt = args.input, args.input_format
        txns, problems = load_transactions(source, fmt)
        print(f"input: {source} ({fmt}): {len(txns):,} transactions, {len(problems)} bad row(s) skipped")
    if args.fill + args.n > len(txns):
        parser.error(f"--fill {args.fill} + --n {args.n} exceed the run's {len(txns):,} transactions")
    if args.stream_after + STREAM_WARMUP + args.n_stream > len(stream_txns):
        parser.error(f"--stream-after {args.stream_after} + {STREAM_WARMUP} warm-up calls + --n-stream "
                     f"{args.n_stream} exceed the run's {len(stream_txns):,} transactions")
    load_start = os.getloadavg()[0]
    on = batch_figures(txns, args.n, args.fill, args.batch_size)
    off = batch_figures(txns, args.n, args.fill, args.batch_size, account_model=False)

    # streaming in steady state: the window is first filled with the run's first --stream-after transactions (one
    # call; the state equals feeding them one at a time), 200 one-transaction calls are not counted, then --n-stream
    # one-transaction calls are timed
    tf = Taskflow("aml", batch_size=args.batch_size, num_threads=1)
    tf(stream_txns[: args.stream_after])
    for t in stream_txns[args.stream_after: args.stream_after + STREAM_WARMUP]:
        tf(t)
    latencies, cpu_latencies = [], []
    for t in stream_txns[args.stream_after + STREAM_WARMUP: args.stream_after + STREAM_WARMUP + args.n_stream]:
        start, cpu = time.perf_counter(), time.process_time()
        tf(t)
        latencies.append(time.perf_counter() - start)
        cpu_latencies.append(time.process_time() - cpu)
    lat = np.array(latencies) * 1000.0
    cpu_lat = np.array(cpu_latencies) * 1000.0
    parts = breakdown(txns[: args.n], BUNDLE, args.batch_size)
    parts["cases"] = case_book_cost(txns[: args.n], args.batch_size)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"Taskflow num_threads=1, batch_size={args.batch_size}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"{'run ' + args.run if args.input is None else f'input {source.name} ({fmt})'}; default options (every rule, the account model, the case book); load average "
          f"{load_start:.1f} at start, {os.getloadavg()[0]:.1f} after the batch figures")
    for key, label in (("whole", f"batch, whole file ({args.n} from empty)"),
                       ("steady", f"batch, steady state ({args.n} after {args.fill})")):
        rate = args.n / on[f"{key}_cpu"]
        print(f"{label}: {rate:,.0f} tx/s CPU, {args.n / on[f'{key}_wall']:,.0f} tx/s wall; account_model=False "
              f"{args.n / off[f'{key}_cpu']:,.0f} tx/s CPU; default/off {off[f'{key}_cpu'] / on[f'{key}_cpu']:.2f}x "
              f"(target >= 14,400 tx/s CPU: {'met' if rate >= 14400 else 'MISSED'})")
    print(f"streaming: {len(lat)} calls of one transaction: p50 {np.percentile(lat, 50):.3f} ms, "
          f"p99 {np.percentile(lat, 99):.3f} ms (target p99 <= 2 ms: "
          f"{'met' if np.percentile(lat, 99) <= 2.0 else 'MISSED'}); CPU time per call p50 "
          f"{np.percentile(cpu_lat, 50):.3f} ms, p99 {np.percentile(cpu_lat, 99):.3f} ms (what a loaded machine "
          f"does not add)")
    total = 1e6 * on["whole_cpu"] / args.n
    gc_us = 1e6 * on["whole_gc_cpu"] / args.n  # the collector's time inside the timed whole-file call
    print(f"breakdown per transaction (us CPU, whole file): whole batch call {total:.1f}; window.add "
          f"{parts['window']:.1f}; account state and snapshots {parts['features']:.1f}; feature matrix "
          f"{parts['matrix']:.2f}; account model {parts['model']:.2f} ({parts['rows_per_tx']:.2f} rows a "
          f"transaction, {parts['trees']} trees); case book (updates replayed alone) {parts['cases']:.1f}; garbage "
          f"collection {gc_us:.1f} ({on['whole_gc_full']} full); rest (typology rules, reports, result objects) "
          f"{total - sum(parts[k] for k in ('window', 'features', 'matrix', 'model', 'cases')) - gc_us:.1f}")
    written, wall, cpu = file_figure(source, fmt, args.n, args.batch_size)
    print(f"file:      sectorflow run aml (first {args.n} rows, --format {fmt} --on-error skip, --batch-size "
          f"{args.batch_size}; {written} results): {written / wall:,.0f} tx/s wall, {written / cpu:,.0f} tx/s CPU "
          f"(reading, validation, scoring and JSON-lines writing)")
    if args.compare:
        compare(args.compare, source, args.n, args.fill, args.batch_size, args.reps, fmt)
    if args.profile:
        tf.reset_state()
        prof = cProfile.Profile()
        prof.enable()
        tf(txns[: args.n])
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
