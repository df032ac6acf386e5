"""Typology hits and cases on data with legitimate look-alikes: accounts alerted per typology and their precision,
before and after the issue-21 semantics, and the cases within the alert budget (evidence only: no account model).

Data (development sets only; AMLGentex ``dev_s303`` is kept for final figures and is refused here):

- AMLGentex ``dev_s101`` / ``dev_s202`` (``../shared/data/amlgentex_dev``, read by the tiny loader below: ``step``
  -> 2023-01-01 + step days, transactions of one day in file order; external source ``-2`` and sink ``-1`` become
  accounts ``EXT-SOURCE`` / ``EXT-SINK``, which are not in the account table and so count in no figure; ``CASH`` rows
  are cash withdrawals; amounts are SEK, read as the window's base currency; labels ``IS_SAR`` of
  ``accounts.csv.gz``);
- AMLSim ``20K_fanin200cycle200`` (``../shared/data/amlsim_sample``; labels ``isFraud``);
- generated everyday banks ``everyday7``, ``everyday8`` (:func:`sectorflow_aml.everyday.everyday_bank` with that
  seed: no laundering, every alert a false alarm; precision and recall print as 0).

Configurations: ``before`` = the rules as they were before issue 21 (cycle: any closed loop; hub rules: fixed
counts; scatter-gather legs 50-200 %; gather-scatter paying out >= 50 %), ``peers only`` = issue 21's first pass
(peers' Poisson tail and new counterparties, none of the own-history and money-path tests of
``typologies/history.py``), ``own history`` = those tests without the peer groups of ``typologies/peers.py`` and
scatter-gather's own-path test (``min_new_share``), ``after`` = the shipped defaults. The
rules run over a :class:`~sectorflow_aml.window.TransactionWindow` as the pipeline runs them; the alerts go to a
:class:`~sectorflow_aml.cases.CaseBook` (monthly cases in UTC, budget 1 % of the month's active accounts), as the
pipeline's ``postprocess`` does. An account is *named* by a typology when it is among the ``accounts`` of one of its
alerts, a *subject* when it is one whose case gets the alert (``sectorflow_aml.cases.subjects``); precision =
labelled share of them; on AMLGentex also how many planted patterns of the typology have their main account
(``alert_members.csv``, ``isMain``) among the subjects. Alerts whose subject is the external source or sink are dropped, as
``exempt_accounts=["EXT-SOURCE", "EXT-SINK"]`` would (the bank's settlement accounts).

Usage::

    .venv/bin/python benchmarks/aml_cases_eval.py [--sets dev_s101 dev_s202 amlsim everyday101] [--final --sets dev_s303]
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import os
import platform
import sys
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from sectorflow_aml.cases import CaseBook, subjects
from sectorflow_aml.everyday import everyday_bank
from sectorflow_aml.loaders import READERS
from sectorflow_aml.schema import Channel, Transaction, trusted_transaction
from sectorflow_aml.typologies import build_rules
from sectorflow_aml.window import TransactionWindow

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
GENTEX = SHARED / "amlgentex_dev"
AMLSIM = SHARED / "amlsim_sample" / "20K_fanin200cycle200"
T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)
EXTERNAL = {"-1": "EXT-SINK", "-2": "EXT-SOURCE"}

HISTORY_OFF = {"burst_ratio": 0.0, "min_through_share": 0.0}  # the tests of typologies/history.py, off
PEERS_OFF = {"peer_quantile": 1.0}  # the peer groups of typologies/peers.py, off
BEFORE = {
    "cycle": {"ordered": False, "amount_ratio": None, "min_amount": 0.0},
    "fan_in": {"peer_alpha": 1.0, "min_new_share": 0.0, **HISTORY_OFF, **PEERS_OFF},
    "fan_out": {"peer_alpha": 1.0, "min_new_share": 0.0, "max_stale_share": 1.0, **HISTORY_OFF, **PEERS_OFF},
    "gather_scatter": {"min_flow_ratio": 0.5, "max_flow_ratio": None, "peer_alpha": 1.0, "min_new_share": 0.0,
                       "burst_ratio": 0.0},
    "scatter_gather": {"min_flow_ratio": 0.5, "max_flow_ratio": 2.0, "min_new_share": 0.0},
    "rapid_pass_through": {"min_new_share": 0.0, "burst_ratio": 0.0},
}
PEERS_ONLY = {  # issue 21's first pass (1 Dec 2026, 16:15 UTC): peers and new counterparties, no own-history tests
    "fan_in": {**HISTORY_OFF, **PEERS_OFF}, "fan_out": {"max_stale_share": 1.0, **HISTORY_OFF, **PEERS_OFF},
    "gather_scatter": {}, "scatter_gather": {"min_new_share": 0.0},
    "rapid_pass_through": {"min_new_share": 0.0, "burst_ratio": 0.0},
}
OWN_HISTORY = {  # the own-history tests (1 Dec 2026, 19:00 UTC), before peer groups and scatter-gather's own paths
    "fan_in": dict(PEERS_OFF), "fan_out": dict(PEERS_OFF), "scatter_gather": {"min_new_share": 0.0},
}
CONFIGS = {"before": BEFORE, "peers only": PEERS_ONLY, "own history": OWN_HISTORY, "after": {}}
VARIANTS = {  # the cycle rule with one of its new tests off, to show which one each simulator's cycles fail
    "cycle ordered, any amounts": {"cycle": {"amount_ratio": None, "min_amount": 0.0}},
    "cycle conserved, any order": {"cycle": {"ordered": False, "min_amount": 0.0}},
}


MAINS: dict[str, dict[str, set[str]]] = collections.defaultdict(dict)
"""Per AMLGentex set, the main account of each planted pattern by pattern type (``alert_members.csv``, ``isMain``):
the hub a fan-in, fan-out or gather-scatter rule should name as its subject, the originator of a scatter-gather."""


FINAL = False
"""``--final``: dev_s303 may be read, to report figures of choices already made on dev_s101 / dev_s202."""


def gentex(name: str) -> tuple[list[Transaction], set[str], set[str]]:
    """Transactions, labelled accounts and all accounts of an AMLGentex development set."""
    if name == "dev_s303" and not FINAL:
        raise SystemExit("dev_s303 is kept for final figures: measure on dev_s101 / dev_s202.")
    folder = GENTEX / name
    days: dict[str, datetime] = {}
    txns = []
    with gzip.open(folder / "transactions.csv.gz", "rt", newline="") as handle:
        for row in csv.DictReader(handle):
            step = row["step"]
            when = days.get(step)
            if when is None:
                when = days[step] = T0 + timedelta(days=int(step))
            channel = Channel.cash_withdrawal if row["type"] == "CASH" else Channel.transfer
            src = EXTERNAL.get(row["nameOrig"], row["nameOrig"])
            dst = EXTERNAL.get(row["nameDest"], row["nameDest"])
            txns.append(trusted_transaction(f"g{row['tx_id']}", when, src, dst, Decimal(row["amount"]), "CNY",
                                            channel))
    with open(folder / "alert_members.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["isMain"] == "True":
                MAINS[name].setdefault(row["type"], set()).add(row["accountID"])
    with gzip.open(folder / "accounts.csv.gz", "rt", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return txns, {r["ACCOUNT_ID"] for r in rows if r["IS_SAR"].strip().lower() in ("1", "true")}, \
        {r["ACCOUNT_ID"] for r in rows}


def amlsim() -> tuple[list[Transaction], set[str], set[str]]:
    """Transactions, labelled accounts and all accounts of AMLSim 20K_fanin200cycle200."""
    txns = [t for _, t in READERS["amlsim"](AMLSIM / "transactions.csv.gz") if isinstance(t, Transaction)]
    with gzip.open(AMLSIM / "nodes.csv.gz", "rt", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return txns, {r["nodeid"] for r in rows if r["isFraud"].strip() == "1"}, {r["nodeid"] for r in rows}


def everyday(name: str) -> tuple[list[Transaction], set[str], set[str]]:
    """A generated everyday bank (``everyday7``: seed 7): no laundering, so every alert is a false alarm."""
    txns = everyday_bank(int(name.removeprefix("everyday") or 7))
    return txns, set(), {a for t in txns for a in (t.sender_account, t.receiver_account)}


def replay(txns: list[Transaction], config: dict) -> tuple[dict[str, set[str]], CaseBook, list, float]:
    """Run the rules and the case book; returns alerted accounts per typology, the book, every case update and
    the seconds taken."""
    window = TransactionWindow(30.0)
    rules = build_rules(config)
    book = CaseBook(timezone.utc, "month")
    alerted: dict[str, set[str]] = collections.defaultdict(set)
    subject: dict[str, set[str]] = collections.defaultdict(set)
    updates = []
    start = time.perf_counter()
    for txn in txns:
        edge = window.add(txn)
        alerts = [a for rule in rules for a in rule.check(window, edge)]
        if alerts:  # the external source and sink are the bank's settlement accounts: exempt_accounts, as a bank
            alerts = [a for a in alerts if not a.accounts[0].startswith("EXT-")]  # lists them (pipeline option)
        for alert in alerts:
            alerted[alert.typology].update(alert.accounts)
            subject[alert.typology].update(subjects(alert))
        updates.extend(book.update(txn, edge.amount, alerts))
    return (alerted, subject), book, updates, time.perf_counter() - start


def final_cases(updates: list) -> dict[str, list]:
    """Per period, each case's latest update ranked by score (as :func:`sectorflow_aml.cases.read_cases` does)."""
    latest = {}
    for u in updates:
        latest[u.case_id] = u
    periods: dict[str, list] = collections.defaultdict(list)
    for u in latest.values():
        periods[u.period].append(u)
    return {p: sorted(v, key=lambda u: (-u.score, u.account)) for p, v in periods.items()}


