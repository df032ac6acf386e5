"""Reference: PaddleNLP's SimpleServing and ``sectorflow serve`` serving the same model, same load generator.

The model is the AML plugin's risk scorer (``plugins/aml/src/sectorflow_aml/bundle``: a Paddle MLP on
``sectorflow_aml.features.N_FEATURES`` (23) raw transaction features, ``model.json`` + ``model.pdiparams``), the only
neural model installed now. Both servers get requests of one item (23 numbers) from the closed-loop keep-alive load
generator of ``serve_load.py``, at 1, 16 and 64 concurrent clients, on 127.0.0.1:

- ``sectorflow``: the model alone as a task (``aml``: input ``{"x": [23 floats]}``, output the score), through
  ``Taskflow``, the predictor pool (one predictor thread; oneDNN off as the bundle's manifest says), with batching
  off (``max_batch_size`` 1) and on (64 items, 2 ms), API key, access decisions, metrics, audit log off;
- ``SimpleServing``: ``paddlenlp.SimpleServer().register(...)`` with a model handler that feeds the same rows to
  PaddleNLP's own predictor, served by uvicorn (uvloop, httptools) in the side environment ``.venv-paddlenlp``
  (``bash benchmarks/paddlenlp_env.sh``; PaddleNLP cannot be installed in the project's .venv). SimpleServing has
  no batching across requests, no authentication, no input validation beyond ``{"data": Any}``.

SimpleServing's ``register`` is first given the bundle folder as it is, and the script prints what happens; its
predictor (paddlenlp 3.0.0b4, Paddle 3) takes the first ``*.json`` it lists in the folder as the program, and the
bundle also holds ``manifest.json`` and ``scorer.json``. The measured SimpleServing then serves a folder with only
the bundle's ``model.json`` and ``model.pdiparams`` (byte copies, hash-checked), plus a one-word local tokenizer
folder: ``register`` insists on a tokenizer, which the model handler never uses. Both servers must answer the same
score for the same row before anything is measured.

**oneDNN, like with like** (``--onednn on,off``, the default: both). SimpleServing's predictor switches oneDNN on;
the scorer's bundle switches it off (``cpu_onednn: false``: for this tiny model oneDNN's per-run overhead is larger
than its kernels, about 2.8x). Comparing the two defaults compared settings, not servers, so every setting runs on
both sides: sectorflow serves a copy of the bundle whose manifest says ``cpu_onednn`` true or false, and
SimpleServing's ``paddle.inference.Config.enable_mkldnn`` is replaced by ``disable_mkldnn`` for ``off``. Each line
names its setting; the ratios compare the two servers at the same setting.

**The customer-service task as a user calls it** (``--task customer_service``): sectorflow serves the installed
plugin's ``customer_service`` task with its defaults (``POST /v1/tasks/customer_service``, ``{"inputs": [{"text":
...}]}``), and SimpleServing serves ``paddlenlp.Taskflow("text_classification", task_path=meanpool)`` of the same
MiniLM network (``register_taskflow``, ``POST /taskflow/customer_service``, ``{"data": {"text": ...}}``; the
folder from ``plugins/customer_service/scripts/export_paddlenlp.py``), one banking77 test message per request, the
clients cycling through 512 of them (``serve_load.cs_messages``). sectorflow does more per message (language
detection, out-of-scope rules, escalation, the second encoder where MiniLM is unsure); the script prints how often
the two servers' top intents agree on 64 messages instead of requiring equal answers.

Run::

    bash benchmarks/paddlenlp_env.sh                      # once
    .venv/bin/python benchmarks/serve_paddlenlp.py       # about 4 minutes (both oneDNN settings)
    .venv/bin/python benchmarks/serve_paddlenlp.py --task customer_service --clients 1 16 --onednn on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUNDLE = ROOT / "plugins" / "aml" / "src" / "sectorflow_aml" / "bundle"
SIDE_PYTHON = ROOT / ".venv-paddlenlp" / "bin" / "python"
SECRET = "sf_benchmark_key_0123456789abcdefghijklmnop"
# One transaction's raw features, in the order of ``sectorflow_aml.features.FEATURE_NAMES`` (bundle aml-risk-mlp
# 2.0.0, 23 features), that the shipped bundle scores mid-range (0.4927), so that the two servers' answers are
# compared where the sigmoid is not saturated. It is transaction 28,490 (0-based, file order) of AMLSim run
# 20K_fanin200cycle200 (a sender with 2 receivers paying a collection account with 24 senders), replayed through the
# window and FeatureExtractor with a 30-day lookback, values rounded to one decimal. The literal stays here (not
# computed at start) because this file also runs in .venv-paddlenlp, which has no sectorflow; ``main`` checks its
# length against the installed plugin.
ROW = [2.0, 1.0, 24.0, 0.0, 2.0, 24.0, 1.0, 0.0, 1.8, 0.0, 216.0, 0.9, 1.4, 1.5, 24.0, 24.0, 0.0, 0.0, 0.0, 32.0, 38.0,
       4.0, 25.0]


# --- server roles --------------------------------------------------------------------------------------------------


def onednn_bundle(onednn: bool, work: Path) -> Path:
    """A copy of the scorer's bundle whose manifest says ``cpu_onednn: onednn`` (same program and weights)."""
    import shutil

    from sectorflow import load_bundle, write_manifest

    target = work / f"aml-bundle-onednn-{'on' if onednn else 'off'}"
    if not target.is_dir():
        shutil.copytree(BUNDLE, target)
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        (target / "manifest.json").unlink()
        write_manifest(target, **{**{k: v for k, v in manifest.items() if k != "files"}, "cpu_onednn": onednn})
        load_bundle(target)  # every file hashed again
    return target


