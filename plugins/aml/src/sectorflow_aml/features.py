"""Per-transaction graph and behaviour features for the learned risk scorer.

:class:`FeatureExtractor` turns each transaction, at its arrival, into a float32 vector of ``len(FEATURE_NAMES)``
values. It reads the sliding-window graph of :mod:`sectorflow_aml.window` (which the pipeline has already updated
with ``window.add(txn)``) and keeps a little state of its own for what the window does not hold: time-decayed
velocity, the last incoming amount, and cycle membership.

The training script (``plugins/aml/scripts/train_scorer.py``) replays AMLSim runs through this same class and the same
window, so training and serving compute identical features.

The vector holds raw, interpretable values (counts, ratios, hours); the model's first layers clip them to
``FEATURE_CAPS`` and apply ``log1p`` to the ``LOG_FEATURES`` before standardising, so this per-transaction Python code
does as little arithmetic as possible. Features are computed *after* the current transaction is in the window
(``s`` = sender, ``r`` = receiver; "deg" = distinct counterparties in the window, "cnt" = edges in the window):

======================  =========================================================================================
s_out_deg, s_in_deg     sender's distinct receivers / senders in the window
r_in_deg, r_out_deg     receiver's distinct senders / receivers in the window (fan-in, fan-out)
s_out_cnt, r_in_cnt     sender's outgoing / receiver's incoming edge count in the window
pair_cnt                edges ``s -> r`` in the window, this one included (repeated transfers)
reverse_edge            1 if ``r -> s`` is in the window (round trip; 0 for a self-transfer)
s_out_over_in           sender's windowed outgoing total / incoming total, self-transfers left out: the
                        pass-through ratio (快进快出; near 1 when what comes in goes out); the cap (10) when nothing
                        came in
r_out_over_in           the same for the receiver
s_hours_since_in        hours since the sender last received money (the lookback if never)
amount_over_last_in     amount / the sender's last incoming amount (0 if none; capped at 10 by the model)
s_velocity, r_velocity  the account's transactions, exponentially decayed with a one-day time constant
s_hours_since_prev      hours since the sender's previous transaction (the lookback if none)
r_hours_since_prev      the same for the receiver
cycle_closed            1 if this transfer closes a directed cycle of at most 4 edges in the window
s_in_cycle, r_in_cycle  1 if the account lay on such a cycle within the lookback
s_age_days, r_age_days  days since the account was first seen
s_lifetime, r_lifetime  the account's lifetime transaction count (this one included)
======================  =========================================================================================

**No feature depends on the scale of amounts**: amounts enter only as ratios (pass-through ratios, amount over the
last incoming amount), so multiplying every amount by the same factor (another currency unit, a bank whose
customers move larger sums) leaves every feature, and the score, unchanged (a test checks this). Absolute amounts,
windowed sums and mean log amounts were features of the scorer until bundle aml-risk-mlp 1.0.0: on AMLSim, whose
planted laundering transfers are 3-20 units among normal ones of 100-1,000, the model learned that gap and scored a
lone 1 CNY transfer 1.0 on other data. Amount thresholds belong to the rules and the report engine, whose figures
are sourced.

Source of the typology features: FFIEC BSA/AML Examination Manual, Appendix F (rapid movement of funds,
round-tripping); FinCEN FIN-2014-A005 (funnel accounts, fan-in); AMLSim typologies (Suzumura & Kanezashi 2021).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from sectorflow import ConfigError

from .state import enc_float

if TYPE_CHECKING:  # pragma: no cover
    from .schema import Transaction
    from .window import TransactionWindow


FEATURE_NAMES: tuple[str, ...] = (
    "s_out_deg", "s_in_deg", "r_in_deg", "r_out_deg", "s_out_cnt", "r_in_cnt", "pair_cnt", "reverse_edge",
    "s_out_over_in", "r_out_over_in", "s_hours_since_in", "amount_over_last_in", "s_velocity", "r_velocity",
    "s_hours_since_prev", "r_hours_since_prev", "cycle_closed", "s_in_cycle", "r_in_cycle", "s_age_days",
    "r_age_days", "s_lifetime", "r_lifetime",
)
"""Names of the feature vector's entries, in order (the bundle records them; a mismatch is refused)."""

N_FEATURES = len(FEATURE_NAMES)

LOG_FEATURES: frozenset[str] = frozenset(FEATURE_NAMES) - {"reverse_edge", "cycle_closed", "s_in_cycle", "r_in_cycle"}
"""Features the model passes through ``log1p`` (after clipping at 0 and at their cap)."""

RATIO_CAP = 10.0
"""Cap of the ratio features (and the pass-through ratio's value when nothing came in)."""

FEATURE_CAPS: dict[str, float] = {"amount_over_last_in": RATIO_CAP, "s_out_over_in": RATIO_CAP,
                                  "r_out_over_in": RATIO_CAP}
