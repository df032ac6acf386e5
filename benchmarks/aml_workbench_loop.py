"""The workbench's learning loop, end to end: run, review, retrain, and the next period's precision at the budget.

On one AMLGentex development set (default ``../shared/data/amlgentex_dev/dev_s303``, never trained on by the shipped
bundle):

1. **run** (before): ``Taskflow("aml", account_model=False)``: a bank with the typology rules only, whose cases are
   ranked by the rules' evidence (docs/aml.md: the account model is what it has not trained yet);
2. **review**: the top ``--review`` cases of period ``--label-period`` (by rank) are decided from the known truth
   (``accounts.csv.gz``: ``IS_SAR`` 1 -> closed as a true positive, 0 -> closed as a false positive), through the
   workbench's :class:`~sectorflow_aml.workbench.decisions.DecisionBook` on a fresh SQLite state store, then
   exported with ``sectorflow aml dispositions export`` (the labels file);
3. **retrain**: ``sectorflow aml train`` on the transactions up to the end of that period with ``--labels`` the
   exported file (the account model learns from the analysts' decisions only);
4. **run** (after): ``Taskflow("aml", task_path=the new bundle)`` over the same file;
5. **measure**: precision at the budget (the cases within the alert budget, 1 % of active accounts by default) of
   period ``--eval-period`` before and after, against ``IS_SAR``; also among accounts not reviewed in step 2.

Usage::

    .venv/bin/python benchmarks/aml_workbench_loop.py [--data DIR] [--label-period 2023-02] [--eval-period 2023-03]
        [--review 200] [--keep DIR] [--json out.json]

Prints the machine line first, then each step's wall time and the figures.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def machine() -> str:
    load = os.getloadavg()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"machine: {cpu}, {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"


def truth(data: Path) -> dict[str, int]:
    with gzip.open(data / "accounts.csv.gz", "rt", newline="") as handle:
        return {row["ACCOUNT_ID"]: int(row["IS_SAR"].strip().lower() in ("1", "true")) for row in csv.DictReader(handle)}


def run(data: Path, out: Path, **options) -> float:
    """Score the whole file with ``Taskflow("aml", **options)``; results as JSON lines to ``out``; wall seconds."""
    from sectorflow import Taskflow
    from sectorflow_aml.loaders import load_transactions

    t = time.perf_counter()
    txns, _ = load_transactions(data / "transactions.csv.gz", format="amlgentex")
    flow = Taskflow("aml", **options)
    with out.open("w", encoding="utf-8") as handle:
        for i in range(0, len(txns), 8192):
            for r in flow(txns[i:i + 8192]):
                handle.write(r.model_dump_json() + "\n")
    return time.perf_counter() - t


def precision_at_budget(results: Path, period: str, labels: dict[str, int], skip: set[str] = frozenset()
                        ) -> tuple[float, int, int]:
    """(precision, laundering, cases) of the period's cases within the budget (accounts in ``skip`` left out)."""
    from sectorflow_aml.cases import read_cases

    cases = [c for c in read_cases(results, period=period) if c.account not in skip]
    hits = sum(labels.get(c.account, 0) for c in cases)
    return (hits / len(cases) if cases else float("nan")), hits, len(cases)


def cut(data: Path, out: Path, before: date) -> int:
    """The rows of the day before ``before`` and earlier (AMLGentex ``step`` = days from 2023-01-01)."""
    last = (before - date(2023, 1, 1)).days
    n = 0
    with gzip.open(data / "transactions.csv.gz", "rt", newline="") as src, gzip.open(out, "wt", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames, lineterminator="\n")
        writer.writeheader()
        for row in reader:
            if int(row["step"]) < last:
                writer.writerow(row)
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "amlgentex_dev" / "dev_s303")
    ap.add_argument("--label-period", default="2023-02")
    ap.add_argument("--eval-period", default="2023-03")
    ap.add_argument("--review", type=int, default=200, help="Cases of the label period the analysts decide.")
    ap.add_argument("--keep", type=Path, help="Keep the work folder here (results, labels, bundle).")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(machine())
    from sectorflow import open_state_store
    from sectorflow_aml.cases import read_cases
    from sectorflow_aml.workbench.decisions import DecisionBook

    work = args.keep or Path(tempfile.mkdtemp(prefix="sf-wb-loop-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SECTORFLOW_HOME": str(work / "home")}
    os.environ["SECTORFLOW_HOME"] = env["SECTORFLOW_HOME"]
    labels = truth(args.data)
    out: dict[str, object] = {"data": str(args.data), "label_period": args.label_period,
                              "eval_period": args.eval_period, "review": args.review}
    try:
        before = work / "before.jsonl"
        if args.keep is not None and before.is_file():
            print(f"1. run, rules only: {before} kept from an earlier run")
        else:
            print(f"1. run, rules only: {run(args.data, before, account_model=False):.0f} s")
        reviewed = sorted(read_cases(before, period=args.label_period, everything=True), key=lambda c: c.rank)
        reviewed = reviewed[:args.review]
        (work / "state.sqlite").unlink(missing_ok=True)
        store = open_state_store(work / "state.sqlite")
        book = DecisionBook(store, "bank")
        for c in reviewed:
            sar = labels.get(c.account, 0)
            book.decide(c.case_id, c.account, c.period, "close_true_positive" if sar else "close_false_positive",
                        "analyst", "known truth (IS_SAR)")
        store.close()
        n_pos = sum(labels.get(c.account, 0) for c in reviewed)
        print(f"2. review: {len(reviewed)} cases of {args.label_period} decided ({n_pos} true positives)")
        dispositions = work / "dispositions.csv"
        subprocess.run([str(BIN / "sectorflow"), "aml", "dispositions", "export", "--out", str(dispositions),
                        "--tenant", "bank", "--state", str(work / "state.sqlite")], check=True, env=env)
        year, month = (int(x) for x in args.label_period.split("-"))
        end = date(year + month // 12, month % 12 + 1, 1)
        history = work / "history.csv.gz"
        rows = cut(args.data, history, end)
        t = time.perf_counter()
        subprocess.run([str(BIN / "sectorflow"), "aml", "train", str(history), "--labels", str(dispositions),
                        "--format", "amlgentex", "--on-error", "skip", "--out", str(work / "bundle")],
                       check=True, env=env)  # the file's transfers of amount 0: left out, as the run skips them
        print(f"3. retrain on {rows:,} transactions before {end} with the exported labels: "
              f"{time.perf_counter() - t:.0f} s")
        after = work / "after.jsonl"
        print(f"4. run with the retrained bundle: {run(args.data, after, task_path=str(work / 'bundle')):.0f} s")
        seen = {c.account for c in reviewed}
        for name, path in (("before (rules only)", before), ("after (retrained on the decisions)", after)):
            p, hits, n = precision_at_budget(path, args.eval_period, labels)
            p2, hits2, n2 = precision_at_budget(path, args.eval_period, labels, skip=seen)
            print(f"5. {args.eval_period} {name}: precision at the budget {p:.3f} ({hits} of {n} cases); "
                  f"accounts not reviewed: {p2:.3f} ({hits2} of {n2})")
            out[name.split()[0]] = {"precision": p, "laundering": hits, "cases": n, "unreviewed_precision": p2,
                                    "unreviewed_laundering": hits2, "unreviewed_cases": n2}
        if args.json:
            args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
