"""What the workbench shows of one tenant: its cases, their transactions, alerts and report drafts.

A tenant's source (:class:`Source`) is a results file of ``sectorflow run aml`` (JSON lines of
``TransactionAssessment``, with ``cases``) and the input file it was computed from (for the transactions: results
carry ids, scores and evidence, not the transfers themselves). :class:`TenantData` reads both once (in a background
thread when the workbench starts, ``[web.aml] preload``, default true; else at the first page a user of that tenant
opens) and keeps in memory: every case (:func:`~sectorflow_aml.cases.read_cases`, within the
budget or not), the transactions by id and by account in time order, the alerts by id, the report drafts, the
model reasons per transaction and the model bundle that scored the run (``meta``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sectorflow import ConfigError, SectorflowError, load_bundle, open_text

from ..cases import Case, read_cases
from ..loaders import load_transactions
from ..schema import Alert, ReportDraft, Transaction
from .contributions import case_contributions

log = logging.getLogger("sectorflow_aml.workbench")
MAX_GRAPH_EDGES = 400
"""Transfers drawn at most on a case's fund-flow graph (a case lists up to 2,000; the table lists them all)."""
MAX_EXPAND = 60
"""Other transfers of an account added when the analyst expands it (the most recent ones in the period)."""


class Source(BaseModel):
    """One tenant's data (``[web.aml] sources``): ``results`` (JSON lines of ``sectorflow run aml``),
    ``transactions`` (the input file they were computed from), its ``format`` (``amlsim``, ``csv``, ...; ``None``:
    guessed) and ``input_timezone`` (as the run's ``-O input_timezone``)."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field("default", min_length=1, max_length=128)
    results: Path
    transactions: Path
    format: str | None = None
    input_timezone: str | None = None


class TenantData:
    """The loaded data of one :class:`Source` (see the module docstring).

    Raises:
        ConfigError: a file is missing or not what it should be (the message names it).
        InvalidInputError: a results line that is not an AML result.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        for path in (source.results, source.transactions):
            if not Path(path).is_file():
                raise ConfigError(f"The workbench source of tenant {source.tenant!r} names {path}, which is not a "
                                  f"file: run `sectorflow run aml INPUT --output RESULTS` and name both in [web.aml].")
        self.cases: list[Case] = read_cases(source.results, everything=True)
        self.by_id = {c.case_id: c for c in self.cases}
        self.periods = sorted({c.period for c in self.cases})
        self.alerts: dict[str, Alert] = {}
        self.reports: list[ReportDraft] = []
        self.model_reasons: dict[str, list[dict[str, Any]]] = {}
        self.risk: dict[str, float] = {}
        self.account_scores: dict[str, dict[str, float]] = {}
        self.meta: dict[str, Any] = {}
        self._read_results()
        txns, _ = load_transactions(source.transactions, format=source.format, input_timezone=source.input_timezone)
        txns.sort(key=lambda t: (t.timestamp, t.transaction_id))
        self.txns: dict[str, Transaction] = {t.transaction_id: t for t in txns}
        self.ordered = txns
        self.times = [t.timestamp.timestamp() for t in txns]
        self.positions = {t.transaction_id: i for i, t in enumerate(txns)}
        self._scorer: Any = False  # not loaded yet
        self.by_account: dict[str, list[str]] = defaultdict(list)
        for t in txns:
            self.by_account[t.sender_account].append(t.transaction_id)
            if t.receiver_account != t.sender_account:
                self.by_account[t.receiver_account].append(t.transaction_id)

    def _read_results(self) -> None:
        with open_text(self.source.results) as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                if not self.meta and row.get("meta"):
                    self.meta = dict(row["meta"])
                tid = row.get("transaction_id")
                if tid is not None:
                    self.risk[tid] = float(row.get("risk_score") or 0.0)
                    if row.get("account_scores"):
                        self.account_scores[tid] = row["account_scores"]
                for a in row.get("alerts") or ():
                    alert = Alert.model_validate(a)
                    self.alerts.setdefault(alert.alert_id, alert)
                for r in row.get("reports") or ():
                    self.reports.append(ReportDraft.model_validate(r))
                reasons = [r for r in row.get("reasons") or () if str(r.get("code", "")).startswith("model")]
                if reasons and tid is not None:
                    self.model_reasons[tid] = reasons

    # --- one case ------------------------------------------------------------------------------------------------

    def case_transactions(self, case: Case) -> list[Transaction]:
        """The case's transactions found in the input, in time order."""
        found = [self.txns[t] for t in case.transaction_ids if t in self.txns]
        return sorted(found, key=lambda t: (t.timestamp, t.transaction_id))

    def case_alerts(self, case: Case) -> list[Alert]:
        return [self.alerts[a] for a in case.alert_ids if a in self.alerts]

    def case_reports(self, case: Case) -> list[ReportDraft]:
        tids = set(case.transaction_ids)
        return [r for r in self.reports if r.customer_account == case.account or tids.intersection(r.transaction_ids)]

    def evidence(self, case: Case) -> list[dict[str, Any]]:
        """Each typology hit of the case (typology, score, accounts, reasons zh/en), strongest first."""
        return [{"alert_id": a.alert_id, "typology": a.typology, "score": a.score, "accounts": a.accounts,
                 "transactions": len(a.transaction_ids), "reasons": [r.model_dump() for r in a.reasons]}
                for a in sorted(self.case_alerts(case), key=lambda a: (-a.score, a.alert_id))]

    def model_evidence(self, case: Case, limit: int = 5) -> list[dict[str, Any]]:
        """The model's reasons on the case's highest-risk transactions (the notable feature values the scorer
        names, zh and en), highest risk first, at most ``limit``."""
        scored = sorted((t for t in case.transaction_ids if t in self.model_reasons),
                        key=lambda t: (-self.risk.get(t, 0.0), t))
        return [{"transaction_id": t, "risk_score": self.risk.get(t, 0.0), "reasons": self.model_reasons[t]}
                for t in scored[:limit]]

    def account_scorer(self) -> Any:
        """The shipped bundle's :class:`~sectorflow_aml.account_scorer.AccountScorer` when it is the bundle that
        scored the run (``meta.bundle_sha256``), else ``None``; loaded once."""
        if self._scorer is False:
            self._scorer = None
            from ..account_scorer import AccountScorer, has_account_model
            from ..plugin import BUNDLE_DIR

            if (BUNDLE_DIR / "manifest.json").is_file() and self.meta.get("bundle_sha256"):
                bundle = load_bundle(BUNDLE_DIR)
                if bundle.sha256 == self.meta["bundle_sha256"] and has_account_model(bundle):
                    self._scorer = AccountScorer(bundle)
        return self._scorer

    def contributions(self, case: Case) -> dict[str, Any]:
        """The account model's top feature contributions for ``case``
        (:func:`~sectorflow_aml.workbench.contributions.case_contributions`)."""
        return case_contributions(self.account_scorer(), self.ordered, self.times, self.positions,
                                  self.account_scores, case.account, case.transaction_ids, case.model_score)

    def graph(self, case: Case) -> dict[str, Any]:
        """The case's fund-flow graph as JSON-ready data: ``nodes`` (``id``, ``role``: ``subject``, ``typology``
        (an account of one of its alerts) or ``counterparty``) and ``edges`` (one per transfer: ``id``, ``source``,
        ``target``, ``amount``, ``currency``, ``time`` ISO UTC, ``path``: on an alert's transfers), at most
        :data:`MAX_GRAPH_EDGES` transfers (the highest-risk first), with ``truncated``."""
        txns = self.case_transactions(case)
        on_path = {tid for a in self.case_alerts(case) for tid in a.transaction_ids}
        typology_accounts = {acc for a in self.case_alerts(case) for acc in a.accounts}
        chosen = txns
        if len(txns) > MAX_GRAPH_EDGES:
            keep = sorted(txns, key=lambda t: (t.transaction_id not in on_path, -self.risk.get(t.transaction_id, 0.0),
                                               t.transaction_id))[:MAX_GRAPH_EDGES]
            chosen = sorted(keep, key=lambda t: (t.timestamp, t.transaction_id))
        nodes: dict[str, str] = {case.account: "subject"}
        for acc in typology_accounts:
            nodes.setdefault(acc, "typology")
        edges = []
        for t in chosen:
            for acc in (t.sender_account, t.receiver_account):
                nodes.setdefault(acc, "counterparty")
            edges.append(edge_of(t, t.transaction_id in on_path))
        return {"nodes": [{"id": n, "role": r} for n, r in nodes.items()], "edges": edges,
                "truncated": max(0, len(txns) - len(chosen))}

    def expand(self, case: Case, account: str) -> dict[str, Any]:
        """``account``'s other transfers in the case's period (not already on the case), the latest
        :data:`MAX_EXPAND`: the same node and edge shapes as :meth:`graph`."""
        mine = set(case.transaction_ids)
        others = [self.txns[t] for t in self.by_account.get(account, ()) if t not in mine
                  and self._period(self.txns[t]) == case.period]
        others = others[-MAX_EXPAND:]
        nodes = {acc for t in others for acc in (t.sender_account, t.receiver_account)}
        return {"nodes": [{"id": n, "role": "counterparty"} for n in sorted(nodes)],
                "edges": [edge_of(t, False) for t in others]}

    def _period(self, txn: Transaction) -> str:
        """The case period of ``txn``: the cases' kind (month ``2017-01``, week ``2017-W03`` or day), in UTC."""
        sample = self.periods[0] if self.periods else "0000-00"
        ts = txn.timestamp
        if "W" in sample:
            iso = ts.isocalendar()
            return f"{iso[0]:04d}-W{iso[1]:02d}"
        return ts.date().isoformat() if len(sample) == 10 else f"{ts.year:04d}-{ts.month:02d}"


