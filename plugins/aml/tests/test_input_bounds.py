"""Out-of-range inputs are refused at validation, before the stateful pipeline touches its window.

Found by a fresh-user test: an amount of 1e300 or a timestamp in year 9999 used to enter the per-account window and
then fail every later call for that account (or raise an untyped OverflowError, a 500 over HTTP).
"""

from __future__ import annotations

import pytest
from sectorflow import InvalidInputError, Taskflow


def tx(tid: str, sender: str, receiver: str, amount: str, when: str = "2026-03-02T10:00:00", **extra) -> dict:
    return {"transaction_id": tid, "timestamp": when, "sender_account": sender, "receiver_account": receiver,
            "amount": amount, "currency": "CNY", **extra}


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("amount", "1e300", "less than"),
    ("amount", "1e-300", "decimal places"),
    ("amount", "NaN", "finite"),
    ("timestamp", "9999-12-31T23:59:59", "outside"),
    ("timestamp", "0001-01-01T00:00:00+14:00", "cannot be converted to UTC"),
])
def test_out_of_range_values_are_invalid_input_naming_row_and_field(field, value, reason):
    tf = Taskflow("aml", model=False)
    bad = {**tx("t2", "X", "Y", "100"), field: value}
    with pytest.raises(InvalidInputError) as caught:
        tf([tx("t1", "A", "B", "100"), bad])
    (problem,) = caught.value.details
    assert (problem["row"], problem["field"]) == (2, field)
    assert reason in problem["reason"]


def test_a_refused_call_leaves_the_window_as_it_was():
    """Same later results as a Taskflow that never saw the refused call: nothing of it entered the state."""
    poisoned, clean = Taskflow("aml"), Taskflow("aml")
    deposit = tx("g1", "D", "D-cash", "49900", channel="cash_deposit")
    with pytest.raises(InvalidInputError):
        poisoned([deposit, tx("huge", "D", "E", "1e300")])
    later = [tx("g2", "D", "D-cash", "49800", "2026-03-02T11:00:00", channel="cash_deposit"),
             tx("n1", "D", "E", "120", "2026-03-02T12:00:00")]
    got = [r.model_dump(exclude={"meta"}) for r in poisoned(later)]
    want = [r.model_dump(exclude={"meta"}) for r in clean(later)]
    assert got == want
    assert "structuring" not in got[0]["typologies"]  # one deposit of 49,800 alone is no structuring


@pytest.mark.parametrize("value", ["abc", -1, 0, True, 10_000])
def test_a_bad_lookback_is_a_config_error_naming_the_option(value):
    from sectorflow import ConfigError

    with pytest.raises(ConfigError, match=r"lookback_days=.*give a number of days"):
        Taskflow("aml", model=False, lookback_days=value)
