"""False alarms of ``Taskflow("aml")`` on a generated retail bank with no laundering in it.

The bank is :func:`sectorflow_aml.everyday.everyday_bank` (salaries, rent, utilities, card purchases, family and
friends' transfers, savings; see its docstring), generated with ``--seed`` (default 7; the shipped scorer was
trained with everyday banks of seeds 101 to 104, never this one). Every alert here is a false alarm by
construction. Prints, with the model on and off (rules only): transactions flagged, alerts by typology,
suspicious-transaction report (STR) drafts, and accounts named in an alert, as counts and shares; and a third row,
model on, with the bank's shops, utility companies and employers passed as ``exempt_accounts`` (what a bank that
has reviewed its merchant, biller and payroll accounts would do).

Usage::

    .venv/bin/python benchmarks/aml_everyday.py [--seed 7] [--customers 300] [--days 150] [--task-path BUNDLE]

Also prints, per month, the cases within the alert budget (default: 1 % of the month's active accounts) and how
many of them are mandatory (issue 21's target: at most 1 % of active accounts a month). Machine-independent (counts,
not timings). ``--task-path`` scores with another scorer bundle (e.g. one trained
without everyday data, to compare).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

from sectorflow import Taskflow  # noqa: E402
from sectorflow_aml.everyday import everyday_bank  # noqa: E402


def measure(txns: list, **options) -> dict:
    """Counts of one pipeline run over ``txns``; ``cases``: per month, the cases within the alert budget (the
    default, 1 % of the month's active accounts, or ``alert_budget``), of which mandatory, and the active accounts
    (as ``sectorflow aml cases`` lists them: each case's latest update, re-ranked)."""
    flow = Taskflow("aml", batch_size=1024, num_threads=1, **options)
    results = flow(txns)
    accounts = {t.sender_account for t in txns} | {t.receiver_account for t in txns}
    named = {a for r in results for alert in r.alerts for a in alert.accounts}
    months = {}
    latest = {}
    for r in results:
        for u in r.cases:
            latest[u.case_id] = u
    by_period: dict = collections.defaultdict(list)
    for u in latest.values():
        by_period[u.period].append(u)
    budget = flow.pipeline.case_book.budget
    for period, updates in sorted(by_period.items()):
        updates.sort(key=lambda u: (not u.mandatory, -u.score, u.account))
        active = max(u.active_accounts for u in updates)
        within = [u for rank, u in enumerate(updates, 1) if budget.within(rank, u.score, active, u.mandatory)]
        months[period] = {"within_budget": len(within), "mandatory": sum(u.mandatory for u in within),
                          "active_accounts": active, "share": round(len(within) / active, 5)}
    return {"transactions": len(results), "flagged": sum(r.flagged for r in results),
            "alerts": dict(collections.Counter(a.typology for r in results for a in r.alerts).most_common()),
            "str_drafts": sum(1 for r in results for d in r.reports if d.kind == "suspicious"),
            "accounts": len(accounts), "accounts_in_alerts": len(named), "cases": months}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--customers", type=int, default=300)
    parser.add_argument("--days", type=int, default=150)
    parser.add_argument("--task-path", help="a scorer bundle folder instead of the shipped one")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    txns = everyday_bank(args.seed, args.customers, args.days)
    extra = {"task_path": args.task_path} if args.task_path else {}
    hubs = sorted({a for t in txns for a in (t.sender_account, t.receiver_account)
                   if a.split("-", 1)[1].startswith(("SHOP", "UTIL", "EMP"))})
    out = {"seed": args.seed, "customers": args.customers, "days": args.days,
           "model_on": measure(txns, **extra), "rules_only": measure(txns, model=False),
           "hubs_exempt": measure(txns, exempt_accounts=hubs, **extra)}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"generated everyday bank: seed {args.seed}, {args.customers} customers, {args.days} days, "
          f"{len(txns):,} transactions (no laundering: every alert is a false alarm)")
    for name in ("model_on", "rules_only", "hubs_exempt"):
        m = out[name]
        print(f"{name:>11}: flagged {m['flagged']:,} ({m['flagged'] / m['transactions']:.2%}), STR drafts "
              f"{m['str_drafts']:,}, accounts in alerts {m['accounts_in_alerts']:,} of {m['accounts']:,} "
              f"({m['accounts_in_alerts'] / m['accounts']:.2%}); alerts {m['alerts']}")
        print(" " * 13 + "cases within the budget per month: " + ", ".join(
            f"{p} {c['within_budget']}/{c['active_accounts']} = {c['share']:.2%}"
            + (f" ({c['mandatory']} mandatory)" if c["mandatory"] else "") for p, c in m["cases"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
