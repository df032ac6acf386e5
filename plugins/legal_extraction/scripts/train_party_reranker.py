"""Train the English party re-ranker (``rules_en/party_candidates.py``) on CUAD's Parties answers.

Usage (from the repository root; CPU, about a minute)::

    .venv/bin/python plugins/legal_extraction/scripts/train_party_reranker.py [--out PATH] [--dry-run]

Data: CUAD v1 (The Atticus Project, CC BY 4.0), read in place from ``../shared/data/cuad``: the 180 train contracts
and the 207 of ``contracts_more/`` train (387); the 58 validation contracts decide whether the re-ranker is used;
the 64 test contracts are never read. For each contract the preamble rules run first; every company name the rules
did not take is a candidate (``party_candidates.candidates``), labelled 1 when it matches a gold name of
``Parties-Answer`` that the rules' parties did not match (``benchmarks/legal_eval.py``'s ``gold_parties`` and
matching), else 0.

Model: scikit-learn's ``LogisticRegression`` (L2, ``C`` = ``--c``). The threshold is chosen on the train pool by
5-fold cross-validation grouped by contract: out-of-fold probabilities, candidates added as the pipeline adds them,
the threshold that maximises the pool's parties F1 (rules + added) among those whose precision stays within
``--max-precision-drop`` (1 point) of the rules' alone (the re-ranker is to add recall, not trade precision away). The final model is fitted on the whole pool.
Then the validation figures (rules alone, rules + re-ranker) are printed and written into the manifest. Writes
``--out``/``weights.json`` (``{"features", "weights", "threshold"}``) and ``manifest.json`` (version, the weights
file's sha256, metrics, data provenance, command); ``--dry-run`` prints the figures only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))

from legal_eval import gold_parties, parties_match  # noqa: E402
from sectorflow_legal_extraction import cuad  # noqa: E402
from sectorflow_legal_extraction.rules_en import parties  # noqa: E402
from sectorflow_legal_extraction.rules_en.party_candidates import FEATURES, _party_key, candidates, covered  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "cuad"
OUT = REPO / "plugins" / "legal_extraction" / "src" / "sectorflow_legal_extraction" / "party_reranker"
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.2, 0.95, 0.05))
VERSION = "1"


def _rows(contracts):
    """Per contract: (rules' names, gold names, candidates, labels)."""
    out = []
    for contract in contracts:
        gold = gold_parties(contract.answers["Parties"])
        if not gold:
            continue
        found = parties(contract.text)
        pred = [p.value["name"] for p in found]
        used = [False] * len(gold)
        for p in pred:
            for i, g in enumerate(gold):
                if not used[i] and parties_match([p], [g])[0]:
                    used[i] = True
                    break
        missing = [g for g, u in zip(gold, used) if not u]
        cands = candidates(contract.text, found)
        labels = [int(any(parties_match([c.name], [g])[0] for g in missing)) for c in cands]
        out.append((pred, gold, cands, labels))
    return out


def _f1(rows, probs, threshold):
    """Micro P/R/F1 of rules + candidates at ``threshold``, added as ``PartyReranker.add`` adds them."""
    tp = npred = ngold = 0
    for (pred, gold, cands, _), p in zip(rows, probs):
        names = list(pred)
        keys = [k for k in (_party_key(n) for n in pred) if k]
        for c, prob in sorted(zip(cands, p), key=lambda x: x[0].start):
            key = _party_key(c.name)
            if prob >= threshold and not covered(key, keys):
                keys.append(key)
                names.append(c.name)
        t, n, g = parties_match(names, gold)
        tp, npred, ngold = tp + t, npred + n, ngold + g
    precision, recall = (tp / npred if npred else 0.0), tp / ngold
    return {"precision": round(precision, 4), "recall": round(recall, 4),
            "f1": round(2 * precision * recall / (precision + recall), 4) if tp else 0.0, "tp": tp,
            "predicted": npred, "gold": ngold}


def _matrix(rows):
    x = np.array([[c.features[f] for f in FEATURES] for _, _, cands, _ in rows for c in cands], dtype=float)
    y = np.array([label for *_, labels in rows for label in labels], dtype=int)
    return x, y


def _fit(rows, c_value):
    x, y = _matrix(rows)
    model = LogisticRegression(C=c_value, fit_intercept=False, max_iter=2000)  # FEATURES has its own bias
    model.fit(x, y)
    return model


def _probs(model, rows):
    return [model.predict_proba(np.array([[c.features[f] for f in FEATURES] for c in cands]))[:, 1]
            if cands else np.array([]) for _, _, cands, _ in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--max-precision-drop", type=float, default=0.01,
                        help="the threshold keeps the pool's cross-validated precision within this of the rules' alone")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    contracts = cuad.load(args.data, more=True)
    pool = _rows([c for c in contracts if c.split in ("train", cuad.MORE)])
    validation = _rows([c for c in contracts if c.split == "validation"])
    # grouped folds: contract i goes to fold i % folds (the pool's order is master_clauses.csv's)
    oof: list[np.ndarray] = [np.array([])] * len(pool)
    for fold in range(args.folds):
        fit_rows = [r for i, r in enumerate(pool) if i % args.folds != fold]
        model = _fit(fit_rows, args.c)
        held = [i for i in range(len(pool)) if i % args.folds == fold]
        for i, p in zip(held, _probs(model, [pool[i] for i in held])):
            oof[i] = p
    no_add = [np.zeros(len(r[2])) for r in pool]
    pool_rules = _f1(pool, no_add, 1.0)
    sweep = {t: _f1(pool, oof, t) for t in THRESHOLDS}
    floor = pool_rules["precision"] - args.max_precision_drop
    allowed = [t for t in THRESHOLDS if sweep[t]["precision"] >= floor] or [max(THRESHOLDS)]
    threshold = max(allowed, key=lambda t: (sweep[t]["f1"], t))
    model = _fit(pool, args.c)
    val_probs = _probs(model, validation)
    val_rules = _f1(validation, [np.zeros(len(r[2])) for r in validation], 1.0)
    val_model = _f1(validation, val_probs, threshold)
    print(f"pool (train + more): {len(pool)} contracts, {sum(len(r[2]) for r in pool)} candidates, "
          f"{sum(sum(r[3]) for r in pool)} positive")
    print(f"pool rules alone: {pool_rules}")
    for t in THRESHOLDS:
        print(f"  pool cross-validated, threshold {t}: {sweep[t]}")
    print(f"chosen threshold {threshold}")
    print(f"validation rules alone:       {val_rules}")
    print(f"validation rules + re-ranker: {val_model}")
    for t in THRESHOLDS:
        print(f"  validation at {t} (for the record, not used to choose): {_f1(validation, val_probs, t)}")
    weights = [round(float(w), 6) for w in model.coef_[0]]
    print("weights:", dict(zip(FEATURES, weights)))
    if args.dry_run:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps({"features": list(FEATURES), "weights": weights, "threshold": threshold}, indent=1) + "\n").encode()
    (args.out / "weights.json").write_bytes(raw)
    manifest = {
        "name": "en_party_reranker", "version": VERSION, "format": "json-logistic-regression",
        "files": {"weights.json": hashlib.sha256(raw).hexdigest()},
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "plugins/legal_extraction/scripts/train_party_reranker.py" + (f" --c {args.c}" if args.c != 1.0 else ""),
        "data": "CUAD v1 (The Atticus Project, CC BY 4.0), ../shared/data/cuad: master_clauses.csv Parties-Answer; "
                f"fitted on {len(pool)} contracts (train split of contracts/ and contracts_more/), decided on "
                f"{len(validation)} validation contracts; test contracts never read; split salt {cuad.SPLIT_SEED}",
        "model": f"scikit-learn LogisticRegression(C={args.c}), {len(FEATURES)} features, threshold {threshold} "
                 f"chosen by {args.folds}-fold cross-validation grouped by contract on the fitting pool (best F1 with "
                 f"precision within {args.max_precision_drop} of the rules')",
        "metrics": {"pool_rules": pool_rules, "pool_cross_validated": sweep[threshold], "validation_rules": val_rules,
                    "validation_rules_plus_reranker": val_model},
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
