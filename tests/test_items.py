"""sectorflow.TextItem: the shared base of one-text input models (customer_service, medical_report, legal)."""

from __future__ import annotations

import pytest
from pydantic import Field

from sectorflow import InvalidInputError, TextItem
from sectorflow.validation import validate_items


class Note(TextItem):
    text_hint = "the note"
    text: str = Field(min_length=1, max_length=8, description="A short note.")
    author: str | None = None


def test_a_bare_string_is_the_text_and_fields_keep_their_own_limits():
    assert Note.model_validate("hi").text == "hi"
    assert Note.model_validate({"text": "hi", "author": "a"}).author == "a"
    assert Note.model_json_schema()["properties"]["text"]["maxLength"] == 8


def test_blank_text_unknown_keys_and_overlong_text_are_reported_per_row():
    with pytest.raises(InvalidInputError) as caught:
        validate_items(Note, ["ok", "   ", {"text": "ok", "lang": "en"}, "far too long"])
    assert [(d["row"], d["field"], d["reason"]) for d in caught.value.details] == [
        (2, "text", "text is only white space: give the note"),
        (3, "lang", "Extra inputs are not permitted"),
        (4, "text", "String should have at most 8 characters"),
    ]


def test_whole_file_reader_gives_one_item_and_an_empty_file_is_one_bad_row(tmp_path):
    from sectorflow import whole_file_reader

    read = whole_file_reader("the note")
    note = tmp_path / "note.txt"
    note.write_text("line one\nline two\n", encoding="utf-8")
    assert list(read(note)) == [(1, {"text": "line one\nline two\n"})]
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n", encoding="utf-8")
    ((row, problem),) = read(blank)
    assert row == 1 and isinstance(problem, InvalidInputError) and "put the note in it" in str(problem)
    assert problem.details == [{"row": 1, "field": "text", "reason": "empty file"}]


def test_an_item_that_is_not_a_string_or_mapping_says_to_pass_a_string():
    with pytest.raises(InvalidInputError) as caught:
        validate_items(Note, ["ok", None, b"bytes", 7, ["a"]])
    assert [(d["row"], d["reason"]) for d in caught.value.details] == [
        (2, "got None: give the note as a string (or {'text': ...})"),
        (3, "got bytes: give the note as a string (or {'text': ...})"),
        (4, "got int: give the note as a string (or {'text': ...})"),
        (5, "got list: give the note as a string (or {'text': ...})"),
    ]
    assert Note.model_validate(Note(text="hi")).text == "hi"  # an instance still passes


def test_zero_width_characters_alone_are_blank():
    with pytest.raises(InvalidInputError) as caught:
        validate_items(Note, ["\u200b", " \u200b\ufeff\n"])
    assert [d["row"] for d in caught.value.details] == [1, 2]
    assert Note.model_validate("a\u200b").text == "a\u200b"  # kept as given when there is text


def test_control_characters_alone_are_blank_and_kept_inside_a_text():
    with pytest.raises(InvalidInputError) as caught:
        validate_items(Note, ["\x00\x00", " \x07\x1b\x7f ", "ok"])
    assert [(d["row"], d["reason"]) for d in caught.value.details] == [
        (1, "text is only white space: give the note"), (2, "text is only white space: give the note")]
    assert Note.model_validate("a\x00b").text == "a\x00b"


@pytest.mark.parametrize("blank", ["\u200e", "\u200f \u200e", "\u2066\u2069", "\u061c", "\x90\x9f", "\u3164\u3164",
                                   "\u2800", "\u034f", "\u180e", "\u00ad\u2060"])
def test_direction_marks_c1_controls_and_fillers_alone_are_blank(blank):
    """A text of only a left-to-right mark (U+200E, what a copy from a right-to-left page leaves) or a Hangul filler
    passed the blank check and was classified as if it said something."""
    with pytest.raises(InvalidInputError) as caught:
        validate_items(Note, [blank])
    assert [(d["row"], d["reason"]) for d in caught.value.details] == [(1, "text is only white space: give the note")]
    assert Note.model_validate(f"a{blank}").text == f"a{blank}"  # kept as given when there is text