def average_precision(ranked: list[bool]) -> float:
    hits, total = 0, 0.0
    for i, positive in enumerate(ranked, start=1):
        if positive:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0


def _figures(flagged: set[str], sar: set[str]) -> str:
    hit = len(flagged & sar)
    return (f"{len(flagged):6,d} precision {hit / len(flagged) if flagged else 0:.3f} recall "
            f"{hit / len(sar) if sar else 0:.3f}")


def report(name: str, txns: list[Transaction], sar: set[str], accounts: set[str], configs: dict) -> None:
    print(f"\n== {name}: {len(txns):,} transactions, {len(accounts):,} accounts, {len(sar):,} labelled")
    for label, config in configs.items():
        (alerted, subject), book, updates, seconds = replay(txns, config)
        print(f"-- {label} ({seconds:.0f} s): accounts named in a typology's alerts / its alerts' subjects")
        every: set[str] = set()
        every_subject: set[str] = set()
        for typology in sorted(alerted):
            acc, sub = alerted[typology] & accounts, subject[typology] & accounts
            every |= acc
            every_subject |= sub
            mains = MAINS.get(name, {}).get(typology)
            planted = f"  |  planted {typology} hubs {len(sub & mains)}/{len(mains)}" if mains else ""
            print(f"   {typology:22s} {_figures(acc, sar)}  |  subjects {_figures(sub, sar)}{planted}")
        print(f"   {'any typology':22s} {_figures(every, sar)}  |  subjects {_figures(every_subject, sar)}")
        periods = final_cases(updates)
        within, aps, n_cases = set(), [], 0
        for p, ranked in sorted(periods.items()):
            n_active = max(u.active_accounts for u in ranked)
            size = book.budget.size(n_active) or 0
            n_cases += len(ranked)
            within |= {(u.account, p) for i, u in enumerate(ranked, 1) if u.mandatory or i <= size}
            labelled = [u.account in sar for u in ranked if u.account in accounts]
            if any(labelled):
                aps.append(average_precision(labelled))
        bands: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for ranked in periods.values():
            for u in ranked:
                if u.account in accounts:
                    band = bands[f"{min(0.9, int(u.score * 10) / 10):.1f}"]
                    band[0] += 1
                    band[1] += u.account in sar
        print("   case precision by score band: " + ", ".join(
            f"[{b}, {float(b) + 0.1:.1f}{']' if b == '0.9' else ')'} {n} cases {k / n:.2f}"
            for b, (n, k) in sorted(bands.items())))
        shares = [len(r) / max(1, max(u.active_accounts for u in r)) for _, r in sorted(periods.items())]
        later = shares[1:]  # the months after the first: what a run started with a month of --history sees
        print(f"   cases opened a month: {n_cases / max(1, len(periods)):.1f} on average, "
              f"{100 * sum(shares) / max(1, len(shares)):.2f} % of the month's active accounts (most: "
              f"{100 * max(shares, default=0):.2f} %; after the first month {100 * sum(later) / max(1, len(later)):.2f}"
              f" %, most {100 * max(later, default=0):.2f} %)")
        in_budget = [(a, p) for a, p in within if a in accounts]
        good = sum(a in sar for a, _ in in_budget)
        covered = {a for a, _ in in_budget} & sar
        print(f"   cases: {n_cases:,} in {len(periods)} months; within the 1 % budget {len(in_budget):,}, precision "
              f"{good / len(in_budget) if in_budget else 0:.3f}, labelled accounts reached {len(covered):,} "
              f"({len(covered) / len(sar) if sar else 0:.3f}); mean average precision of the monthly ranking "
              f"{sum(aps) / len(aps) if aps else 0:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["dev_s101", "dev_s202", "amlsim"])
    parser.add_argument("--variants", action="store_true", help="also the cycle rule with one new test off (first "
                                                                    "set only)")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS),
                        help="configurations to run (default: all)")
    parser.add_argument("--final", action="store_true", help="allow dev_s303 (report only: choose nothing on it)")
    args = parser.parse_args(argv)
    global FINAL
    FINAL = args.final
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"python {sys.version.split()[0]}")
    for i, name in enumerate(args.sets):
        txns, sar, accounts = amlsim() if name == "amlsim" else everyday(name) if name.startswith("everyday") \
            else gentex(name)
        chosen = {k: CONFIGS[k] for k in args.configs}
        report(name, txns, sar, accounts, {**chosen, **(VARIANTS if args.variants and i == 0 else {})})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
