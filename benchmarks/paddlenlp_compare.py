"""sectorflow ``Taskflow("customer_service")`` against PaddleNLP's own ``Taskflow`` serving the same model (issue 10).

One run, each side in fresh subprocesses, alternating (the order rotates every repetition), ``--reps`` times:

- **cold start**: from just before the subprocess is started to the first answer (one message), split into the
  imports (interpreter start + ``from sectorflow import Taskflow`` / ``from paddlenlp import Taskflow``), the
  construction of the Taskflow, and the first call. The operating system's file cache is warm (an unrecorded
  warm-up round runs first) and every one-time build is done beforehand (sectorflow's Paddle inference bundle and
  INT8 bundle in ``WORK/sfhome``): what is measured is a service restart, not an install;
- **throughput** in the same process after a warm-up call: ``--texts`` banking77 test messages (shuffled with seed
  0) in one call, batch size ``--batch``, messages per second of wall-clock time, and messages per CPU-second (the
  process's user + system time over the same call, all threads): on a shared machine the wall-clock rate moves with
  the other jobs, the CPU-time rate much less (with ``--threads 1`` it is the single-core rate; with more threads,
  threads that wait busy inflate it).

Sides (``--roles``):

- ``sf-fp32``: ``Taskflow("customer_service", num_threads=T, batch_size=B)``: the whole pipeline as users call it
  (language detection, intent + out-of-scope with both heads, escalation rules, pydantic results; no FAQ file is
  given, so no FAQ search). Its construction also loads the second encoder, multilingual-e5-small: for English
  it scores the messages the MiniLM heads are unsure of (the ensemble of bundle 0.3.0+, run only where MiniLM's
  top banking77 probability is under the bundle's gate, ``calibration.json`` ``ensemble_gate``; before that gate,
  every English message), and it is the Chinese encoder;
- ``sf-int8``: the same with ``precision="int8"`` (ONNX Runtime, the INT8 bundle ``sectorflow models quantize``
  builds, with ``--int8-ops``, default ``MatMul,Gather``);
- ``sf-intent``: the plugin's intent model alone through sectorflow's runtime: the plugin's WordPiece tokenizer,
  length-sorted batches, the ``PredictorPool`` of the bundle's Paddle inference program (oneDNN), argmax of the
  banking77 head. The public ``Taskflow`` has no intent-only switch; this is the work PaddleNLP's
  ``text_classification`` does (tokenize, run, softmax, label);
- ``pnlp-meanpool``: ``paddlenlp.Taskflow("text_classification", task_path=WORK/export/meanpool, mode="finetune",
  device_id=-1, batch_size=B, max_length=L, num_threads=T)`` serving the plugin's exact network (mean pooling +
  banking77 head) as a static program: PaddleNLP's tokenizer, collator, predictor settings and post-processing;
  its predictions must equal ``sf-intent``'s;
- ``pnlp-finetune``: the same Taskflow on PaddleNLP's standard fine-tuned layout (``BertForSequenceClassification``
  with the same encoder weights; CLS pooler, so predictions differ), which Taskflow 3.0.0b4 converts to a static
  program at every construction (its ``.cache_info`` check never matches with Paddle 3's ``.json`` suffix).

Both folders come from ``plugins/customer_service/scripts/export_paddlenlp.py``, run on the installed plugin's
bundle (re-exported when its SHA-256 changes). PaddleNLP runs in ``.venv-paddlenlp``
(``bash benchmarks/paddlenlp_env.sh``) with ``paddlenlp.taskflow.utils.DOWNLOAD_CHECK = True`` (otherwise its
first construction starts a thread that calls a statistics server, which costs up to 1 s offline). Same threads,
batch size and maximum sequence length (64 tokens, the plugin's) on both sides. Run::

    bash benchmarks/paddlenlp_env.sh                                  # once
    nice .venv/bin/python benchmarks/paddlenlp_compare.py --threads 2 --reps 3 --texts 512

It also prints the token positions the messages cost at the batch size, in arrival order and sorted by length
(what padding costs). ``--profile --roles sf-fp32`` prints instead a cProfile of one fresh process's imports and
construction and of one call (where the time goes). Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIDE_PYTHON = ROOT / ".venv-paddlenlp" / "bin" / "python"
EXPORT_SCRIPT = ROOT / "plugins" / "customer_service" / "scripts" / "export_paddlenlp.py"
DATA = ROOT.parent / "shared" / "data" / "banking77"
ROLES = ("sf-fp32", "sf-int8", "sf-intent", "pnlp-meanpool", "pnlp-finetune")
MAX_LEN = 64  # the plugin's PredictorEncoder truncates to 64 tokens; PaddleNLP gets max_length=64
PROBE = "I am still waiting on my card?"


# --- children -------------------------------------------------------------------------------------------------------


def child(role: str, args: argparse.Namespace) -> None:
    """One side in this fresh process: print a JSON line with absolute timestamps, throughput and predictions."""
    texts = json.loads(Path(args.texts_file).read_text(encoding="utf-8"))
    if args.limit:
        texts = texts[:args.limit]
    stamps: dict[str, float] = {}
    prof = _profile(None, "", args.profile)
    if role.startswith("pnlp"):
        import paddlenlp.taskflow.utils as pnlp_utils

        pnlp_utils.DOWNLOAD_CHECK = True
        from paddlenlp import Taskflow as PTaskflow

        stamps["imported"] = time.time()
        folder = Path(args.work) / "export" / role.split("-", 1)[1]
        tf = PTaskflow("text_classification", task_path=str(folder), mode="finetune", device_id=-1,
                       batch_size=args.batch, max_length=MAX_LEN, num_threads=args.threads,
                       home_path=str(Path(args.work) / "ppnlp_home"))
        stamps["constructed"] = time.time()

        def predict(batch: list[str]) -> list[str]:
            return [r["predictions"][0]["label"] for r in tf(batch)]
    elif role == "sf-intent":
        import numpy as np
        from sectorflow import PredictorPool, load_bundle, resolve_device
        from sectorflow.bundle import make_predictor_config
        from sectorflow_customer_service.plugin import BUNDLE_DIR
        from sectorflow_customer_service.runtime import (
            PredictorEncoder,
            heads_of,
            inference_bundle,
            tokenizer_of,
        )

        stamps["imported"] = time.time()
        shipped = load_bundle(BUNDLE_DIR, expected_task="customer_service")
        head = [name for name, _ in heads_of(shipped)].index("banking77")
        labels = shipped.read_json("labels.json")["banking77"]
        config = make_predictor_config(inference_bundle(shipped), resolve_device("cpu"), "fp32", args.threads)
        encoder = PredictorEncoder(PredictorPool(config), tokenizer_of(shipped), shipped.name,
                                   batch_size=args.batch, max_len=MAX_LEN)
        stamps["constructed"] = time.time()

        def predict(batch: list[str]) -> list[str]:
            logits = encoder.run(batch)[1 + head]
            return [labels[int(j)] for j in np.argmax(logits, axis=1)]
    else:
        from sectorflow import Taskflow

        stamps["imported"] = time.time()
        tf = Taskflow("customer_service", num_threads=args.threads, batch_size=args.batch,
                      precision="int8" if role == "sf-int8" else "fp32")
        stamps["constructed"] = time.time()

        def predict(batch: list[str]) -> list[str]:
            # the top banking77 intent (what PaddleNLP answers), not `intent`, which may be out_of_scope
            return [r.top_k[0].label for r in tf([{"text": t} for t in batch])]

    prof = _profile(prof, f"{role}: imports and construction", args.profile)
    first = predict([PROBE])
    stamps["first_answer"] = time.time()
    predict(texts[:64])  # warm-up: shapes of a full batch
    prof = _profile(prof, "", args.profile)
    start, cpu_start = time.perf_counter(), time.process_time()
    labels_out = predict(texts)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    _profile(prof, f"{role}: one call of {len(texts)} messages", False)
    print("RESULT " + json.dumps({"role": role, "stamps": stamps, "probe": first[0], "seconds": seconds,
                                  "cpu_seconds": cpu_seconds,
                                  "n": len(texts), "labels": labels_out}), flush=True)


def _profile(prof: Any, title: str, again: bool) -> Any:
    """``--profile``: print the cumulative-time profile of what ran since ``prof`` started; start a new one."""
    if prof is not None and not title:
        prof.disable()
    elif prof is not None:
        import io
        import pstats

        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
        print(f"=== profile: {title}\n{out.getvalue()}", flush=True)
    if not again:
        return None
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    return prof


def padding(texts: list[str], batch: int) -> tuple[int, int]:
    """Token positions run at ``batch``: batches in arrival order (each padded to its longest message), and
    batches of the messages sorted by length (the plugin's tokenizer, at most ``MAX_LEN`` tokens)."""
    from sectorflow_customer_service.plugin import BUNDLE_DIR
    from sectorflow_customer_service.wordpiece import WordPiece

    ids = WordPiece(BUNDLE_DIR / "vocab.txt").encode_batch(texts, MAX_LEN)
    lengths = [int(n) for n in (ids != 0).sum(axis=1)]
    ordered = sorted(lengths)

    def cost(values: list[int]) -> int:
        return sum(max(values[i:i + batch]) * len(values[i:i + batch]) for i in range(0, len(values), batch))

    return cost(lengths), cost(ordered)


# --- parent ---------------------------------------------------------------------------------------------------------


def _env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SECTORFLOW_HOME=str(Path(args.work) / "sfhome"), PPNLP_HOME=str(Path(args.work) / "ppnlp_home"),
               SECTORFLOW_AUDIT="off", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return env


def _python(role: str) -> str:
    return str(SIDE_PYTHON) if role.startswith("pnlp") else sys.executable


def run_child(role: str, args: argparse.Namespace, texts_file: Path) -> dict[str, Any]:
    cmd = [_python(role), str(Path(__file__).resolve()), "--child", role, "--texts-file", str(texts_file),
           "--threads", str(args.threads), "--batch", str(args.batch), "--work", str(args.work),
           "--limit", str(getattr(args, "limit", 0))]
    t0 = time.time()
    proc = subprocess.run(cmd, env=_env(args), capture_output=True, text=True, timeout=1800, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{role} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    s = out["stamps"]
    out.update(cold_start=s["first_answer"] - t0, imports=s["imported"] - t0,
               construct=s["constructed"] - s["imported"], first_call=s["first_answer"] - s["constructed"],
               throughput=out["n"] / out["seconds"], cpu_throughput=out["n"] / out["cpu_seconds"])
    return out


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Export the PaddleNLP folders (when the plugin's bundle changed) and build sectorflow's cached bundles."""
    from sectorflow import load_bundle
    from sectorflow_customer_service.plugin import BUNDLE_DIR

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    bundle = load_bundle(BUNDLE_DIR, expected_task="customer_service")
    info_file = work / "export" / "export.json"
    current = json.loads(info_file.read_text())["source_bundle"]["sha256"] if info_file.is_file() else None
    if current != bundle.sha256:
        print(f"exporting {bundle.name}@{bundle.version} ({bundle.sha256[:16]}) to {work / 'export'}", flush=True)
        subprocess.run([sys.executable, str(EXPORT_SCRIPT), "--out", str(work / "export")], check=True,
                       env=_env(args), stdout=subprocess.DEVNULL)
    code = ("from sectorflow import load_bundle\n"
            "from sectorflow_customer_service.plugin import BUNDLE_DIR\n"
            "from sectorflow_customer_service.runtime import inference_bundle\n"
            "print(inference_bundle(load_bundle(BUNDLE_DIR)).path)\n")
    built = subprocess.run([sys.executable, "-c", code], env=_env(args), capture_output=True, text=True, check=True)
    inference_dir = built.stdout.strip().splitlines()[-1]
    if "sf-int8" in args.roles:
        code = "from sectorflow import Taskflow\nTaskflow('customer_service', precision='int8')"
        probe = subprocess.run([sys.executable, "-c", code], env=_env(args), capture_output=True, text=True,
                               check=False)
        if probe.returncode != 0:
            print(f"building the INT8 bundle (sectorflow models quantize, --ops {args.int8_ops})", flush=True)
            subprocess.run([str(Path(sys.executable).with_name("sectorflow")), "models", "quantize",
                            "customer_service", "--task-path", inference_dir, "--ops", args.int8_ops,
                            "--num-threads", str(args.threads)], env=_env(args), check=True)
    return {"bundle": f"{bundle.name}@{bundle.version}", "sha256": bundle.sha256, "inference_bundle": inference_dir}


def _texts(n: int) -> tuple[list[str], list[str]]:
    import csv

    path = DATA / "test.csv"
    if not path.is_file():
        raise SystemExit(f"{path} is absent (the shared datasets live beside the repository in ../shared/data)")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = [(r["text"], r["category"]) for r in csv.DictReader(fh)]
    random.Random(0).shuffle(rows)
    rows = rows[:n] if n > 0 else rows
    return [t for t, _ in rows], [c for _, c in rows]


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def agreement_reference(roles: list[str]) -> str | None:
    """The side whose labels the "agrees with" column compares with: ``sf-intent`` (the same network as
    ``pnlp-meanpool``, whose labels must equal it), else ``sf-fp32``, else ``sf-int8``; ``None`` when no sectorflow
    side ran (the column then says so instead of printing ``nan%``)."""
    return next((r for r in ("sf-intent", "sf-fp32", "sf-int8") if r in roles), None)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def _fmt(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of every predictor (both sides)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--texts", type=int, default=1024, help="banking77 test messages per throughput run "
                                                                 "(0 = all 3,080)")
    parser.add_argument("--roles", default=",".join(ROLES), help=f"comma-separated subset of {','.join(ROLES)}")
    parser.add_argument("--int8-ops", default="MatMul,Gather",
                        help="--ops of `sectorflow models quantize` when the INT8 bundle is missing (with MatMul "
                             "alone the 0.1.0 bundle lost 0.80 points and was refused)")
    parser.add_argument("--work", default="/tmp/sectorflow-paddlenlp-compare", help="exports, caches, results")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", choices=ROLES, help=argparse.SUPPRESS)
    parser.add_argument("--texts-file", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="profile (cProfile) the construction and one call of "
                        "each of --roles in one fresh process and print the top functions, instead of the benchmark")
    args = parser.parse_args()
    if args.child:
        child(args.child, args)
        return
    args.roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    unknown = sorted(set(args.roles) - set(ROLES))
    if unknown:
        raise SystemExit(f"unknown roles {unknown}; known: {ROLES}")
    if any(r.startswith("pnlp") for r in args.roles) and not SIDE_PYTHON.is_file():
        raise SystemExit(f"{SIDE_PYTHON} is missing: run `bash benchmarks/paddlenlp_env.sh` first")
    load_before = os.getloadavg()
    setup = prepare(args)
    texts, gold = _texts(args.texts)
    texts_file = Path(args.work) / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    if args.profile:
        for role in args.roles:
            cmd = [_python(role), str(Path(__file__).resolve()), "--child", role, "--texts-file", str(texts_file),
                   "--threads", str(args.threads), "--batch", str(args.batch), "--work", str(args.work), "--profile"]
            proc = subprocess.run(cmd, env=_env(args), capture_output=True, text=True, check=False)
            print("\n".join(ln for ln in proc.stdout.splitlines() if not ln.startswith("RESULT ")))
        return
    print(f"machine: {_machine()}; threads {args.threads}, batch {args.batch}, max length {MAX_LEN} tokens, "
          f"{len(texts)} banking77 test messages; model {setup['bundle']} ({setup['sha256'][:16]})", flush=True)
    in_order, by_length = padding(texts, args.batch)
    print(f"token positions run at batch {args.batch}: {in_order} in arrival order, {by_length} sorted by length "
          f"({in_order / by_length:.2f}x)", flush=True)
    for role in args.roles:  # warm-up round, not recorded (file cache, PaddleNLP's static export folder)
        run_child(role, argparse.Namespace(**{**vars(args), "limit": 64}), texts_file)
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in args.roles}
    loads = []
    for rep in range(args.reps):
        order = args.roles[rep % len(args.roles):] + args.roles[:rep % len(args.roles)]
        for role in order:
            out = run_child(role, args, texts_file)
            loads.append(os.getloadavg()[0])
            runs[role].append(out)
            print(f"rep {rep + 1} {role:14s} cold {out['cold_start']:6.2f} s (imports {out['imports']:5.2f}, "
                  f"construct {out['construct']:5.2f}, first call {out['first_call']:5.2f}); "
                  f"{out['throughput']:7.1f} msg/s, {out['cpu_throughput']:7.1f} per CPU-second", flush=True)
    reference_role = agreement_reference(args.roles)
    reference = runs[reference_role][0]["labels"] if reference_role else None
    summary: dict[str, Any] = {}
    print(f"\nload average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f} (before: {load_before[0]:.1f})")
    print(f"{'side':14s} | cold start s | imports s | construct s | first call s | msg/s at batch {args.batch} | "
          f"per CPU-second | accuracy | agrees with {reference_role or '(no sectorflow side run)'}")
    for role, outs in runs.items():
        labels = outs[0]["labels"]
        acc = sum(a == b for a, b in zip(labels, gold)) / len(gold)
        agree = sum(a == b for a, b in zip(labels, reference)) / len(gold) if reference else None
        summary[role] = {k: [o[k] for o in outs] for k in ("cold_start", "imports", "construct", "first_call",
                                                         "throughput", "cpu_throughput")}
        summary[role].update(accuracy=acc, agreement=agree, agreement_reference=reference_role)
        s = summary[role]
        print(f"{role:14s} | {_fmt(s['cold_start'])} | {_fmt(s['imports'])} | {_fmt(s['construct'])} | "
              f"{_fmt(s['first_call'])} | {_fmt(s['throughput'], 1)} | {_fmt(s['cpu_throughput'], 1)} | "
              f"{100 * acc:.2f}% | {_percent(agree)}")
    print("\nratios of medians (targets: throughput >= 1.5x, cold start <= 0.5x PaddleNLP's):")
    med = {r: {k: statistics.median(v) for k, v in s.items() if isinstance(v, list)} for r, s in summary.items()}
    ratios = {}
    for sf in [r for r in args.roles if r.startswith("sf")]:
        for pn in [r for r in args.roles if r.startswith("pnlp")]:
            thr = med[sf]["throughput"] / med[pn]["throughput"]
            cpu = med[sf]["cpu_throughput"] / med[pn]["cpu_throughput"]
            cold = med[sf]["cold_start"] / med[pn]["cold_start"]
            ratios[f"{sf} / {pn}"] = {"throughput": thr, "cpu_throughput": cpu, "cold_start": cold}
            print(f"  {sf:9s} vs {pn:13s}: throughput {thr:5.2f}x ({'met' if thr >= 1.5 else 'missed'}), "
                  f"per CPU-second {cpu:5.2f}x, cold start {cold:5.2f}x ({'met' if cold <= 0.5 else 'missed'})")
    result = {"machine": _machine(), "threads": args.threads, "batch": args.batch, "max_len": MAX_LEN,
              "texts": len(texts), "reps": args.reps, "setup": setup, "load_average": [min(loads), max(loads)],
              "summary": summary, "ratios": ratios}
    (Path(args.work) / "results.json").write_text(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
