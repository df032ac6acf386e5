"""Audit-log benchmark: overhead per Taskflow call (ratio to the same call without audit), appends per second, and
the time to verify a log of N records (default 1,000,000).

    .venv/bin/python benchmarks/audit_bench.py                      # everything, SQLite in a temp dir
    .venv/bin/python benchmarks/audit_bench.py --verify-records 100000 --calls 200
    .venv/bin/python benchmarks/audit_bench.py --skip calls            # appends (also batched) and verify only
    SECTORFLOW_TEST_POSTGRES_DSN=postgresql://... .venv/bin/python benchmarks/audit_bench.py   # adds PostgreSQL

Prints machine info and one line per figure. Stores live in a temporary folder that is removed afterwards (the
1M-record SQLite file is about 0.9 GB). Calls run single-threaded, one Taskflow instance, CPU.
"""

from __future__ import annotations

import argparse
import getpass
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sectorflow import Pipeline, TaskResult, TaskSpec, Taskflow, hookimpl, plugins
from sectorflow.compliance import AuditConfig, AuditLog, generate_key_file, open_store, runtime, verify_log
from sectorflow.compliance import plugin as audit_plugin
from sectorflow.compliance.merkle import leaf_hash
from sectorflow.compliance.records import canonical, make_object, make_record, utc_iso


class Txn(BaseModel):
    customer_id: str
    amount: float


class Scored(TaskResult):
    score: float


class BusyPipeline(Pipeline):
    """Spins ``work_ms`` per forward pass (a stand-in for a model's forward time; the benchmark uses batch_size 1024,
    so one pass per call) and returns one score per item."""

    work_ms = 0.0

    def forward(self, batch: Any) -> list[float]:
        end = time.perf_counter() + BusyPipeline.work_ms / 1000
        while time.perf_counter() < end:
            pass
        return [item.amount for item in batch]

    def postprocess(self, items: Any, raw: Any) -> list[Scored]:
        return [Scored(score=r) for r in raw]


class BenchPlugin:
    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        register(TaskSpec(name="bench", input_model=Txn, output_model=Scored, pipeline=BusyPipeline))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()} | {cpu} | {os.cpu_count()} logical CPUs | Python {platform.python_version()}"


def setup(tmp: Path, audit: bool, synchronous: str = "FULL", embedded: bool = False) -> None:
    """Configure the log: a store and key in ``tmp``, or (``embedded``) nothing but a SECTORFLOW_HOME in ``tmp``, as
    on a fresh install (the embedded default store and key are created by the first call)."""
    os.environ["SECTORFLOW_LOAD_PLUGINS"] = ""
    for k in ("SECTORFLOW_AUDIT_DB", "SECTORFLOW_AUDIT_KEY", "SECTORFLOW_AUDIT_REGULATED"):
        os.environ.pop(k, None)
    os.environ["SECTORFLOW_AUDIT"] = "on" if audit else "off"
    os.environ["SECTORFLOW_HOME"] = str(tmp / f"home-{uuid.uuid4().hex[:6]}")
    os.environ["SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS"] = synchronous
    if audit and embedded:
        os.environ["SECTORFLOW_AUDIT_REGULATED"] = "bench"
    elif audit:
        os.environ["SECTORFLOW_AUDIT_DB"] = str(tmp / f"calls-{uuid.uuid4().hex[:6]}.db")
        os.environ["SECTORFLOW_AUDIT_KEY"] = str(tmp / "key.json")
        os.environ["SECTORFLOW_AUDIT_REGULATED"] = "bench"
        os.environ["SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS"] = synchronous
    runtime.reset()
    plugins.reset()
    pm = plugins.get_plugin_manager()
    pm.register(audit_plugin, name="audit")
    pm.register(BenchPlugin(), name="bench")


def paired_ms(tf: Taskflow, items: list[dict[str, Any]], calls: int) -> tuple[float, float]:
    """Median ms per call without and with the audit plugin, alternating call by call (the plugin is unregistered
    for the baseline call), so that load from other processes hits both alike."""
    pm = plugins.get_plugin_manager()
    tf(items)  # warm up (and open the log)
    base, audited = [], []
    for _ in range(calls):
        pm.unregister(name="audit")
        t = time.perf_counter()
        tf(items)
        base.append((time.perf_counter() - t) * 1000)
        pm.register(audit_plugin, name="audit")
        t = time.perf_counter()
        tf(items)
        audited.append((time.perf_counter() - t) * 1000)
    return statistics.median(base), statistics.median(audited)


