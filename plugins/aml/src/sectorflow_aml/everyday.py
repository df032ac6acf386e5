"""A generated retail bank with no laundering in it: everyday payments the risk scorer must not flag.

IBM AMLSim's normal accounts never pay the same counterparty twice within 30 days, transact at most once a
simulated day and move amounts of 100 to 1,000 (checked on the three sample runs: 0 of 112,673 normal transactions
repeat a pair within the window). A model trained on AMLSim alone therefore learns those simulator habits as signs
of laundering: bundle 2.0.0 scored any second payment to the same payee 1.0 (a fresh-user check paid a mother
twice in a month and got a suspicious-transaction report draft). This module writes the everyday behaviour AMLSim
lacks, labelled normal, so training sees it (``plugins/aml/scripts/train_scorer.py --everyday``) and a benchmark
can count false alarms on it (``benchmarks/aml_everyday.py``).

:func:`everyday_bank` (seeded, deterministic) gives, for ``customers`` individuals over ``days`` days from ``start``:

- salaries: monthly, a fixed amount per employee (4,000-40,000), from one of ``customers // 20`` employers on the
  employer's pay day, in the early hours (payroll batches: one employer pays many accounts within minutes);
- employers' income: 3-8 client companies pay each employer monthly (so employers receive as well as pay out);
- rent: monthly, a fixed amount (1,500-9,000) to a landlord shared by 1-3 tenants;
- utilities: 1-3 of 4 utility companies each month, variable amounts (30-600);
- card purchases: 3-20 a month at the customer's 3 favourite shops or others (1-2,000, log-uniform); shops pay
  their 1-3 suppliers every week part (40-80 %) of what came in that week;
- family: a third of the customers send a fixed monthly amount (300-3,000) to a relative's account, half of them
  at another bank (an account this bank sees only receiving from that one customer), and now and then a second
  payment in the same month;
- salaries elsewhere: 30 % of the customers are paid at another bank, so this bank sees them only paying out (and
  sometimes topping up from their own account at the other bank);
- friends: small transfers inside groups of 4 (often paid back within days: round trips);
- savings: a quarter of the customers move money monthly to their own savings account and back now and then.

Account ids carry the seed (``E<seed>-C0001``) so banks generated with different seeds never share an account. The
amounts, days and proportions are the project's own choices (no dataset is copied); they describe common retail
patterns, not any bank's statistics.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from .schema import Channel, Transaction

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
"""Default first day of a generated bank."""


def everyday_bank(seed: int, customers: int = 300, days: int = 150, start: datetime = START) -> list[Transaction]:
    """The generated bank's transactions in time order (see the module docstring).

    Args:
        seed: random seed (and account id prefix).
        customers: individual customers (>= 20).
        days: length of the period in days (>= 30).
        start: first day (UTC).

    Returns:
        ``Transaction`` objects (ids ``E<seed>-T<n>``, CNY), sorted by timestamp.

    Raises:
        ValueError: fewer than 20 customers or 30 days.
    """
    if customers < 20 or days < 30:
        raise ValueError("everyday_bank needs at least 20 customers and 30 days")
    rng = random.Random(seed)
    p = f"E{seed}-"
    people = [f"{p}C{i:04d}" for i in range(customers)]
    employers = [f"{p}EMP{i:03d}" for i in range(max(2, customers // 20))]
    clients = [f"{p}CLIENT{i:03d}" for i in range(max(4, customers // 10))]
    shops = [f"{p}SHOP{i:03d}" for i in range(max(8, customers // 8))]
    suppliers = [f"{p}SUPP{i:03d}" for i in range(max(4, customers // 25))]
    utilities = [f"{p}UTIL{i}" for i in range(4)]
    landlords = [f"{p}LL{i:04d}" for i in range(max(2, customers // 2))]
    out: list[tuple[datetime, str, str, float, Channel]] = []

    def pay(when: datetime, src: str, dst: str, amount: float, channel: Channel = Channel.transfer) -> None:
        if src != dst and when < start + timedelta(days=days):
            out.append((when, src, dst, round(amount, 2), channel))

    def at(day: float, hour_lo: int = 7, hour_hi: int = 22) -> datetime:
        return start + timedelta(days=int(day), hours=rng.randint(hour_lo, hour_hi), minutes=rng.randrange(60),
                                 seconds=rng.randrange(60))

    paid_elsewhere = [c for c in people if rng.random() < 0.3]  # lists, never sets: set order varies by process
    topup_from = {c: f"{c}-EXT" for c in paid_elsewhere if rng.random() < 0.5}
    elsewhere = frozenset(paid_elsewhere)
    employer = {c: rng.choice(employers) for c in people if c not in elsewhere}
    salary = {c: rng.uniform(4_000, 40_000) for c in people}
    payday = {e: rng.randint(1, 27) for e in employers}
    landlord = {c: rng.choice(landlords) for c in people}
    rent = {c: float(rng.choice([1_500, 1_800, 2_500, 3_500, 4_500, 6_000, 9_000])) for c in people}
    favourite = {c: rng.sample(shops, 3) for c in people}
    relative = {c: rng.choice(people) if rng.random() < 0.5 else f"{c}-REL" for c in people if rng.random() < 1 / 3}
    family_amount = {c: float(rng.choice([300, 500, 800, 1_000, 2_000, 3_000])) for c in relative}
    savers = {c: f"{c}-SAV" for c in people if rng.random() < 0.25}
    shuffled = people[:]
    rng.shuffle(shuffled)
    groups = [shuffled[i:i + 4] for i in range(0, len(shuffled), 4)]
    customers_of = {e: rng.sample(clients, min(len(clients), rng.randint(3, 8))) for e in employers}
    supplier_of = {s: rng.sample(suppliers, rng.randint(1, 3)) for s in shops}
    shop_takings: dict[str, list[tuple[datetime, float]]] = {s: [] for s in shops}

    for month in range(math.ceil(days / 30)):
        base = month * 30
        for e in employers:
            day = base + payday[e]
            payroll = 0.0
            for c in people:
                if employer.get(c) == e:
                    pay(at(day, 1, 2), e, c, salary[c])
                    payroll += salary[c]
            for client in customers_of[e]:
                pay(at(base + rng.randint(0, 29), 9, 17), client, e, payroll / len(customers_of[e]) *
                    rng.uniform(1.0, 1.4))
        for c in people:
            if c in topup_from and rng.random() < 0.6:
                pay(at(base + rng.randint(0, 29)), topup_from[c], c, rng.uniform(1_000, 20_000))
            pay(at(base + rng.randint(0, 4)), c, landlord[c], rent[c])
            for util in rng.sample(utilities, rng.randint(1, 3)):
                pay(at(base + rng.randint(5, 25)), c, util, rng.uniform(30, 600))
            for _ in range(rng.randint(3, 20)):
                shop = rng.choice(favourite[c]) if rng.random() < 0.7 else rng.choice(shops)
                when = at(base + rng.randint(0, 29), 8, 23)
                amount = math.exp(rng.uniform(0.0, math.log(2_000)))
                pay(when, c, shop, amount, Channel.card)
                shop_takings[shop].append((when, amount))
            if c in relative:
                pay(at(base + rng.randint(0, 3)), c, relative[c], family_amount[c])
                if rng.random() < 0.25:
                    pay(at(base + rng.randint(4, 29)), c, relative[c], family_amount[c] * rng.uniform(0.5, 2.0))
            if c in savers:
                pay(at(base + rng.randint(10, 14)), c, savers[c], salary[c] * rng.uniform(0.05, 0.2))
                if rng.random() < 0.3:
                    pay(at(base + rng.randint(15, 29)), savers[c], c, salary[c] * rng.uniform(0.05, 0.3))
        for group in groups:
            for _ in range(rng.randint(0, 3)):
                a, b = rng.sample(group, 2)
                day = base + rng.randint(0, 29)
                amount = rng.uniform(20, 800)
                pay(at(day), a, b, amount, Channel.mobile)
                if rng.random() < 0.5:
                    pay(at(day + rng.randint(0, 6)), b, a, amount * rng.choice([0.5, 1.0]), Channel.mobile)
    for shop, takings in shop_takings.items():
        for week in range(days // 7):
            lo, hi = start + timedelta(days=7 * week), start + timedelta(days=7 * week + 7)
            took = sum(a for when, a in takings if lo <= when < hi)
            if took > 0:
                for supplier in supplier_of[shop]:
                    pay(hi + timedelta(hours=rng.randint(9, 17)), shop, supplier,
                        took * rng.uniform(0.4, 0.8) / len(supplier_of[shop]))
    out.sort(key=lambda t: (t[0], t[1], t[2]))
    construct = Transaction.model_construct
    return [construct(transaction_id=f"{p}T{i}", timestamp=when, sender_account=src, receiver_account=dst,
                      amount=Decimal(f"{amount:.2f}"), currency="CNY", channel=channel, sender_country=None,
                      receiver_country=None, customer_type=None, sender_bank=None, receiver_bank=None)
            for i, (when, src, dst, amount, channel) in enumerate(out)]
