"""Case-level graph evidence: how risky a case's counterparties are in the same review period.

Laundering accounts transact with each other: on the AMLSim sample run 20K_cycle200, 2,132 distinct sender-receiver
pairs join two of its 945 laundering accounts, 8.2 times what random pairing would give, and about a third of them
(326) make no transfer under 100, AMLSim's planted amounts (``benchmarks/aml_graph_facts.py``), so nothing in their
own 30-day window marks them; their counterparties might (measured as a second stage on AMLSim, this evidence moves
account F1 by under 0.01: docs/aml.md, "AMLSim"; so it is a case's evidence, not its score). A case also carries,
from the account model's scores of its counterparties within the period (``account_scores``, the first stage):

- ``counterparty_score``: the highest period score among the account's counterparties, floored to a tenth
  (:data:`LEVELS`: "a counterparty scored at least 0.7"); ``None`` while no counterparty has a score;
- ``risky_counterparties``: how many of its counterparties scored at least :data:`RISKY` (0.5) in the period;
- ``counterparties_in_period``: its distinct counterparties in the period (transfers; the cash side of a cash
  deposit or withdrawal is no counterparty).

:class:`PeriodGraph` keeps them for one open period, incrementally and exactly: every transfer links its two accounts
(:meth:`PeriodGraph.link`), every account score raises the account's period maximum (:meth:`PeriodGraph.score`),
and when a maximum crosses a tenth or :data:`RISKY` the account's counterparties' evidence is raised with it (at
most 10 times per account and period, so the cost is bounded by 10 times the account's counterparties). At any time,
and so at the period's end, the evidence equals a batch computation over the period's transfers and maxima
(:func:`period_evidence`, which training uses: no skew between training and serving).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

LEVELS = 10
"""Counterparty scores are floored to tenths (``floor(10 * score) / 10``) before they propagate."""

RISKY = 0.5
"""A counterparty scoring at least this within the period counts in ``risky_counterparties``."""


def level(score: float) -> int:
    """``floor(10 * score)``, clipped to 0..10 (an int: exact, so the evidence never depends on float rounding)."""
    return min(LEVELS, max(0, math.floor(score * LEVELS + 1e-9)))


class PeriodGraph:
    """Counterparties and period maximum scores of one review period, with each account's evidence.

    ``best``: account -> highest account-model score in the period; ``links``: account -> its distinct
    counterparties; ``top``: account -> highest :func:`level` among its counterparties' scores (absent: none scored);
    ``risky``: account -> counterparties with a score >= :data:`RISKY`.
    """

    __slots__ = ("best", "links", "risky", "top")

    def __init__(self) -> None:
        self.best: dict[str, float] = {}
        self.links: dict[str, set[str]] = {}
        self.top: dict[str, int] = {}
        self.risky: dict[str, int] = {}

    def _see(self, account: str, other: str) -> bool:
        """``account`` got counterparty ``other`` (new): take its score in; whether the evidence changed."""
        s = self.best.get(other)
        if s is None:
            return False
        changed = False
        lv = level(s)
        if lv > self.top.get(account, -1):
            self.top[account] = lv
            changed = True
        if s >= RISKY:
            self.risky[account] = self.risky.get(account, 0) + 1
            changed = True
        return changed

    def link(self, a: str, b: str) -> list[str]:
        """A transfer between ``a`` and ``b`` (``a != b``); returns the accounts whose evidence changed."""
        mine = self.links.get(a)
        if mine is None:
            mine = self.links[a] = set()
        if b in mine:
            return []
        mine.add(b)
        theirs = self.links.get(b)
        if theirs is None:
            theirs = self.links[b] = set()
        theirs.add(a)
        best = self.best
        out = []  # a new list: the case book extends it
        if b in best and self._see(a, b):
            out.append(a)
        if a in best and self._see(b, a):
            out.append(b)
        return out

    def score(self, account: str, s: float) -> list[str]:
        """``account`` scored ``s``; returns its counterparties whose evidence changed (its maximum crossed a tenth
        or :data:`RISKY`)."""
        old = self.best.get(account)
        if old is not None and s <= old:
            return []
        self.best[account] = s
        lv, was = level(s), (level(old) if old is not None else -1)
        now_risky, was_risky = s >= RISKY, old is not None and old >= RISKY
        if lv == was and now_risky == was_risky:
            return []
        out = []
        # sorted: a set's order follows the process's string hash seed, so a run resumed from --state in another
        # process would list the changed cases in another order than one continuous run
        for other in sorted(self.links.get(account, ())):
            changed = False
            if lv > self.top.get(other, -1):
                self.top[other] = lv
                changed = True
            if now_risky and not was_risky:
                self.risky[other] = self.risky.get(other, 0) + 1
                changed = True
            if changed:
                out.append(other)
        return out

    def evidence(self, account: str) -> tuple[float | None, int, int]:
        """``(counterparty_score, risky_counterparties, counterparties_in_period)`` of ``account``."""
        top = self.top.get(account)
        return (None if top is None else top / LEVELS, self.risky.get(account, 0), len(self.links.get(account, ())))

    def state(self) -> dict[str, Any]:
        """JSON-ready: the maxima and the links (each pair once); :meth:`restore` rebuilds the evidence."""
        pairs = sorted((a, b) for a, others in self.links.items() for b in others if a < b)
        return {"best": dict(sorted(self.best.items())), "links": [list(p) for p in pairs]}

    @classmethod
    def restore(cls, state: Mapping[str, Any]) -> PeriodGraph:
        """A graph from :meth:`state` (evidence recomputed, so equal to the one that was saved)."""
        out = cls()
        for a, b in state["links"]:
            out.links.setdefault(str(a), set()).add(str(b))
            out.links.setdefault(str(b), set()).add(str(a))
        out.best = {str(k): float(v) for k, v in state["best"].items()}
        for a, others in out.links.items():
            for b in others:
                out._see(a, b)
        return out


def period_evidence(transfers: Iterable[tuple[str, str]], best: Mapping[str, float]
                    ) -> dict[str, tuple[float | None, int, int]]:
    """The evidence of every account of a period from its transfers (sender, receiver) and the period maxima: what
    :class:`PeriodGraph` holds at the period's end (training computes it this way)."""
    graph = PeriodGraph()
    for a, b in transfers:
        if a != b:
            graph.links.setdefault(a, set()).add(b)
            graph.links.setdefault(b, set()).add(a)
    graph.best = dict(best)
    for a, others in graph.links.items():
        for b in others:
            graph._see(a, b)
    return {a: graph.evidence(a) for a in graph.links}


