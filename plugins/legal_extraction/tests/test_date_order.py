"""Numeric dates written day first (British, European) or month first (US): the ``date_order`` option ("auto" by
default: the contract decides) and the warning an ambiguous date carries. Every contract here is project-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sectorflow import ConfigError, Taskflow

from sectorflow_legal_extraction import normalize as nz
from sectorflow_legal_extraction import rules_en, rules_zh
from sectorflow_legal_extraction.text import segments

UK = """SERVICES AGREEMENT

This Agreement is dated 01/03/2024 and is made between Albion Widgets Ltd ("Supplier") and Thames Retail Ltd
("Customer").

1. The Services shall begin on 15/07/2024.

2. This Agreement shall be governed by English law.
"""

US = """SERVICES AGREEMENT

This Agreement is dated 01/03/2024 and is made between Acme Widgets, Inc. ("Supplier") and Beta Retail LLC
("Customer").

1. This Agreement shall be governed by the laws of the State of New York.
"""


@pytest.mark.parametrize("raw, mdy, dmy", [
    ("01/03/2024", "2024-01-03", "2024-03-01"),    # both readings are dates: the order decides
    ("7/1/98", "1998-07-01", "1998-01-07"),        # two-digit year
    ("01.03.2024", "2024-01-03", "2024-03-01"),    # European dots
    ("15/07/2018", "2018-07-15", "2018-07-15"),    # 15 can only be the day, in either order
    ("31-12-2023", "2023-12-31", "2023-12-31"),
    ("12/31/2023", "2023-12-31", "2023-12-31"),    # 31 can only be the day: month first even when DMY is asked
    ("29/02/2023", None, None),                    # no such day in either order
])
def test_numeric_dates_in_either_order(raw, mdy, dmy):
    assert nz.parse_date(raw) == mdy  # MDY stays the default, as for CUAD's US contracts
    assert nz.parse_date(raw, "MDY") == mdy
    assert nz.parse_date(raw, "DMY") == dmy


def test_dates_in_reads_dots_and_hyphens_but_not_section_or_version_numbers():
    text = "Signed on 01.03.2024, paid on 15-07-2024; see clause 1.2.3.2020 and release v13.1.2020."
    assert [(raw, iso) for _, _, raw, iso in nz.dates_in(text, "DMY")] == [("01.03.2024", "2024-03-01"),
                                                                           ("15-07-2024", "2024-07-15")]


@pytest.mark.parametrize("raw, ambiguous", [("01/03/2024", True), ("1.4.2011", True), ("05/05/2024", False),
                                            ("15/07/2018", False), ("12/31/2023", False), ("March 1, 2024", False)])
def test_ambiguous_numeric_dates(raw, ambiguous):
    assert nz.ambiguous_numeric_date(raw) is ambiguous


@pytest.mark.parametrize("text, order, day_first, month_first", [
    (UK, "DMY", "15/07/2024", None),
    (US, "MDY", None, None),
    ("Effective 1.4.2011 (the Effective Date).", "DMY", "1.4.2011", None),  # dots: the European form
    ("Signed 26/2/2019 in London and 1/29/2019 in Dallas.", "DMY", "26/2/2019", "1/29/2019"),
    ("Invoice 12/31/2023, version 13.1.2020b, clause 14/3/A.", "MDY", None, "12/31/2023"),
])
def test_the_contract_decides_the_order(text, order, day_first, month_first):
    assert nz.contract_date_order(text) == {"order": order, "day_first": day_first, "month_first": month_first}


def test_auto_reads_a_british_contract_day_first_with_a_warning(taskflow_factory):
    result = taskflow_factory(["Agreement Date"])(UK)
    (date,) = result.fields["Agreement Date"]
    assert (date.text, date.value) == ("01/03/2024", "2024-03-01")
    assert UK[date.start:date.end] == date.text
    (warning,) = date.warnings
    assert "'01/03/2024' reads both ways" in warning and "day first" in warning and "'15/07/2024'" in warning
    assert result.warnings == [warning]


def test_auto_keeps_a_us_contract_month_first_with_a_warning(taskflow_factory):
    (date,) = taskflow_factory(["Agreement Date"])(US).fields["Agreement Date"]
    assert date.value == "2024-01-03"
    (warning,) = date.warnings
    assert "month first" in warning and "date_order='DMY'" in warning


def test_unambiguous_day_first_date_is_read_without_warning(taskflow_factory):
    text = 'This Agreement is dated 15/07/2018 between Albion Widgets Ltd ("Supplier") and Thames Retail Ltd ("Customer").'
    (date,) = taskflow_factory(["Agreement Date"])(text).fields["Agreement Date"]
    assert (date.value, date.warnings) == ("2018-07-15", [])


@pytest.mark.parametrize("order, iso", [("DMY", "2024-03-01"), ("MDY", "2024-01-03"), ("dmy", "2024-03-01")])
def test_a_chosen_order_wins_over_the_contract_and_gives_no_warning(order, iso):
    tf = Taskflow("legal_extraction", schema=["Agreement Date", "Effective Date"], date_order=order)
    for text in (UK, US):
        (date,) = tf(text).fields["Agreement Date"]
        assert (date.value, date.warnings) == (iso, [])


def test_effective_date_and_term_follow_the_order():
    text = ('This Agreement is made between Albion Widgets Ltd ("Supplier") and Thames Retail Ltd ("Customer"), '
            "effective as of 02/04/2024. The term of this Agreement shall continue until 05/04/2025.")
    (effective,) = rules_en.effective_date(text, "DMY")
    assert effective.value == "2024-04-02"
    (term,) = rules_en.term(text, segments(text, "en"), "DMY")
    assert term.value == {"end": "2025-04-05"}
    assert rules_en.term(text, segments(text, "en"))[0].value == {"end": "2025-05-04"}  # MDY by default


def test_chinese_signing_date_written_the_hong_kong_way():
    text = "甲方：香港明远贸易有限公司\n乙方：李华\n本合同签订日期：01/03/2024。"
    (date,) = rules_zh.signing_date(text, segments(text, "zh"), "DMY")
    assert (date.text, date.value) == ("01/03/2024", "2024-03-01")


@pytest.mark.parametrize("value", ["YMD", "day first", 1, None])
def test_a_bad_date_order_is_a_config_error_listing_the_allowed_values(value):
    with pytest.raises(ConfigError) as err:
        Taskflow("legal_extraction", date_order=value)
    assert err.value.details["allowed"] == ["auto", "DMY", "MDY"]
    assert all(repr(v) in str(err.value) for v in ("auto", "DMY", "MDY"))


def test_date_order_from_the_cli(tmp_path):
    contract = tmp_path / "contract.txt"
    contract.write_text(US, encoding="utf-8")
    exe = Path(sys.executable).with_name("sectorflow")
    env = {**os.environ, "SECTORFLOW_AUDIT": "off"}
    out = subprocess.run([str(exe), "run", "legal_extraction", str(contract), "-O", "schema=Agreement Date",
                          "-O", "date_order=DMY"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.strip().splitlines()
    assert json.loads(line)["fields"]["Agreement Date"][0]["value"] == "2024-03-01"
    bad = subprocess.run([str(exe), "run", "legal_extraction", str(contract), "-O", "date_order=YMD"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode != 0 and "'DMY'" in bad.stderr and "'MDY'" in bad.stderr
