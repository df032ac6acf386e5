"""What AMLSim's account-level F1 of about 0.80 is made of, and an upper bound no window-exact model can pass
(docs/benchmarks/aml.md, "AMLSim: the 0.80 ceiling").

    .venv/bin/python benchmarks/aml_amlsim_ceiling.py [--json OUT] [--max-rows N]

1. Per run: the laundering accounts (``isFraud``) that take part in at least one planted transfer (AMLSim plants its
   patterns as transfers under 100; no normal account ever sends or receives one) and those that take part in none,
   with their ``fraudStep`` and activity against normal accounts.
2. The F1 of flagging exactly the accounts with a planted transfer (what a perfect detector of the planted patterns
   reaches).
3. An **oracle** upper bound: LightGBM on whole-run (not windowed) per-account features that also know, for every
   account, which of its counterparties take part in a planted transfer (the true pattern members; counts, shares,
   two-hop counts) and its counts of planted transfers. Train on two runs, evaluate on the third; the threshold is
   the best F1 on a seeded, stratified 25 % of the training runs' accounts held out (never the test run). It sees
   more than any served model can (the whole 150 days, the true membership of every counterparty), so a
   window-exact model of the same family does not exceed it.

Counts and F1, so machine and load do not matter. Data: ``../shared/data/amlsim_sample`` (IBM AMLSim, Apache-2.0).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "aml" / "src"))

from sectorflow_aml.account_training import split_accounts  # noqa: E402
from sectorflow_aml.metrics import average_precision, best_f1, f1_at  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "amlsim_sample"
RUNS = ("20K_cycle200", "20K_fanin200", "20K_fanin200cycle200")
SMALL = 100.0
SEED = 20211


def read_run(run: str, max_rows: int | None = None):
    """``(label, fraud_step, transactions)``: dicts by node id and ``[(src, dst, value, step)]`` (the first
    ``max_rows`` transactions when given: a smoke run; the figures need whole runs)."""
    label, step = {}, {}
    with gzip.open(DATA / run / "nodes.csv.gz", "rt", newline="") as f:
        for r in csv.DictReader(f):
            label[r["nodeid"]] = int(r["isFraud"].strip() == "1")
            step[r["nodeid"]] = int(r["fraudStep"])
    with gzip.open(DATA / run / "transactions.csv.gz", "rt", newline="") as f:
        txns = [(r["sourceNodeId"], r["targetNodeId"], float(r["value"]), int(r["time"]))
                for i, r in enumerate(csv.DictReader(f)) if max_rows is None or i < max_rows]
    return label, step, txns


FEATURES = ("n_out", "n_in", "deg_out", "deg_in", "reciprocal", "sum_out", "sum_in", "mean_out", "mean_in",
            "std_out", "std_in", "min_out", "min_in", "max_out", "max_in", "first", "last", "active_days",
            "n_planted", "planted_cp_tx", "planted_cp_out", "planted_cp_in", "planted_cp", "planted_cp_share",
            "planted_cp_tx_share", "two_hop_planted", "cp_mean_deg", "cp_max_deg")


def oracle_features(label: dict, txns: list) -> tuple[list[str], np.ndarray, set[str]]:
    """Whole-run features per account (``FEATURES``) and the set of accounts with a planted transfer."""
    planted = {a for s, d, v, _ in txns if v < SMALL for a in (s, d)}
    outs, ins = defaultdict(list), defaultdict(list)
    cp_out, cp_in = defaultdict(set), defaultdict(set)
    days = defaultdict(set)
    for s, d, v, t in txns:
        outs[s].append(v)
        ins[d].append(v)
        cp_out[s].add(d)
        cp_in[d].add(s)
        days[s].add(t)
        days[d].add(t)
    accounts = sorted(label)
    rows = []
    for a in accounts:
        o, i = np.asarray(outs[a] or [0.0]), np.asarray(ins[a] or [0.0])
        cps = cp_out[a] | cp_in[a]
        po = sum(1 for d in cp_out[a] if d in planted)
        pi = sum(1 for s in cp_in[a] if s in planted)
        two = {c2 for c in cps for c2 in (cp_out[c] | cp_in[c]) if c2 != a and c2 in planted}
        degs = [len(cp_out[c] | cp_in[c]) for c in cps] or [0]
        rows.append([len(outs[a]), len(ins[a]), len(cp_out[a]), len(cp_in[a]), len(cp_out[a] & cp_in[a]),
                     o.sum(), i.sum(), o.mean(), i.mean(), o.std(), i.std(), o.min(), i.min(), o.max(), i.max(),
                     min(days[a]) if days[a] else -1, max(days[a]) if days[a] else -1, len(days[a]),
                     sum(1 for v in outs[a] + ins[a] if v < SMALL), 0.0, po, pi,
                     len([c for c in cps if c in planted]), len([c for c in cps if c in planted]) / max(1, len(cps)),
                     0.0, len(two), float(np.mean(degs)), float(max(degs))])
    x = np.asarray(rows, dtype=np.float64)
    # transactions with a planted counterparty (count and share), filled in one pass
    k = {a: j for j, a in enumerate(accounts)}
    ptx = np.zeros(len(accounts))
    for s, d, _, _ in txns:
        if d in planted:
            ptx[k[s]] += 1
        if s in planted:
            ptx[k[d]] += 1
    x[:, FEATURES.index("planted_cp_tx")] = ptx
    n = x[:, 0] + x[:, 1]
    x[:, FEATURES.index("planted_cp_tx_share")] = np.divide(ptx, n, out=np.zeros_like(ptx), where=n > 0)
    return accounts, x, planted


def main() -> int:
    import lightgbm as lgb

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--max-rows", type=int, help="read only the first transactions of each run (smoke run)")
    args = ap.parse_args()
    out: dict = {}
    data = {}
    for run in RUNS:
        label, step, txns = read_run(run, args.max_rows)
        accounts, x, planted = oracle_features(label, txns)
        y = np.asarray([label[a] for a in accounts])
        data[run] = (accounts, x, y, planted)
        pos = {a for a in accounts if label[a]}
        hit, miss = pos & planted, pos - planted
        normal = [a for a in accounts if not label[a]]
        ntx = Counter()
        for s, d, _, _ in txns:
            ntx[s] += 1
            ntx[d] += 1
        flag = np.asarray([a in planted for a in accounts], dtype=float)
        f = f1_at(flag, y, 0.5)
        out[run] = {"accounts": len(accounts), "laundering": len(pos), "with_planted_transfer": len(hit),
                    "without_planted_transfer": len(miss),
                    "without_planted_fraud_step_minus_1": sum(step[a] == -1 for a in miss),
                    "with_planted_fraud_step_minus_1": sum(step[a] == -1 for a in hit),
                    "normal_with_planted_transfer": sum(1 for a in normal if a in planted),
                    "mean_transactions": {"with_planted": round(float(np.mean([ntx[a] for a in hit])), 1),
                                          "without_planted": round(float(np.mean([ntx[a] for a in miss])), 1),
                                          "normal": round(float(np.mean([ntx[a] for a in normal])), 1)},
                    "f1_flag_exactly_planted": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in f.items()}}
        print(f"{run}: {len(pos)} laundering accounts, {len(hit)} with a planted transfer, {len(miss)} without "
              f"(fraudStep -1: {out[run]['without_planted_fraud_step_minus_1']}); normal accounts with one: "
              f"{out[run]['normal_with_planted_transfer']}; mean transactions {out[run]['mean_transactions']}; "
              f"flagging exactly the planted accounts: F1 {f['f1']:.4f} (P {f['precision']:.3f}, R {f['recall']:.3f})",
              flush=True)
    params = {"objective": "binary", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
              "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "verbose": -1, "num_threads": 2,
              "seed": SEED, "deterministic": True}
    out["oracle"] = {}
    for test in RUNS:
        train = [r for r in RUNS if r != test]
        xs, ys, vs = [], [], []
        for i, r in enumerate(train):
            _, x, y, _ = data[r]
            xs.append(x)
            ys.append(y)
            vs.append(split_accounts(y, 0.25, SEED + i))
        x, y, v = np.concatenate(xs), np.concatenate(ys), np.concatenate(vs)
        booster = lgb.train(params, lgb.Dataset(x[~v], y[~v], feature_name=list(FEATURES)), num_boost_round=400)
        best = (-1.0, 0)
        for it in range(25, 401, 25):
            a = average_precision(booster.predict(x[v], num_iteration=it), y[v])
            if a > best[0]:
                best = (a, it)
        sv = booster.predict(x[v], num_iteration=best[1])
        _, thr = best_f1(sv, y[v])
        _, xt, yt, planted = data[test]
        st = booster.predict(xt, num_iteration=best[1])
        f = f1_at(st, yt, thr)
        miss = np.asarray([a not in planted for a in data[test][0]])
        ap_miss = average_precision(st[miss], yt[miss])
        bf, _ = best_f1(st, yt)
        out["oracle"][test] = {"f1_at_validation_threshold": round(f["f1"], 4), "precision": round(f["precision"], 4),
                               "recall": round(f["recall"], 4), "best_f1_on_test": round(bf, 4),
                               "ap": round(average_precision(st, yt), 4),
                               "ap_among_accounts_without_planted_transfer": round(ap_miss, 4),
                               "base_rate_among_them": round(float(yt[miss].mean()), 4), "trees": best[1]}
        print(f"oracle, train {'+'.join(train)} -> test {test}: F1 {f['f1']:.4f} (P {f['precision']:.3f}, R "
              f"{f['recall']:.3f}) at the validation threshold; best F1 on the test run itself {bf:.4f}; AP among "
              f"the accounts without a planted transfer {ap_miss:.4f} (base rate {yt[miss].mean():.4f})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
