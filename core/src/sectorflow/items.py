"""Base input model for tasks whose item is one text (a message, a report, a contract).

Plugins subclass :class:`TextItem`, redeclare ``text`` with their own length limit and description, set
``text_hint`` and add their own fields::

    class ReportInput(TextItem):
        text_hint = "the findings text of the report"
        text: str = Field(min_length=1, max_length=20000, description="Findings text, zh or en.")
"""

from __future__ import annotations

import unicodedata
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


_FILLERS = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800")
"""Characters that show nothing but that Unicode files as marks, letters or symbols: combining grapheme joiner, the
Hangul fillers, braille blank."""


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only white space (``str.isspace``), control characters (Unicode category Cc:
    NUL bytes of a text read from a binary column, DEL, the C1 controls), format characters (Cf: zero-width space
    and joiners, word joiner, BOM, soft hyphen, the direction marks U+200E/U+200F and bidi isolates) and
    :data:`_FILLERS`. Stops at the first visible character."""
    return all(ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


class TextItem(BaseModel):
    """One text item. A bare string is accepted as ``{"text": ...}`` (``Taskflow(task)("...")``); unknown keys are
    refused (``extra="forbid"``), so a misspelt option is an error rather than silently ignored.

    Raises (through :func:`sectorflow.Taskflow` validation, as ``InvalidInputError``): an empty text, a text of only
    white space, zero-width, direction-mark or control characters (NUL) (:func:`is_blank`: "text is only white
    space: give <text_hint>"), an unknown key, an item that is neither a string nor a mapping (``None``, bytes, a
    number, a list: "got None: give <text_hint> as a string").
    """

    model_config = ConfigDict(extra="forbid")

    text_hint: ClassVar[str] = "the text"
    """What the text is, for the error message when it is blank ("the customer's message")."""

    text: str = Field(min_length=1, description="The text.")

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"text": data}
        if data is None or isinstance(data, (bytes, bytearray, int, float, list, tuple)):
            # pydantic's own message ("Input should be a valid dictionary or instance of Note") does not say that a
            # plain string is what to pass
            kind = "None" if data is None else type(data).__name__
            raise ValueError(f"got {kind}: give {cls.text_hint} as a string (or {{'text': ...}})")
        return data

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError(f"text is only white space: give {cls.text_hint}")
        return value
