"""Report output on a busy account: the size of the large-value / CTR drafts one ``Taskflow("aml")`` run writes.

Scenarios (synthetic, seeded, default options, model on when a bundle is installed):

- ``cn``: account ``SETTLE``, 3,000 transfers in and 3,000 out a day from 2,000 customers, CNY 100 to 900,000 each
  (about 44 % meet the 500,000 transfer threshold on their own);
- ``us``: 2,000 cash deposits of USD 10,001 to 50,000 into ``CASINO`` on one day (``jurisdiction="US"``).

Prints per scenario: transactions, seconds of the call and of serializing its results, bytes of the JSON-lines results (as ``sectorflow run`` writes
them), drafts, transaction ids carried by all drafts, and the largest draft's ids. Quadratic output shows as ids
carried growing with the square of the transactions (docs/aml-data-and-reports.md, "Once per key").

Usage::

    .venv/bin/python benchmarks/aml_report_hub.py {cn|us} DAYS
"""

from __future__ import annotations

import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone

os.environ.setdefault("SECTORFLOW_AUDIT", "off")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from sectorflow import Taskflow


def cn(days: int) -> list[dict[str, str]]:
    """``SETTLE``'s transfers: 6,000 a day, times spread over 01:00-14:00 UTC (Beijing 09:00-22:00)."""
    rng = random.Random(7)
    out = []
    for d in range(days):
        start = datetime(2026, 11, 2, 1, tzinfo=timezone.utc) + timedelta(days=d)
        for i in range(6000):
            other = f"C{rng.randrange(2000):04d}"
            sender, receiver = (other, "SETTLE") if i % 2 == 0 else ("SETTLE", other)
            out.append({"transaction_id": f"t{d}-{i}", "timestamp": (start + timedelta(seconds=i * 7.8)).isoformat(),
                        "sender_account": sender, "receiver_account": receiver,
                        "amount": f"{rng.randint(10000, 90000000) / 100:.2f}", "currency": "CNY",
                        "channel": "transfer"})
    return out


def us(days: int) -> list[dict[str, str]]:
    """2,000 cash deposits a day into ``CASINO``, 14:00-23:00 UTC (New York 09:00-18:00 in November)."""
    rng = random.Random(7)
    out = []
    for d in range(days):
        start = datetime(2026, 11, 2, 14, tzinfo=timezone.utc) + timedelta(days=d)
        for i in range(2000):
            out.append({"transaction_id": f"d{d}-{i}", "timestamp": (start + timedelta(seconds=i * 16)).isoformat(),
                        "sender_account": f"P{i:04d}", "receiver_account": "CASINO",
                        "amount": f"{rng.randint(10001, 50000)}.00", "currency": "USD", "channel": "cash_deposit"})
    return out


def main() -> None:
    scenario, days = sys.argv[1], int(sys.argv[2])
    items = cn(days) if scenario == "cn" else us(days)
    tf = Taskflow("aml", **({"jurisdiction": "US"} if scenario == "us" else {}))
    start = time.perf_counter()
    results = tf(items)
    size = sum(len(r.model_dump_json()) + 1 for r in results)
    seconds = time.perf_counter() - start
    drafts = [d for r in results for d in r.reports if d.kind in ("large_value", "ctr")]
    ids = [len(d.transaction_ids) for d in drafts]
    print(f"{scenario} days={days} transactions={len(items)} seconds={seconds:.1f} results_bytes={size} "
          f"drafts={len(drafts)} ids_carried={sum(ids)} largest_draft_ids={max(ids, default=0)} "
          f"load={os.getloadavg()[0]:.1f} cpus={os.cpu_count()}")


if __name__ == "__main__":
    main()
