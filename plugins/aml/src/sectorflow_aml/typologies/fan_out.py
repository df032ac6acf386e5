"""Fan-out: one account pays many distinct accounts within a short period (dispersal / distribution account).

Source: FFIEC BSA/AML Manual App. F (funds received and quickly sent out to many accounts; many wires to
unrelated beneficiaries); FinCEN FIN-2014-A005 describes the matching withdrawal side of funnel accounts. No text
gives numbers: ``min_receivers`` and ``days`` are configurable heuristics.

Parameters:
    days: the period, in days (``None``: the whole lookback window).
    min_receivers: distinct receivers needed within ``days`` (each with at least ``min_txns_per_receiver``).
    min_txns_per_receiver: transfers each counted receiver must have got within ``days``.
    min_total: the least total amount (base currency) sent to the counted receivers.
    peer_alpha: the counted receivers must be a count that an account at the peers' rate (the window's transfers
        per active account, over ``days``: :func:`.base.peer_mean`) reaches with probability at most this (Poisson
        tail, :func:`.base.poisson_tail`). 1e-4 is the project's choice: among 300 people paying each other at random
        (about 4.7 transfers in a week each) it needs about 14 distinct receivers a week; 1e-6 (about 18) cost AMLGentex
        dev_s101's fan-in subjects most of their recall (14 at precision 0.93 against 35 at 0.91), because one external
        spending sink raises the window's mean. 1 turns it off. The
        test is skipped with fewer than 50 active accounts in the window (:data:`.base.PEER_MIN_ACCOUNTS`).
    min_new_share: at least this share of the counted receivers had no transfer with the account earlier in the
        window (the account's own history: a merchant's, a payroll's or a landlord's counterparties recur; a
        funnel's or a mule's are new). 0.5 is the project's choice; 0 turns it off. FinCEN and FFIEC give no
        numbers for either.
    burst_ratio: the counted receivers must be at least this multiple of the account's own level: its mean number of
        distinct receivers per earlier slice of ``days`` inside the window (:func:`.history.own_baseline`; a shop that
        had 60 distinct customers every earlier week is no funnel with 60 this week). No earlier slice in the window
        (an account new there): the test passes. A monthly payer's earlier weeks average a quarter of its pay run,
        so its own history shows in the new-counterparty test (``min_new_share``: last month's payees recur when
        the window holds last month) rather than here. 2.0 is the project's choice (docs/aml-rules.md measures it); 0 turns it off. Wolfsberg's Statement
        on Effective Monitoring for Suspicious Activity (2024) asks monitoring to weigh "customer behaviour and
        customer attributes" with the transactions; it gives no numbers.
    peer_quantile, peer_ratio: as in :class:`.fan_in.FanInParams` (same peer groups, :mod:`.peers`, same sources),
        over distinct receivers within the last day: where the account has no own level, it must pay more receivers
        than the ``peer_quantile`` quantile, and at least ``peer_ratio`` times it, of the other accounts of its
        activity band. 0.99 and 2.0 are the project's choices (docs/aml-rules.md, "Peer groups"); ``peer_quantile``
        1 turns it off. Skipped under 50 active accounts.
    min_through_share: at least this share of the counted payments must have gone through the account, first in
        first out over the window (:func:`.history.fifo_flows`): money that came in at most ``dwell_days`` before each payment. A payroll paid out of a month of client income, or a customer paying bills from savings, pays old money; a dispersal account pays on what it just received. FinCEN FIN-2014-A005's funnel account
        has the funds withdrawn "with little time elapsing between the deposits and withdrawals" (as quoted in
        secondary sources; the advisory itself was not read: unverified), FFIEC App. F funds "received and quickly
        sent out". 0 (off) by default (``max_stale_share`` is the fan-out's money test: it lets funding the
        window does not show pass); only applied where the account has no own level.
    max_stale_share: where the account has no own level on the paying side, no fan-out when at least this share of
        the counted payments was money it had held longer than ``dwell_days``, first in first out (a payroll paid
        out of a month of client income; :func:`.history.fifo_flows`). 0.5 is the project's choice; 1 turns it
        off.
    dwell_days: how long money may have stayed before a counted payment and still count as passed through (3 days: FinCEN's funnel "little time elapsing"; the project's choice).
    similar_ratio, similar_share, similar_score: the share of the counted transfers within a factor
        ``similar_ratio`` (1.25) of their median, and their coefficient of variation, go into the alert's evidence
        and reason; with ``similar_score`` set, an alert whose share is at least ``similar_share`` (0.8) scores
        that instead of ``score``: split or structured amounts look alike (31 CFR 1010.100(xx); FinCEN's funnel
        deposits "often in amounts below the cash reporting threshold"), card purchases do not. Evidence, not a
        test, and no score change by default: AMLGentex draws each planted transfer's amount anew (coefficient of
        variation 0.15-0.49 in dev_s101's planted fan-ins, like its legitimate ones' 0.17-0.53), so nothing here
        measured a gain. The project's choices.
    score: the alert's score.

History decides where there is one, the money's path where there is none (:func:`.base.judge_history`): with an own
level on the counted side (``own_baseline`` above 0) only ``burst_ratio`` applies, without one only the money
tests (``min_through_share``, ``max_stale_share``). The alert's ``evidence`` holds ``through_share``, ``own_baseline`` (-1: no earlier slice in the
window), ``similar_share``, ``amount_cv`` and ``stale_share``; its reason states them. docs/aml-rules.md ("Own history and the money's
path") measures each choice.

The alert fires on the transfer that brings the count to ``min_receivers`` (or above), at most once per sending
account per ``days``.

Cash, as in :mod:`.fan_in`: a cash deposit is no payment out of its sender, the till or walk-in id the bank books it
against (before 30 Nov 2026 twelve deposits booked against ``CASH`` gave a fan-out alert whose subject was
``CASH``); a customer's cash withdrawals at distinct tills count as distinct receivers of that customer (cash taken
out at many places, the withdrawal side of FIN-2014-A005's funnel accounts), withdrawals booked on the account itself
(sender = receiver) as none. The alert lists the paying account and the receivers of non-cash payments; tills stay
in its transactions and count, which the reason states.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import FanRule, fraction, positive


@dataclass(frozen=True)
class FanOutParams:
    """Parameters of :class:`FanOutRule`."""

    days: float | None = 7.0
    min_receivers: int = 10
    min_txns_per_receiver: int = 1
    min_total: float = 0.0
    peer_alpha: float = 1e-4
    min_new_share: float = 0.5
    burst_ratio: float = 2.0
    peer_quantile: float = 0.99
    peer_ratio: float = 2.0
    min_through_share: float = 0.0
    max_stale_share: float = 0.5
    dwell_days: float = 3.0
    similar_ratio: float = 1.25
    similar_share: float = 0.8
    score: float = 0.6
    similar_score: float | None = None

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_receivers", self.min_receivers)
        positive("min_txns_per_receiver", self.min_txns_per_receiver)
        positive("min_total", self.min_total, allow_zero=True)
        fraction("peer_alpha", self.peer_alpha)
        fraction("min_new_share", self.min_new_share)
        positive("burst_ratio", self.burst_ratio, allow_zero=True)
        fraction("peer_quantile", self.peer_quantile)
        positive("peer_ratio", self.peer_ratio, allow_zero=True)
        fraction("min_through_share", self.min_through_share)
        fraction("max_stale_share", self.max_stale_share)
        positive("dwell_days", self.dwell_days, allow_zero=True)
        positive("similar_ratio", self.similar_ratio)
        if self.similar_ratio < 1:
            raise ValueError(f"similar_ratio={self.similar_ratio!r} must be at least 1")
        fraction("similar_share", self.similar_share)
        fraction("score", self.score)
        if self.similar_score is not None:
            fraction("similar_score", self.similar_score)


class FanOutRule(FanRule):
    """One account paying many distinct receivers (see the module docstring)."""

    name = "fan_out"
    source = "FFIEC BSA/AML Manual App. F; FinCEN FIN-2014-A005"
    Params = FanOutParams
    incoming = False

    def thresholds(self) -> tuple[int, int]:
        return self.params.min_txns_per_receiver, self.params.min_receivers

    def reason_texts(self, hub: str, counterparties: int, tills: int, transfers: int, total: str, days: float,
                     ) -> tuple[str, str]:
        if tills:
            return (f"{hub} paid {counterparties} distinct receivers within {days:g} days ({transfers} transfers, "
                    f"total {total}; {tills} of the receivers are the tills of cash withdrawals)",
                    f"{hub} 在 {days:g} 天内向 {counterparties} 个不同收款方转出（{transfers} 笔，合计 {total}；其中 "
                    f"{tills} 个为现金支取的柜台编号）")
        return (f"{hub} paid {counterparties} distinct accounts within {days:g} days ({transfers} transfers, "
                f"total {total})",
                f"{hub} 在 {days:g} 天内向 {counterparties} 个不同账户转出（{transfers} 笔，合计 {total}）")
