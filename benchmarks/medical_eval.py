"""Figures of docs/benchmarks/medical.md: the medical_report plugin on real reports (evaluation only).

    .venv/bin/python benchmarks/medical_eval.py [--limit N] [--no-model] [--json out/medical_eval.json]

English, ../shared/data/iu_xray/indiana_reports.csv (3,851 Indiana University chest X-ray reports; evaluation
fixture, non-commercial/unclear terms): the findings and impression text (joined with a line break: they are separate
sections, and a space made a findings text without a final full stop run on into the impression) goes through
``Taskflow("medical_report")`` with ``modality="radiograph"``.

- nodule present/absent per report against the report's labelled Problems (gold: "Nodule" among them; the MeSH
  column names the same 106 reports). Prediction: a nodule finding with assertion present (a second row counts
  uncertain too).
- other findings the same way (effusion <-> "Pleural Effusion", cardiomegaly <-> "Cardiomegaly", ...).
- size extraction against benchmarks/medical_iu_size_gold.json (every size mention hand-labelled; F = the size of
  a finding the plugin covers, with its mm): recall = F mentions whose mm the plugin attaches to a finding (span
  overlaps, value within 0.05 mm); precision = sizes the plugin attaches that are such F mentions.
- nodular opacities: among the reports where the plugin finds a present opacity with the attribute nodular and no
  present nodule, how many the IU labels call Nodule and how many Opacity or Density.
- tagger agreement: share of rule findings a tagger FIND span overlaps (the tagger was trained on generated text).

Development and test parts. IU X-ray has no train/validation/test split, so this script makes one, fixed and
reproducible: a report is in the development part when ``sha256(f"{SPLIT_SALT}:{uid}")`` read as an integer is
divisible by 3 (about one third: 1,242 of the 3,851 reports, 26 with a "Nodule" label), else in the held-out test
part (2,609 reports). Rule changes may only be motivated by development-part errors (``--errors`` writes those and
refuses to write test errors); the test part is only scored. Figures are printed for test, dev and all, labelled.
The size gold file annotates all reports; each part is scored on its own reports' mentions.

Chinese, ../shared/data/cmeee/select_dev.json (500 CMeEE sentences with gold entities; ``end_idx`` inclusive):
exact-span precision/recall/F1 per CMeEE type for what the plugin extracts (anatomy -> bod, findings -> sym or dis
by lexicon entry, exam modality -> pro), micro over those types, and recall over all gold entities (the MacBERT-large
anchor, 62.4 micro-F1, is over all nine types).
Nothing here trains or tunes anything.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
GOLD = Path(__file__).resolve().parent / "medical_iu_size_gold.json"
SPLIT_SALT = "sectorflow-iu-xray-dev-v1"
"""Salt of the development/test split of IU X-ray (see the module docstring); changing it changes both parts."""
PARTS = ("test", "dev", "all")

IU_LABELS = {
    "nodule": {"Nodule"}, "effusion": {"Pleural Effusion"}, "pneumothorax": {"Pneumothorax"},
    "cardiomegaly": {"Cardiomegaly"}, "atelectasis": {"Pulmonary Atelectasis"},
    "emphysema": {"Emphysema", "Pulmonary Emphysema"}, "edema": {"Pulmonary Edema"},
    "fracture": {"Fractures, Bone"}, "hernia": {"Hernia, Hiatal"}, "pneumonia": {"Pneumonia"},
    "granuloma": {"Calcified Granuloma", "Granuloma", "Granulomatous Disease"},
}


def prf(tp: int, fp: int, fn: int) -> dict:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def part_of(uid: str) -> str:
    """``"dev"`` or ``"test"``: the fixed, salted-hash part of an IU X-ray report (about one third is dev)."""
    return "dev" if int(hashlib.sha256(f"{SPLIT_SALT}:{uid}".encode()).hexdigest(), 16) % 3 == 0 else "test"


def report_text(row: dict) -> str:
    """The text scored for one IU report: its findings and impression, joined with a line break (two sections: joined
    with a space, a findings text without a final full stop, "... There is no pneumothorax", ran on into the
    impression as one sentence; the offsets, and the size gold's, are the same either way); "(empty)" when both
    are empty."""
    return "\n".join(x for x in (row["findings"], row["impression"]) if x) or "(empty)"


def iu(tf, limit: int | None, errors: list | None = None, only: str | None = None) -> dict:
    """Scores per part (``test``, ``dev``, ``all``). ``errors``: a list that receives the development part's
    errors (nodule false positives/negatives, missed or wrong sizes); test-part errors are never collected.
    ``only="dev"``: the test part's rows are dropped as the file is read (none reaches the plugin; its scores are
    empty), for checking a change on the development part alone; ``limit`` then counts development reports."""
    if only not in (None, "dev"):
        raise ValueError(f"only={only!r}: None or 'dev'")
    path = DATA / "iu_xray" / "indiana_reports.csv"
    with open(path, encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if only is None or part_of(r["uid"]) == only][:limit]
    texts = [report_text(r) for r in rows]
    reports = tf([{"text": t, "modality": "radiograph", "language": "en"} for t in texts])
    names = list(IU_LABELS) + ["nodule_or_uncertain"]
    counts = {part: {k: Counter() for k in names} for part in PARTS}
    gold_sizes = json.loads(GOLD.read_text(encoding="utf-8"))["mentions"]
    size = {part: Counter() for part in PARTS}
    nodular = {part: Counter() for part in PARTS}  # reports with a nodular opacity and no nodule: their IU labels
    agree = Counter()
    n = Counter()
    for row, text, rep in zip(rows, texts, reports):
        part = part_of(row["uid"])
        n[part] += 1
        problems = {p.strip() for p in row["Problems"].split(";")}
        outcome = {}
        for ftype, labels in IU_LABELS.items():
            gold = bool(problems & labels)
            pred = any(f.type == ftype and f.assertion == "present" for f in rep.findings)
            outcome[ftype] = "tp" if gold and pred else "fp" if pred else "fn" if gold else "tn"
        gold = "Nodule" in problems
        pred = any(f.type == "nodule" and f.assertion in ("present", "uncertain") for f in rep.findings)
        outcome["nodule_or_uncertain"] = "tp" if gold and pred else "fp" if pred else "fn" if gold else "tn"
        for p in (part, "all"):
            for name, o in outcome.items():
                counts[p][name][o] += 1
        if outcome["nodule"] in ("tn", "fn") and any(f.type == "opacity" and "nodular" in f.attributes
                                                     and f.assertion == "present" for f in rep.findings):
            for p in (part, "all"):
                nodular[p]["reports"] += 1
                nodular[p]["labelled Nodule"] += "Nodule" in problems
                nodular[p]["labelled Opacity or Density"] += bool(problems & {"Opacity", "Density"})
        mentions = {int(k.split(":")[1]): v for k, v in gold_sizes.items() if k.split(":")[0] == row["uid"]}
        found = set()
        wrong = []
        for f in rep.findings:
            if f.model_agrees is not None:
                agree["yes" if f.model_agrees else "no"] += 1
            if f.size is None:
                continue
            hit = next((off for off, (lab, mm) in mentions.items() if lab == "F" and f.size.start <= off < f.size.end),
                       None)
            if hit is not None and abs(mentions[hit][1] - f.size.mm) < 0.05 and hit not in found:
                found.add(hit)
            else:
                wrong.append((f.type, f.size.text, f.size.mm))
        n_gold = sum(1 for v in mentions.values() if v[0] == "F")
        for p in (part, "all"):
            size[p].update({"tp": len(found), "fp": len(wrong), "fn": n_gold - len(found)})
        if errors is not None and part == "dev":
            missed = [(off, mm) for off, (lab, mm) in mentions.items() if lab == "F" and off not in found]
            if outcome["nodule"] in ("fp", "fn") or missed or wrong:
                errors.append({"uid": row["uid"], "nodule": outcome["nodule"], "problems": row["Problems"],
                               "text": text, "nodule_findings": [(f.text, f.assertion, f.start) for f in rep.findings
                                                                 if f.type == "nodule"],
                               "missed_sizes": missed, "wrong_sizes": wrong})
    out = {}
    for part in PARTS:
        out[part] = {name: prf(c["tp"], c["fp"], c["fn"]) | {"tn": c["tn"]} for name, c in counts[part].items()}
        out[part]["sizes"] = prf(size[part]["tp"], size[part]["fp"], size[part]["fn"]) | {
            "gold_F_mentions": size[part]["tp"] + size[part]["fn"]}
        out[part]["n_reports"] = n[part] if part != "all" else len(rows)
        out[part]["nodular_opacity_reports"] = dict(nodular[part])
    out["split"] = {"salt": SPLIT_SALT, "rule": "dev when int(sha256(f'{salt}:{uid}'), 16) % 3 == 0"}
    out["tagger_agreement"] = round(agree["yes"] / max(1, sum(agree.values())), 4) if agree else None
    out["n_reports"] = len(rows)
    return out


def cmeee(limit: int | None, tf=None) -> dict:
    """``tf``: a Taskflow with the tagger on, to score the tagger's own spans too (none: rules only)."""
    sys.path.insert(0, str(ROOT / "plugins" / "medical_report" / "src"))
    from sectorflow_medical_report.extract import extract
    from sectorflow_medical_report.lexicon import FINDINGS

    items = json.loads((DATA / "cmeee" / "select_dev.json").read_text(encoding="utf-8"))[:limit]
    tp, fp, fn = Counter(), Counter(), Counter()
    gold_all = 0
    types = ("bod", "sym", "dis", "pro")
    for item in items:
        text = item["text"]
        gold = {(e["start_idx"], e["end_idx"] + 1, e["type"]) for e in item["entities"]}  # end inclusive -> exclusive
        gold_all += len(gold)
        ex = extract(text)
        pred = {(f.start, f.end, FINDINGS[f.type][2]) for f in ex.findings}
        pred |= {(a.start, a.end, "bod") for a in ex.anatomy_mentions if a.start is not None}
        pred |= {(s, e, "pro") for s, e in ex.modality_spans}
        for t in types:
            g = {x for x in gold if x[2] == t}
            p = {x for x in pred if x[2] == t}
            tp[t] += len(g & p)
            fp[t] += len(p - g)
            fn[t] += len(g - p)
    per = {t: prf(tp[t], fp[t], fn[t]) for t in types}
    tagger = None
    if tf is not None:  # the tagger's own spans: ANAT -> bod, FIND -> sym or dis
        counts = Counter()
        for item, rep in zip(items, tf([{"text": i["text"], "language": "zh"} for i in items])):
            gold = {(e["start_idx"], e["end_idx"] + 1, e["type"]) for e in item["entities"]}
            for label, types_ in (("ANAT", {"bod"}), ("FIND", {"sym", "dis"})):
                g = {(s_, e_) for s_, e_, t in gold if t in types_}
                p = {(x.start, x.end) for x in rep.model_spans if x.label == label}
                counts[label, "tp"] += len(g & p)
                counts[label, "fp"] += len(p - g)
                counts[label, "fn"] += len(g - p)
        tagger = {f"{lab} -> {'bod' if lab == 'ANAT' else 'sym or dis'}": prf(counts[lab, "tp"], counts[lab, "fp"],
                                                                           counts[lab, "fn"]) for lab in ("ANAT", "FIND")}
    micro = prf(sum(tp.values()), sum(fp.values()), sum(fn.values()))
    all_types = prf(sum(tp.values()), sum(fp.values()), gold_all - sum(tp.values()))
    return {"per_type": per, "micro_over_plugin_types": micro, "over_all_gold_types": all_types,
            "tagger": tagger, "n_sentences": len(items)}


