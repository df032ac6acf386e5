"""Federated training across the three banks of AMLGentex dev3b_s404, each on its own view (issue 24).

Every model is the account MLP of ``sectorflow aml train --model mlp`` (same rows, split and training code), so (a)
to (e) compare like with like:

(a) centralised: one model trained on all transactions and all training labels;
(b) each bank alone: trained on its own view only (the transactions touching its accounts, its own labels);
(c) FedAvg across the three banks (Flower simulation, ``sectorflow.federated.simulate``);
(d) FedAvg with SecAgg+;
(e) FedAvg with SecAgg+ and local DP at the setting docs/federated.md documents (``--dp-epsilon``).

Test accounts: a fixed, seeded, stratified 20 % of each bank's accounts (``--test-seed``), unlabelled in the training
labels of every model (neither trained nor validated on).

``--few-labels N`` (the few-label setting, an extra row set; the default rows are unchanged): each bank has
investigated only a sample of its training accounts, a seeded stratified share holding ``N`` of its laundering
accounts and the same share of its legitimate ones (``--label-seed``); its other accounts are unlabelled (neither
trained nor validated on). The test accounts and their scoring are those of the default rows.

Each model is evaluated **per bank** on that bank's test accounts, scored on the bank's own view (what the bank
would serve), as account-level average precision (an account's score: the max of its rows' scores). Printed: per-bank AP, the mean over banks, the targets, seconds per
round of (c) and (d) and their ratio. The federated rows score the last round's global model (the rows' definition);
``kept`` beside them is the model ``sectorflow federate`` keeps (``keep = "best"``: the round with the best
validation AP), from the same run.

Usage: ``.venv/bin/python benchmarks/federated_banks.py [--rounds 20] [--local-epochs 2] [--dp-epsilon 10000]
[--few-labels 25] [--json out.json]``; the replayed views are cached under ``--cache``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "amlgentex_dev" / "dev3b_s404"
BANKS = ("bank_a", "bank_b", "bank_c")


def read_accounts(path: Path) -> list[tuple[str, int, str]]:
    with gzip.open(path, "rt", newline="") as handle:
        return [(r["ACCOUNT_ID"], int(r["IS_SAR"] in ("1", "True", "true")), r["BANK_ID"])
                for r in csv.DictReader(handle)]


def test_split(accounts: list[tuple[str, int, str]], seed: int, share: float = 0.2) -> set[str]:
    """A seeded stratified ``share`` of each bank's accounts (by bank and label)."""
    rng = np.random.default_rng(seed)
    out: set[str] = set()
    for bank in BANKS:
        for label in (0, 1):
            ids = sorted(a for a, y, b in accounts if b == bank and y == label)
            rng.shuffle(ids)
            out.update(ids[:int(round(share * len(ids)))])
    return out


