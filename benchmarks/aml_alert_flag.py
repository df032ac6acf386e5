"""How many accounts and transactions a results file of ``sectorflow run aml`` marks ``alert`` (a transaction of a
case within the alert budget when it arrived) and ``flagged`` (a rule or the model fired), beside the cases within
the budget that ``sectorflow aml cases`` lists (docs/aml.md, "alert and flagged").

    .venv/bin/sectorflow run aml ../shared/data/amlgentex_dev/dev_s303/transactions.csv.gz --format amlgentex \\
        --on-error skip --output aml-results.jsonl
    .venv/bin/python benchmarks/aml_alert_flag.py aml-results.jsonl [--labels .../dev_s303/accounts.csv.gz]

Active accounts: those named in a result's ``account_scores`` (sender and receiver; without an account model, those
named by a case). Counted under ``alert``: the subjects of the within-budget cases that alerted results updated (the
accounts an analyst is sent to; their counterparties are in the case); under ``flagged``: the accounts of flagged
results' ``account_scores`` and of their alerts (as ``aml evaluate``'s alert rate counts them). With ``--labels``,
the share of laundering accounts among each set.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--labels", type=Path, default=None)
    args = parser.parse_args(argv)
    from sectorflow_aml.cases import read_cases

    active: set[str] = set()
    alerted: set[str] = set()
    alert_cases: set[str] = set()
    flagged: set[str] = set()
    n = n_alert = n_flagged = 0
    with args.results.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            item = json.loads(line)
            n += 1
            accounts = set(item.get("account_scores") or ()) | {c["account"] for c in item.get("cases") or ()}
            active |= accounts
            if item.get("alert"):
                n_alert += 1
                alerted.update(c["account"] for c in item.get("cases") or () if c.get("within_budget"))
                alert_cases.update(c["case_id"] for c in item.get("cases") or () if c.get("within_budget"))
            if item.get("flagged"):
                n_flagged += 1
                flagged |= set(item.get("account_scores") or ())
                for alert in item.get("alerts") or ():
                    flagged.update(alert.get("accounts") or ())
    flagged &= active
    cases = read_cases(args.results)
    case_accounts = {c.account for c in cases}
    labels = None
    if args.labels is not None:
        from sectorflow_aml.labels import read_labels

        labels = read_labels(args.labels).label
    print(f"{n:,} results, {len(active):,} active accounts")
    for name, accounts, txns in (("alert", alerted, n_alert), ("flagged", flagged, n_flagged),
                                 ("cases within the budget (final)", case_accounts, None)):
        share = len(accounts) / max(1, len(active))
        line = f"{name}: {len(accounts):,} accounts ({share:.1%} of active)"
        if txns is not None:
            line += f", {txns:,} transactions ({txns / max(1, n):.1%})"
        if labels is not None and accounts:
            bad = sum(1 for a in accounts if labels.get(a) == 1)
            line += f"; laundering {bad:,} ({bad / len(accounts):.1%})"
        print(line)
    print(f"case-periods within the budget at some alerted update: {len(alert_cases):,}; at the end: {len(cases):,} "
          f"in {len({c.period for c in cases})} period(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
