"""Fan-in: many distinct accounts pay into one account within a short period (funnel / collection account).

Source: FinCEN advisory FIN-2014-A005 ("funnel accounts": one account receives many deposits, often below the
reporting threshold, and the funds leave soon after); FFIEC BSA/AML Manual App. F (many small incoming transfers).
Neither text gives numbers: ``min_senders`` and ``days`` are configurable heuristics.

Parameters:
    days: the period, in days (``None``: the whole lookback window).
    min_senders: distinct senders needed within ``days`` (each with at least ``min_txns_per_sender`` transfers).
    min_txns_per_sender: transfers each counted sender must have made within ``days`` (1 = any sender). With 2 the
        rule looks for senders that split their payment, as in AMLSim's planted fan-ins, where every member sends
        several near-equal transfers on one day.
    min_total: the least total amount (base currency) received from the counted senders.
    peer_alpha: the counted senders must be a count that an account at the peers' rate (the window's transfers
        per active account, over ``days``: :func:`.base.peer_mean`) reaches with probability at most this (Poisson
        tail, :func:`.base.poisson_tail`). 1e-4 is the project's choice: among 300 people paying each other at random
        (about 4.7 transfers in a week each) it needs about 14 distinct senders a week; 1e-6 (about 18) cost AMLGentex
        dev_s101's fan-in subjects most of their recall (14 at precision 0.93 against 35 at 0.91), because one external
        spending sink raises the window's mean. 1 turns it off. The
        test is skipped with fewer than 50 active accounts in the window (:data:`.base.PEER_MIN_ACCOUNTS`).
    min_new_share: at least this share of the counted senders had no transfer with the account earlier in the
        window (the account's own history: a merchant's, a payroll's or a landlord's counterparties recur; a
        funnel's or a mule's are new). 0.5 is the project's choice; 0 turns it off. FinCEN and FFIEC give no
        numbers for either.
    burst_ratio: the counted senders must be at least this multiple of the account's own level: its mean number of
        distinct senders per earlier slice of ``days`` inside the window (:func:`.history.own_baseline`; a shop that
        had 60 distinct customers every earlier week is no funnel with 60 this week). No earlier slice in the window
        (an account new there): the test passes. A monthly payer's earlier weeks average a quarter of its pay run,
        so its own history shows in the new-counterparty test (``min_new_share``: last month's payees recur when
        the window holds last month) rather than here. 2.0 is the project's choice (docs/aml-rules.md measures it); 0 turns it off. Wolfsberg's Statement
        on Effective Monitoring for Suspicious Activity (2024) asks monitoring to weigh "customer behaviour and
        customer attributes" with the transactions; it gives no numbers.
    peer_quantile, peer_ratio: where the account has no own level (``burst_ratio`` finds no earlier slice, or none
        with senders), its peer group judges it (:mod:`.peers`): its distinct senders within the last day must be more
        than the ``peer_quantile`` quantile, and at least ``peer_ratio`` times it, of the other accounts of its
        activity band (accounts with as many transfers in the window, to the binary order of magnitude; at least 30
        of them, neighbouring bands taken in). A shop in its first weeks in the window has as many distinct payers a
        day as the other busy accounts of its band; a funnel collecting from fifteen customers in a day has more than
        twice what they have. The Central Bank of Bahrain's rulebook (FC-2.2.7) asks monitoring to find activity
        unusual "relative to other customers of the same profile" (stored copy; sources in :mod:`.peers`). 0.99 and
        2.0 are the project's choices (docs/aml-rules.md, "Peer groups"); ``peer_quantile`` 1 turns it off. Skipped
        under 50 active accounts.
    min_through_share: at least this share of the counted collected money must have gone through the account, first in
        first out over the window (:func:`.history.fifo_flows`): the hub paid it on by now. The rule is also evaluated on the hub's payments out, so the payment that completes the through-flow raises the alert (and is its last transaction); a shop's takings, a landlord's rents or a biller's bills stay. FinCEN FIN-2014-A005's funnel account
        has the funds withdrawn "with little time elapsing between the deposits and withdrawals" (as quoted in
        secondary sources; the advisory itself was not read: unverified), FFIEC App. F funds "received and quickly
        sent out". 0 (off) by default: when a fan-in completes, its money has usually not moved yet, and as a test
        at 0.5 it left AMLGentex dev_s101 no fan-in subject (35 at precision 0.914 without it); 0.5 is the funnel
        reading, opt-in. Only applied where the account has no own level (``burst_ratio``).
    dwell_days: not used by fan-in (its through-flow runs to the alert).
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
tests (``min_through_share``). The alert's ``evidence`` holds ``through_share``, ``own_baseline`` (-1: no earlier slice in the
window), ``similar_share`` and ``amount_cv``; its reason states them. docs/aml-rules.md ("Own history and the money's
path") measures each choice.

The alert fires on the transfer that brings the count to ``min_senders`` (or above), at most once per receiving
account per ``days`` (the whole lookback when ``days`` is ``None``).

Cash (the channels ``cash_deposit`` and ``cash_withdrawal``; banks often book them against one shared till account,
``customer -> CASH`` for a withdrawal, ``CASH -> customer`` for a deposit):

- A cash withdrawal is no payment into its receiver, the till: it neither counts toward the till's fan-in nor
  completes one (before 30 Nov 2026 twelve withdrawals booked against ``CASH`` gave a fan-in alert whose subject was
  ``CASH``, the bank's own till).
- Cash deposits do count toward the depositing customer's account, and each distinct sender of a deposit (a branch
  till, a ``TILL-001``, a walk-in id) is one distinct sender. That is the funnel account of FIN-2014-A005, as quoted in
  secondary sources (the advisory itself was not read here): an account that "receives multiple cash deposits, often
  in amounts below the cash reporting threshold", made "by unidentified persons at branches outside of the geographic
  region where the account is domiciled"; the till or branch id is what an export tells of where a deposit was made.
  The structuring rule's fan-in counts the tills the same way, so the two rules agree on one account. The data cannot
  tell several depositors at one till apart: deposits booked against one ``CASH`` or ``WALKIN`` id are one sender, and
  a deposit booked on the account itself (sender = receiver) is none.
- The alert lists the receiving account and the senders of non-cash transfers; a sender reached only by cash
  deposits is the cash side (no party, as in the structuring rule and the report engine) and stays in the alert's
  transactions and its count, which the reason states.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import FanRule, fraction, positive


@dataclass(frozen=True)
class FanInParams:
    """Parameters of :class:`FanInRule`."""

    days: float | None = 7.0
    min_senders: int = 10
    min_txns_per_sender: int = 1
    min_total: float = 0.0
    peer_alpha: float = 1e-4
    min_new_share: float = 0.5
    burst_ratio: float = 2.0
    peer_quantile: float = 0.99
    peer_ratio: float = 2.0
    min_through_share: float = 0.0
    dwell_days: float = 3.0
    similar_ratio: float = 1.25
    similar_share: float = 0.8
    score: float = 0.6
    similar_score: float | None = None

    def __post_init__(self) -> None:
        if self.days is not None:
            positive("days", self.days)
        positive("min_senders", self.min_senders)
        positive("min_txns_per_sender", self.min_txns_per_sender)
        positive("min_total", self.min_total, allow_zero=True)
        fraction("peer_alpha", self.peer_alpha)
        fraction("min_new_share", self.min_new_share)
        positive("burst_ratio", self.burst_ratio, allow_zero=True)
        fraction("peer_quantile", self.peer_quantile)
        positive("peer_ratio", self.peer_ratio, allow_zero=True)
        fraction("min_through_share", self.min_through_share)
        positive("dwell_days", self.dwell_days, allow_zero=True)
        positive("similar_ratio", self.similar_ratio)
        if self.similar_ratio < 1:
            raise ValueError(f"similar_ratio={self.similar_ratio!r} must be at least 1")
        fraction("similar_share", self.similar_share)
        fraction("score", self.score)
        if self.similar_score is not None:
            fraction("similar_score", self.similar_score)


class FanInRule(FanRule):
    """Many distinct senders into one account (see the module docstring)."""

    name = "fan_in"
    source = "FinCEN FIN-2014-A005 (funnel accounts); FFIEC BSA/AML Manual App. F"
    Params = FanInParams
    incoming = True

    def thresholds(self) -> tuple[int, int]:
        return self.params.min_txns_per_sender, self.params.min_senders

    def reason_texts(self, hub: str, counterparties: int, tills: int, transfers: int, total: str, days: float,
                     ) -> tuple[str, str]:
        if tills:
            return (f"{counterparties} distinct senders paid into {hub} within {days:g} days ({transfers} transfers, "
                    f"total {total}; {tills} of the senders are the tills or walk-in ids of cash deposits)",
                    f"{days:g} 天内有 {counterparties} 个不同付款方向 {hub} 转入（{transfers} 笔，合计 {total}；其中 "
                    f"{tills} 个为现金存入的柜台或临柜编号）")
        return (f"{counterparties} distinct accounts paid into {hub} within {days:g} days ({transfers} transfers, "
                f"total {total})",
                f"{days:g} 天内有 {counterparties} 个不同账户向 {hub} 转入（{transfers} 笔，合计 {total}）")
