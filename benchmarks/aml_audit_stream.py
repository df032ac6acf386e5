"""AML streaming with the audit log off and on: p50/p99 per transaction, and batch throughput, in one process.

``Taskflow("aml")`` scores one AMLSim transaction per call (the streaming path of ``benchmarks/aml_throughput.py``,
window first filled with ``--stream-after`` transactions), with the audit log:

- ``off``: ``SECTORFLOW_AUDIT=off``;
- ``on``: the default a fresh install gets: the embedded SQLite store and key under ``SECTORFLOW_HOME`` at the
  default durability (``synchronous=FULL``: every commit fsynced before the call returns), task not regulated;
- ``on-group``: the same with group commit (``SECTORFLOW_AUDIT_COMMIT=group``, ``sectorflow.compliance.group_commit``):
  the call hands its two records to the log's writer thread, which commits everything queued in one fsynced
  transaction (same ``synchronous=FULL``); the figure after the table says how many records each commit carried;
- ``on-regulated``: the default commit with ``SECTORFLOW_AUDIT_REGULATED=aml`` (fail closed: a call whose start cannot be
  recorded does no work).

Each call writes two records (``task.call_started`` and ``task.call_finished``); except with ``on-group``, a call
returns only once both are committed (durable). The settings alternate in blocks of ``--block`` calls (the same Taskflow; the audit plugin is
registered for the audited blocks and unregistered for the others, the log reconfigured between them), so machine
load hits every setting alike. Batch throughput (``--n`` transactions in one call, audit off and on) is printed
beside it. Targets (issue 30): p99 <= 2 ms per transaction with the audit log on.

    .venv/bin/python benchmarks/aml_audit_stream.py                       # about a minute
    .venv/bin/python benchmarks/aml_audit_stream.py --n-stream 400 --stream-after 2000 --n 2000   # smoke
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from sectorflow import Taskflow, plugins  # noqa: E402
from sectorflow.compliance import plugin as audit_plugin  # noqa: E402
from sectorflow.compliance import runtime  # noqa: E402
from sectorflow_aml.loaders import load_transactions  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amlsim_sample"
SETTINGS = ("off", "on", "on-group", "on-regulated")


def configure(setting: str, home: Path) -> None:
    """Point the audit runtime at ``setting`` (one store for the whole run: what a service restart keeps)."""
    os.environ["SECTORFLOW_HOME"] = str(home)
    for key in ("SECTORFLOW_AUDIT_DB", "SECTORFLOW_AUDIT_KEY", "SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS",
                "SECTORFLOW_AUDIT_COMMIT"):
        os.environ.pop(key, None)
    if setting == "on-group":
        os.environ["SECTORFLOW_AUDIT_COMMIT"] = "group"
    os.environ["SECTORFLOW_AUDIT"] = "off" if setting == "off" else "on"
    if setting == "on-regulated":
        os.environ["SECTORFLOW_AUDIT_REGULATED"] = "aml"
    else:
        os.environ.pop("SECTORFLOW_AUDIT_REGULATED", None)
    runtime.reset()
    pm = plugins.get_plugin_manager()
    if setting == "off":
        if pm.has_plugin("audit"):
            pm.unregister(name="audit")
    elif not pm.has_plugin("audit"):
        pm.register(audit_plugin, name="audit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--run", default="20K_fanin200cycle200")
    parser.add_argument("--n", type=int, default=20000, help="transactions of the batch figure")
    parser.add_argument("--stream-after", type=int, default=20000, help="transactions that fill the window first")
    parser.add_argument("--n-stream", type=int, default=3000, help="timed one-transaction calls per setting")
    parser.add_argument("--block", type=int, default=250, help="calls per block; settings alternate by block")
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated subset of {SETTINGS}")
    args = parser.parse_args(argv)
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    if not settings or set(settings) - set(SETTINGS):
        parser.error(f"--settings: give some of {', '.join(SETTINGS)}")
    txns, problems = load_transactions(args.data / args.run / "transactions.csv.gz", "amlsim")
    assert not problems, problems[:3]
    need = args.stream_after + 200 + args.n_stream * len(settings)
    if need > len(txns) or args.n > len(txns):
        parser.error(f"the run has {len(txns):,} transactions; this needs {max(need, args.n):,}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"Taskflow('aml') num_threads=1; run {args.run}; load average at start {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="sectorflow-aml-audit-") as tmp:
        home = Path(tmp) / "home"
        configure("on", home)  # the audit plugin loaded from the start, as in a default install
        tf = Taskflow("aml", num_threads=1)
        tf(txns[:2000])
        batch = {}
        for setting in ("off", "on"):
            configure(setting, home)
            tf.reset_state()
            start = time.perf_counter()
            tf(txns[: args.n])
            batch[setting] = args.n / (time.perf_counter() - start)
        tf.reset_state()
        configure("off", home)
        tf(txns[: args.stream_after])
        stream = txns[args.stream_after:]
        for t in stream[:200]:  # warm the batch-1 predictor
            tf(t)
        at = 200
        lat: dict[str, list[float]] = {s: [] for s in settings}
        group_stats = {"commits": 0, "records": 0}
        while any(len(v) < args.n_stream for v in lat.values()):
            for setting in settings:
                if len(lat[setting]) >= args.n_stream:
                    continue
                configure(setting, home)
                take = min(args.block, args.n_stream - len(lat[setting]))
                if setting != "off":
                    tf(stream[at])  # the block's first call opens the log: not timed
                    at += 1
                for t in stream[at:at + take]:
                    start = time.perf_counter()
                    tf(t)
                    lat[setting].append((time.perf_counter() - start) * 1000)
                at += take
                if setting == "on-group":  # the block's queue is committed before the next setting runs
                    log = runtime.get_log()
                    log.flush()
                    group_stats["commits"] += log._group.commits if log._group else 0
                    group_stats["records"] += 2 * (take + 1)  # the untimed first call too
        log = runtime.get_log() if runtime.config().enabled else None
        records = log.store.size() if log is not None else None
        configure("off", home)
    print(f"batch: {args.n:,} transactions in one call: audit off {batch['off']:,.0f} tx/s, on {batch['on']:,.0f} "
          f"tx/s ({batch['on'] / batch['off']:.2f}x; two records per call, whatever its size)")
    base = np.percentile(lat["off"], 99) if "off" in lat else None
    for setting in settings:
        v = np.array(lat[setting])
        p99 = np.percentile(v, 99)
        target = f" (target p99 <= 2 ms: {'met' if p99 <= 2.0 else 'MISSED'})" if setting != "off" else ""
        ratio = f", {p99 / base:.2f}x off's p99" if base and setting != "off" else ""
        print(f"streaming, audit {setting:12s}: {len(v)} calls of one transaction: p50 {np.percentile(v, 50):.3f} ms, "
              f"p90 {np.percentile(v, 90):.3f} ms, p99 {p99:.3f} ms, max {v.max():.3f} ms{ratio}{target}")
    if records is not None:
        print(f"audit store: {records} records committed")
    if group_stats["commits"]:
        print(f"group commit: {group_stats['records']} records in {group_stats['commits']} commits "
              f"({group_stats['records'] / group_stats['commits']:.1f} records per fsynced commit)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