"""Upper caps the model applies before ``log1p`` (the hours features are capped at the lookback by construction)."""

HOUR = 3600.0
DAY = 86_400.0
VELOCITY_TAU = DAY
"""Time constant (seconds) of the decayed velocity counters."""

CYCLE_BUDGET = 64
"""Most membership checks of one cycle search's 3-edge stage (on AMLSim, 99 % of searches need fewer than 160
without the budget, and the median 4)."""

_NEG_INF = -math.inf
# Slots of the per-account state list (a list is faster than an object with attributes here).
_LAST_T, _VEL, _LAST_IN_AMT, _LAST_IN_T, _CYCLE_T = range(5)


def find_cycle(window: TransactionWindow, src: str, dst: str) -> list[str] | None:
    """Accounts of a directed path ``dst -> ... -> src`` of at most 3 edges in the window, so that the transfer
    ``src -> dst`` closes a cycle of at most 4 edges; ``None`` if there is none.

    Bidirectional: hops forward from ``dst`` (distinct receivers) meet hops backward from ``src`` (distinct
    senders); the 3-edge stage starts from the side with fewer first hops and gives up after ``CYCLE_BUDGET``
    membership checks (deterministic: dicts keep arrival order), which bounds the cost on hub accounts. Returns the path from ``dst`` to
    ``src``, both included, shortest first. A self-transfer is not a cycle here. (On AMLSim run 20K_cycle200,
    5-edge closures were 92 % between non-laundering accounts, so the search stops at 4 edges.)
    """
    if src == dst:
        return None
    accounts = window.accounts
    d = accounts.get(dst)
    s = accounts.get(src)
    if d is None or s is None or not d.receivers or not s.senders:
        return None
    fwd1 = d.receivers
    if src in fwd1:
        return [dst, src]
    back1 = s.senders
    for a in fwd1:
        if a in back1:
            return [dst, a, src]
    # a 3-edge path dst -> a -> b -> src: walk from the side with fewer first hops, at most CYCLE_BUDGET checks
    budget = CYCLE_BUDGET
    if len(fwd1) <= len(back1):
        for a in fwd1:
            st = accounts.get(a)
            if st is None:
                continue
            for b in st.receivers:
                if b in back1 and b != dst and b != src:
                    return [dst, a, b, src]
                budget -= 1
                if not budget:
                    return None
    else:
        for b in back1:
            st = accounts.get(b)
            if st is None:
                continue
            for a in st.senders:
                if a in fwd1 and a != dst and a != src:
                    return [dst, a, b, src]
                budget -= 1
                if not budget:
                    return None
    return None


