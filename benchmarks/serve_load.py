"""Load generator for ``sectorflow serve``: throughput and p50/p99 latency, batching on and off (loopback only).

The server runs in a subprocess (so the client does not share its GIL) on 127.0.0.1 and serves one task: ``mlp``,
a paddle.inference predictor of a 256 -> 1024 -> 1024 -> 1024 -> 8 ReLU MLP (about 2.4 M weights, random, made
with paddle.jit.save in a temporary folder; no download). Its pipeline pads each batch to 1, 2, 4, ..., 64 rows
and builds those shapes at load, since oneDNN builds kernels per input shape. Each request carries one item. For
each concurrency (default 1, 16, 64, 200 clients) and each mode, the clients send requests back to back for
``--seconds`` or until ``--max-requests`` answers, whichever comes first; the first second is warm-up and not
counted. Both servers stay up and each concurrency is measured off then on, back to back.

    batching on:  max_batch_size=64, max_queue_delay_ms=2 (--delay-ms)
    batching off: max_batch_size=1,  max_queue_delay_ms=0
    both:         --threads inference threads (= batcher instances), predictor num_threads=1

Run::

    .venv/bin/python benchmarks/serve_load.py                 # about 1.5 minutes
    .venv/bin/python benchmarks/serve_load.py --repeat 3 --seconds 4   # median and range of three sweeps
    .venv/bin/python benchmarks/serve_load.py --clients 1 64 --seconds 3

Each point also reports the CPU time per answered request of the server process (all threads, from /proc) and of
the load generator (this process), and, to tell where a latency tail comes from: how long the server's threads
waited for a CPU taken by other jobs (``/proc/PID/task/*/schedstat``), the time each task request spent inside the
server's app (p50/p99, from the ASGI call to the last byte handed to uvicorn, warm-up included), the event loop's
stalls (a 1 ms ticker's lateness over 5 ms), the garbage collector's full (generation-2) pauses and the time in its
younger collections, and the load generator's own loop lag (p99); and, per task request, how many model calls
finished while it was in the app (p50/p99/mean: how many batches it waited for, which machine load does not move). The load generator runs on uvloop when installed. PaddleNLP's SimpleServing is compared in ``serve_paddlenlp.py`` (same generator).

``--protocol grpc`` sends the same item over the Open Inference Protocol's gRPC ``ModelInfer`` (``[server]
grpc_listen``; an FP32 ``x`` tensor [1, 256] in raw contents, one channel per client, the request serialised once);
``--protocol both`` measures the native REST route and gRPC on the same server, back to back per point, and prints
the gRPC/REST ratios of throughput and p99. The in-app probe times HTTP requests only (gRPC points show nan there).

``--task customer_service`` serves the installed customer-service plugin's task as a user calls it
(``POST /v1/tasks/customer_service`` with ``{"inputs": [{"text": ...}]}``, the default options: language detection,
the MiniLM heads, the second encoder where MiniLM is unsure, out-of-scope rules, escalation), each request one
banking77 test message, the clients cycling through 512 of them (shuffled, seed 0) so that lengths vary as in use;
``--max-batch`` caps its server batch (default 32, the plugin's batch size).

Throughput counts the requests answered in the measured part over the time up to the last of them: when the
``--max-requests`` cap stops the clients before ``--seconds`` are over, the clock stops with the last answer (it
used to run on to the end of ``--seconds``, which understated throughput), and the point says ``cap bound``.

    .venv/bin/python benchmarks/serve_load.py --protocol both --clients 1 16 64 --seconds 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SECRET = "sf_benchmark_key_0123456789abcdefghijklmnop"
HIDDEN = 1024  # --hidden changes it
IN_FEATURES = 256
BUCKETS = (1, 2, 4, 8, 16, 32, 64)
SERVER_CPUS, CLIENT_CPUS = {0}, {1}  # --pin


# --- server role ---------------------------------------------------------------------------------------------------


def make_bundle(folder: Path) -> Path:
    import numpy as np
    from sectorflow import import_paddle, write_manifest

    paddle = import_paddle()
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Linear(IN_FEATURES, HIDDEN), paddle.nn.ReLU(),
                               paddle.nn.Linear(HIDDEN, HIDDEN), paddle.nn.ReLU(),
                               paddle.nn.Linear(HIDDEN, HIDDEN), paddle.nn.ReLU(), paddle.nn.Linear(HIDDEN, 8))
    net.eval()
    paddle.jit.save(net, str(folder / "model"),
                    input_spec=[paddle.static.InputSpec([None, IN_FEATURES], "float32", name="x")])
    write_manifest(folder, task="mlp", name="bench-mlp", version="1", format="paddle-inference")
    del np
    return folder


def serve(port: int, bundle: Path, batching: bool, threads: int, delay_ms: float, shared_port: bool = False,
          grpc_port: int = 0, task: str = "mlp", max_batch: int = 64) -> None:
    import numpy as np
    from pydantic import BaseModel, Field
    from sectorflow import Pipeline, TaskResult, TaskSpec, hookimpl, plugins
    from sectorflow.serving import create_app, hash_key, load_config

    class In(BaseModel):
        x: list[float] = Field(min_length=IN_FEATURES, max_length=IN_FEATURES)

    class Out(TaskResult):
        label: int

    class MLP(Pipeline):
        def load(self) -> None:
            self.pool = self.predictor_pool()
            for size in BUCKETS:  # oneDNN builds kernels per input shape: build them before serving
                for _ in range(threads):
                    self.pool.run({"x": np.zeros((size, IN_FEATURES), dtype="float32")})

        def preprocess(self, items: Any) -> list[Any]:
            return [item.x for item in items]

        def forward(self, batch: Any) -> list[Any]:
            size = next(b for b in BUCKETS if b >= len(batch))  # pad to a bucket: a few shapes, all warmed up
            x = np.zeros((size, IN_FEATURES), dtype="float32")
            x[:len(batch)] = batch
            logits = self.pool.run({"x": x})[0][:len(batch)]
            return [int(i) for i in logits.argmax(axis=1)]

        def postprocess(self, items: Any, raw: Any) -> list[Out]:
            return [Out(label=r) for r in raw]

    class BenchPlugin:
        @hookimpl
        def sectorflow_register_tasks(self, register: Any) -> None:
            register(TaskSpec("mlp", In, Out, MLP, default_bundle=bundle))

    if task == "customer_service":  # the installed plugin, as `sectorflow serve` loads it
        os.environ["SECTORFLOW_LOAD_PLUGINS"] = "builtin_observers,customer_service"
        plugins.reset()
    else:
        os.environ["SECTORFLOW_LOAD_PLUGINS"] = "builtin_observers"
        plugins.reset()
        plugins.get_plugin_manager().register(BenchPlugin(), name="bench")
    knobs = {"max_batch_size": max_batch, "max_queue_delay_ms": delay_ms} if batching else {"max_batch_size": 1,
                                                                                            "max_queue_delay_ms": 0}
    config = load_config(data={
        "server": {"threads": threads, "load_in_background": False,
                   **({"grpc_listen": f"127.0.0.1:{grpc_port}"} if grpc_port else {})},
        "tasks": {task: {**knobs, "instances": threads, "num_threads": 1, "batch_size": max_batch,
                         "interactive": {"max_queue_items": 100000, "queue_timeout_ms": 60000}}},
        "keys": [{"id": "bench", "sha256": hash_key(SECRET), "scopes": ["task:*", "metrics"]}],
    }, environ={})
    app = Probe(create_app(config), task)
    if shared_port:  # --processes N: one of N servers on the same port (SO_REUSEPORT; the kernel spreads connections)
        import uvicorn
        from sectorflow.serving.server import ProxyHeaders

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))  # uvicorn listens once the model is loaded: no connection waits for a load
        server = uvicorn.Server(uvicorn.Config(ProxyHeaders(app, "127.0.0.1"), log_level="warning",
                                               access_log=False, proxy_headers=False))
        with contextlib.suppress(KeyboardInterrupt):  # SIGINT stops it (uvicorn.run catches this itself)
            server.run(sockets=[sock])
        return
    try:
        from sectorflow.serving import run_server
    except ImportError:  # --src pointing at a checkout from before run_server existed: plain uvicorn, as it was then
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        return
    run_server(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


class Probe:
    """ASGI wrapper of the benchmark server (not of the product): time in the app per task request (ASGI call to
    the last body message sent), the event loop's stalls (a 1 ms ticker's lateness) and the garbage collector's
    pauses; ``GET /bench/stats`` returns them since the last call and resets. Comparing the server's time in the app
    with the client's latency tells what happens before the app sees a request (socket buffers while the loop is
    stalled, the load generator's own scheduling). It also counts, per task request, the model calls of the task
    that finished while the request was in the app (its own included): a count that other jobs on the machine do
    not move, which shows how many batches a request waited for."""

    def __init__(self, app: Any, task: str = "mlp") -> None:
        import gc

        self.app = app
        self.task, self.path = task, f"/v1/tasks/{task}"
        self.reset()
        self.calls = 0  # model calls of the task finished so far
        self._counted: Any = None  # the batcher whose calls are counted
        self._gc_start = 0.0
        self._ticker: asyncio.Task[None] | None = None
        gc.callbacks.append(self._gc)

    def reset(self) -> None:
        self.in_app: list[float] = []
        self.calls_waited: list[int] = []
        self.stalls: list[float] = []
        self.gc_pauses: list[float] = []
        self.gc_young = 0.0

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif info.get("generation") == 2:
            self.gc_pauses.append(time.perf_counter() - self._gc_start)
        else:
            self.gc_young += time.perf_counter() - self._gc_start

    async def _tick(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            late = time.perf_counter() - t - 0.001
            if late > 0.005:
                self.stalls.append(late)

    def _count_calls(self) -> None:
        """Count the finished model calls of the task's batcher (wraps its ``_run``, once it is loaded)."""
        state = getattr(getattr(self.app, "state", None), "sectorflow", None)
        batcher = state.batchers.get(self.task) if state is not None else None
        if batcher is None or batcher is self._counted:
            return
        run = batcher._run

        async def counted(batch: Any) -> None:
            try:
                await run(batch)
            finally:
                self.calls += 1

        batcher._run = counted
        self._counted = batcher

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._ticker is None and scope["type"] != "lifespan":
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        if scope["type"] == "http" and scope["path"] != self.path:  # which server answered (--processes)
            plain_send = send

            async def send(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []),
                                                       (b"x-bench-pid", str(os.getpid()).encode())]}
                await plain_send(message)
        if scope["type"] != "http" or scope["path"] != self.path:
            if scope["type"] == "http" and scope["path"] == "/bench/stats":
                import gc

                body = json.dumps({"in_app": self.in_app, "calls_waited": self.calls_waited,
                                   "stalls": self.stalls, "gc2": self.gc_pauses,
                                   "gc_young_s": self.gc_young, "gc_objects": len(gc.get_objects()),
                                   "gc_frozen": gc.get_freeze_count()}).encode()
                self.reset()
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
            await self.app(scope, receive, send)
            return
        self._count_calls()
        t0, calls0 = time.perf_counter(), self.calls

        async def timed_send(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.in_app.append(time.perf_counter() - t0)
                self.calls_waited.append(self.calls - calls0)

        await self.app(scope, receive, timed_send)


# --- client role ---------------------------------------------------------------------------------------------------


class _Connection:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: the load generator shares the machine with the
    server, so it must cost as little CPU as possible (httpx costs several times more per request)."""

    def __init__(self, port: int, request: bytes | list[bytes], start: int = 0) -> None:
        self.port = port
        self.requests = [request] if isinstance(request, bytes) else list(request)
        self.next = start % len(self.requests)  # each client starts elsewhere in a list of varied requests
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(self.requests[self.next])
        self.next = (self.next + 1) % len(self.requests)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


ITEM_X = [((i * 37) % 101) / 101 for i in range(IN_FEATURES)]


def http_request(port: int, path: str, payload: Any, auth: bool = True) -> bytes:
    """One whole HTTP/1.1 POST of ``payload`` as JSON (with the benchmark key unless ``auth`` is false)."""
    body = json.dumps(payload).encode()
    key = f"Authorization: Bearer {SECRET}\r\n" if auth else ""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{key}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def cs_messages(n: int = 512) -> list[str]:
    """``n`` banking77 test messages, shuffled with seed 0 (``../shared/data/banking77/test.csv``): varied lengths,
    as a customer-service endpoint gets them."""
    import csv
    import random

    path = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "banking77" / "test.csv"
    if not path.is_file():
        raise SystemExit(f"{path} is absent: --task customer_service sends banking77 test messages")
    with path.open(encoding="utf-8", newline="") as fh:
        texts = [row["text"] for row in csv.DictReader(fh)]
    random.Random(0).shuffle(texts)
    return texts[:n]


async def _load(port: int, clients: int, seconds: float, max_requests: int, warmup: float,
                task: str = "mlp") -> dict[str, Any]:
    if task == "customer_service":
        requests = [http_request(port, "/v1/tasks/customer_service", {"inputs": [{"text": t}]}) for t in cs_messages()]
        return await load(port, requests, clients, seconds, max_requests, warmup)
    return await load(port, http_request(port, "/v1/tasks/mlp", {"inputs": [{"x": ITEM_X}]}), clients, seconds,
                      max_requests, warmup)


class _GrpcClient:
    """One gRPC channel (its own HTTP/2 connection) calling ``ModelInfer`` with a request serialised once."""

    def __init__(self, port: int, request: bytes) -> None:
        import grpc

        self.grpc = grpc
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.call = self.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")  # bytes in, bytes out
        self.request = request
        self.metadata = (("authorization", f"Bearer {SECRET}"),)

    async def post(self) -> int:
        try:
            await self.call(self.request, metadata=self.metadata)
        except self.grpc.aio.AioRpcError as exc:
            return 503 if exc.code() == self.grpc.StatusCode.UNAVAILABLE else 400
        return 200

    def close(self) -> None:
        asyncio.get_running_loop().create_task(self.channel.close())


async def _load_grpc(port: int, clients: int, seconds: float, max_requests: int, warmup: float) -> dict[str, Any]:
    import struct

    from sectorflow.serving.grpc_v2 import MESSAGES

    request = MESSAGES["ModelInferRequest"](model_name="mlp", raw_input_contents=[struct.pack(
        f"<{IN_FEATURES}f", *ITEM_X)])
    request.inputs.add(name="x", datatype="FP32", shape=[1, IN_FEATURES])
    return await load(port, request.SerializeToString(), clients, seconds, max_requests, warmup, _GrpcClient)


async def load(port: int, request: bytes | list[bytes], clients: int, seconds: float, max_requests: int,
               warmup: float, client: Any = None) -> dict[str, Any]:
    """``clients`` closed-loop keep-alive clients (``client(port, request)``, default an HTTP/1.1 connection
    sending ``request`` as a whole HTTP request) back to back for ``warmup`` + ``seconds`` or until ``max_requests``
    counted answers; latencies of the measured part. Throughput is over the time up to the last counted answer, so
    a cap that stops the clients early does not leave the clock running; ``capped`` says whether the cap bound."""
    latencies: list[float] = []
    errors = 0
    answered = 0
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    last = {"t": measure_from}
    done = asyncio.Event()
    client = client or _Connection

    async def worker(number: int) -> None:
        nonlocal errors, answered
        connection = client(port, request, number * 7) if client is _Connection else client(port, request)
        try:
            while time.perf_counter() < stop_at and len(latencies) < max_requests:
                t0 = time.perf_counter()
                status = await connection.post()
                t1 = time.perf_counter()
                answered += 1
                if t0 >= measure_from:
                    last["t"] = max(last["t"], t1)
                    if status == 200:
                        latencies.append(t1 - t0)
                    else:
                        errors += 1
        finally:
            connection.close()

    lags: list[float] = []

    async def ticker() -> None:  # the load generator's own event loop lateness (its scheduling delays)
        while time.perf_counter() < stop_at and not done.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - t - 0.001)

    async def workers() -> None:
        await asyncio.gather(*(worker(i) for i in range(clients)))
        done.set()

    await asyncio.gather(ticker(), workers())
    lags.sort()
    capped = len(latencies) >= max_requests
    elapsed = max(1e-9, last["t"] - measure_from)  # every counted answer came within this span
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    return {"clients": clients, "requests": len(latencies), "answered": answered, "errors": errors,
            "rps": len(latencies) / elapsed, "measured_s": elapsed, "capped": capped,
            "p50_ms": pick(0.50) if latencies else float("nan"), "p99_ms": pick(0.99) if latencies else float("nan"),
            "mean_ms": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
            "client_lag_p99_ms": lags[int(0.99 * len(lags))] * 1000 if lags else float("nan")}


def run_loop(coroutine: Any) -> Any:
    """Run the load generator's coroutine on uvloop when it is installed (as the server does), else on asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _each_server(url: str, path: str, servers: int, headers: dict[str, str] | None = None) -> list[Any]:
    """GET ``path`` from every one of ``servers`` servers sharing the port: a new connection per try (the kernel picks
    the server per connection) until each server's pid has answered once. Returns their responses."""
    import httpx

    answers: dict[str, Any] = {}
    for _ in range(200 * servers):
        r = httpx.get(f"{url}{path}", headers=headers)
        answers.setdefault(r.headers.get("x-bench-pid", "?"), r)
        if len(answers) >= servers:
            break
    return list(answers.values())


def _batch_stats(url: str, servers: int = 1) -> tuple[float, float]:
    total, calls = 0.0, 0.0
    for r in _each_server(url, "/metrics", servers, {"Authorization": f"Bearer {SECRET}"}):
        values = {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in r.text.splitlines()
                  if line.startswith(("sectorflow_batch_size_sum", "sectorflow_batch_size_count"))}
        total += values.get("sectorflow_batch_size_sum", 0.0)
        calls += values.get("sectorflow_batch_size_count", 0.0)
    return total, calls


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(batching: bool, args: argparse.Namespace, bundle: Path) -> tuple[list[subprocess.Popen], int, int]:
    """Start one benchmark server (``--processes N``: N on one port) and wait until its models are loaded; its
    process(es), HTTP port and gRPC port (0 without ``--protocol grpc|both``)."""
    import httpx

    port = _free_port()
    grpc_port = _free_port() if args.protocol != "rest" else 0
    env = {**os.environ, "SECTORFLOW_AUDIT": "off"}
    if args.src:  # a directory holding a ``sectorflow`` package (an older core/): it shadows the installed one
        env["PYTHONPATH"] = os.pathsep.join([str(args.src.resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    procs = [subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--bundle", str(bundle),
                               "--threads", str(args.threads), "--hidden", str(args.hidden),
                               "--delay-ms", str(args.delay_ms), "--grpc-port", str(grpc_port),
                               "--task", args.task, "--max-batch", str(args.max_batch)]
                              + (["--batching"] if batching else [])
                              + (["--shared-port"] if args.processes > 1 else []), env=env)
             for _ in range(args.processes)]
    if args.pin:
        for proc in procs:
            os.sched_setaffinity(proc.pid, SERVER_CPUS)
    deadline = time.monotonic() + 120
    ready: set[str] = set()
    while True:
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/readyz")
            if r.status_code == 200:
                ready.add(r.headers.get("x-bench-pid", "?"))
                if len(ready) >= args.processes:
                    return procs, port, grpc_port
        except httpx.TransportError:
            if any(proc.poll() is not None for proc in procs):
                raise SystemExit("benchmark server exited") from None
        if time.monotonic() > deadline:
            raise SystemExit("benchmark server did not start")
        time.sleep(0.2)


def _probe_stats(url: str, servers: int = 1) -> dict[str, Any]:
    merged: dict[str, Any] = {"in_app": [], "calls_waited": [], "stalls": [], "gc2": [], "gc_young_s": 0.0}
    for r in _each_server(url, "/bench/stats", servers):
        if r.status_code != 200:
            continue
        stats = r.json()
        for key in ("in_app", "calls_waited", "stalls", "gc2"):
            merged[key] += stats.get(key, [])
        merged["gc_young_s"] += stats["gc_young_s"]
        merged["gc_objects"], merged["gc_frozen"] = stats["gc_objects"], stats["gc_frozen"]
    return merged


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def measure(pids: list[int], port: int, batching: bool, clients: int, args: argparse.Namespace,
            protocol: str = "rest", grpc_port: int = 0) -> dict[str, Any]:
    """One point: ``clients`` closed-loop clients against the server(s) on ``port`` (REST) or ``grpc_port``."""
    url = f"http://127.0.0.1:{port}"
    n = len(pids)
    before = _batch_stats(url, n)
    _probe_stats(url, n)  # reset

    def cpu() -> float:
        return sum(_cpu_seconds(pid) for pid in pids)

    def delay() -> float:
        return sum(_run_delay_seconds(pid) for pid in pids)

    server_cpu, client_cpu, waited = cpu(), time.process_time(), delay()
    started = time.perf_counter()
    if protocol == "grpc":
        row = run_loop(_load_grpc(grpc_port, clients, args.seconds, args.max_requests, args.warmup))
    else:
        row = run_loop(_load(port, clients, args.seconds, args.max_requests, args.warmup, args.task))
    row["protocol"] = protocol
    server_cpu, client_cpu = cpu() - server_cpu, time.process_time() - client_cpu
    row["server_cpu_wait"] = (delay() - waited) / (time.perf_counter() - started)
    after = _batch_stats(url, n)
    probe = _probe_stats(url, n)  # the whole point, warm-up included
    in_app = probe.get("in_app", [])
    row["server_p50_ms"], row["server_p99_ms"] = _quantile(in_app, 0.5), _quantile(in_app, 0.99)
    waited = sorted(probe.get("calls_waited", []))
    row["calls_p50"] = waited[len(waited) // 2] if waited else float("nan")
    row["calls_p99"] = waited[min(len(waited) - 1, int(0.99 * len(waited)))] if waited else float("nan")
    row["calls_mean"] = statistics.fmean(waited) if waited else float("nan")
    row["stall_s"] = sum(probe.get("stalls", []))
    row["stall_max_ms"] = max(probe.get("stalls") or [0.0]) * 1000
    row["gc2"] = len(probe.get("gc2", []))
    row["gc2_max_ms"] = max(probe.get("gc2") or [0.0]) * 1000
    row["gc_young_s"] = probe.get("gc_young_s", float("nan"))
    row["gc_objects"], row["gc_frozen"] = probe.get("gc_objects", 0), probe.get("gc_frozen", 0)
    calls = after[1] - before[1]
    row["mean_batch"] = (after[0] - before[0]) / calls if calls else float("nan")
    row["batching"] = "on" if batching else "off"
    answered = row["answered"] or 1  # every answer of the point, warm-up included: what the CPU time paid for
    row["server_cpu_ms"] = server_cpu / answered * 1000
    row["client_cpu_ms"] = client_cpu / answered * 1000
    print(f"{protocol:>4}  batching {row['batching']:>3}  clients {clients:>3}  {row['rps']:8.1f} req/s  "
          f"p50 {row['p50_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  mean {row['mean_ms']:6.1f} ms  "
          f"mean batch {row['mean_batch']:5.1f}  "
          f"CPU/request server {row['server_cpu_ms']:.2f} ms, load generator {row['client_cpu_ms']:.2f} ms  "
          f"({row['requests']} requests in {row['measured_s']:.2f} s, {row['errors']} errors"
          f"{'; cap bound: --max-requests stopped the clients first' if row['capped'] else ''})", flush=True)
    print(f"    server waited for a CPU {row['server_cpu_wait']:.2f} s per second of the point (other jobs); "
          f"in the server's app: p50 {row['server_p50_ms']:.1f} ms  p99 {row['server_p99_ms']:.1f} ms, model calls "
          f"finished meanwhile p50 {row['calls_p50']:g}  p99 {row['calls_p99']:g}  mean {row['calls_mean']:.2f}; "
          f"event loop stalls > 5 ms: {row['stall_s']:.2f} s in all, longest {row['stall_max_ms']:.0f} ms; gen-2 collections "
          f"{row['gc2']}, longest {row['gc2_max_ms']:.0f} ms, younger ones {row['gc_young_s']:.2f} s in all "
          f"({row['gc_objects']} objects tracked, {row['gc_frozen']} frozen); client loop lag p99 {row['client_lag_p99_ms']:.1f} ms",
          flush=True)
    return row


def _run_delay_seconds(pid: int) -> float:
    """Seconds the threads of process ``pid`` have spent runnable but waiting for a CPU (``/proc/PID/task/*/schedstat``,
    second field): what other jobs on the machine took from it. Threads that ended are not counted."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_all(args: argparse.Namespace, bundle: Path) -> list[dict[str, Any]]:
    """Both servers stay up (an idle one costs next to nothing); each concurrency runs off then on, back to back,
    so that a change in the machine's load between the two points of a pair stays small. With ``--repeat N`` the
    whole sweep runs N times and a summary gives, per point, the median and the range."""
    modes = {"on": (True,), "off": (False,), "both": (False, True)}[args.modes]
    servers = {batching: start_server(batching, args, bundle) for batching in modes}
    rows = []
    try:
        for repeat in range(args.repeat):
            if args.repeat > 1:
                print(f"--- run {repeat + 1} of {args.repeat}, load average {os.getloadavg()[0]:.1f}", flush=True)
            protocols = {"rest": ("rest",), "grpc": ("grpc",), "both": ("rest", "grpc")}[args.protocol]
            for clients in args.clients:
                point = {(b, proto): measure([p.pid for p in servers[b][0]], servers[b][1], b, clients, args, proto,
                                             servers[b][2]) for b in modes for proto in protocols}
                for row in point.values():
                    row["run"] = repeat + 1
                rows += point.values()
                for proto in protocols:
                    if len(modes) == 2:
                        print(f"{proto:>4}  clients {clients:>3}: batching speed-up "
                              f"{point[(True, proto)]['rps'] / point[(False, proto)]['rps']:.2f}x", flush=True)
                if len(protocols) == 2:
                    for b in modes:
                        rest, grpc_row = point[(b, "rest")], point[(b, "grpc")]
                        print(f"batching {'on' if b else 'off':>3}  clients {clients:>3}: gRPC / REST throughput "
                              f"{grpc_row['rps'] / rest['rps']:.2f}x, p99 {grpc_row['p99_ms'] / rest['p99_ms']:.2f}x",
                              flush=True)
    finally:
        for procs, _, _ in servers.values():
            for proc in procs:
                proc.send_signal(signal.SIGINT)  # uvicorn stops cleanly on SIGINT; Paddle prints a trace on SIGTERM
            for proc in procs:
                proc.wait(30)
    if args.repeat > 1:
        summarise(rows)
    return rows


def summarise(rows: list[dict[str, Any]]) -> None:
    """Median and range over the runs of each (batching, protocol, clients) point. A figure that the rows do not
    carry (serve_paddlenlp.py's rows have no mean batch: SimpleServing has no metrics) is left out of the line, not
    a KeyError; a point where the cap bound in any run says so."""
    print("--- summary: median [min - max] over the runs")
    points = sorted({(r["batching"], r.get("protocol", "rest"), r["clients"]) for r in rows})
    for mode, protocol, clients in points:
        runs = [r for r in rows if (r["batching"], r.get("protocol", "rest"), r["clients"]) == (mode, protocol, clients)]

        def stat(label: str, key: str, fmt: str, runs: list[dict[str, Any]] = runs) -> str:
            values = sorted(r[key] for r in runs if key in r)
            if not values:
                return ""
            return f"  {label} {statistics.median(values):{fmt}} [{values[0]:{fmt}} - {values[-1]:{fmt}}]"

        capped = sum(bool(r.get("capped")) for r in runs)
        print(f"{protocol:>4}  batching {mode:>3}  clients {clients:>3}{stat('req/s', 'rps', '.0f')}"
              f"{stat('p50 ms', 'p50_ms', '.1f')}{stat('p99 ms', 'p99_ms', '.1f')}{stat('mean ms', 'mean_ms', '.1f')}"
              f"{stat('mean batch', 'mean_batch', '.1f')}{stat('server CPU ms/request', 'server_cpu_ms', '.2f')}"
              f"{stat('load generator CPU ms/request', 'client_cpu_ms', '.2f')}"
              f"{f'  (cap bound in {capped} of {len(runs)} runs)' if capped else ''}", flush=True)


def main() -> None:
    global HIDDEN
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16, 64, 200])
    parser.add_argument("--seconds", type=float, default=5.0, help="Measured seconds per point.")
    parser.add_argument("--warmup", type=float, default=1.0, help="Unmeasured seconds before each point.")
    parser.add_argument("--max-requests", type=int, default=20000, help="Cap on answers per point.")
    parser.add_argument("--threads", type=int, default=2, help="Inference threads (= batcher instances).")
    parser.add_argument("--delay-ms", type=float, default=2.0, help="max_queue_delay_ms with batching on.")
    parser.add_argument("--hidden", type=int, default=HIDDEN, help="Width of the MLP's three hidden layers.")
    parser.add_argument("--repeat", type=int, default=1, help="Run the whole sweep N times; print median and range.")
    parser.add_argument("--modes", choices=("both", "on", "off"), default="both", help="Batching on, off or both.")
    parser.add_argument("--pin", action="store_true",
                        help="Pin the server to CPU 0 and the load generator to CPU 1 (needs 2 CPUs): the server "
                             "uses about one core anyway (Paddle's CPU predictor holds the GIL while it runs).")
    parser.add_argument("--src", type=Path,
                        help="Serve with the sectorflow package in this directory (e.g. an older core/ exported "
                             "with git archive as DIR/sectorflow), for before/after runs back to back. Serve both "
                             "sides with --src: the same code served from the editable install measured 10-15 %% "
                             "more server CPU per request (1 Dec 2026, 2 shared cores, load average 6).")
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    parser.add_argument("--processes", type=int, default=1,
                        help="Run N server processes on one port (SO_REUSEPORT), each with its own model, queues, "
                             "limits and metrics: what several workers or a model process per core could give. Not "
                             "a mode of sectorflow serve (see docs/serving.md).")
    parser.add_argument("--protocol", choices=("rest", "grpc", "both"), default="rest",
                        help="The native REST route, the Open Inference Protocol's gRPC ModelInfer, or both.")
    parser.add_argument("--task", choices=("mlp", "customer_service"), default="mlp",
                        help="mlp: the synthetic MLP; customer_service: the installed plugin's task with its defaults, "
                             "one varied banking77 message per request.")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="max_batch_size with batching on (default 64 for mlp, 32 for customer_service).")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--grpc-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--shared-port", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bundle", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--batching", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    HIDDEN = args.hidden
    if args.max_batch is None:
        args.max_batch = 32 if args.task == "customer_service" else 64
    if args.task == "customer_service" and args.protocol != "rest":
        parser.error("--task customer_service is measured over REST only (its input is text, not a tensor)")
    if args.serve:
        serve(args.serve, args.bundle, args.batching, args.threads, args.delay_ms, args.shared_port, args.grpc_port,
              args.task, args.max_batch)
        return
    import uvicorn

    what = (f"MLP {IN_FEATURES}-{HIDDEN}x3-8 fp32 paddle.inference (oneDNN)" if args.task == "mlp" else
            "Taskflow('customer_service') with its defaults, installed plugin, 512 varied banking77 test messages")
    loop = "uvloop" if _has("uvloop") else "asyncio"
    http = "httptools" if _has("httptools") else "h11"
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before "
          f"start; Python {platform.python_version()}; uvicorn {uvicorn.__version__} ({loop}, {http}); audit log "
          f"off; server and client on 127.0.0.1; model: {what}; {args.threads} inference threads x 1 predictor "
          f"thread; 1 item per request; on: max_batch_size {args.max_batch}, delay {args.delay_ms:g} ms; off: "
          f"max_batch_size 1; "
          f"{'server on CPU 0, load generator on CPU 1' if args.pin else 'server and load generator unpinned'}; "
          f"serving code: {args.src or 'installed sectorflow'}; {args.processes} server process(es)", flush=True)
    if args.pin:
        os.sched_setaffinity(0, CLIENT_CPUS)
    with tempfile.TemporaryDirectory() as tmp:
        bundle = make_bundle(Path(tmp))
        rows = run_all(args, bundle)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
