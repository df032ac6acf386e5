"""The alert budget of the case book: how many cases per review period an analyst team reviews (option
``alert_budget``; see :mod:`sectorflow_aml.cases`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from sectorflow import ConfigError


class AlertBudget(BaseModel):
    """How many cases per period an analyst team reviews: ``kind`` ``count`` (``value`` cases), ``share`` (``value``
    of the period's active accounts, rounded down, at least 1 while any account is active) or ``score`` (every case
    scoring at least ``value``)."""

    kind: Literal["count", "share", "score"]
    value: float

    @classmethod
    def parse(cls, raw: Any) -> AlertBudget:
        """From the option: an int >= 1 (count), a float in (0, 1) or ``"N%"`` (share), ``"score>=X"`` (threshold),
        an :class:`AlertBudget` or its dict; ``None`` gives the default (1 % of active accounts).

        Raises:
            ConfigError: anything else.
        """
        if raw is None:
            return cls(kind="share", value=0.01)
        if isinstance(raw, AlertBudget):
            return raw
        if isinstance(raw, Mapping):
            try:
                return cls.model_validate(raw)
            except ValidationError as exc:
                raise ConfigError(f"alert_budget={raw!r}: {exc}") from None
        text = raw.strip() if isinstance(raw, str) else raw
        if isinstance(text, str):
            m = re.fullmatch(r"score\s*>=\s*([0-9.]+)", text)
            if m:
                value = float(m.group(1))
                if 0 <= value <= 1:
                    return cls(kind="score", value=value)
            elif text.endswith("%"):
                try:
                    value = float(text[:-1]) / 100
                except ValueError:
                    value = -1.0
                if 0 < value <= 1:
                    return cls(kind="share", value=value)
            else:
                try:
                    text = json.loads(text)
                except ValueError:
                    pass
        if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
            return cls(kind="count", value=float(text))
        if isinstance(text, float) and 0 < text < 1:
            return cls(kind="share", value=text)
        raise ConfigError(f"alert_budget={raw!r}: give a number of cases per period (25), a share of active accounts "
                          f"(0.01 or '1%'), or a score threshold ('score>=0.7').")

    def label(self) -> str:
        """``"count:25"``, ``"share:0.01"`` or ``"score>=0.7"``: what results and cases name."""
        if self.kind == "count":
            return f"count:{int(self.value)}"
        return f"share:{self.value:g}" if self.kind == "share" else f"score>={self.value:g}"

    def size(self, active_accounts: int) -> int | None:
        """Cases within the budget in a period with ``active_accounts`` (``None`` for a score threshold)."""
        if self.kind == "count":
            return int(self.value)
        if self.kind == "share":  # rounded down: 1 % of 691 accounts is 6 cases (0.87 %), not 7 (1.01 %)
            return max(1, math.floor(self.value * active_accounts + 1e-9)) if active_accounts > 0 else 0
        return None

    def within(self, rank: int, score: float, active_accounts: int, mandatory: bool) -> bool:
        """Whether the case of ``rank`` (1 = first) and ``score`` is within the budget (mandatory ones always)."""
        if mandatory:
            return True
        size = self.size(active_accounts)
        return score >= self.value if size is None else rank <= size
