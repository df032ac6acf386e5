"""How far ``Taskflow("medical_report", precision="int8")`` changes the reports, on development data only.

    .venv/bin/sectorflow models quantize medical_report      # once: the INT8 bundle (embedding table and GRU weights 8-bit)
    .venv/bin/python benchmarks/medical_int8_compare.py [--threads 1]

Inputs: the development part of IU X-ray (1,242 reports; the split of ``benchmarks/medical_eval.py``, findings and
impression joined as there, ``modality="radiograph"``) and CMeEE ``select_dev.json`` (500 sentences), read in place
from ``../shared/data``; the test part is not read. Each goes through the fp32 Taskflow (Paddle predictor) and the
INT8 one (ONNX Runtime); printed: reports identical (everything but ``meta``), reports whose findings or
recommendations differ (only ``model_agrees`` or a tagger-sourced anatomy can: the rules decide the rest), and the
tagger spans (``model_spans``, label and offsets) of each run and how many both give. Nothing is trained or tuned.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import medical_eval


def dev_items() -> list[dict]:
    """IU X-ray development reports, then CMeEE select_dev sentences, as Taskflow inputs."""
    path = medical_eval.DATA / "iu_xray" / "indiana_reports.csv"
    with open(path, encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if medical_eval.part_of(r["uid"]) == "dev"]
    items = [{"text": medical_eval.report_text(r), "modality": "radiograph", "language": "en"} for r in rows]
    cmeee = json.loads((medical_eval.DATA / "cmeee" / "select_dev.json").read_text(encoding="utf-8"))
    return items + [{"text": d["text"]} for d in cmeee]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from sectorflow import Taskflow

    items = dev_items()
    runs = {}
    for precision in ("fp32", "int8"):
        tf = Taskflow("medical_report", num_threads=args.threads, precision=precision)
        runs[precision] = [r.model_dump(exclude={"meta"}) for r in tf(items)]
    fp32, int8 = runs["fp32"], runs["int8"]
    same = sum(a == b for a, b in zip(fp32, int8))
    rules = sum(a["findings"] == b["findings"] and a["recommendations"] == b["recommendations"]
                for a, b in zip(fp32, int8))
    spans = {p: {(i, s["label"], s["start"], s["end"]) for i, r in enumerate(runs[p]) for s in r["model_spans"]}
             for p in runs}
    both = len(spans["fp32"] & spans["int8"])
    print(f"{len(items)} development inputs (IU X-ray dev part + CMeEE select_dev), {args.threads} thread(s)")
    print(f"reports identical: {same} ({100 * same / len(items):.1f}%)")
    print(f"findings and recommendations identical: {rules}")
    print(f"tagger spans: fp32 {len(spans['fp32'])}, int8 {len(spans['int8'])}, both {both} "
          f"({100 * both / max(len(spans['fp32']), 1):.1f}% of fp32's)")


if __name__ == "__main__":
    main()
