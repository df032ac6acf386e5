"""Input and output models of the ``customer_service`` task."""

from __future__ import annotations

from typing import Literal


from pydantic import BaseModel, Field

from sectorflow import TaskResult, TextItem


class Message(TextItem):
    """One customer message (Chinese, English or mixed); a plain string is accepted as ``{"text": ...}``; unknown
    keys are refused."""

    text_hint = "the customer's message"
    text: str = Field(min_length=1, max_length=4000, description="The customer's message, as typed.")
    id: str | None = Field(default=None, description="Your id for the message (echoed in the result).")


class IntentCandidate(BaseModel):
    label: str = Field(description="Intent name (banking77 / CLINC150 label, or an operator's example label).")
    probability: float = Field(ge=0, le=1, description="Softmax probability (heads) or softmax over prototype "
                                                       "similarities (example-based intents).")


class FaqAnswer(BaseModel):
    id: str = Field(description="Entry id from the FAQ file (its row number when the file has no id column).")
    question: str
    answer: str
    score: float = Field(description="Cosine similarity of the message to the FAQ question, in [-1, 1].")


class CustomerServiceResult(TaskResult):
    """Everything the desk needs to route one message.

    ``intent`` is the fallback label ``"out_of_scope"`` whenever ``out_of_scope`` is true; ``top_k`` still lists
    what the model considered (for review), never as the answer.
    """

    id: str | None = None
    language: Literal["zh", "en", "und"] = Field(description="zh/en by share of CJK characters; und: neither.")
    mixed_language: bool = Field(description="Both Chinese characters and Latin words occur.")
    intent: str = Field(description="Predicted intent, or 'out_of_scope'.")
    intent_probability: float = Field(ge=0, le=1, description="Probability of the top intent.")
    top_k: list[IntentCandidate] = Field(description="The k most probable intents, best first.")
    out_of_scope: bool = Field(description="True when the message matches none of the intents confidently "
                                           "(calibrated threshold, see docs/customer-service.md).")
    intent_set: str = Field(description="Which intent inventory answered: banking77, clinc150 or examples.")
    faq: list[FaqAnswer] = Field(default_factory=list, description="Best FAQ matches above the score threshold.")
    escalate: bool = Field(description="Route to a person.")
    escalation_reasons: list[str] = Field(default_factory=list,
                                          description="human_requested, regulator_or_legal_threat, media_threat, "
                                                      "complaint, anger.")
    escalation_matched: list[str] = Field(default_factory=list, description="The phrases that raised the flags.")
    encoder: str = Field(description="The sentence encoder that read this message.")
