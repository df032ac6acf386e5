"""Account-level evaluation of ``sectorflow run aml`` results against account labels (``sectorflow aml evaluate``).

An account's score is the max of its ``account_scores`` over the results (:func:`account_scores_of`; with
``account_score="close"``, for a bundle trained on month-end rows, the max over its calendar months of its
**month-close score**, its ``account_scores`` entry after its last transaction of the month: where such a bundle's
cases are read, docs/aml.md "The case score: highest or month close"); labelled accounts that never appear score 0.
Months are those of the run's input (``--transactions``); without it the whole run is one period. Metrics
(:func:`evaluate_scores`, numpy only, from :mod:`sectorflow_aml.metrics`):

- ``average_precision``, ``precision_at_k`` (K = labelled laundering accounts), ``recall_at_1pct_fpr``, base rate;
- ``budget``: each calendar month, the ``budget_share`` (1 %) highest-scored active accounts of the month (active:
  named in an ``account_scores`` that month) are flagged; its precision (flagged account-months of laundering
  accounts) and recall (laundering accounts flagged in at least one month). Needs the transactions' times:
  ``transactions=`` (the run's input); without them the whole run is one period;
- ``alert_rate``: the share of active accounts named by a typology alert or by a ``flagged`` result (rule or model
  hits: evidence, far more than the cases within the budget; results written before ``flagged`` existed: ``alert``);
- ``recall_by_typology``: per labelled typology, the share of its accounts in the top K.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sectorflow import ConfigError, InvalidInputError, open_text

from .labels import MIN_LABEL_OVERLAP, Labels, LabelsError, check_overlap
from .metrics import average_precision, precision_at_k, recall_at_fpr


def read_results(path: str | Path) -> Iterable[dict[str, Any]]:
    """The JSON-lines results of ``sectorflow run aml``, one dict per line; a ``.gz`` file is decompressed (opened by
    ``sectorflow.open_text``, as ``sectorflow aml cases|alerts|reports`` open results).

    Raises:
        InvalidInputError: a missing file or a line that is not a JSON object (names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"Results file {path} does not exist: give the --output of `sectorflow run aml`.")
    with open_text(path, "utf-8") as handle:
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


ACCOUNT_SCORES = ("max", "close")
"""How :func:`account_scores_of` reads an account's scores (``sectorflow aml evaluate --account-score``)."""


def account_scores_of(results: Iterable[Mapping[str, Any]], months: Mapping[str, int] | None = None,
                      account_score: str = "max",
                      ) -> tuple[dict[str, float], dict[tuple[str, int], float], set[str]]:
    """``(account -> score, (account, month) -> period score, alerted accounts)`` over results, in their order.

    ``account_score="max"``: the period score is the max of the account's scores in the month, the account's score
    the max over all; ``"close"``: the period score is the account's last score of the month (its month-close score),
    the account's score the max of those. ``months``: transaction id -> month number; without it every result is
    month 0 (one period).

    Raises:
        ConfigError: an unknown ``account_score``.
    """
    if account_score not in ACCOUNT_SCORES:
        raise ConfigError(f"--account-score {account_score!r}: give {' or '.join(ACCOUNT_SCORES)}.")
    close = account_score == "close"
    period: dict[tuple[str, int], float] = {}
    alerted: set[str] = set()
    for item in results:
        scores = item.get("account_scores") or {}
        month = months.get(item.get("transaction_id"), 0) if months else 0
        for account, score in scores.items():
            score = float(score)
            key = (account, month)
            if close or score > period.get(key, -1.0):
                period[key] = score
        if item.get("flagged") if "flagged" in item else item.get("alert"):  # a rule or model hit (older results:
            # ``alert`` meant that)
            alerted.update(scores)
            for alert in item.get("alerts") or ():
                alerted.update(alert.get("accounts") or ())
    best: dict[str, float] = {}
    for (account, _), score in period.items():
        if score > best.get(account, -1.0):
            best[account] = score
    return best, period, alerted


def case_reading(results: Iterable[Mapping[str, Any]]) -> str | None:
    """How the run's case book read the account scores (its ``case_model_score``): ``"close"``, ``"max"``, or
    ``None`` when the results cannot tell (no case's account score ever fell in its period, or no cases).

    Results do not record the option, but their case updates show it: a case's ``model_score`` after a transaction
    of its account is the account's score then (``close``, a bundle trained with ``--points month_end``) or the
    highest score of the account in the period so far (``max``); the two differ once a score falls below the
    period's highest. ``sectorflow aml evaluate`` reads accounts the same way by default.
    """
    highest: dict[str, float] = {}
    seen_close = seen_max = False
    for item in results:
        scores = item.get("account_scores") or {}
        for case in item.get("cases") or ():
            account, model_score = case.get("account"), case.get("model_score")
            if account not in scores or model_score is None:
                continue  # an update of an alert's subject, or no account model yet
            now = float(scores[account])
            top = highest[case["case_id"]] = max(highest.get(case["case_id"], now), now)
            if top > now + 1e-9:
                seen_close |= abs(float(model_score) - now) <= 1e-9
                seen_max |= abs(float(model_score) - top) <= 1e-9
    if seen_max:
        return "max"
    return "close" if seen_close else None


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


