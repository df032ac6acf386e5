"""The account model's top feature contributions for a case, computed when its page is opened (one row, cheap).

**Which row.** The row the case's model score comes from (:mod:`~sectorflow_aml.cases`, ``model_score``): the
case's account's feature row at its **latest** transaction in the case that the account model scored, when that
score is the case's model score (a book reading each period's close, ``case_model_score="close"``); otherwise at the
transaction where the model scored the account highest in the case (the earliest such transaction on a tie)
(``account_scores`` of the results; latest and earliest in the workbench's time order). The row is rebuilt by
replaying the input's transactions from ``lookback + 1 day`` before that transaction up to it (in time order, ties
by id, as the workbench loads them) through a fresh window and :class:`~sectorflow_aml.account_features.
AccountFeatureExtractor`: the features are window-exact (docs/aml.md "Features"), so this is the row the run
scored, provided the run read the input in time order (a test checks the rebuilt row's score against the results).

**Contributions.** For a LightGBM model, ``Booster.predict(x, pred_contrib=True)``: TreeSHAP, the exact Shapley
values of the tree ensemble's raw margin (log-odds), one per feature plus the bias (expected margin) column; they sum
to the raw margin of the row (Lundberg et al. 2020, "From local explanations to global understanding with
explainable AI for trees", Nature Machine Intelligence 2:56-67; LightGBM docs, ``Booster.predict``
``pred_contrib``). The calibrated score is ``sigmoid(a * margin + b)`` (:mod:`~sectorflow_aml.account_scorer`), so
a positive contribution raises the score.

For the MLP bundle (``model_kind: "mlp"``, :mod:`~sectorflow_aml.account_mlp`), gradient x input
(:func:`mlp_contributions`; Shrikumar et al. 2017, "Learning important features through propagating activation
differences", ICML, discuss it as a baseline): the network is ReLU, so at the row it is linear in its standardised
input ``z`` (``z = 0`` is the training mean of the transformed features), ``margin = g . z + c``; ``g_i * z_i`` is
feature ``i``'s contribution relative to the mean account and ``c`` the bias column, so the contributions sum to
the margin exactly as well; unlike TreeSHAP they are local (the linear piece the row falls in), not Shapley values.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from ..account_features import ACCOUNT_FEATURES, DAY, AccountFeatureExtractor
from ..schema import Transaction
from ..window import TransactionWindow

FEATURE_DOCS: dict[str, tuple[str, str]] = {
    "n_tin": ("transfers received in the window", "窗口内收到的转账笔数"),
    "n_tout": ("transfers sent in the window", "窗口内发出的转账笔数"),
    "n_cin": ("cash deposits in the window", "窗口内现金存入笔数"),
    "n_cout": ("cash withdrawals, spending and self-transfers in the window", "窗口内现金支取、消费及自转笔数"),
    "deg_in": ("distinct accounts that paid it", "不同付款账户数"),
    "deg_out": ("distinct accounts it paid", "不同收款账户数"),
    "deg_in_per_tin": ("distinct payers per transfer received", "每笔转入对应的不同付款方数"),
    "deg_out_per_tout": ("distinct payees per transfer sent", "每笔转出对应的不同收款方数"),
    "one_off_in_share": ("share of payers seen only once", "仅出现一次的付款方占比"),
    "one_off_out_share": ("share of payees paid only once", "仅付款一次的收款方占比"),
    "reciprocal_share": ("share of counterparties both paid and paid by", "既收又付的对手方占比"),
    "log_tin_vs_cout": ("mean log amount in vs spending", "转入与支出的平均对数金额差"),
    "log_tout_vs_tin": ("mean log amount out vs in", "转出与转入的平均对数金额差"),
    "log_tout_vs_cout": ("mean log amount out vs spending", "转出与支出的平均对数金额差"),
    "log_cin_vs_tin": ("mean log cash deposit vs transfer in", "现金存入与转入的平均对数金额差"),
    "log_tin_vs_peers": ("its transfers in vs all accounts' transfers (log)", "转入金额相对全体账户转账（对数）"),
    "log_tout_vs_peers": ("its transfers out vs all accounts' transfers (log)", "转出金额相对全体账户转账（对数）"),
    "std_log_tin": ("spread of log amounts in", "转入对数金额的标准差"),
    "std_log_tout": ("spread of log amounts out", "转出对数金额的标准差"),
    "near_equal_in": ("concentration of near-equal amounts in (5 % bins)", "转入金额相近程度（5%区间）"),
    "near_equal_out": ("concentration of near-equal amounts out (5 % bins)", "转出金额相近程度（5%区间）"),
    "pass_through": ("transfers out / money in", "转出金额 / 流入金额"),
    "transfer_out_share": ("share of outflow sent as transfers", "流出中转账的占比"),
    "transfer_in_share": ("share of inflow received as transfers", "流入中转账的占比"),
    "residual_share": ("(in - out) / (in + out): what stays on the account", "（流入-流出）/（流入+流出）：留存比例"),
    "tout_count_share": ("share of outgoing events that are transfers", "支出笔数中转账的占比"),
    "active_days": ("days with any activity", "有交易的天数"),
    "transfer_days": ("days with transfers", "有转账的天数"),
    "transfer_span_days": ("days from first to last transfer", "首末笔转账相隔天数"),
    "burst_max_day": ("most transfers on one day", "单日最多转账笔数"),
    "burst_today": ("transactions today", "当天交易笔数"),
    "tout_today": ("transfers sent today", "当天转出笔数"),
    "tin_today": ("transfers received today", "当天转入笔数"),
    "fast_forward_share": ("share of transfers out within a day of a transfer in", "转入后一天内转出的占比"),
    "equal_forward_share": ("share of transfers out within a day and 10 % of a transfer in",
                            "一天内以相近金额（10%内）转出的占比"),
    "cp_deg_in": ("the counterparty's distinct payers (two hops)", "对手方的不同付款方数（两跳）"),
    "cp_deg_out": ("the counterparty's distinct payees (two hops)", "对手方的不同收款方数（两跳）"),
    "cp_pass_through": ("the counterparty's pass-through (two hops)", "对手方的转出/流入比（两跳）"),
}
"""A short English and Chinese description of each of :data:`~sectorflow_aml.account_features.ACCOUNT_FEATURES`
(docs/aml.md "Features")."""

TOP = 5


def lightgbm_contributions(booster: Any, row: np.ndarray) -> np.ndarray:
    """TreeSHAP contributions of one feature row (see the module docstring).

    Args:
        booster: a ``lightgbm.Booster`` (binary objective).
        row: float32 ``[n_features]``.

    Returns:
        float64 ``[n_features + 1]``: per-feature contributions in log-odds, then the bias; their sum is the row's
        raw margin (``predict(raw_score=True)``).
    """
    out = booster.predict(np.asarray(row, dtype=np.float32).reshape(1, -1), pred_contrib=True, num_threads=1)
    return np.asarray(out, dtype=np.float64).reshape(-1)


def mlp_contributions(margin: Any, row: np.ndarray) -> np.ndarray:
    """Gradient x input of one row for an :class:`~sectorflow_aml.account_mlp.MLPMargin` (module docstring).

    Args:
        margin: the MLP's margin (ReLU hidden layers, one output); ``row``: ``[n_features]``.

    Returns:
        float64 ``[n_features + 1]``: ``g_i * z_i`` per feature, then the bias ``c``; the sum is the margin at the
        row computed in float64 (the bundle's float32 forward agrees to about 1e-5).
    """
    from ..account_mlp import transform

    z = ((transform(np.asarray(row, np.float32).reshape(1, -1)) - margin.mean) / margin.std)[0].astype(np.float64)
    h = z
    masks = []
    last = len(margin.layers) - 1
    for i, (w, b) in enumerate(margin.layers):
        h = h @ w.astype(np.float64) + b.astype(np.float64)
        if i < last:
            masks.append(h > 0)
            h = np.where(masks[-1], h, 0.0)
    g = margin.layers[last][0].astype(np.float64)[:, 0]
    for i in range(last - 1, -1, -1):
        g = margin.layers[i][0].astype(np.float64) @ (g * masks[i])
    contrib = g * z
    return np.append(contrib, float(h[0]) - contrib.sum())


def top_contributions(contrib: np.ndarray, row: np.ndarray, limit: int = TOP) -> list[dict[str, Any]]:
    """The ``limit`` features of largest absolute contribution: ``{"feature", "value", "contribution", "en",
    "zh"}``, largest first (ties by feature order)."""
    order = sorted(range(len(ACCOUNT_FEATURES)), key=lambda i: (-abs(float(contrib[i])), i))[:limit]
    return [{"feature": ACCOUNT_FEATURES[i], "value": float(row[i]), "contribution": float(contrib[i]),
             "en": FEATURE_DOCS[ACCOUNT_FEATURES[i]][0], "zh": FEATURE_DOCS[ACCOUNT_FEATURES[i]][1]} for i in order]


def replay_row(ordered: list[Transaction], times: list[float], index: int, account: str,
               lookback_days: float) -> np.ndarray | None:
    """``account``'s feature row right after ``ordered[index]``, replaying from ``lookback + 1 day`` before it.

    Args:
        ordered: the input's transactions in time order; ``times`` their POSIX timestamps (seconds).
        index: the position of the transaction in ``ordered``.

    Returns:
        float32 ``[38]``, or ``None`` when the transaction does not touch ``account``.
    """
    start = bisect.bisect_left(times, times[index] - lookback_days * DAY - DAY)
    window = TransactionWindow(lookback_days=lookback_days)
    extractor = AccountFeatureExtractor(window.lookback)
    found = None
    for txn in ordered[start:index + 1]:
        if txn.transaction_id in window.ids:
            continue  # a repeated id is not counted by the pipeline either
        edge = window.add(txn)
        found = extractor.rows(edge, window)
    for acc, row in found or ():
        if acc == account:
            return np.asarray(row, dtype=np.float32)
    return None


def scored_row(positions: dict[str, int], account_scores: dict[str, dict[str, float]], account: str,
               transaction_ids: list[str], model_score: float | None = None) -> tuple[str, float] | None:
    """``(transaction id, score)`` of the row a case's model score was read at (the module docstring, "Which row"):
    the latest scored transaction when its score is the case's ``model_score`` and the highest is not (a book
    reading each period's close), else the highest-scored one (the earliest on a tie); ``None`` when the model
    scored none of ``transaction_ids`` found in ``positions``."""
    best = latest = None
    for tid in transaction_ids:
        score = (account_scores.get(tid) or {}).get(account)
        if score is not None and tid in positions:
            if best is None or (score, -positions[tid]) > best[:2]:
                best = (score, -positions[tid], tid)
            if latest is None or positions[tid] > latest[0]:
                latest = (positions[tid], score, tid)
    if best is None or latest is None:
        return None
    if model_score is not None and latest[1] == model_score and best[0] != model_score:
        return latest[2], latest[1]  # a period-close score (case_model_score="close")
    return best[2], best[0]


def case_contributions(scorer: Any, ordered: list[Transaction], times: list[float], positions: dict[str, int],
                       account_scores: dict[str, dict[str, float]], account: str,
                       transaction_ids: list[str], model_score: float | None = None) -> dict[str, Any]:
    """The top contributions of a case (see the module docstring).

    Args:
        scorer: the :class:`~sectorflow_aml.account_scorer.AccountScorer` of the bundle that scored the run, or
            ``None``.
        positions: transaction id -> index in ``ordered``.
        account_scores: transaction id -> the results' ``account_scores``.
        account, transaction_ids: the case's account and transactions.
        model_score: the case's model score (tells a period-close score from the highest; ``None``: the highest).

    Returns:
        ``{"available": False, "why": str}``, or ``{"available": True, "method" ("TreeSHAP" or "gradient x
        input"), "transaction_id", "score" (the results'), "rebuilt_score", "margin", "bias", "top": [...]
        (:func:`top_contributions`), "row" (float32 ``[38]``)}``.
    """
    if scorer is None:
        return {"available": False, "why": "no account model: the run was scored without one, or its bundle is not "
                                           "the one this workbench loads"}
    booster = getattr(scorer, "booster", None)
    mlp = getattr(scorer, "_margin", None) if booster is None else None
    if booster is None and not hasattr(mlp, "layers"):
        return {"available": False, "why": "feature contributions are not available for this model kind"}
    found = scored_row(positions, account_scores, account, transaction_ids, model_score)
    if found is None:
        return {"available": False, "why": "the account model scored none of the case's transactions found in the "
                                           "input"}
    tid, score = found
    row = replay_row(ordered, times, positions[tid], account, scorer.lookback_days)
    if row is None:
        return {"available": False, "why": f"transaction {tid} does not touch account {account}"}
    if booster is not None:
        contrib, method = lightgbm_contributions(booster, row), "TreeSHAP"
    else:
        contrib, method = mlp_contributions(mlp, row), "gradient x input"
    return {"available": True, "method": method, "transaction_id": tid, "score": float(score),
            "rebuilt_score": float(scorer.score_matrix(row.reshape(1, -1))[0]), "margin": float(contrib.sum()),
            "bias": float(contrib[-1]), "top": top_contributions(contrib, row), "row": row}
