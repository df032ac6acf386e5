"""``thresholds=`` that is no dict of amounts or list of Threshold objects is a ConfigError saying what to give (an int
crashed the model load with "TypeError: 'int' object is not iterable": core fresh-user check, 30 Nov)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sectorflow import ConfigError

from sectorflow_aml.thresholds import DEFAULT_THRESHOLDS, thresholds_for


@pytest.mark.parametrize("value, message", [
    (3, "not int 3"), ("50000", "not str '50000'"), ({3: 1}, "the key 3 is not text"),
    ({"cash": "abc"}, "Threshold 'cash' must be an amount such as '50000'"), ({"cash": True}, "not True"),
    ({"cash": "NaN"}, "must be an amount"), ({"cash": -1}, "must be positive"), ([1, 2], "list of Threshold objects")])
def test_bad_threshold_options_name_what_to_give(value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        thresholds_for("CN", value)


def test_good_overrides_still_apply():
    table = thresholds_for("CN", {"cash:domestic": 60000})
    assert [t.amount for t in table if t.rule == "cash" and t.applies_to == "domestic"] == [Decimal(60000)]
    assert thresholds_for("CN", []) == ()  # an empty list: no report thresholds at all, as before
    assert thresholds_for("US", list(DEFAULT_THRESHOLDS["US"])) == DEFAULT_THRESHOLDS["US"]


@pytest.mark.parametrize("value", [3, "", "  ", ["ICBC"]])
def test_an_institution_that_is_no_bank_id_is_refused(value):
    # institution=3 was accepted and silently matched no transaction side (core fresh-user check)
    from sectorflow_aml.reports import ReportEngine

    with pytest.raises(ConfigError, match=r"institution=.*bank id as text"):
        ReportEngine("CN", institution=value)
    assert ReportEngine("CN", institution="ICBC-BJ-001").institution == "ICBC-BJ-001"