def serve_sectorflow(port: int, batching: bool, bundle: Path = BUNDLE, task: str = "aml") -> None:
    """``sectorflow serve`` of the scorer alone from ``bundle``, or (``task="customer_service"``) of the installed
    customer-service plugin's task with its defaults (runs in the project's .venv)."""
    import numpy as np
    from pydantic import BaseModel, Field
    from sectorflow import (
        Pipeline,
        TaskResult,
        TaskSpec,
        hookimpl,
        import_paddle,
        plugins,
    )
    from sectorflow.serving import create_app, hash_key, load_config, run_server
    from sectorflow_aml.features import N_FEATURES

    import_paddle()  # before uvicorn's signal handlers (as sectorflow serve)

    class In(BaseModel):
        x: list[float] = Field(min_length=N_FEATURES, max_length=N_FEATURES)

    class Out(TaskResult):
        score: float

    class Scorer(Pipeline):
        def load(self) -> None:
            self.pool = self.predictor_pool()

        def preprocess(self, items: Any) -> list[Any]:
            return [item.x for item in items]

        def forward(self, batch: Any) -> list[Any]:
            return self.pool.run({self.pool.input_names[0]: np.asarray(batch, dtype="float32")})[0][:, 0].tolist()

        def postprocess(self, items: Any, raw: Any) -> list[Out]:
            return [Out(score=s) for s in raw]

    class BenchPlugin:
        @hookimpl
        def sectorflow_register_tasks(self, register: Any) -> None:
            register(TaskSpec("aml", In, Out, Scorer, default_bundle=bundle,
                              description=f"The AML risk scorer's model alone, on {N_FEATURES} raw features"))

    if task == "customer_service":
        os.environ["SECTORFLOW_LOAD_PLUGINS"] = "builtin_observers,customer_service"
        plugins.reset()
    else:
        os.environ["SECTORFLOW_LOAD_PLUGINS"] = "builtin_observers"
        plugins.reset()
        plugins.get_plugin_manager().register(BenchPlugin(), name="bench")
    most = 32 if task == "customer_service" else 64
    knobs = {"max_batch_size": most, "max_queue_delay_ms": 2} if batching else {"max_batch_size": 1,
                                                                                "max_queue_delay_ms": 0}
    config = load_config(data={
        "server": {"threads": 2, "load_in_background": False},
        "tasks": {task: {**knobs, "instances": 2, "num_threads": 1, "batch_size": most,
                          "interactive": {"max_queue_items": 100000, "queue_timeout_ms": 60000}}},
        "keys": [{"id": "bench", "sha256": hash_key(SECRET), "scopes": ["task:*"]}],
    }, environ={})
    run_server(create_app(config), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_paddlenlp(port: int, model_dir: Path, tokenizer_dir: Path, patch: bool, onednn: bool = True,
                    taskflow_dir: Path | None = None) -> None:
    """PaddleNLP SimpleServing of the same model (runs in .venv-paddlenlp; imports no sectorflow).

    ``patch``: two workarounds for SimpleServing 3.0.0b4 on Paddle 3.3.1, without which it serves no Paddle 3
    (PIR) program at all: its int8 check (``Predictor._is_int8_model``) walks the program's ops with the pre-PIR
    ``op.type`` (AttributeError), so it is replaced by ``False`` (the model is fp32); and it calls
    ``Config.enable_memory_optim()`` without ``enable_new_executor()``, which ``create_predictor`` refuses ("Not
    find predictor_id 0 and pass_name memory_optimize_pass"), so the new executor is switched on with it."""
    import numpy as np
    import uvicorn
    from paddlenlp import SimpleServer
    from paddlenlp.server import BaseModelHandler, BasePostHandler

    if patch:
        from paddlenlp.server import predictor as simple_predictor

        simple_predictor.Predictor._is_int8_model = lambda self, model_path: False
        config_class = simple_predictor.paddle.inference.Config
        memory_optim = config_class.enable_memory_optim

        def enable_memory_optim(self: Any, *args: Any) -> None:
            memory_optim(self, *args)
            self.enable_new_executor()

        config_class.enable_memory_optim = enable_memory_optim

    if not onednn:  # like with like: the predictor's enable_mkldnn() becomes disable_mkldnn()
        import paddle

        paddle.inference.Config.enable_mkldnn = paddle.inference.Config.disable_mkldnn
    if taskflow_dir is not None:  # the customer-service model through PaddleNLP's Taskflow
        import paddlenlp.taskflow.utils as pnlp_utils

        pnlp_utils.DOWNLOAD_CHECK = True
        from paddlenlp import Taskflow

        flow = Taskflow("text_classification", task_path=str(taskflow_dir), mode="finetune", device_id=-1,
                        batch_size=32, max_length=64, num_threads=1)
        app = SimpleServer()
        app.register_taskflow("customer_service", flow)
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        return

    class RowsHandler(BaseModelHandler):
        """``data = {"x": [[23 floats], ...]}`` -> the model's scores, through SimpleServing's own predictor."""

        @classmethod
        def process(cls, predictor: Any, tokenizer: Any, data: Any, parameters: Any) -> Any:
            x = np.asarray(data["x"], dtype="float32")
            predictor._input_handles[0].reshape(list(x.shape))
            predictor._input_handles[0].copy_from_cpu(x)
            predictor._predictor.run()
            return {"scores": predictor._output_handles[0].copy_to_cpu()[:, 0].tolist()}

    class PassThrough(BasePostHandler):
        @classmethod
        def process(cls, data: Any, parameters: Any) -> Any:
            return data

    app = SimpleServer()
    app.register("models/aml", model_path=str(model_dir), tokenizer_name=str(tokenizer_dir),
                 model_handler=RowsHandler, post_handler=PassThrough, device_id=-1)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# --- model folder for SimpleServing --------------------------------------------------------------------------------


def model_only_dir(work: Path) -> Path:
    """A folder holding only the bundle's program and weights (byte copies, hash-checked against the manifest):
    SimpleServing's predictor takes the first ``*.json`` file it lists as the program, and the bundle folder also
    holds ``manifest.json`` and ``scorer.json``."""
    from sectorflow import load_bundle

    bundle = load_bundle(BUNDLE)  # checks every file's SHA-256
    target = work / "simple_serving_model"
    target.mkdir()
    for name in ("model.json", "model.pdiparams"):
        (target / name).write_bytes(bundle.file(name).read_bytes())
    return target


def tokenizer_dir(work: Path) -> Path:
    """A local one-word BERT tokenizer (SimpleServing's ``register`` insists on one; the handler never uses it)."""
    folder = work / "tokenizer"
    folder.mkdir()
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nx\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer",
                                                              "do_lower_case": True}), encoding="utf-8")
    return folder


