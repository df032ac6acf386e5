"""Busy-account scenarios: the per-transaction cost of the aml rules on one account with thousands of transactions.

Prints, per scenario and size, the seconds one ``Taskflow("aml")`` call takes over the scenario's ``N`` transactions
and the number of results with an alert. Time that doubles with ``N`` is linear; more is a rule rescanning a busy
account's window on each of its transactions (docs/benchmarks/aml.md, "Busy accounts").

Scenarios (synthetic, seeded, all on 2 Nov 2026 UTC unless said):

- ``merchant``: payments in from distinct payers, every tenth transaction a payment out to one of 50 suppliers;
- ``settlement``: half in, half out, counterparties drawn from ``N`` accounts;
- ``collection``: cash deposits from 30 tills, half of them just under RMB 50,000;
- ``payroll``: payments to ``N`` distinct employees;
- ``settlement2``: a hub between customers who were paid a salary the day before;
- ``reactivated``: an account idle since April becomes a busy shop;
- ``shop``: takings in, every twentieth transaction a payment to a supplier (about a third of the takings);
- ``balanced``: a settlement account passing on about all it takes in over two days (each transfer in or out with
  even odds, counterparties drawn from 2,000 customers, 100 to 40,100 each).

Usage::

    .venv/bin/python benchmarks/aml_busy_accounts.py {model|nomodel} SCENARIO[,SCENARIO...] N[,N...]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections.abc import Callable

os.environ.setdefault("SECTORFLOW_AUDIT", "off")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from sectorflow import Taskflow  # noqa: E402


def ts(i: int, n: int, day: str = "2026-11-02") -> str:
    """The ``i``-th of ``n`` times spread over one day (UTC)."""
    s = int(i * 86000 / n)
    return f"{day}T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"


def txn(tid: str, when: str, sender: str, receiver: str, amount: float, channel: str = "transfer") -> dict:
    """One transaction record in CNY."""
    return {"transaction_id": tid, "timestamp": when, "sender_account": sender, "receiver_account": receiver,
            "amount": f"{amount:.2f}", "currency": "CNY", "channel": channel}


def merchant(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    return [txn(f"m{i}", ts(i, n), "MERCH", f"SUP{rng.randrange(50)}", rng.uniform(1000, 20000)) if i % 10 == 9
            else txn(f"m{i}", ts(i, n), f"P{i}", "MERCH", rng.uniform(10, 3000)) for i in range(n)]


def settlement(n: int, seed: int = 2) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        other = rng.randrange(n)
        amount = rng.uniform(100, 20000)
        out.append(txn(f"s{i}", ts(i, n), "SETTLE", f"R{other}", amount) if i % 2
                   else txn(f"s{i}", ts(i, n), f"S{other}", "SETTLE", amount))
    return out


def collection(n: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        till = rng.randrange(30)
        amount = rng.choice([rng.uniform(100, 5000), rng.uniform(40000, 49999)])
        out.append(txn(f"c{i}", ts(i, n), f"TILL{till}", "COLL", amount, "cash_deposit"))
    return out


def payroll(n: int, seed: int = 4) -> list[dict]:
    rng = random.Random(seed)
    return [txn(f"p{i}", ts(i, n), "PAYROLL", f"E{i}", rng.uniform(3000, 30000)) for i in range(n)]


def settlement2(n: int, seed: int = 5) -> list[dict]:
    """Customers are paid a salary by 20 employers on 1 Nov, then pay a settlement hub that pays other customers."""
    rng = random.Random(seed)
    m = max(200, n // 2)
    out = []
    for i in range(m):
        employer = rng.randrange(20)
        out.append(txn(f"w{i}", ts(i, m, "2026-11-01"), f"EMP{employer}", f"CU{i}", rng.uniform(3000, 9000)))
    for i in range(n):
        customer = rng.randrange(m)
        out.append(txn(f"s{i}", ts(i, n), "HUB", f"CU{customer}", rng.uniform(100, 2000)) if i % 2
                   else txn(f"s{i}", ts(i, n), f"CU{customer}", "HUB", rng.uniform(100, 5000)))
    return out


def reactivated(n: int, seed: int = 6) -> list[dict]:
    """An account idle since 1 April, then a busy shop: ``n`` payments in on one day."""
    rng = random.Random(seed)
    return [txn("old", "2026-04-01T10:00:00Z", "X", "DORM", 100)] + [
        txn(f"r{i}", ts(i, n), f"Q{i}", "DORM", rng.uniform(100, 3000)) for i in range(n)]


def shop(n: int, seed: int = 7) -> list[dict]:
    """A merchant paying suppliers about a third of its takings (no pass-through)."""
    rng = random.Random(seed)
    return [txn(f"h{i}", ts(i, n), "SHOP", f"SUP{rng.randrange(50)}", rng.uniform(1000, 6000)) if i % 20 == 19
            else txn(f"h{i}", ts(i, n), f"P{i}", "SHOP", rng.uniform(10, 1000)) for i in range(n)]


def balanced(n: int, seed: int = 8) -> list[dict]:
    rng = random.Random(seed)
    out = []
    half = n // 2
    for i in range(n):
        when = ts(i, half) if i < half else ts(i - half, n - half, "2026-11-03")
        customer, amount = f"C{rng.randrange(2000)}", rng.uniform(100, 40100)
        out.append(txn(f"b{i}", when, customer, "SETTLE", amount) if rng.random() < 0.5
                   else txn(f"b{i}", when, "SETTLE", customer, amount))
    return out


SCENARIOS: dict[str, Callable[[int], list[dict]]] = {
    "merchant": merchant, "settlement": settlement, "collection": collection, "payroll": payroll,
    "settlement2": settlement2, "reactivated": reactivated, "shop": shop, "balanced": balanced}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=("model", "nomodel"), help="with or without the learned risk scorer")
    ap.add_argument("scenarios", help=f"comma-separated, of: {', '.join(SCENARIOS)}")
    ap.add_argument("sizes", help="comma-separated transaction counts, e.g. 1000,2000,4000")
    args = ap.parse_args()
    names = args.scenarios.split(",")
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average "
          f"{os.getloadavg()[0]:.1f}; one call per scenario and size, model {'on' if args.model == 'model' else 'off'}")
    for name in names:
        for n in (int(x) for x in args.sizes.split(",")):
            items = SCENARIOS[name](n)
            tf = Taskflow("aml", model=args.model == "model")
            start = time.perf_counter()
            out = tf(items)
            print(f"{name} {n}: {time.perf_counter() - start:.2f} s, {sum(o.flagged for o in out)} flagged",
                  flush=True)


if __name__ == "__main__":
    main()
