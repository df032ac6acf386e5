"""What does keeping the AML state durable cost? State size, and the store against the in-memory path.

On the first ``--n`` transactions of an AMLSim run (``../shared/data/amlsim_sample``), ``Taskflow("aml")`` (with
``--no-model``: ``model=False``):

- batch: calls of ``--chunk`` transactions (``sectorflow run``'s chunks) in memory, then the same calls with
  ``state_store=`` a fresh SQLite file (each call's inputs journalled in one transaction, snapshots as the store's
  policy takes them: :mod:`sectorflow.state_store`); the ratio is the persisting cost;
- the state: ``state_dict()`` as JSON text, its bytes per transaction in the window and per account, the time to
  write it (a snapshot) and to restore a new Taskflow from the store (snapshot + journal replay);
- streaming: after ``--stream-after`` transactions in one call, ``--n-stream`` one-transaction calls, in memory and
  with the store (an fsync'd SQLite commit each): p50 / p99 milliseconds per transaction.

Usage::

    .venv/bin/python benchmarks/aml_state.py [--n 60000] [--chunk 8192] [--stream-after 20000] [--n-stream 2000]
        [--no-model] [--sync FULL|NORMAL]

Prints the machine line (CPU, cores, load average) first.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("SECTORFLOW_AUDIT", "off")

from sectorflow import Taskflow, open_state_store  # noqa: E402
from sectorflow.state_store import SNAPSHOT_RATIO  # noqa: E402
from sectorflow_aml.loaders import load_transactions  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "amlsim_sample"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.node()} | {cpu} | {os.cpu_count()} logical CPUs | load {load} | Python {platform.python_version()}"


def batch_seconds(tf: Taskflow, txns: list, chunk: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(txns), chunk):
        tf(txns[i:i + chunk])
    return time.perf_counter() - start


def stream_ms(tf: Taskflow, txns: list) -> list[float]:
    out = []
    for txn in txns:
        start = time.perf_counter()
        tf([txn])
        out.append((time.perf_counter() - start) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) >= 100 else max(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--n", type=int, default=60000)
    parser.add_argument("--chunk", type=int, default=8192, help="items per call (sectorflow run --state checkpoints: 8,192)")
    parser.add_argument("--stream-after", type=int, default=20000)
    parser.add_argument("--n-stream", type=int, default=2000)
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"],
                        help="SQLite synchronous mode of the store (FULL: an fsync per commit)")
    args = parser.parse_args(argv)
    print(machine())
    txns, problems = load_transactions(args.data / args.run / "transactions.csv.gz", "amlsim")
    assert not problems, problems[:3]
    txns = txns[: max(args.n + args.chunk, args.stream_after + args.n_stream + 200)]
    options = {"model": False} if args.no_model else {}
    batch = txns[: args.n]
    print(f"{args.run}: {len(batch):,} transactions in calls of {args.chunk}; model {'off' if args.no_model else 'on'}; "
          f"store synchronous={args.sync}")

    memory = Taskflow("aml", num_threads=1, **options)
    memory(txns[:2000])  # warm-up
    memory.reset_state()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.sqlite"
        stored = Taskflow("aml", num_threads=1, state_store=open_state_store(db, synchronous=args.sync), **options)
        keeper = stored._keeper(None)  # the default tenant's, which these calls use
        spent = [0.0]
        record = keeper.record

        def timed_record(*a, **k):  # the persisting work itself, timed apart from the machine's noise
            start = time.perf_counter()
            record(*a, **k)
            spent[0] += time.perf_counter() - start

        keeper.record = timed_record
        keeper.snapshots_paused = True  # the journal alone here; the snapshots' share is worked out below
        mem_s, store_s = [], []
        for rep in range(2):  # alternate, best of two each
            memory.reset_state()
            mem_s.append(batch_seconds(memory, batch, args.chunk))
            stored.reset_state()
            store_s.append(batch_seconds(stored, batch, args.chunk))
        m, s = min(mem_s), min(store_s)
        journal_us = spent[0] / 2 / len(batch) * 1e6  # two repetitions
        in_memory_us = m / len(batch) * 1e6
        print(f"batch: in memory {m:.2f} s ({len(batch) / m:,.0f} tx/s, {in_memory_us:.1f} us per transaction), "
              f"with the store {s:.2f} s ({len(batch) / s:,.0f} tx/s; end to end {100 * (s - m) / m:+.1f} %); "
              f"journal (StateKeeper.record, snapshots apart) {journal_us:.1f} us per transaction")

        pipeline = stored.pipeline
        start = time.perf_counter()
        text = json.dumps(pipeline.state_dict(), allow_nan=False)
        dump_s = time.perf_counter() - start
        edges, accounts = len(pipeline.window.edges), len(pipeline.window.accounts)
        print(f"state: {len(text):,} bytes for {edges:,} transactions in the window and {accounts:,} accounts "
              f"({len(text) / edges:,.0f} bytes per windowed transaction, {len(text) / accounts:,.0f} per account); "
              f"state_dict + JSON {dump_s * 1000:.0f} ms")
        store = open_state_store(db)
        info = store.info("aml", "default")
        print(f"store after the run: snapshot {info.snapshot_bytes:,} bytes, journal {info.journal_calls} call(s) / "
              f"{info.journal_items:,} item(s) / {info.journal_bytes:,} bytes "
              f"({info.journal_bytes / max(info.journal_items, 1):,.0f} bytes per journalled transaction)")
        start = time.perf_counter()
        stored.save_state()
        snap_s = time.perf_counter() - start
        snap_bytes = store.info("aml", "default").snapshot_bytes
        # the store's policy takes a snapshot once the calls journalled since the last one took SNAPSHOT_RATIO times
        # as long as a snapshot does: at most 1 / SNAPSHOT_RATIO of the calls' time
        print(f"persisting per transaction: journal {journal_us:.1f} us = {100 * journal_us / in_memory_us:.1f} % "
              f"of the in-memory path, + snapshots at most {100 / SNAPSHOT_RATIO:.0f} % (one of {snap_bytes:,} bytes "
              f"takes {snap_s * 1000:.0f} ms and is taken after {SNAPSHOT_RATIO:g}x that of calls, about "
              f"{SNAPSHOT_RATIO * snap_s / (in_memory_us / 1e6):,.0f} transactions): at most "
              f"{100 * journal_us / in_memory_us + 100 / SNAPSHOT_RATIO:.1f} % in all")
        start = time.perf_counter()
        again = Taskflow("aml", num_threads=1, state_store=open_state_store(db, synchronous=args.sync), **options)
        restore_s = time.perf_counter() - start
        assert len(again.pipeline.window) == edges
        print(f"snapshot write {snap_s * 1000:.0f} ms; a new Taskflow restored from it in {restore_s:.2f} s "
              "(model load included)")
        keeper.snapshots_paused = True  # one checkpoint's journal on top of the snapshot
        extra = txns[len(batch):len(batch) + args.chunk]
        if extra:
            stored(extra)
            start = time.perf_counter()
            Taskflow("aml", num_threads=1, state_store=open_state_store(db, synchronous=args.sync), **options)
            print(f"restore of the snapshot + {len(extra):,} journalled transactions: {time.perf_counter() - start:.2f}"
                  f" s (model load included)")

        fill, timed = txns[: args.stream_after], txns[args.stream_after: args.stream_after + 200 + args.n_stream]
        memory.reset_state()
        memory(fill)
        stored.reset_state()
        stored(fill)
        mem_ms = stream_ms(memory, timed)[200:]
        store_ms = stream_ms(stored, timed)[200:]
        print(f"streaming after {len(fill):,} transactions, {len(mem_ms):,} one-transaction calls: in memory p50 "
              f"{statistics.median(mem_ms):.3f} ms p99 {pct(mem_ms, 99):.3f} ms; with the store p50 "
              f"{statistics.median(store_ms):.3f} ms p99 {pct(store_ms, 99):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
