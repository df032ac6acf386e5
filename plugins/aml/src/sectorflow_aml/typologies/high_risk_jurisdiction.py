"""High-risk jurisdiction: the sender or the receiver is in a country on a high-risk list.

Source of the default list: FATF, "High-Risk Jurisdictions subject to a Call for Action" (the "black list"),
unchanged at the plenaries of February 2024 through 24 October 2025: Democratic People's Republic of Korea (KP),
Iran (IR), Myanmar (MM) (Myanmar since 21 October 2022). Checked against the FATF publication pages of February 2024
and October 2022 and secondary reports of the October 2025 plenary, as stored copies, not the live FATF site.
FATF revises its lists three times a year: pass the current list as ``countries`` (ISO 3166-1 alpha-2).

FATF's "Jurisdictions under Increased Monitoring" (grey list) is much longer and changes at every plenary; it is
not applied by default. :data:`FATF_INCREASED_MONITORING_2025_10` is the list after the October 2025 plenary as
reported by secondary sources (not verified against the FATF text); give it as ``monitored`` to use it.

Parameters:
    countries: the high-risk list (alert score ``score``).
    monitored: a second, lower-risk list (alert score ``monitored_score``).
    score, monitored_score: the alerts' scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Alert
from ..window import Edge, TransactionWindow
from .base import Rule, fmt_amount, fraction

FATF_CALL_FOR_ACTION_2025_10: tuple[str, ...] = ("KP", "IR", "MM")
"""FATF high-risk jurisdictions subject to a call for action, as of 24 October 2025."""

FATF_INCREASED_MONITORING_2025_10: tuple[str, ...] = (
    "DZ", "AO", "BO", "BG", "CM", "CI", "CD", "HT", "KE", "LA", "LB", "MC", "NA", "NP", "SS", "SY", "VE", "VN", "VG",
    "YE")
"""FATF jurisdictions under increased monitoring after the 24 October 2025 plenary (secondary sources; unverified)."""


@dataclass(frozen=True)
class HighRiskJurisdictionParams:
    """Parameters of :class:`HighRiskJurisdictionRule`."""

    countries: tuple[str, ...] = FATF_CALL_FOR_ACTION_2025_10
    monitored: tuple[str, ...] = ()
    score: float = 0.8
    monitored_score: float = 0.4

    def __post_init__(self) -> None:
        for name in ("countries", "monitored"):
            values = getattr(self, name)
            if isinstance(values, str) or not all(isinstance(c, str) and len(c) == 2 for c in values):
                raise ValueError(f"{name} must be a list of ISO 3166-1 alpha-2 codes, e.g. ['KP', 'IR']")
            object.__setattr__(self, name, tuple(c.upper() for c in values))
        fraction("score", self.score)
        fraction("monitored_score", self.monitored_score)


class HighRiskJurisdictionRule(Rule):
    """A transfer from or to a listed country (see the module docstring)."""

    name = "high_risk_jurisdiction"
    source = "FATF High-Risk Jurisdictions subject to a Call for Action (24 October 2025)"
    Params = HighRiskJurisdictionParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._high = frozenset(self.params.countries)
        self._monitored = frozenset(self.params.monitored) - self._high

    def check(self, window: TransactionWindow, edge: Edge) -> list[Alert]:
        """One alert per transaction touching a listed country."""
        txn = edge.txn
        sc, rc = txn.sender_country, txn.receiver_country
        if sc is None and rc is None:
            return []
        hits = [c for c in dict.fromkeys((sc, rc)) if c is not None and c in self._high]
        score = self.params.score
        listed_en, listed_zh = "FATF call-for-action list", "FATF 呼吁采取行动的高风险国家或地区名单"
        if not hits:
            hits = [c for c in dict.fromkeys((sc, rc)) if c is not None and c in self._monitored]
            score = self.params.monitored_score
            listed_en, listed_zh = "monitored-jurisdiction list", "受监控国家或地区名单"
            if not hits:
                return []
        where = ", ".join(hits)
        amount = f"{fmt_amount(float(txn.amount))} {txn.currency}"
        return [self.alert([edge], score,
                           f"{amount} {edge.src} ({sc or '?'}) -> {edge.dst} ({rc or '?'}): {where} on the "
                           f"{listed_en}",
                           f"{amount} {edge.src}（{sc or '?'}）-> {edge.dst}（{rc or '?'}）：{where} 在{listed_zh}中",
                           trigger=edge)]