class FeatureExtractor:
    """Stateful feature computation, one call per transaction in arrival order.

    Args:
        lookback_seconds: the window's lookback; the value of the "hours since" features when there was no
            earlier event, and the cycle memory. Must equal the window's ``lookback`` (checked on every call; the
            bundle records the value it was trained with).

    Raises:
        ConfigError: a non-positive lookback.
    """

    def __init__(self, lookback_seconds: float) -> None:
        if not lookback_seconds or lookback_seconds <= 0:
            raise ConfigError(f"lookback_seconds={lookback_seconds!r}: give a positive number of seconds.")
        self.lookback = float(lookback_seconds)
        self._lookback_hours = self.lookback / HOUR
        self.reset()

    def reset(self) -> None:
        """Forget all per-account state (the window is reset separately by its owner)."""
        self._acc: dict[str, list[float]] = {}

    def row(self, txn: Transaction, window: TransactionWindow) -> list[float]:
        """The feature values of ``txn`` as a Python list of ``N_FEATURES`` floats (the fast path).

        Call once per transaction, in arrival order, right after ``window.add(txn)``.

        Raises:
            ConfigError: ``txn`` is not the window's latest edge (``window.add`` was not called first), or the
                window's lookback differs from this extractor's.
        """
        edges = window.edges
        if not edges or edges[-1].txn is not txn:
            raise ConfigError("FeatureExtractor.row(txn, window) must follow window.add(txn) for the same txn.")
        if window.lookback != self.lookback:
            raise ConfigError(f"The window's lookback ({window.lookback} s) differs from the scorer's "
                              f"({self.lookback} s); use the lookback the bundle was trained with.")
        edge = edges[-1]
        t = edge.ts
        amount = edge.amount
        src = edge.src
        dst = edge.dst
        accounts = window.accounts
        ws = accounts[src]
        wr = accounts[dst]
        acc = self._acc
        ss = acc.get(src)
        if ss is None:
            ss = acc[src] = [t, 0.0, 0.0, _NEG_INF, _NEG_INF]
        sr = acc.get(dst)
        if sr is None:
            sr = acc[dst] = [t, 0.0, 0.0, _NEG_INF, _NEG_INF]
        lookback_h = self._lookback_hours
        horizon = t - self.lookback

        last_in_t = ss[_LAST_IN_T]
        s_since_in = (t - last_in_t) / HOUR if last_in_t >= horizon else lookback_h
        last_in_amt = ss[_LAST_IN_AMT]
        over_last_in = amount / last_in_amt if last_in_amt > 0.0 else 0.0
        prev = ws.prev_active
        s_since_prev = (t - prev) / HOUR if prev is not None and prev >= horizon else lookback_h
        prev = wr.prev_active
        r_since_prev = (t - prev) / HOUR if prev is not None and prev >= horizon else lookback_h

        # own state: decayed velocity, last inbound
        dt = t - ss[_LAST_T]
        if dt > 0.0:
            ss[_VEL] = ss[_VEL] * math.exp(-dt / VELOCITY_TAU) + 1.0
            ss[_LAST_T] = t
        else:
            ss[_VEL] += 1.0
        if sr is not ss:
            dt = t - sr[_LAST_T]
            if dt > 0.0:
                sr[_VEL] = sr[_VEL] * math.exp(-dt / VELOCITY_TAU) + 1.0
                sr[_LAST_T] = t
            else:
                sr[_VEL] += 1.0
        sr[_LAST_IN_AMT] = amount
        sr[_LAST_IN_T] = t

        closed = 0.0
        if wr.receivers and ws.senders:
            path = find_cycle(window, src, dst)
            if path is not None:
                closed = 1.0
                for account in path:
                    st = acc.get(account)
                    if st is None:
                        st = acc[account] = [t, 0.0, 0.0, _NEG_INF, _NEG_INF]
                    st[_CYCLE_T] = t

        s_recv = ws.receivers
        s_in = ws.in_sum - ws.self_sum
        r_in = wr.in_sum - wr.self_sum
        return [
            len(s_recv), len(ws.senders), len(wr.senders), len(wr.receivers),
            len(ws.outgoing), len(wr.incoming), s_recv.get(dst, 0),
            1.0 if src in wr.receivers and src != dst else 0.0,
            (ws.out_sum - ws.self_sum) / s_in if s_in > 1e-9 * ws.in_sum else RATIO_CAP,
            (wr.out_sum - wr.self_sum) / r_in if r_in > 1e-9 * wr.in_sum else RATIO_CAP,
            s_since_in, over_last_in, ss[_VEL], sr[_VEL], s_since_prev, r_since_prev,
            closed, 1.0 if ss[_CYCLE_T] >= horizon else 0.0, 1.0 if sr[_CYCLE_T] >= horizon else 0.0,
            (t - ws.first_seen) / DAY, (t - wr.first_seen) / DAY, ws.lifetime_count, wr.lifetime_count,
        ]

    def state_dict(self) -> dict[str, Any]:
        """The per-account state as JSON values: ``{"lookback": seconds, "accounts": [[account, last time,
        decayed velocity, last incoming amount, its time, last cycle time], ...]}`` in insertion order ("never" is
        ``"-inf"``, :func:`~sectorflow_aml.state.enc_float`)."""
        return {"lookback": self.lookback,
                "accounts": [[a, *(enc_float(v) for v in st)] for a, st in self._acc.items()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the per-account state by ``state`` (from :meth:`state_dict`).

        Raises:
            ConfigError: a state of another lookback, or a damaged one.
        """
        if state.get("lookback") != self.lookback:
            raise ConfigError(f"The feature state was made with a {state.get('lookback')} s lookback, this scorer "
                              f"uses {self.lookback} s: run with the window the state was made with, or reset it.")
        try:
            self._acc = {row[0]: [float(v) for v in row[1:6]] for row in state["accounts"]}
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self.reset()
            raise ConfigError(f"The feature state is damaged ({exc}): reset the state.") from exc

    def vector(self, txn: Transaction, window: TransactionWindow) -> np.ndarray:
        """:meth:`row` as a float32 array of shape ``[N_FEATURES]``."""
        return np.asarray(self.row(txn, window), dtype=np.float32)


def stack(rows: list[list[float]]) -> np.ndarray:
    """Rows from :meth:`FeatureExtractor.row` as one float32 matrix ``[n, N_FEATURES]``."""
    if not rows:
        return np.zeros((0, N_FEATURES), dtype=np.float32)
    return np.asarray(rows, dtype=np.float32)


def transform_spec() -> tuple[np.ndarray, np.ndarray]:
    """``(caps, log_mask)`` over the feature columns, as the model applies them: clip to ``[0, cap]``, then
    ``log1p`` where ``log_mask``. Float32 arrays of shape ``[N_FEATURES]`` (``inf`` where uncapped)."""
    caps = np.array([FEATURE_CAPS.get(n, np.inf) for n in FEATURE_NAMES], dtype=np.float32)
    mask = np.array([n in LOG_FEATURES for n in FEATURE_NAMES], dtype=np.float32)
    return caps, mask
