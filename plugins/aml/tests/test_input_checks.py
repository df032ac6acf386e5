"""Input the pipeline must not take at face value: a repeated transaction id (a retried upload) is not counted twice,
and a transaction that arrives after later ones is kept but flagged, in one batch and one at a time alike."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest
from sectorflow import Taskflow

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


def rec(tid: str, amount: str, hours: float, src: str = "ACC", dst: str = "ACC", channel: str = "cash_deposit"):
    return {"transaction_id": tid, "timestamp": (T0 + timedelta(hours=hours)).isoformat(), "sender_account": src,
            "receiver_account": dst, "amount": amount, "currency": "CNY", "channel": channel}


@pytest.fixture(scope="module")
def tf() -> Taskflow:
    return Taskflow("aml", model=False)


def codes(result) -> list[str]:
    return [r.code for r in result.reasons]


def test_a_retried_upload_is_not_counted_twice(tf: Taskflow, caplog: pytest.LogCaptureFixture) -> None:
    tf.reset_state()
    with caplog.at_level(logging.WARNING, logger="sectorflow_aml"):
        out = tf([rec("d1", "30000", 0), rec("d1", "30000", 0)])  # the same deposit sent twice
    assert [r.reports for r in out] == [[], []]  # 30,000 once: under the RMB 50,000 large-value threshold
    assert codes(out[1]) == ["input.duplicate_id"] and "same content" in out[1].reasons[0].en
    assert out[1].risk_score == 0.0 and not out[1].alert and out[1].model_score is None
    assert "1 transaction(s) repeat an id" in caplog.text
    tf.reset_state()
    (first, second) = tf([rec("d1", "30000", 0), rec("d2", "30000", 1)])  # two real deposits: reported
    assert [d.kind for d in second.reports] == ["large_value"] and codes(second) == []
    tf.reset_state()
    tf(rec("d1", "30000", 0))
    again = tf(rec("d1", "30000", 0))  # across calls (streaming) as well
    assert codes(again) == ["input.duplicate_id"] and again.reports == []


def test_an_id_reused_for_other_content_is_refused_from_the_window_and_named(tf: Taskflow) -> None:
    tf.reset_state()
    out = tf([rec("x", "30000", 0), rec("x", "45000", 1)])
    assert codes(out[1]) == ["input.duplicate_id"]
    assert "different transaction (30000 CNY ACC -> ACC" in out[1].reasons[0].en and out[1].reasons[0].zh
    assert out[1].reports == []


def test_out_of_order_rows_are_kept_and_flagged_the_same_way_in_batch_and_streaming(
        tf: Taskflow, caplog: pytest.LogCaptureFixture) -> None:
    rows = [rec("a", "100", 5, "A", "B", "transfer"), rec("b", "100", 1, "B", "C", "transfer"),
            rec("c", "100", 6, "C", "D", "transfer"), rec("d", "100", 6, "D", "E", "transfer")]
    tf.reset_state()
    with caplog.at_level(logging.WARNING, logger="sectorflow_aml"):
        batch = tf(rows)
    assert [codes(r) for r in batch] == [[], ["input.out_of_order"], [], []]  # equal times are in order
    assert "timed 4.0 h earlier than it" in batch[1].reasons[0].en and "later" not in batch[1].reasons[0].en
    assert "比它早 4.0 小时" in batch[1].reasons[0].zh and "1 transaction(s) arrived after a later one" in caplog.text
    tf.reset_state()
    single = [tf(r) for r in rows]
    assert [(r.transaction_id, codes(r), r.risk_score) for r in single] == \
           [(r.transaction_id, codes(r), r.risk_score) for r in batch]


def test_rows_behind_one_early_row_name_it_in_their_note_and_in_the_warning(
        tf: Taskflow, caplog: pytest.LogCaptureFixture) -> None:
    """One row placed too early puts every later row behind the clock; each of their notes (which rows get one is
    unchanged) names that row, and so does the warning, in batch and one at a time alike."""
    early = rec("z", "100", 30, "Z", "Y", "transfer")  # 2024-03-05T15:00 UTC
    rows = [early] + [rec(f"r{i}", "100", i, f"A{i}", f"B{i}", "transfer") for i in range(1, 6)]
    tf.reset_state()
    with caplog.at_level(logging.WARNING, logger="sectorflow_aml"):
        batch = tf(rows)
    assert [codes(r) for r in batch] == [[]] + [["input.out_of_order"]] * 5
    # r1 is timed 29 h before z, which arrived first: the note says "earlier" (it said "29.0 h later than it")
    assert batch[1].reasons[0].en.startswith("arrived after transaction z (2024-03-05T15:00:00+00:00) although timed "
                                             "29.0 h earlier than it (input out of time order)")
    assert "但时间比它早 29.0 小时" in batch[1].reasons[0].zh
    assert all("if z alone is out of place, move it or correct its time" in r.reasons[0].en for r in batch[1:])
    assert all("交易 z" in r.reasons[0].zh for r in batch[1:])
    assert "5 of them arrived after transaction z, the latest seen" in caplog.text
    tf.reset_state()
    single = [tf(r) for r in rows]
    assert [[x.en for x in r.reasons] for r in single] == [[x.en for x in r.reasons] for r in batch]
