"""Account-level evaluation of ``sectorflow run aml`` results against account labels (``sectorflow aml evaluate``).

An account's score is the max of its ``account_scores`` over the results (:func:`account_scores_of`); labelled
accounts that never appear score 0. Metrics (:func:`evaluate_scores`, numpy only, from :mod:`sectorflow_aml.metrics`):

- ``average_precision``, ``precision_at_k`` (K = labelled laundering accounts), ``recall_at_1pct_fpr``, base rate;
- ``budget``: each calendar month, the ``budget_share`` (1 %) highest-scored active accounts of the month (active:
  named in an ``account_scores`` that month) are flagged; its precision (flagged account-months of laundering
  accounts) and recall (laundering accounts flagged in at least one month). Needs the transactions' times:
  ``transactions=`` (the run's input); without them the whole run is one period;
- ``alert_rate``: the share of active accounts named by an alert or by a flagged result;
- ``recall_by_typology``: per labelled typology, the share of its accounts in the top K.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import InvalidInputError

from .labels import Labels, check_overlap
from .metrics import average_precision, precision_at_k, recall_at_fpr


def read_results(path: str | Path) -> Iterable[dict[str, Any]]:
    """The JSON-lines results of ``sectorflow run aml``, one dict per line.

    Raises:
        InvalidInputError: a missing file or a line that is not a JSON object (names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"Results file {path} does not exist: give the --output of `sectorflow run aml`.")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}: line {number} is not JSON ({exc.msg}).",
                                        details={"line": number}) from None
            if not isinstance(item, dict):
                raise InvalidInputError(f"{path}: line {number} is not a JSON object.", details={"line": number})
            yield item


def account_scores_of(results: Iterable[Mapping[str, Any]], months: Mapping[str, int] | None = None
                      ) -> tuple[dict[str, float], dict[tuple[str, int], float], set[str]]:
    """``(account -> max score, (account, month) -> max score, alerted accounts)`` over results.

    ``months``: transaction id -> month number; without it every result is month 0.
    """
    best: dict[str, float] = {}
    period: dict[tuple[str, int], float] = {}
    alerted: set[str] = set()
    for item in results:
        scores = item.get("account_scores") or {}
        month = months.get(item.get("transaction_id"), 0) if months else 0
        for account, score in scores.items():
            score = float(score)
            if score > best.get(account, -1.0):
                best[account] = score
            key = (account, month)
            if score > period.get(key, -1.0):
                period[key] = score
        if item.get("alert"):
            alerted.update(scores)
            for alert in item.get("alerts") or ():
                alerted.update(alert.get("accounts") or ())
    return best, period, alerted


def evaluate_scores(best: Mapping[str, float], period: Mapping[tuple[str, int], float], alerted: set[str],
                    labels: Labels, budget_share: float = 0.01) -> dict[str, Any]:
    """The metrics of the module docstring."""
    accounts = sorted(labels.label)
    y = np.asarray([labels.label[a] for a in accounts], dtype=np.int64)
    s = np.asarray([best.get(a, 0.0) for a in accounts], dtype=np.float64)
    k = int(y.sum())
    out: dict[str, Any] = {
        "labelled_accounts": len(accounts), "laundering_accounts": k,
        "scored_accounts": sum(1 for a in accounts if a in best), "base_rate": round(k / max(1, len(accounts)), 4),
        "average_precision": _r(average_precision(s, y)), "precision_at_k": _r(precision_at_k(s, y, k)), "k": k,
        "recall_at_1pct_fpr": _r(recall_at_fpr(s, y, 0.01)),
    }
    active = set(best)
    out["alert_rate"] = round(len(alerted & active) / max(1, len(active)), 4)
    out["alerted_accounts"] = len(alerted & active)
    by_month: dict[int, list[tuple[float, str]]] = {}
    for (account, month), score in period.items():
        by_month.setdefault(month, []).append((score, account))
    flagged_pos: set[str] = set()
    tp = n = 0
    for month, items in sorted(by_month.items()):
        items.sort(key=lambda x: (-x[0], x[1]))
        budget = max(1, math.floor(budget_share * len(items) + 1e-9))  # rounded down, as the case book's budget
        for _, account in items[:budget]:
            n += 1
            if labels.label.get(account) == 1:
                tp += 1
                flagged_pos.add(account)
    out["budget"] = {"share": budget_share, "periods": len(by_month), "flagged_account_periods": n,
                     "precision": _r(tp / n if n else float("nan")),
                     "recall": _r(len(flagged_pos) / k if k else float("nan"))}
    top = {accounts[i] for i in np.argsort(-s, kind="mergesort")[:k]}
    per: dict[str, list[int]] = {}
    for account, typs in labels.typologies.items():
        for t in typs:
            hit = per.setdefault(t, [0, 0])
            hit[0] += account in top
            hit[1] += 1
    out["recall_by_typology"] = {t: {"recall_at_k": round(h / n_t, 4), "accounts": n_t}
                                 for t, (h, n_t) in sorted(per.items())}
    return out


def _r(x: float) -> float | None:
    return None if x != x else round(float(x), 4)


def evaluate_results(results: str | Path, labels: Labels, months: Mapping[str, int] | None = None,
                     budget_share: float = 0.01) -> dict[str, Any]:
    """:func:`evaluate_scores` of a results file (see the module docstring)."""
    best, period, alerted = account_scores_of(read_results(results), months)
    if not best:
        raise InvalidInputError(f"{results} holds no account_scores: run `sectorflow run aml` with a bundle that has an "
                                "account model (the shipped one, or one from `sectorflow aml train`).")
    check_overlap(labels, best, str(results))
    return evaluate_scores(best, period, alerted, labels, budget_share)
