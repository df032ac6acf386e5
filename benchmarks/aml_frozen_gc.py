"""Latency of one-transaction ``Taskflow("aml")`` calls in a process that froze objects (``gc.freeze``), as
``sectorflow serve`` does with its loaded models (sectorflow.serving.gcfreeze).

The pipeline's garbage-collector hand-over must know whether the process froze objects; the host declares it
(``sectorflow.gc_frozen_by_host``, as the server does), so the check is O(1) (before, the pipeline probed
``gc.get_freeze_count()``, which walks every frozen object in CPython 3.11). Prints the median and p99 of
``--calls`` calls (the first 50 untimed) with about ``--frozen`` extra frozen container objects, one thread.

Usage::

    .venv/bin/python benchmarks/aml_frozen_gc.py [--frozen 150000] [--calls 300]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("SECTORFLOW_AUDIT", "off")

from sectorflow import Taskflow, gc_frozen_by_host  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frozen", type=int, default=150_000, help="extra container objects frozen before the calls")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    tf = Taskflow("aml", num_threads=1)
    held = [[i] for i in range(args.frozen)]
    gc.collect()
    times = []
    with gc_frozen_by_host():
        gc.freeze()
        try:
            for i in range(args.calls):
                txn = {"transaction_id": f"t{i}", "timestamp": "2026-11-02T09:30:00Z", "sender_account": f"A{i % 50}",
                       "receiver_account": f"B{i % 70}", "amount": "100.00", "currency": "CNY",
                       "channel": "transfer"}
                start = time.perf_counter()
                tf(txn)
                times.append(time.perf_counter() - start)
            frozen = gc.get_freeze_count()
        finally:
            gc.unfreeze()
    timed = sorted(times[50:])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average "
          f"{os.getloadavg()[0]:.1f}; {frozen:,} frozen objects ({len(held):,} added), {len(timed)} timed calls")
    print(f"one-transaction call: median {statistics.median(timed) * 1e3:.2f} ms, "
          f"p99 {timed[int(0.99 * (len(timed) - 1))] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
