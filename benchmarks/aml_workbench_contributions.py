"""Cost of the case page's account model contributions (TreeSHAP on one rebuilt row) on the AMLSim slice.

Runs the slice (samples/aml/transactions.csv.gz) through Taskflow("aml"), loads it as a workbench tenant, and times
:meth:`TenantData.contributions` over the 20 top-scored cases (after one warm-up call that loads the model); prints
the transactions replayed per case, seconds per case and, per case, the results' score, the rebuilt row's score, its
raw margin and the top three contributions.

    .venv/bin/python benchmarks/aml_workbench_contributions.py
"""

from __future__ import annotations

import bisect
import tempfile
import time
from pathlib import Path

from sectorflow import Taskflow
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.workbench.data import Source, TenantData

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "aml" / "transactions.csv.gz"


def main() -> None:
    out = Path(tempfile.mkdtemp()) / "results.jsonl"
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    with out.open("w", encoding="utf-8") as handle:
        for r in Taskflow("aml")(txns):
            handle.write(r.model_dump_json() + "\n")
    data = TenantData(Source(results=out, transactions=SAMPLE, format="amlsim"))
    cases = sorted((c for c in data.cases if c.model_score is not None), key=lambda c: (-c.model_score, c.case_id))
    data.contributions(cases[0])  # loads the bundle's booster
    lookback = data.account_scorer().lookback_days
    replayed = []
    start = time.perf_counter()
    rows = []
    for case in cases[:20]:
        c = data.contributions(case)
        i = data.positions[c["transaction_id"]]
        replayed.append(i + 1 - bisect.bisect_left(data.times, data.times[i] - (lookback + 1) * 86400.0))
        rows.append((case.case_id, c["score"], c["rebuilt_score"], c["margin"], [(t["feature"], round(t["contribution"], 3))
                                                                   for t in c["top"][:3]]))
    seconds = (time.perf_counter() - start) / len(rows)
    print(f"{len(data.ordered)} transactions, {len(cases)} cases with a model score")
    print(f"per case: {seconds:.3f} s, transactions replayed {min(replayed)} to {max(replayed)} "
          f"(mean {sum(replayed) / len(replayed):.0f})")
    for case_id, score, rebuilt, margin, top in rows:
        print(f"{case_id} score {score:.6f} rebuilt {rebuilt:.6f} margin {margin:+.4f} top {top}")


if __name__ == "__main__":
    main()
