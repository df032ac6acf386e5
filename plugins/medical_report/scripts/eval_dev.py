"""benchmarks/medical_eval.py on the development part of IU X-ray only (the held-out test part is never read).

    .venv/bin/python plugins/medical_report/scripts/eval_dev.py [--no-model] [--json out/medical_eval_dev.json]
                                                                 [--errors out/medical_dev_errors.jsonl]

For checking a rule change against the development part (1,242 reports) without scoring the test part: the committed
benchmark scores both unless given ``--part dev``. This script runs the benchmark's own ``iu`` function (same text, same
``modality="radiograph"``, same gold, same counting) with ``only="dev"``: test-part rows are dropped as the CSV is
read, before any of them reaches the plugin. It then prints the development table
and the CMeEE table (``select_dev.json``, CMeEE's own development file). Nothing is trained or tuned.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import medical_eval  # the committed benchmark: its split, text, gold and counting)


_ZONES_ONCE_LOBES = {"right_upper_lung", "left_upper_lung", "right_lower_lung", "left_lower_lung", "upper_lung",
                     "lower_lung"}


def site_kinds() -> dict[str, int]:
    """How many development reports name a site of each kind (lobe, zone; the upper and lower zones, which had been
    read as lobes before 30 Nov; a nonexistent lobe), by the rules alone on the benchmark's text."""
    from sectorflow_medical_report.extract import extract

    with open(medical_eval.DATA / "iu_xray" / "indiana_reports.csv", encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if medical_eval.part_of(r["uid"]) == "dev"]
    out = {"reports": len(rows), "lobe": 0, "zone": 0, "upper or lower zone": 0, "nonexistent lobe": 0}
    for row in rows:
        sites = extract(medical_eval.report_text(row)).anatomy_mentions
        out["lobe"] += any(a.kind == "lobe" for a in sites)
        out["zone"] += any(a.kind == "zone" for a in sites)
        out["upper or lower zone"] += any(a.key in _ZONES_ONCE_LOBES for a in sites)
        out["nonexistent lobe"] += any(a.nonexistent for a in sites)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-model", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--errors", type=Path, default=None, help="write the development part's IU errors here (jsonl)")
    args = ap.parse_args()
    os.environ.setdefault("SECTORFLOW_AUDIT", "off")
    from sectorflow import Taskflow

    tf = Taskflow("medical_report", use_model=not args.no_model, batch_size=64, num_threads=2)
    errors: list | None = [] if args.errors else None
    iu = medical_eval.iu(tf, None, errors, only="dev")
    if iu["test"]["n_reports"] != 0 or iu["dev"]["n_reports"] != iu["n_reports"]:
        sys.exit("a test-part report reached the plugin; nothing printed")
    sites = site_kinds()
    result = {"iu_xray_dev": iu["dev"], "tagger_agreement_dev": iu["tagger_agreement"], "site_kinds_dev": sites,
              "cmeee": medical_eval.cmeee(None, None if args.no_model else tf),
              "setup": {"threads": 2, "batch_size": 64, "model": not args.no_model}}
    print(medical_eval.markdown({"iu_xray": iu, "cmeee": result["cmeee"]}))
    print("\nDevelopment reports naming a site of each kind (rules): "
          + ", ".join(f"{k} {v}" for k, v in sites.items()))
    medical_eval.write_outputs(result, args.json, errors, args.errors)


if __name__ == "__main__":
    main()
