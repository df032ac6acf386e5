"""A term whose end the copy redacts (fresh-user report, 2 Dec 2026): English "commencing on <date> and continuing
through [*****]" gives the start and the redaction warning (it gave no term at all), and a Chinese term whose end is
masked (至[*****]止, 至****年**月**日止) gets the same warning (it got none). Texts written for these tests."""

from __future__ import annotations

import pytest

from sectorflow_legal_extraction import rules_en, rules_zh
from sectorflow_legal_extraction.normalize import REDACTED_TERM_END
from sectorflow_legal_extraction.text import segments

WARNING = "the term's end is redacted in the text ([*****]): left out"


def _en(text: str):
    return [(e.value, e.warnings) for e in rules_en.term(text, segments(text, "en"))]


def _zh(text: str):
    return [(e.value, e.warnings) for e in rules_zh.term(text, segments(text, "zh"))]


def test_the_warning_is_one_text():
    assert REDACTED_TERM_END == WARNING


@pytest.mark.parametrize(("text", "expected"), [
    ("1. Term. This Agreement shall be effective commencing on January 1, 2010 and continuing through [*****], "
     "unless terminated earlier as provided herein.", [({"start": "2010-01-01"}, [WARNING])]),
    ("This Agreement shall be in effect for a period commencing on March 1, 2011 and continuing through [***].",
     [({"start": "2011-03-01"}, [WARNING])]),
    ("This Agreement shall be in full force and effect commencing on January 2, 2020 and continuing through "
     "[* * *].", [({"start": "2020-01-02"}, [WARNING])]),
    # the same sentence with the end written out: both dates, no warning
    ("This Agreement shall be effective commencing on January 1, 2010 and continuing through December 31, 2012.",
     [({"start": "2010-01-01", "end": "2012-12-31"}, [])]),
    ("This Agreement shall become effective commencing on July 1, 2008 and ending on June 30, 2009.",
     [({"start": "2008-07-01", "end": "2009-06-30"}, [])]),
    # "effective as of" alone states no term
    ("This Agreement shall be effective as of the date first written above.", []),
])
def test_english_commencing_and_continuing_through(text, expected):
    assert _en(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("合同期限自2023年3月1日起至[*****]止。", [({"start": "2023-03-01"}, [WARNING])]),
    ("租赁期限自2023年3月1日起至****年**月**日止。", [({"start": "2023-03-01"}, [WARNING])]),
    ("租赁期限为三年，自2023年3月1日起至＊＊＊＊年＊＊月＊＊日止。", [({"start": "2023-03-01", "duration": "P3Y"}, [WARNING])]),
    ("服务期限自2023年3月1日起至2024年**月**日止。", [({"start": "2023-03-01"}, [WARNING])]),
    ("合同期限自2023年3月1日起至【***】止。", [({"start": "2023-03-01"}, [WARNING])]),
    # written out, or ended by an event: no warning
    ("租赁期限自2023年3月1日起至2024年2月29日止。", [({"start": "2023-03-01", "end": "2024-02-29"}, [])]),
    ("合同期限自2023年3月1日起至双方另行书面约定之日止。", [({"start": "2023-03-01"}, [])]),
])
def test_chinese_redacted_end(text, expected):
    assert _zh(text) == expected


def test_the_warning_reaches_the_result(taskflow_factory):
    result = taskflow_factory(["甲方", "合同期限"])("甲方：上海明远置业有限公司\n合同期限自2023年3月1日起至****年**月**日止。")
    (term,) = result.fields["合同期限"]
    assert term.value == {"start": "2023-03-01"} and term.warnings == [WARNING]
    assert WARNING in result.warnings


@pytest.mark.parametrize(("text", "expected"), [
    # issue 27: the start named by an event, the end redacted: the warning (there was no term and no warning)
    ("2. Term. This Agreement shall commence on the Effective Date and continue through [*****], unless terminated "
     "sooner as set out below.", [({"start_event": "Effective Date"}, [WARNING])]),
    ("The term of this Agreement shall begin on the date of execution hereof and end on [***].",
     [({"start_event": "execution hereof"}, [WARNING])]),  # the event, "the date of" dropped
    ("The term of this Agreement shall commence upon the signing hereof and terminate on the [*****] day of "
     "[*****].", [({"start_event": "signing hereof"}, [WARNING])]),
    # the same start with the end written out or left open: as before (no reading without a date or duration)
    ("This Agreement shall commence on the Effective Date and continue until terminated by either party.", []),
])
def test_english_event_start_and_redacted_end(text, expected):
    assert _en(text) == expected