# --- orchestration -------------------------------------------------------------------------------------------------


def _wait(proc: subprocess.Popen, url: str, name: str, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-4000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.3)
    raise RuntimeError(f"{name} did not start within 180 s:\n{log.read_text(errors='replace')[-4000:]}")


def start(kind: str, work: Path, model_dir: Path | None = None, tokenizer: Path | None = None,
          patch: bool = True, onednn: bool = True, task: str = "aml") -> tuple[subprocess.Popen, int, Path]:
    sys.path.insert(0, str(HERE))
    from serve_load import _free_port

    port = _free_port()
    log = work / f"{kind}-{port}.log"
    setting = ["--onednn", "on" if onednn else "off", "--task", task]
    if kind == "paddlenlp":
        cmd = [str(SIDE_PYTHON), __file__, "--serve-paddlenlp", str(port), str(model_dir), str(tokenizer)] + (
            ["--patch-int8-check"] if patch else []) + setting + (
            ["--taskflow-dir", str(work / "export" / "meanpool")] if task == "customer_service" else [])
        ready = f"http://127.0.0.1:{port}/docs"
    else:
        cmd = [sys.executable, __file__, "--serve-sectorflow", str(port), "--bundle",
               str(onednn_bundle(onednn, work))] + setting + (["--batching"] if kind == "on" else [])
        ready = f"http://127.0.0.1:{port}/readyz"
    env = {**os.environ, "SECTORFLOW_AUDIT": "off", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    _wait(proc, ready, kind, log)
    return proc, port, log


def request_bytes(kind: str, port: int, task: str = "aml") -> bytes | list[bytes]:
    if task == "customer_service":  # one varied banking77 message per request, as users send them
        from serve_load import cs_messages, http_request

        if kind == "paddlenlp":
            return [http_request(port, "/taskflow/customer_service", {"data": {"text": t}, "parameters": {}},
                                 auth=False) for t in cs_messages()]
        return [http_request(port, "/v1/tasks/customer_service", {"inputs": [{"text": t}]}) for t in cs_messages()]
    if kind == "paddlenlp":
        body = json.dumps({"data": {"x": [ROW]}, "parameters": {}}).encode()
        path, auth = "/models/aml", ""
    else:
        body = json.dumps({"inputs": [{"x": ROW}]}).encode()
        path, auth = "/v1/tasks/aml", f"Authorization: Bearer {SECRET}\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def check_answers(kind: str, port: int) -> float:
    """One request; the score it answers (both servers must give the same number for the same row)."""
    import httpx

    if kind == "paddlenlp":
        r = httpx.post(f"http://127.0.0.1:{port}/models/aml", json={"data": {"x": [ROW]}, "parameters": {}})
        r.raise_for_status()
        return float(r.json()["result"]["scores"][0])
    r = httpx.post(f"http://127.0.0.1:{port}/v1/tasks/aml", json={"inputs": [{"x": ROW}]},
                   headers={"Authorization": f"Bearer {SECRET}"})
    r.raise_for_status()
    return float(r.json()["outputs"][0]["score"])


def cs_labels(kind: str, port: int, texts: list[str]) -> list[str]:
    """The top banking77 intent each server answers for ``texts`` (one request per message)."""
    import httpx

    out = []
    for text in texts:
        if kind == "paddlenlp":
            r = httpx.post(f"http://127.0.0.1:{port}/taskflow/customer_service",
                           json={"data": {"text": text}, "parameters": {}}, timeout=60)
            r.raise_for_status()
            result = r.json()["result"]
            first = result[0] if isinstance(result, list) else result
            out.append(str(first["predictions"][0]["label"]))
        else:
            r = httpx.post(f"http://127.0.0.1:{port}/v1/tasks/customer_service", json={"inputs": [{"text": text}]},
                           headers={"Authorization": f"Bearer {SECRET}"}, timeout=60)
            r.raise_for_status()
            out.append(str(r.json()["outputs"][0]["top_k"][0]["label"]))
    return out


def export_meanpool(work: Path) -> Path:
    """PaddleNLP's Taskflow folders of the installed customer-service bundle (export_paddlenlp.py)."""
    script = ROOT / "plugins" / "customer_service" / "scripts" / "export_paddlenlp.py"
    subprocess.run([sys.executable, str(script), "--out", str(work / "export")], check=True,
                   stdout=subprocess.DEVNULL)
    return work / "export" / "meanpool"


def try_unpatched(work: Path, model_dir: Path, tokenizer: Path) -> str | None:
    """Start SimpleServing unpatched on ``model_dir``; return its error (``None`` if it served)."""
    try:
        proc, _port, _ = start("paddlenlp", work, model_dir, tokenizer, patch=False)
    except RuntimeError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "error" in line]
        return (errors[-1] if errors else lines[-1]).strip()
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--max-requests", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=1, help="Run the sweep N times; print median and range.")
    parser.add_argument("--onednn", default="on,off",
                        help="oneDNN settings to measure, each on both servers: on, off or on,off (default).")
    parser.add_argument("--task", choices=("aml", "customer_service"), default="aml",
                        help="aml: the AML risk scorer's model alone; customer_service: the installed plugin's task "
                             "as users call it against PaddleNLP's Taskflow of the same MiniLM network.")
    parser.add_argument("--serve-sectorflow", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bundle", type=Path, default=BUNDLE, help=argparse.SUPPRESS)
    parser.add_argument("--batching", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-paddlenlp", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--patch-int8-check", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--taskflow-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = [v.strip() for v in args.onednn.split(",") if v.strip()]
    if not settings or set(settings) - {"on", "off"}:
        parser.error(f"--onednn {args.onednn}: give on, off or on,off")
    if args.serve_sectorflow:
        serve_sectorflow(args.serve_sectorflow, args.batching, args.bundle, args.task)
        return
    if args.serve_paddlenlp:
        port, model_dir, tokenizer = args.serve_paddlenlp
        serve_paddlenlp(int(port), Path(model_dir), Path(tokenizer), args.patch_int8_check, settings[0] == "on",
                        args.taskflow_dir)
        return
    from sectorflow_aml.features import N_FEATURES

    if len(ROW) != N_FEATURES:
        raise SystemExit(f"ROW has {len(ROW)} values but the AML scorer takes {N_FEATURES} features "
                         f"(sectorflow_aml.features.FEATURE_NAMES): update ROW to a row of the current bundle")
    if not SIDE_PYTHON.exists():
        raise SystemExit(f"{SIDE_PYTHON} is missing: run `bash benchmarks/paddlenlp_env.sh` first.")
    sys.path.insert(0, str(HERE))
    from serve_load import _cpu_seconds, cs_messages, load, summarise

    probe = "import paddle, paddlenlp; print(paddle.__version__, paddlenlp.__version__)"
    versions = subprocess.run([str(SIDE_PYTHON), "-c", probe], capture_output=True, text=True,
                              check=True).stdout.split()
    model = (f"AML risk scorer (MLP {N_FEATURES}-64-32-1, fp32, one predictor thread)" if args.task == "aml" else
             "customer service: Taskflow('customer_service') defaults against PaddleNLP Taskflow text_classification "
             "of the same MiniLM-L6 (meanpool export), one predictor thread each, varied banking77 messages")
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before "
          f"start; Python {platform.python_version()}; model: {model}; 1 item per request; oneDNN settings "
          f"{', '.join(settings)} (each on both servers); SimpleServing: paddle {versions[0]}, paddlenlp "
          f"{versions[1]}", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tokenizer = tokenizer_dir(work)
        model_dir = model_only_dir(work)
        if args.task == "aml":
            for name, folder in (("the bundle folder", BUNDLE), ("the program and weights alone", model_dir)):
                error = try_unpatched(work, folder, tokenizer)
                print(f"SimpleServing (unpatched) on {name}: {'served' if error is None else 'fails: ' + error}",
                      flush=True)
        else:
            export_meanpool(work)
        for setting in settings:
            onednn = setting == "on"
            servers = {kind: start(kind, work, model_dir, tokenizer, onednn=onednn, task=args.task)
                       for kind in ("paddlenlp", "off", "on")}
            try:
                if args.task == "aml":
                    scores = {kind: check_answers(kind, port) for kind, (_, port, _) in servers.items()}
                    print(f"oneDNN {setting}: score of the same row: {scores}", flush=True)
                    if max(scores.values()) - min(scores.values()) > 1e-5:
                        raise SystemExit("the servers disagree on the same row: not the same model")
                else:
                    sample = cs_messages()[:64]
                    theirs = cs_labels("paddlenlp", servers["paddlenlp"][1], sample)
                    ours = cs_labels("off", servers["off"][1], sample)
                    agree = sum(a == b for a, b in zip(theirs, ours)) / len(sample)
                    print(f"oneDNN {setting}: top intents agree on {100 * agree:.1f}% of {len(sample)} messages "
                          f"(sectorflow's default path also runs the second encoder where MiniLM is unsure)",
                          flush=True)
                for repeat in range(args.repeat):
                    for clients in args.clients:
                        for kind, (proc, port, _) in servers.items():
                            cpu = _cpu_seconds(proc.pid)
                            client = time.process_time()
                            row = asyncio.run(load(port, request_bytes(kind, port, args.task), clients, args.seconds,
                                                   args.max_requests, args.warmup))
                            answered = row["answered"] or 1
                            name = {"paddlenlp": "SimpleServing", "off": "sf-off", "on": "sf-on"}[kind]
                            row.update(batching=f"{name} oneDNN {setting}", protocol="rest", run=repeat + 1,
                                       onednn=setting,
                                       server_cpu_ms=(_cpu_seconds(proc.pid) - cpu) / answered * 1000,
                                       client_cpu_ms=(time.process_time() - client) / answered * 1000)
                            rows.append(row)
                            print(f"{row['batching']:>24}  clients {clients:>3}  {row['rps']:8.1f} req/s  p50 "
                                  f"{row['p50_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  CPU/request server "
                                  f"{row['server_cpu_ms']:.2f} ms  ({row['requests']} requests, {row['errors']} "
                                  f"errors{'; cap bound' if row['capped'] else ''})", flush=True)
                        by = {r["batching"].split()[0]: r for r in rows[-3:]}
                        print(f"oneDNN {setting}, clients {clients:>3}: sectorflow/SimpleServing throughput, "
                              f"batching off {by['sf-off']['rps'] / by['SimpleServing']['rps']:.2f}x, on "
                              f"{by['sf-on']['rps'] / by['SimpleServing']['rps']:.2f}x", flush=True)
            finally:
                for proc, _, _ in servers.values():
                    proc.send_signal(signal.SIGINT)
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
        if args.repeat > 1:
            summarise(rows)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