def edge_of(t: Transaction, path: bool) -> dict[str, Any]:
    return {"id": t.transaction_id, "source": t.sender_account, "target": t.receiver_account,
            "amount": float(t.amount), "currency": t.currency, "time": t.timestamp.isoformat(),
            "channel": str(t.channel.value), "path": path}


class Catalogue:
    """The tenants' :class:`TenantData`, each loaded on first use (thread-safe)."""

    def __init__(self, sources: list[Source]) -> None:
        self.sources = {s.tenant: s for s in sources}
        if len(self.sources) != len(sources):
            raise ConfigError("[web.aml] sources names a tenant twice; give each tenant one results file.")
        self._loaded: dict[str, TenantData] = {}
        self._locks = {tenant: threading.Lock() for tenant in self.sources}  # one tenant's read never waits on another's

    def preload(self) -> None:
        """Load every tenant's data (in a background thread at start); a source that fails is logged and raises
        again at its first page."""
        for tenant in self.sources:
            try:
                self.get(tenant)
            except SectorflowError as exc:
                log.warning("workbench: tenant %s not loaded: %s", tenant, exc)

    def get(self, tenant: str) -> TenantData | None:
        """The tenant's data, or ``None`` when no source is configured for it."""
        if tenant not in self.sources:
            return None
        with self._locks[tenant]:
            if tenant not in self._loaded:
                self._loaded[tenant] = TenantData(self.sources[tenant])
            return self._loaded[tenant]