def bench_calls(tmp: Path, calls: int) -> None:
    print("\n## Overhead per Taskflow call (median of %d paired calls, alternating without/with audit; SQLite WAL, "
          "task regulated, 2 records per call; work_ms = time the model takes per call)" % calls)
    print(f"1-minute load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
    print("synchronous  work_ms  batch  no_audit_ms  audit_ms  overhead_ms  ratio")
    for work_ms in (0.0, 50.0):  # the default a fresh install gets: embedded store under SECTORFLOW_HOME, FULL
        BusyPipeline.work_ms = work_ms
        setup(tmp, audit=True, embedded=True)
        base, audited = paired_ms(Taskflow("bench", batch_size=1024), [{"customer_id": "c0", "amount": 0.0}], calls)
        print(f"{'embedded':11s}  {work_ms:7.0f}  {1:5d}  {base:11.3f}  {audited:8.3f}  {audited - base:11.3f}  "
              f"{audited / base:5.3f}")
    for synchronous in ("FULL", "NORMAL"):
        for work_ms in (0.0, 50.0, 250.0):
            for batch in (1, 1024):
                items = [{"customer_id": f"c{i}", "amount": float(i)} for i in range(batch)]
                BusyPipeline.work_ms = work_ms
                n = calls if work_ms < 100 else max(calls // 4, 10)
                setup(tmp, audit=True, synchronous=synchronous)
                base, audited = paired_ms(Taskflow("bench", batch_size=1024), items, n)
                print(f"{synchronous:11s}  {work_ms:7.0f}  {batch:5d}  {base:11.3f}  {audited:8.3f}  "
                      f"{audited - base:11.3f}  {audited / base:5.3f}")
    runtime.reset()
    print(f"1-minute load average {os.getloadavg()[0]:.1f} at the end")


def bench_appends(tmp: Path, keyfile: Any, n: int) -> None:
    print(f"\n## Appends per second (one thread, {n} appends, each committed before it returns)")
    targets = [("sqlite FULL", str(tmp / "appends.db"), "FULL"), ("sqlite NORMAL", str(tmp / "appends2.db"), "NORMAL")]
    dsn = os.environ.get("SECTORFLOW_TEST_POSTGRES_DSN")
    if dsn:
        targets.append(("postgresql", dsn, f"bench_{uuid.uuid4().hex[:8]}"))
    for name, url, schema in targets:
        sync = schema if name.startswith("sqlite") else "FULL"
        schema = schema if name == "postgresql" else "sectorflow_audit"
        lg = AuditLog(open_store(url, pg_schema=schema, sqlite_synchronous=sync), keyfile,
                      AuditConfig(pg_schema=schema))
        t = time.perf_counter()
        for i in range(n):
            lg.append("bench.append", actor="bench", obj=make_object(task="bench"), n_items=1,
                      inputs=[{"i": i}])
        dt = time.perf_counter() - t
        print(f"{name:14s} {n / dt:9.1f} appends/s  ({dt / n * 1000:.2f} ms each; load {os.getloadavg()[0]:.1f})")
        if name == "postgresql":
            with lg.store.transaction():
                lg.store._execute(f"DROP SCHEMA {schema} CASCADE")
        lg.store.close()


def bench_replica(tmp: Path, keyfile: Any, n: int) -> None:
    """Single appends with a synchronous SQLite replica (both FULL): what the replica adds per record."""
    from sectorflow.compliance.replica import Replica

    lg = AuditLog(open_store(tmp / "with-replica.db"), keyfile, AuditConfig(replica=str(tmp / "replica.db")),
                  replica=Replica(str(tmp / "replica.db")))
    load = os.getloadavg()[0]
    t = time.perf_counter()
    for i in range(n):
        lg.append("bench.append", actor="bench", obj=make_object(task="bench"), n_items=1, inputs=[{"i": i}])
    dt = time.perf_counter() - t
    print(f"sqlite FULL + sync SQLite FULL replica {n / dt:9.1f} appends/s  ({dt / n * 1000:.2f} ms each; lag "
          f"{lg.replica.lag()['records']}; load {load:.1f})")
    lg.close()


def bench_batched(tmp: Path, keyfile: Any, n: int) -> None:
    """AuditLog.append_batch: one durable commit (synchronous=FULL) per checkpoint of 64 records."""
    print(f"\n## Batched appends ({n} records, SQLite synchronous=FULL, one commit and one signed checkpoint per 64)")
    lg = AuditLog(open_store(tmp / "batched.db", sqlite_synchronous="FULL"), keyfile, AuditConfig(checkpoint_every=64))
    batch = [{"event": "bench.append", "actor": "bench", "obj": make_object(task="bench"), "n_items": 1,
              "inputs": [{"i": i}]} for i in range(n)]
    load = os.getloadavg()[0]
    t = time.perf_counter()
    lg.append_batch(batch)
    dt = time.perf_counter() - t
    print(f"sqlite FULL batched {n / dt:9.1f} appends/s  ({len(lg.store.checkpoints())} checkpoints; 1-minute load "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs)")
    lg.store.close()


def bench_verify(tmp: Path, keyfile: Any, n: int) -> None:
    print(f"\n## Verify {n:,} records (SQLite)")
    lg = AuditLog(open_store(tmp / "verify.db"), keyfile, AuditConfig(checkpoint_every=64))
    t = time.perf_counter()
    # Bulk build: the same record, leaf and checkpoint code as AuditLog.append, in large transactions.
    chunk = 50_000
    for start in range(0, n, chunk):
        with lg._lock, lg.store.transaction():
            for seq in range(start, min(start + chunk, n)):
                rec = make_record(seq=seq, event="task.call_finished", actor=f"user{seq % 97}", tenant="bank-a",
                                  source="10.0.0.1", channel="http", obj=make_object(task="aml", model_name="m",
                                  model_version="1", weights_sha256="ab" * 32), outcome="success", reason=None,
                                  request_id=uuid.UUID(int=seq).hex, n_items=64,
                                  input_digest=keyfile.digest(seq.to_bytes(8, "big")),
                                  output_digest=keyfile.digest(b"o" + seq.to_bytes(8, "big")),
                                  digest_key=keyfile.hmac_key_id, duration_ms=1.5, time=utc_iso())
                body = canonical(rec)
                lg.store.insert_record(seq, rec["time"], rec["event"], body, leaf_hash(body))
                if (seq + 1) % 64 == 0:
                    lg._checkpoint_locked()
    lg.checkpoint()
    build = time.perf_counter() - t
    size_mb = (tmp / "verify.db").stat().st_size / 1e6
    print(f"built in {build:.1f} s ({size_mb:.0f} MB, {len(lg.store.checkpoints())} checkpoints)")
    for workers in (1, os.cpu_count() or 1):
        load = os.getloadavg()[0]
        t, cpu = time.perf_counter(), time.process_time()
        children, workers_before = os.times(), forkserver_children_cpu()
        report = verify_log(lg.store, keyfile.trusted_keys(), workers=workers)
        dt, cpu = time.perf_counter() - t, time.process_time() - cpu
        after = os.times()
        child_cpu = (after.children_user + after.children_system) - (children.children_user + children.children_system)
        child_cpu += forkserver_children_cpu() - workers_before
        print(f"verify, {workers} process(es): ok={report.ok} records={report.size:,} "
              f"checkpoints={report.checkpoints:,} in {dt:.2f} s wall, {cpu + child_cpu:.2f} s CPU "
              f"({report.size / dt:,.0f} records/s; 1-minute load average {load:.1f} before, "
              f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs)")
    lg.store.close()


def forkserver_children_cpu() -> float:
    """CPU seconds of the ended children of multiprocessing's forkserver: the verifier's scan workers are forks of it
    (sectorflow.compliance.verify_scan.worker_context), so the forkserver reaps them and their time is not in this
    process's ``os.times()`` children. 0 before the forkserver starts; ``nan`` without psutil (the CPU column then
    says nan rather than leave the workers out)."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    try:
        from multiprocessing import forkserver

        pid = forkserver._forkserver._forkserver_pid  # noqa: SLF001 - no public accessor
        if pid is None:
            return 0.0
        times = psutil.Process(pid).cpu_times()
        return times.children_user + times.children_system
    except (AttributeError, psutil.Error):  # the server gone: count nothing more
        return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--verify-records", type=int, default=1_000_000)
    parser.add_argument("--skip", nargs="*", default=[], choices=["calls", "appends", "verify"])
    args = parser.parse_args()
    print(f"# audit_bench | {machine()} | user {getpass.getuser()} | threads 1")
    with tempfile.TemporaryDirectory(prefix="sectorflow-audit-bench-") as d:
        tmp = Path(d)
        keyfile = generate_key_file(tmp / "key.json")
        if "calls" not in args.skip:
            bench_calls(tmp, args.calls)
        if "appends" not in args.skip:
            bench_appends(tmp, keyfile, args.appends)
            bench_replica(tmp, keyfile, args.appends)
            bench_batched(tmp, keyfile, max(args.appends * 10, 640))
        if "verify" not in args.skip:
            bench_verify(tmp, keyfile, args.verify_records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