GRAPH_FEATURES = ("model_score", "counterparty_score", "risky_counterparties", "counterparties_in_period",
                  "risky_share")
"""Columns of :func:`graph_rows`: the account's own period maximum, its evidence (``counterparty_score`` -1 when no
counterparty has a score), and ``risky_counterparties / max(1, counterparties_in_period)``."""


def graph_rows(best: Mapping[Any, Mapping[str, float]], transfers: Mapping[Any, Iterable[tuple[str, str]]]
               ) -> tuple[list[str], list[Any], Any]:
    """One row of :data:`GRAPH_FEATURES` per account and period with a score, as the case book holds it at the
    period's end: ``best`` period -> {account: period maximum}, ``transfers`` period -> (sender, receiver) pairs.
    Returns ``(accounts, periods, float64 array [n, 5])``; a second stage at case level trains on these rows
    (``benchmarks/aml_learning.py --only amlsim``)."""
    import numpy as np

    accounts: list[str] = []
    periods: list[Any] = []
    rows: list[list[float]] = []
    for period in sorted(best):
        maxima = best[period]
        evidence = period_evidence(transfers.get(period, ()), maxima)
        for account in sorted(maxima):
            top, risky, links = evidence.get(account, (None, 0, 0))
            accounts.append(account)
            periods.append(period)
            rows.append([maxima[account], -1.0 if top is None else top, float(risky), float(links),
                         risky / max(1, links)])
    return accounts, periods, np.asarray(rows, dtype=np.float64).reshape(-1, len(GRAPH_FEATURES))