def few_labels(accounts: list[tuple[str, int, str]], test: set[str], positives: int,
               seed: int) -> set[str]:
    """The training accounts each bank labelled in the few-label setting: per bank, a seeded share of its training
    accounts holding ``positives`` laundering accounts and the same share of its legitimate ones."""
    rng = np.random.default_rng(seed)
    out: set[str] = set()
    for bank in BANKS:
        pos = sorted(a for a, y, b in accounts if b == bank and y == 1 and a not in test)
        neg = sorted(a for a, y, b in accounts if b == bank and y == 0 and a not in test)
        share = min(1.0, positives / max(len(pos), 1))
        rng.shuffle(pos)
        rng.shuffle(neg)
        out.update(pos[:positives])
        out.update(neg[:int(round(share * len(neg)))])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--local-epochs", type=int, default=2)
    ap.add_argument("--dp-epsilon", type=float, default=10000.0, help="local DP epsilon per round of (e)")
    ap.add_argument("--dp-clip", type=float, default=1.0, help="local DP clipping norm of (e)")
    ap.add_argument("--dp-without-secagg", action="store_true", help="run (e) without SecAgg+ (to isolate DP)")
    ap.add_argument("--test-seed", type=int, default=24)
    ap.add_argument("--few-labels", type=int, default=0,
                    help="few-label setting: each bank labels N laundering accounts and the same share of its others")
    ap.add_argument("--label-seed", type=int, default=7, help="seed of the few-label sample")
    ap.add_argument("--seed", type=int, default=20211)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sectorflow" / "federated-banks")
    ap.add_argument("--skip", default="", help="comma list of a,b,c,d,e to skip")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from sectorflow.federated import parse_config, simulate
    from sectorflow_aml.account_federated import global_margin, load_view
    from sectorflow_aml.account_mlp import train_mlp
    from sectorflow_aml.account_training import account_max
    from sectorflow_aml.labels import read_labels
    from sectorflow_aml.metrics import average_precision

    import logging

    import paddle  # noqa: F401 - imported here so that its root-logger INFO level (stack-facts.md) can be undone

    logging.getLogger().setLevel(logging.WARNING)

    accounts = read_accounts(args.data / "accounts.csv.gz")
    test = test_split(accounts, args.test_seed)
    bank_of = {a: b for a, _, b in accounts}
    label = {a: y for a, y, _ in accounts}
    work = Path(tempfile.mkdtemp(prefix="federated-banks-"))
    train_labels = work / "labels_train.csv"
    labelled = few_labels(accounts, test, args.few_labels, args.label_seed) if args.few_labels else None
    with train_labels.open("w") as f:
        f.write("account_id,label\n")
        f.writelines(f"{a},{y}\n" for a, y, _ in accounts if a not in test and (labelled is None or a in labelled))
    if labelled is not None:
        print("few-label setting: per bank " + ", ".join(
            f"{b} {sum(1 for a, y, x in accounts if x == b and y and a in labelled)} laundering / "
            f"{sum(1 for a, y, x in accounts if x == b and a in labelled)} labelled accounts" for b in BANKS),
            flush=True)
    bank_file = work / "bank_accounts.csv"
    with bank_file.open("w") as f:
        f.write("ACCOUNT_ID,BANK_ID\n")
        f.writelines(f"{a},{b}\n" for a, _, b in accounts)
    tx = args.data / "transactions.csv.gz"

    def partition(bank: str | None) -> dict:
        p = {"transactions": str(tx), "format": "amlgentex", "labels": str(train_labels), "cache_dir": str(args.cache),
             "seed": args.seed}
        if bank:
            p.update(bank=bank, bank_accounts=str(bank_file))
        return p

    t0 = time.perf_counter()
    views = {b: load_view(partition(b)) for b in BANKS}
    print(f"bank views replayed/loaded in {time.perf_counter() - t0:.1f} s: " + ", ".join(
        f"{b} {v[0].n_transactions:,} transactions, {len(v[0].accounts):,} accounts" for b, v in views.items()),
        flush=True)

    def per_bank(margin) -> dict[str, float]:
        out = {}
        for b, (rep, _) in views.items():
            s = account_max(margin(rep.x), rep.account, len(rep.accounts))
            index = {a: i for i, a in enumerate(rep.accounts)}
            ids = sorted(a for a in test if bank_of[a] == b)
            scores = np.asarray([s[index[a]] if a in index else -np.inf for a in ids])
            scores[~np.isfinite(scores)] = -1e9
            out[b] = round(average_precision(scores, np.asarray([label[a] for a in ids])), 4)
        return out

    results: dict[str, dict] = {}
    skip = set(args.skip.split(","))

    def show(key: str, name: str, aps: dict[str, float], **extra) -> None:
        mean = round(float(np.mean(list(aps.values()))), 4)
        results[key] = {"name": name, "per_bank": aps, "mean": mean, **extra}
        print(f"({key}) {name}: " + ", ".join(f"{b} {v:.4f}" for b, v in aps.items()) + f"; mean {mean:.4f}"
              + "".join(f"; {k} {v}" for k, v in extra.items() if not isinstance(v, (list, dict))), flush=True)

    if "a" not in skip:
        t = time.perf_counter()
        rep, lab = load_view(partition(None))
        model = train_mlp([rep], [read_labels(train_labels)], seed=args.seed)
        show("a", "centralised (all data)", per_bank(model.margin()), seconds=round(time.perf_counter() - t, 1),
             epochs=model.metrics["epochs"])
    if "b" not in skip:
        aps = {}
        for b, (rep, lab) in views.items():
            model = train_mlp([rep], [lab], seed=args.seed)
            aps[b] = per_bank(model.margin())[b]
        show("b", "each bank alone (own test accounts)", aps)

    def federate(key: str, name: str, secagg: bool, dp: dict | None) -> None:
        cfg = parse_config({
            "task": "aml", "model": "account_mlp", "rounds": args.rounds, "local_epochs": args.local_epochs,
            "seed": args.seed, "batch_size": 1024,
            "strategy": {"min_fit_clients": 3, "min_evaluate_clients": 3, "min_available_clients": 3},
            "secagg": {"enabled": secagg, "num_shares": 3, "reconstruction_threshold": 2, "max_weight": 1e6},
            "dp": dp or {"mode": "off"}, "institutions": [partition(b) for b in BANKS]})
        for attempt in range(3):  # Ray's node start has a fixed 30 s timeout on a loaded machine
            try:
                t = time.perf_counter()
                report = simulate(cfg)
                break
            except RuntimeError as exc:
                if "timed out" not in str(exc) or attempt == 2:
                    raise
        wall = time.perf_counter() - t
        margin = global_margin(report.weights)
        per_round = [round(float(r.eval_metrics.get("average_precision", float("nan"))), 4) for r in report.rounds]
        secs = [r.seconds for r in report.rounds]
        kept = per_bank(global_margin(report.kept_weights()))
        show(key, name, per_bank(margin), wall_s=round(wall, 1), round_s=round(float(np.mean(secs)), 2),
             round_s_after_first=round(float(np.mean(secs[1:])), 2) if len(secs) > 1 else None,
             validation_ap_per_round=per_round, privacy=report.privacy, kept_round=report.selection["round"],
             kept_per_bank=kept, kept_mean=round(float(np.mean(list(kept.values()))), 4))
        print(f"    validation AP per round: {per_round}", flush=True)
        print(f"    kept (round {report.selection['round']}, best validation AP): " + ", ".join(
            f"{b} {v:.4f}" for b, v in kept.items()) + f"; mean {results[key]['kept_mean']:.4f}", flush=True)

    if "c" not in skip:
        federate("c", f"FedAvg, {args.rounds} rounds x {args.local_epochs} local epochs", False, None)
    if "d" not in skip:
        federate("d", "FedAvg + SecAgg+", True, None)
    if "e" not in skip:
        federate("e", f"FedAvg{'' if args.dp_without_secagg else ' + SecAgg+'} + local DP (epsilon "
                      f"{args.dp_epsilon:g}/round, clip {args.dp_clip:g})", not args.dp_without_secagg,
                 {"mode": "local", "epsilon": args.dp_epsilon, "clipping_norm": args.dp_clip, "delta": 1e-5})

    r = results
    print("targets:")
    if "a" in r and "c" in r:
        print(f"  (c) within 0.03 AP of (a): {r['a']['mean'] - r['c']['mean']:+.4f} "
              f"-> {'met' if r['a']['mean'] - r['c']['mean'] <= 0.03 else 'NOT met'}")
    if "b" in r and "c" in r:
        print(f"  (c) >= mean (b) + 0.10: {r['c']['mean'] - r['b']['mean']:+.4f} "
              f"-> {'met' if r['c']['mean'] - r['b']['mean'] >= 0.10 else 'NOT met'}")
    if "c" in r and "d" in r:
        print(f"  (d) = (c) within noise: {r['d']['mean'] - r['c']['mean']:+.4f}")
        ratio = r["d"]["round_s_after_first"] / r["c"]["round_s_after_first"]
        print(f"  SecAgg+ / plain seconds per round (rounds 2..): {r['d']['round_s_after_first']} / "
              f"{r['c']['round_s_after_first']} = {ratio:.2f}x -> {'met' if ratio <= 2 else 'NOT met'} (<= 2x)")
    if "d" in r and "e" in r:
        print(f"  DP cost (d) - (e): {r['d']['mean'] - r['e']['mean']:+.4f} AP")
    if "a" in r and "b" in r and "c" in r:
        bank_gain = {b: round(r["c"]["per_bank"][b] - r["b"]["per_bank"][b], 4) for b in BANKS}
        print(f"  (c) - (b) per bank: {bank_gain}; kept model (c) - mean (b): "
              f"{r['c']['kept_mean'] - r['b']['mean']:+.4f}")
    setting = f"few labels, {args.few_labels} laundering accounts per bank" if args.few_labels else "all labels"
    print(f"setting: {setting}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
