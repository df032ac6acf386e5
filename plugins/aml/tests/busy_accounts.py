"""Busy-account scenarios for the aml rules' per-transaction cost (not collected by pytest: run it).

Usage: ``python plugins/aml/tests/busy_accounts.py {model|nomodel} SCENARIO[,SCENARIO...] N[,N...]`` prints, per
scenario and size, the seconds one ``Taskflow("aml")`` call takes over the scenario's ``N`` transactions and the
number of results with an alert. Time that doubles with ``N`` is linear; more is a rule rescanning a busy account's
window on each of its transactions. Scenarios (all on 2 Nov 2026, one day, synthetic, seeded): ``merchant``
(payments in from distinct payers, every tenth transaction a payment out), ``settlement`` (half in, half out, distinct
counterparties), ``collection`` (cash deposits from 30 tills, some just under RMB 50,000), ``payroll`` (payments to
distinct employees), ``settlement2`` (a hub between customers who were paid a salary the day before), ``reactivated``
(an account idle since April becomes a busy shop), ``shop`` (takings in, every twentieth transaction a payment to a supplier: about a third of the takings).
"""
import os, sys, time, random
os.environ["SECTORFLOW_AUDIT"] = "off"
from sectorflow import Taskflow

def ts(i, n):  # spread n over one day
    s = int(i * 86000 / n)
    return f"2026-11-02T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"

def merchant(n, seed=1):
    rng = random.Random(seed); out = []
    for i in range(n):
        if i % 10 == 9:
            out.append(dict(transaction_id=f"m{i}", timestamp=ts(i, n), sender_account="MERCH", receiver_account=f"SUP{rng.randrange(50)}", amount=f"{rng.uniform(1000,20000):.2f}", currency="CNY", channel="transfer"))
        else:
            out.append(dict(transaction_id=f"m{i}", timestamp=ts(i, n), sender_account=f"P{i}", receiver_account="MERCH", amount=f"{rng.uniform(10,3000):.2f}", currency="CNY", channel="transfer"))
    return out

def settlement(n, seed=2):
    rng = random.Random(seed); out = []
    for i in range(n):
        if i % 2:
            out.append(dict(transaction_id=f"s{i}", timestamp=ts(i, n), sender_account="SETTLE", receiver_account=f"R{rng.randrange(n)}", amount=f"{rng.uniform(100,20000):.2f}", currency="CNY", channel="transfer"))
        else:
            out.append(dict(transaction_id=f"s{i}", timestamp=ts(i, n), sender_account=f"S{rng.randrange(n)}", receiver_account="SETTLE", amount=f"{rng.uniform(100,20000):.2f}", currency="CNY", channel="transfer"))
    return out

def collection(n, seed=3):
    rng = random.Random(seed); out = []
    for i in range(n):
        out.append(dict(transaction_id=f"c{i}", timestamp=ts(i, n), sender_account=f"TILL{rng.randrange(30)}", receiver_account="COLL", amount=f"{rng.choice([rng.uniform(100,5000), rng.uniform(40000,49999)]):.2f}", currency="CNY", channel="cash_deposit"))
    return out

def payroll(n, seed=4):
    rng = random.Random(seed); out = []
    for i in range(n):
        out.append(dict(transaction_id=f"p{i}", timestamp=ts(i, n), sender_account="PAYROLL", receiver_account=f"E{i}", amount=f"{rng.uniform(3000,30000):.2f}", currency="CNY", channel="transfer"))
    return out

SCEN = dict(merchant=merchant, settlement=settlement, collection=collection, payroll=payroll)

def settlement2(n, seed=5):
    """customers first get a salary from employers (previous day), then pay a settlement hub that pays other customers"""
    rng = random.Random(seed); out = []
    m = max(200, n // 2)
    for i in range(m):
        out.append(dict(transaction_id=f"w{i}", timestamp=f"2026-11-01T{i * 86000 // m // 3600:02d}:{i * 86000 // m // 60 % 60:02d}:{i * 86000 // m % 60:02d}Z", sender_account=f"EMP{rng.randrange(20)}", receiver_account=f"CU{i}", amount=f"{rng.uniform(3000,9000):.2f}", currency="CNY", channel="transfer"))
    for i in range(n):
        if i % 2:
            out.append(dict(transaction_id=f"s{i}", timestamp=ts(i, n), sender_account="HUB", receiver_account=f"CU{rng.randrange(m)}", amount=f"{rng.uniform(100,2000):.2f}", currency="CNY", channel="transfer"))
        else:
            out.append(dict(transaction_id=f"s{i}", timestamp=ts(i, n), sender_account=f"CU{rng.randrange(m)}", receiver_account="HUB", amount=f"{rng.uniform(100,5000):.2f}", currency="CNY", channel="transfer"))
    return out

def reactivated(n, seed=6):
    """an account idle 200 days, then a busy shop: n deposits in one day"""
    rng = random.Random(seed)
    out = [dict(transaction_id="old", timestamp="2026-04-01T10:00:00Z", sender_account="X", receiver_account="DORM", amount="100", currency="CNY", channel="transfer")]
    for i in range(n):
        out.append(dict(transaction_id=f"r{i}", timestamp=ts(i, n), sender_account=f"Q{i}", receiver_account="DORM", amount=f"{rng.uniform(100,3000):.2f}", currency="CNY", channel="transfer"))
    return out

def shop(n, seed=7):
    """a merchant paying suppliers about a third of its takings (no pass-through)"""
    rng = random.Random(seed); out = []
    for i in range(n):
        if i % 20 == 19:
            out.append(dict(transaction_id=f"h{i}", timestamp=ts(i, n), sender_account="SHOP", receiver_account=f"SUP{rng.randrange(50)}", amount=f"{rng.uniform(1000,6000):.2f}", currency="CNY", channel="transfer"))
        else:
            out.append(dict(transaction_id=f"h{i}", timestamp=ts(i, n), sender_account=f"P{i}", receiver_account="SHOP", amount=f"{rng.uniform(10,1000):.2f}", currency="CNY", channel="transfer"))
    return out

SCEN.update(settlement2=settlement2, reactivated=reactivated, shop=shop)

if __name__ == "__main__":
    model = sys.argv[1] == "model"
    names = sys.argv[2].split(",")
    ns = [int(x) for x in sys.argv[3].split(",")]
    for name in names:
        for n in ns:
            items = SCEN[name](n)
            tf = Taskflow("aml", model=model)
            t = time.perf_counter(); out = tf(items); dt = time.perf_counter() - t
            print(name, n, f"{dt:.2f}s", sum(o.alert for o in out), flush=True)