def markdown(result: dict) -> str:
    """The tables of docs/benchmarks/medical.md: IU X-ray per part (test first), then CMeEE."""
    iu_r, cm = result["iu_xray"], result["cmeee"]
    lines = []
    for part in PARTS:
        r = iu_r[part]
        if not r["n_reports"]:  # the test part of a --part dev run
            continue
        lines += [f"IU X-ray, {part} part ({r['n_reports']} reports)", "",
                  "| finding (IU Problems label) | precision | recall | F1 | tp | fp | fn |",
                  "|---|---|---|---|---|---|---|"]
        for name in list(IU_LABELS) + ["nodule_or_uncertain"]:
            m = r[name]
            label = " / ".join(sorted(IU_LABELS.get(name, {"Nodule"})))
            shown = "nodule, present or uncertain" if name == "nodule_or_uncertain" else name
            lines.append(f"| {shown} ({label}) | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['tp']} | "
                         f"{m['fp']} | {m['fn']} |")
        s = r["sizes"]
        no = r["nodular_opacity_reports"]
        lines += [(f"| finding sizes ({s['gold_F_mentions']} gold) | {s['precision']:.3f} | {s['recall']:.3f} | "
                   f"{s['f1']:.3f} | {s['tp']} | {s['fp']} | {s['fn']} |"), "",
                  (f"Reports with a present nodular opacity and no present nodule: {no.get('reports', 0)}; labelled "
                   f"Nodule {no.get('labelled Nodule', 0)}, Opacity or Density {no.get('labelled Opacity or Density', 0)}"),
                  ""]
    scored = "all reports" if iu_r["test"]["n_reports"] else "development part"
    lines += [f"Tagger agreement with the rule findings ({scored}): {iu_r['tagger_agreement']}", "",
              "| CMeEE type | precision | recall | F1 | tp | fp | fn |", "|---|---|---|---|---|---|---|"]
    for t, m in list(cm["per_type"].items()) + [("micro, bod+sym+dis+pro", cm["micro_over_plugin_types"]),
                                               ("micro, all nine gold types", cm["over_all_gold_types"])] + [
            (f"tagger alone: {k}", v) for k, v in (cm.get("tagger") or {}).items()]:
        lines.append(f"| {t} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['tp']} | {m['fp']} | "
                     f"{m['fn']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--no-model", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the full result (every count) here")
    ap.add_argument("--print-json", action="store_true", help="print the JSON instead of the markdown tables")
    ap.add_argument("--part", choices=("all", "dev"), default="all",
                    help="dev: score the development part alone, the test part's reports never read (for checking a "
                         "change); all (default): both, for the figures of record")
    ap.add_argument("--errors", type=Path, default=None,
                    help="write the development part's IU errors here (jsonl); test-part errors are never written")
    args = ap.parse_args()
    if not (DATA / "iu_xray").is_dir() or not (DATA / "cmeee").is_dir():
        sys.exit(f"needs {DATA}/iu_xray and {DATA}/cmeee (see ../shared/data/README.md)")
    os.environ.setdefault("SECTORFLOW_AUDIT", "off")
    from sectorflow import Taskflow

    tf = Taskflow("medical_report", use_model=not args.no_model, batch_size=64, num_threads=2)
    errors: list | None = [] if args.errors else None
    result = {"iu_xray": iu(tf, args.limit, errors, None if args.part == "all" else args.part),
              "cmeee": cmeee(args.limit, None if args.no_model else tf),
              "setup": {"threads": 2, "batch_size": 64, "model": not args.no_model}}
    print(json.dumps(result, indent=1, ensure_ascii=False) if args.print_json else markdown(result))
    write_outputs(result, args.json, errors, args.errors)


def write_outputs(result: dict, json_path: Path | None, errors: list | None, errors_path: Path | None) -> None:
    """Write ``result`` as JSON to ``json_path`` and ``errors`` as JSON lines to ``errors_path`` (each when given),
    making their folders."""
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    if errors_path:
        errors_path.parent.mkdir(parents=True, exist_ok=True)
        errors_path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors or []),
                               encoding="utf-8")


if __name__ == "__main__":
    main()
