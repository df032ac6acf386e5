"""Which model should give ``risk_score``: the account model or the per-transaction scorer? On validation accounts only.

For each set, every transaction goes through ``Taskflow("aml")`` twice: with the default (``model_score`` and
``risk_score`` from the account model, window-exact) and with ``transaction_model=True`` (from the per-transaction
scorer of bundle 2.1.0, which reads account age, lifetime counts and a velocity over the whole past). An account's
score is its highest account-model score (``account_scores``, what a case is ranked by), or the highest
per-transaction ``model_score`` of the transactions it sends or receives (that scorer's account decision,
docs/aml.md); average precision and precision at K (K = laundering accounts) are taken over accounts that
**neither model trained on**:

- AMLGentex ``dev_s101``: the account model's held-out 25 % (``split_accounts(labels, 0.25, 20211 + 0)``, as
  ``plugins/aml/scripts/train_account_model.py``); the per-transaction scorer never saw AMLGentex.
- AMLSim ``20K_cycle200``: accounts in both held-out sets (the account model's ``20211 + 3``, 25 %; the
  per-transaction scorer's ``account_split(isFraud, 20211 + 0)``, 20 %, as ``plugins/aml/scripts/train_scorer.py``).

dev_s303 (the issue's test set) is not read. Usage: ``.venv/bin/python benchmarks/aml_risk_source.py [--sets
dev_s101 20K_cycle200]`` (about 1 minute of CPU per set and model on one thread).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from sectorflow import Taskflow  # noqa: E402
from sectorflow_aml.account_training import labels_of, replay, split_accounts  # noqa: E402
from sectorflow_aml.labels import read_labels  # noqa: E402
from sectorflow_aml.loaders import load_transactions  # noqa: E402
from sectorflow_aml.metrics import average_precision, precision_at_k  # noqa: E402
from sectorflow_aml.training import account_split  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEED = 20211
SETS = {"dev_s101": ("amlgentex_dev/dev_s101", "amlgentex", "accounts.csv.gz", 0, None),
        "20K_cycle200": ("amlsim_sample/20K_cycle200", "amlsim", "nodes.csv.gz", 3, 0)}
"""name -> (folder, format, labels file, index in the account model's training sets, index in the per-transaction
scorer's training runs or None)."""


def account_scores(txns: list, **options: object) -> dict[str, float]:
    """Highest score per account: of the account model, its own ``account_scores`` entries; of the per-transaction
    scorer, the ``model_score`` of the transactions it sends or receives (that model's account decision)."""
    best: dict[str, float] = {}
    per_transaction = bool(options.get("transaction_model"))
    for txn, r in zip(txns, Taskflow("aml", batch_size=1024, num_threads=1, **options)(txns)):
        if per_transaction:
            if r.model_score is None:
                continue
            pairs = [(txn.sender_account, r.model_score), (txn.receiver_account, r.model_score)]
        else:
            pairs = list(r.account_scores.items())
        for account, score in pairs:
            if score > best.get(account, -1.0):
                best[account] = score
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; accounts neither model trained on")
    for name in args.sets:
        folder, fmt, labels_file, i_account, i_transaction = SETS[name]
        start = time.process_time()
        txns, _ = load_transactions(DATA / folder / "transactions.csv.gz", format=fmt)  # amount-0 rows skipped
        labels = read_labels(DATA / folder / labels_file)
        rep = replay(txns)
        y = labels_of(rep, labels)
        held = split_accounts(y, 0.25, SEED + i_account)
        if i_transaction is not None:  # AMLSim ids are node numbers: the per-transaction scorer's split by number
            numbers = np.asarray([int(a) for a in rep.accounts])
            fraud = np.zeros(numbers.max() + 1, dtype=np.int64)
            for a, label in labels.label.items():
                fraud[int(a)] = label
            held &= account_split(fraud, SEED + i_transaction)[numbers]
        accounts = [a for a, h in zip(rep.accounts, held) if h]
        truth = np.asarray([labels.label[a] for a in accounts])
        line = [f"{name}: {len(accounts)} accounts, {int(truth.sum())} laundering"]
        for label, options in (("account model (default)", {}), ("per-transaction scorer", {"transaction_model": True})):
            best = account_scores(txns, **options)
            s = np.asarray([best.get(a, 0.0) for a in accounts])
            line.append(f"{label}: AP {average_precision(s, truth):.3f}, precision at K "
                        f"{precision_at_k(s, truth, int(truth.sum())):.3f}")
        print("; ".join(line) + f" ({time.process_time() - start:.0f} s CPU)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