def transaction_index(path: str | Path, fmt: str | None = None) -> dict[str, tuple[int, str, str]]:
    """``{transaction_id: (month number, sender account, receiver account)}`` of a transaction file read as
    ``sectorflow run aml`` reads it (``fmt`` guessed when ``None``; the first row of a repeated id, as the run
    counts it). Month number: ``year * 12 + month - 1`` of the UTC timestamp."""
    from .loaders import guess_format, load_transactions

    txns, _ = load_transactions(path, format=fmt or guess_format(path))
    index: dict[str, tuple[int, str, str]] = {}
    for t in txns:
        index.setdefault(t.transaction_id, (t.timestamp.year * 12 + t.timestamp.month - 1, t.sender_account,
                                            t.receiver_account))
    return index


def check_results_match(results: Iterable[Mapping[str, Any]], index: Mapping[str, tuple[int, str, str]],
                        results_name: str, transactions_name: str) -> int:
    """Refuse results that are not those of the transaction file ``index`` was read from; returns the number of
    results checked.

    Transaction ids alone do not tell (AMLGentex numbers its rows 0..N-1 and AMLSim's reader numbers rows, so every
    file of a generator has the same ids; account ids 0-3999 repeat across AMLGentex banks too): each result's
    ``transaction_id`` must be in the file and the accounts its ``account_scores`` name must be that transaction's
    sender or receiver, as ``sectorflow aml explain`` checks an alert's transactions.

    Raises:
        InvalidInputError: a result whose transaction is not in the file or involves other accounts (names the
            first few and how many).
    """
    checked, missing, foreign = 0, [], []
    for item in results:
        tid = item.get("transaction_id")
        scores = item.get("account_scores") or {}
        if not scores:
            continue  # a repeated id's result, or a run without the account model: nothing to compare
        checked += 1
        row = index.get(tid) if isinstance(tid, str) else None
        if row is None:
            missing.append(tid)
        elif any(account not in (row[1], row[2]) for account in scores):
            foreign.append((tid, sorted(scores), row[1], row[2]))
    if missing or foreign:
        parts = []
        if missing:
            parts.append(f"{len(missing):,} of its {checked:,} results name transactions that are not in it "
                         f"(e.g. {', '.join(map(str, missing[:3]))})")
        if foreign:
            tid, named, sender, receiver = foreign[0]
            parts.append(f"{len(foreign):,} of its {checked:,} results score other accounts than the file's "
                         f"transaction of that id (e.g. transaction {tid}: the results score account(s) "
                         f"{', '.join(named)}, the file has {sender} -> {receiver})")
        raise InvalidInputError(
            f"{results_name} are not the results of --transactions {transactions_name}: {'; '.join(parts)}. Give the "
            "transaction file (and --format) that `sectorflow run aml` read for these results, or the results of "
            "this file.", details={"missing": [str(m) for m in missing[:20]],
                                   "foreign": [f[0] for f in foreign[:20]], "checked": checked})
    return checked


def evaluate_results(results: str | Path, labels: Labels, months: Mapping[str, int] | None = None,
                     budget_share: float = 0.01,
                     transactions: Mapping[str, tuple[int, str, str]] | None = None,
                     transactions_name: str = "the transactions", account_score: str = "max") -> dict[str, Any]:
    """:func:`evaluate_scores` of a results file (see the module docstring).

    ``transactions``: the run's input as :func:`transaction_index` reads it (named ``transactions_name`` in
    messages): the results are checked against it (:func:`check_results_match`) and its months are the budget's
    periods (``months`` is then ignored). ``account_score``: as :func:`account_scores_of`.

    Raises:
        ConfigError: an unknown ``account_score``. InvalidInputError: a missing or malformed results file, results
            without ``account_scores``, results of another transaction file. LabelsError: fewer than
            :data:`~sectorflow_aml.labels.MIN_LABEL_OVERLAP` of the labelled accounts are among the results'
            accounts (labels of another dataset).
    """
    if transactions is not None:
        check_results_match(read_results(results), transactions, str(results), transactions_name)
        months = {tid: row[0] for tid, row in transactions.items()}
    best, period, alerted = account_scores_of(read_results(results), months, account_score)
    if not best:
        raise InvalidInputError(f"{results} holds no account_scores: run `sectorflow run aml` with a bundle that has an "
                                "account model (the shipped one, or one from `sectorflow aml train`).")
    found = check_overlap(labels, best, str(results))
    if found < MIN_LABEL_OVERLAP * len(labels):
        raise LabelsError(f"Only {found:,} of the {len(labels):,} accounts of {labels.source or 'the labels'} "
                          f"({100.0 * found / len(labels):.0f} %) appear in {results} ({len(best):,} accounts): are "
                          "these the labels of another dataset? Give the labels of the input the run read.",
                          details={"labelled": len(labels), "found": found, "results_accounts": len(best)})
    return evaluate_scores(best, period, alerted, labels, budget_share)
