"""Case-level graph evidence (sectorflow_aml.case_graph): the incremental evidence of an open period equals the batch
computation over its transfers and maxima at every step; a counterparty whose score rises updates the open cases of
its counterparties; the evidence survives the book's state."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from sectorflow_aml.case_graph import PeriodGraph, level, period_evidence
from sectorflow_aml.cases import CaseBook
from sectorflow_aml.schema import Transaction

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def test_incremental_evidence_equals_the_batch_computation():
    rng = random.Random(5)
    accounts = [f"A{i}" for i in range(40)]
    graph, transfers, best = PeriodGraph(), [], {}
    for step in range(3000):
        a, b = rng.sample(accounts, 2)
        graph.link(a, b)
        transfers.append((a, b))
        for acc in (a, b):
            s = rng.random() ** 3
            graph.score(acc, s)
            best[acc] = max(best.get(acc, 0.0), s)
        if step % 500 == 499:
            batch = period_evidence(transfers, best)
            assert {x: graph.evidence(x) for x in graph.links} == batch
    assert PeriodGraph.restore(graph.state()).evidence("A3") == graph.evidence("A3")
    assert level(0.69999) == 6 and level(0.7) == 7 and level(1.0) == 10 and level(-0.1) == 0


def test_evidence_by_hand():
    g = PeriodGraph()
    assert g.link("A", "B") == [] and g.evidence("A") == (None, 0, 1)  # no score yet
    assert g.score("B", 0.34) == ["A"] and g.evidence("A") == (0.3, 0, 1)
    assert g.score("B", 0.38) == []  # the same tenth: nothing to tell
    assert g.score("B", 0.71) == ["A"] and g.evidence("A") == (0.7, 1, 1)
    g.score("C", 0.55)
    assert g.link("A", "C") == ["A"] and g.evidence("A") == (0.7, 2, 2)  # A has no score: C's evidence is unchanged
    assert g.evidence("C") == (None, 0, 1) and g.link("A", "B") == []  # a second transfer of a pair adds nothing


def _txn(i: int, src: str, dst: str, hours: float) -> Transaction:
    return Transaction(transaction_id=f"t{i}", timestamp=T0 + timedelta(hours=hours), sender_account=src,
                       receiver_account=dst, amount="100", currency="CNY")


def test_a_counterpartys_rising_score_updates_the_case():
    book = CaseBook(timezone.utc, "month", budget=1, min_model_score=0.3)
    (a,) = book.update(_txn(1, "A", "B", 0), 100.0, [], {"A": 0.4, "B": 0.1})
    assert (a.account, a.counterparty_score, a.risky_counterparties, a.counterparties_in_period) == ("A", 0.1, 0, 1)
    # B pays C; B's score rises to 0.8: A's case (B's counterparty) is updated, with no transaction of A
    updates = book.update(_txn(2, "B", "C", 1), 100.0, [], {"B": 0.8, "C": 0.05})
    (a2,) = [u for u in updates if u.account == "A"]
    assert (a2.counterparty_score, a2.risky_counterparties, a2.transactions, a2.transaction_ids) == (0.8, 1, 1, [])
    b = next(u for u in updates if u.account == "B")
    assert (b.counterparty_score, b.risky_counterparties, b.counterparties_in_period) == (0.4, 0, 2)  # A 0.4, C 0.05
    (case,) = [c for c in book.cases(everything=True) if c.account == "A"]
    assert (case.counterparty_score, case.risky_counterparties) == (0.8, 1)
    restored = CaseBook(timezone.utc, "month", budget=1, min_model_score=0.3)
    restored.load_state_dict(book.state_dict())
    assert restored.cases(everything=True) == book.cases(everything=True)
    assert restored.update(_txn(3, "C", "D", 2), 1.0, [], {"C": 0.9, "D": 0.0}) == \
        book.update(_txn(3, "C", "D", 2), 1.0, [], {"C": 0.9, "D": 0.0})
