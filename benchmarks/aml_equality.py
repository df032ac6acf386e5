"""Are the AML results of the working tree the same as those of the plugin at an earlier git revision?

A speed change to the AML plugin (window, rules, features, report engine, result assembly) must not change any
output. This script runs ``Taskflow("aml", num_threads=1)`` of the plugin at ``--rev`` (its ``plugins/aml/src``
extracted with ``git archive``; same core, venv and data) and of the working tree, each in a fresh process, on the
first ``--n`` transactions of each AMLSim run in ``../shared/data/amlsim_sample``:

- once as one batch call, and
- once in calls of ``--chunk`` transactions on a fresh Taskflow (the streaming path: state kept across calls),

(and, with ``--scenarios``, on the synthetic busy-account inputs of ``benchmarks/aml_busy_accounts.py`` at
``--scenario-n`` transactions) and compares every result as ``model_dump_json(exclude={"meta"})`` (risk and model scores, alerts with their ids,
reasons in both languages, report drafts with their totals and due dates). It prints one line per run and mode with
the sha256 of all results, ``equal`` or the first transaction whose result differs (both JSON texts), and exits 1 if
any differ. ``--option KEY=JSON`` passes Taskflow options to both sides (e.g. ``--option jurisdiction='"US"'``).

Usage::

    .venv/bin/python benchmarks/aml_equality.py --rev HEAD [--runs 20K_cycle200,...] [--n 60000] [--chunk 1000]
        [--option jurisdiction='"US"'] [--scenarios settlement2,shop --scenario-n 4000]

Prints the machine line first; needs ``../shared/data/amlsim_sample`` (or ``--data``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("SECTORFLOW_AUDIT", "off")

from aml_throughput import DATA, extract_plugin, positive_int  # noqa: E402


def worker(source: Path, n: int, chunk: int, options: dict, out_dir: Path) -> None:
    """Write the results of one batch call and of ``chunk``-sized calls as JSON lines into ``out_dir``; ``source``
    is an AMLSim file or ``scenario:NAME`` (a busy-account scenario of ``n`` transactions)."""
    import itertools

    from sectorflow import Taskflow
    from sectorflow_aml.loaders import READERS

    if str(source).startswith("scenario:"):
        from aml_busy_accounts import SCENARIOS

        txns = SCENARIOS[str(source).split(":", 1)[1]](n)
    else:
        txns = [t for _, t in itertools.islice(READERS["amlsim"](source), n)]
    for mode in ("batch", "chunked"):
        tf = Taskflow("aml", num_threads=1, **options)
        if mode == "batch":
            results = tf(txns)
        else:
            results = [r for i in range(0, len(txns), chunk) for r in tf(txns[i:i + chunk])]
        with open(out_dir / f"{mode}.jsonl", "w", encoding="utf-8") as fh:
            for r in results:
                fh.write(r.model_dump_json(exclude={"meta"}) + "\n")


def run_side(src: Path | None, source: Path, n: int, chunk: int, options: dict, out_dir: Path) -> None:
    """One side in a fresh process, importing the plugin from ``src`` (``None``: the installed working tree)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    out_dir.mkdir()
    subprocess.run([sys.executable, __file__, "--worker", str(source), str(out_dir), "--n", str(n), "--chunk",
                    str(chunk), "--options-json", json.dumps(options)], env=env, check=True)


def compare_files(old: Path, new: Path) -> tuple[str, str | None]:
    """(sha256 of ``new``, ``None`` if equal to ``old`` else a description of the first difference)."""
    digest = hashlib.sha256(new.read_bytes()).hexdigest()
    with open(old, encoding="utf-8") as a, open(new, encoding="utf-8") as b:
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return digest, f"result {i} differs:\n  old {x.strip()[:1500]}\n  new {y.strip()[:1500]}"
    if old.stat().st_size != new.stat().st_size:
        return digest, "different numbers of results"
    return digest, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD", help="git revision of the reference plugin (default HEAD)")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of AMLSim runs")
    parser.add_argument("--runs", default=None, help="comma-separated run folders (default: every run in --data)")
    parser.add_argument("--n", type=positive_int, default=60_000, help="transactions per run (default 60,000)")
    parser.add_argument("--chunk", type=positive_int, default=1_000, help="transactions per call in chunked mode")
    parser.add_argument("--new-src", type=Path, default=None,
                        help="a plugins/aml/src folder to test instead of the working tree (e.g. HEAD plus only your "
                             "files, when others edit the same checkout)")
    parser.add_argument("--scenarios", default="", help="comma-separated busy-account scenarios to compare as well")
    parser.add_argument("--scenario-n", type=positive_int, default=4_000, help="transactions per scenario")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON", help="a Taskflow option")
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--options-json", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.n, args.chunk, json.loads(args.options_json), args.worker[1])
        return 0
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--option {item!r}: give KEY=JSON, e.g. jurisdiction='\"US\"'")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError as exc:
            parser.error(f"--option {item!r}: the value is not JSON ({exc}); quote strings: {key}='\"{value}\"'")
    runs = args.runs.split(",") if args.runs else sorted(p.name for p in args.data.iterdir() if p.is_dir())
    if args.runs == "":
        runs = []
    sources = [args.data / run / "transactions.csv.gz" for run in runs]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        parser.error(f"no AMLSim transactions at {', '.join(missing)}")
    from aml_busy_accounts import SCENARIOS

    for name in filter(None, args.scenarios.split(",")):
        if name not in SCENARIOS:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
        runs.append(name)
        sources.append(Path(f"scenario:{name}"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"plugin at {args.rev} (old) vs {args.new_src or 'working tree'} (new); first {args.n} transactions per "
          f"AMLSim run, {args.scenario_n} per scenario; one batch call and calls of {args.chunk}; options "
          f"{options or '{}'}")
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        old_src = extract_plugin(args.rev, Path(tmp) / "old") / "plugins" / "aml" / "src"
        for run, source in zip(runs, sources):
            sides = {}
            n = args.scenario_n if str(source).startswith("scenario:") else args.n
            for which, src in (("old", old_src), ("new", args.new_src)):
                sides[which] = Path(tmp) / f"{run}-{which}"
                run_side(src, source, n, args.chunk, options, sides[which])
            for mode in ("batch", "chunked"):
                digest, problem = compare_files(sides["old"] / f"{mode}.jsonl", sides["new"] / f"{mode}.jsonl")
                differing += problem is not None
                print(f"{run} {mode}: sha256 {digest[:16]} " + ("equal" if problem is None else f"DIFFERENT: {problem}"))
    print("all equal" if not differing else f"{differing} comparison(s) differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
