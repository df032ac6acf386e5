"""The account feature extractor's state as JSON-serialisable data (``AMLPipeline.state_dict``'s ``"accounts"``).

:class:`~sectorflow_aml.account_features.AccountFeatureExtractor` keeps, per account, a deque of its events in the
window and running integer aggregates over them (see that module), plus the window's transfer log amounts for the
peer comparison. Everything there is an int, a float, a string or ``None`` in lists, deques and dicts, so the
state is written as lists: dicts as ``[[key, value], ...]`` pairs in insertion order (the keys may be ints, which JSON
objects cannot hold, and insertion order decides nothing today but is kept so that a restored extractor is the same
object graph), deques and tuples as lists. Floats round-trip exactly through JSON (``repr``), and the integer sums
are exact by design, so a restored extractor computes the same rows, bit for bit, as the one that was saved (a test
checks results after a restore against an uninterrupted run).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .account_features import AccountFeatureExtractor, _Account

_DICTS = ("senders", "receivers", "bins_in", "bins_out", "days", "tdays")
_LISTS = ("n", "sum", "sumlog", "sq")
_INTS = ("ones_in", "ones_out", "recip", "sq_in", "sq_out", "day", "day_in", "day_out", "fast", "equal")


def _account_state(a: _Account) -> dict[str, Any]:
    state: dict[str, Any] = {
        "events": [list(e) for e in a.events],
        "transfers": list(a.transfers),
        "last_in": [list(e) for e in a.last_in],
    }
    state.update({name: list(getattr(a, name)) for name in _LISTS})
    state.update({name: [[k, v] for k, v in getattr(a, name).items()] for name in _DICTS})
    state.update({name: getattr(a, name) for name in _INTS})
    return state


def _load_account(state: dict[str, Any]) -> _Account:
    a = _Account()
    a.events = deque(tuple(e) for e in state["events"])
    a.transfers = deque(state["transfers"])
    a.last_in = deque(tuple(e) for e in state["last_in"])
    for name in _LISTS:
        setattr(a, name, [int(v) for v in state[name]])
    for name in _DICTS:
        setattr(a, name, {k: int(v) for k, v in state[name]})
    for name in _INTS:
        setattr(a, name, int(state[name]))
    return a


def extractor_state_dict(extractor: AccountFeatureExtractor) -> dict[str, Any]:
    """The extractor's state: ``{"lookback", "accounts": [[account, {...}], ...], "peer": [[ts, logamount], ...],
    "peer_sum"}``."""
    return {"lookback": extractor.lookback,
            "accounts": [[account, _account_state(a)] for account, a in extractor._acc.items()],
            "peer": [list(p) for p in extractor._peer], "peer_sum": extractor._peer_sum}


def load_extractor_state(extractor: AccountFeatureExtractor, state: dict[str, Any]) -> None:
    """Replace ``extractor``'s state with ``state`` (from :func:`extractor_state_dict`).

    Raises:
        ValueError: a state made with another lookback (the caller turns it into a ``ConfigError``).
    """
    if float(state["lookback"]) != extractor.lookback:
        raise ValueError(f"account features of a {state['lookback']} s lookback, not {extractor.lookback} s")
    extractor.reset()
    extractor._acc = {account: _load_account(a) for account, a in state["accounts"]}
    extractor._peer = deque(tuple(p) for p in state["peer"])
    extractor._peer_sum = int(state["peer_sum"])
