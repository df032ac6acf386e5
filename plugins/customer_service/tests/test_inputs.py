"""Message items are strict: blank text and unknown keys are typed errors, as in the other text tasks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sectorflow_customer_service.schema import Message


@pytest.mark.parametrize(("item", "fragment"), [
    ("   ", "only white space"),
    ({"text": "\n\t"}, "only white space"),
    ({"text": "where is my card", "lang": "en"}, "Extra inputs are not permitted"),
])
def test_blank_text_and_unknown_keys_are_refused(item, fragment):
    with pytest.raises(ValidationError, match=fragment):
        Message.model_validate(item)


def test_a_plain_string_is_the_message_text():
    assert Message.model_validate("where is my card").text == "where is my card"
    assert Message.model_validate({"text": "hi", "id": "m1"}).id == "m1"
