"""Reporting thresholds as configuration, with the inclusive or exclusive sense of the rule text.

China, PBOC Order 2016 No. 3 (金融机构大额交易和可疑交易报告管理办法, amended 2018) Art. 5: one transaction or the
same-day total of one customer in one direction (单边累计, never netted) **at or above** (以上（含）):

=============================================  ===========  =================
row of Art. 5                                   RMB          foreign currency
=============================================  ===========  =================
(1) cash in or out, any form                   50,000       USD 10,000 equiv.
(2) non-natural-person account transfer        2,000,000    USD 200,000
(3) natural-person account, domestic transfer  500,000      USD 100,000
(4) natural-person account, cross-border       200,000      USD 10,000
=============================================  ===========  =================

**Mostly UNVERIFIED**: the PBOC original was not available. Row (1) was read in an unofficial copy of the decree text
(cdgyf.com.cn, with the PBOC's promulgation note; the search tool returned only the start of the page); rows (2)-(4)
come from exam and Q&A sites that agree with each other (``/work/shared/notes/domain-facts.md`` section 1). PBOC may
change the levels: pass your own table.

United States, 31 CFR 1010.311 (verified): a transaction in currency of **more than** USD 10,000 (exactly 10,000.00
is not reportable); 1010.313 (verified against an unofficial copy): currency transactions by or for one person in
one business day are aggregated, cash-in and cash-out separately.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Literal

from sectorflow import ConfigError

RuleName = Literal["cash", "corporate_transfer", "individual_domestic_transfer", "individual_cross_border_transfer",
                   "ctr_cash"]
CurrencyClass = Literal["domestic", "foreign", "any"]


@dataclass(frozen=True)
class Threshold:
    """One reporting threshold.

    Attributes:
        rule: which kind of transaction it covers (see :data:`RuleName`).
        amount: the threshold, in ``currency``.
        currency: ISO 4217 code the amount (and the day's total) is measured in.
        inclusive: ``True`` when reaching the amount triggers (``>=``, China's 以上（含）); ``False`` when the total
            must exceed it (``>``, the US "more than $10,000").
        applies_to: ``"domestic"``: transactions in the jurisdiction's own currency only (RMB for China);
            ``"foreign"``: other currencies, totalled in ``currency`` after FX conversion; ``"any"``: all currencies,
            converted to ``currency``.
        regulation: the article it implements.
        verified: whether the figure was read in the primary text (see the module docstring).
    """

    rule: RuleName
    amount: Decimal
    currency: str
    inclusive: bool
    applies_to: CurrencyClass
    regulation: str
    verified: bool = False

    def met(self, total: Decimal) -> bool:
        """Whether a (single or cumulative) ``total`` in ``currency`` triggers this threshold."""
        return total >= self.amount if self.inclusive else total > self.amount

    @property
    def sense(self) -> str:
        return ">=" if self.inclusive else ">"


_CN = "PBOC Order 2016 No. 3, Art. 5"
CN_THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("cash", Decimal("50000"), "CNY", True, "domestic", f"{_CN}(1)"),
    Threshold("cash", Decimal("10000"), "USD", True, "foreign", f"{_CN}(1)"),
    Threshold("corporate_transfer", Decimal("2000000"), "CNY", True, "domestic", f"{_CN}(2)"),
    Threshold("corporate_transfer", Decimal("200000"), "USD", True, "foreign", f"{_CN}(2)"),
    Threshold("individual_domestic_transfer", Decimal("500000"), "CNY", True, "domestic", f"{_CN}(3)"),
    Threshold("individual_domestic_transfer", Decimal("100000"), "USD", True, "foreign", f"{_CN}(3)"),
    Threshold("individual_cross_border_transfer", Decimal("200000"), "CNY", True, "domestic", f"{_CN}(4)"),
    Threshold("individual_cross_border_transfer", Decimal("10000"), "USD", True, "foreign", f"{_CN}(4)"),
)
"""China's large-value transaction thresholds (UNVERIFIED figures, see the module docstring)."""

US_THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("ctr_cash", Decimal("10000"), "USD", False, "any", "31 CFR 1010.311; aggregation 31 CFR 1010.313",
              verified=True),
)
"""US currency transaction report threshold: more than USD 10,000, all currencies converted to USD."""

DEFAULT_THRESHOLDS = {"CN": CN_THRESHOLDS, "US": US_THRESHOLDS}
HOME_CURRENCY = {"CN": "CNY", "US": "USD"}


def thresholds_for(jurisdiction: str, overrides: Iterable[Threshold] | dict[str, object] | None = None,
                   ) -> tuple[Threshold, ...]:
    """The thresholds of ``jurisdiction`` (``"CN"`` or ``"US"``), optionally replaced.

    ``overrides`` is either a full list of :class:`Threshold` (replaces the defaults) or a dict
    ``{"<rule>[:<applies_to>]": amount}`` that changes amounts only, e.g. ``{"cash:domestic": "50000"}`` or
    ``{"ctr_cash": "10000"}``; the sense (``>=`` or ``>``) stays that of the rule text.

    Raises:
        ConfigError: unknown jurisdiction, unknown rule key, or a non-positive amount.
    """
    if jurisdiction not in DEFAULT_THRESHOLDS:
        raise ConfigError(f"jurisdiction must be one of {', '.join(DEFAULT_THRESHOLDS)}, not {jurisdiction!r}.")
    base = DEFAULT_THRESHOLDS[jurisdiction]
    if overrides is None:
        return base
    shape = "thresholds must be a {'rule[:applies_to]': amount} dict (e.g. {'cash:domestic': '50000'}) or a list of " \
        "Threshold objects"
    if not isinstance(overrides, dict):
        if isinstance(overrides, (str, bytes)) or not isinstance(overrides, Iterable):
            raise ConfigError(f"{shape}, not {type(overrides).__name__} {overrides!r}.")
        table = tuple(overrides)
        if not all(isinstance(t, Threshold) for t in table):
            raise ConfigError(f"{shape}.")
        return table
    out = list(base)
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise ConfigError(f"{shape}; the key {key!r} is not text.")
        rule, _, scope = key.partition(":")
        hits = [i for i, t in enumerate(out) if t.rule == rule and (not scope or t.applies_to == scope)]
        if not hits:
            known = sorted({f"{t.rule}:{t.applies_to}" for t in base})
            raise ConfigError(f"Unknown {jurisdiction} threshold {key!r}; known: {', '.join(known)}.")
        try:
            amount = Decimal(str(value)) if not isinstance(value, bool) else Decimal("NaN")
        except ArithmeticError:
            amount = Decimal("NaN")
        if not amount.is_finite():
            raise ConfigError(f"Threshold {key!r} must be an amount such as '50000' or 10000.01, not {value!r}.")
        if amount <= 0:
            raise ConfigError(f"Threshold {key!r} must be positive, not {value!r}.")
        for i in hits:
            out[i] = replace(out[i], amount=amount)
    return tuple(out)
