"""The learned scorer opens at most one ``model_risk`` alert per sender/receiver pair per lookback window.

Before, every flagged transfer of a laundering pair opened its own alert and suspicious-report draft (about 3,900
alerts on one AMLSim run), burying the analyst's queue in duplicates.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pytest

from sectorflow import Taskflow
from sectorflow_aml.loaders import load_transactions

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "aml" / "transactions.csv.gz"


@pytest.mark.parametrize("per_transaction", [False, True])
def test_one_model_alert_per_subject_per_window_while_every_transfer_keeps_its_flag(per_transaction):
    """The account model (default) opens one model_risk alert per account and window, naming that account first;
    the per-transaction scorer (``transaction_model=True``) one per sender/receiver pair."""
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    tf = Taskflow("aml", transaction_model=per_transaction)
    threshold = tf.pipeline.scorer.threshold if per_transaction else tf.pipeline.account_threshold
    results = tf(txns)
    by_id = {t.transaction_id: t for t in txns}
    window = timedelta(days=tf.pipeline.lookback_days)
    opened: dict[tuple[str, str], list] = defaultdict(list)
    flagged_by_model = 0
    for result in results:
        txn = by_id[result.transaction_id]
        if result.model_score is not None and result.model_score >= threshold:
            flagged_by_model += 1
            assert result.flagged and any(r.code == "model.risk" for r in result.reasons)
        for alert in result.alerts:
            if alert.typology == "model_risk":
                if per_transaction:
                    opened[(txn.sender_account, txn.receiver_account)].append(txn.timestamp)
                else:  # the flagged account first: its score after this transaction crossed the threshold
                    assert result.account_scores[alert.accounts[0]] == result.model_score >= threshold
                    opened[alert.accounts[0]].append(txn.timestamp)
    assert opened, "the sample has laundering pairs the model flags"
    assert flagged_by_model > sum(len(times) for times in opened.values())  # later transfers were deduplicated
    for times in opened.values():
        times.sort()
        assert all(b - a >= window for a, b in zip(times, times[1:]))
    tf.reset_state()
    assert [r.model_dump() for r in tf(txns)] == [r.model_dump() for r in results]


def test_a_model_reload_keeps_the_window_so_results_equal_an_uninterrupted_run():
    """Hot-swapping the model (``Taskflow.reload``, also the server's reload route) must not forget 30 days of
    history: an uninterrupted run and a run reloaded halfway give the same alerts, scores and report drafts. (The
    first half also checks that a call's suspicious-report drafts list their transactions even when later
    transactions of the same call have moved the window on: they once came out empty in large batches.)"""
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    uninterrupted = Taskflow("aml")
    want = [r.model_dump(exclude={"meta"}) for r in uninterrupted(txns)]
    reloaded = Taskflow("aml")
    half = len(txns) // 2
    got = [r.model_dump(exclude={"meta"}) for r in reloaded(txns[:half])]
    reloaded.reload(reloaded.spec.default_bundle)
    got += [r.model_dump(exclude={"meta"}) for r in reloaded(txns[half:])]
    assert got == want
    assert sum(len(r["alerts"]) for r in want[half:]) > 0  # the second half has alerts that depend on the first
