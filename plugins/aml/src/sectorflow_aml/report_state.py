"""The report engine's aggregates (:class:`_Open`) and its state as JSON values (``ReportEngine.state_dict`` /
``load_state_dict``; the format is described there and in :mod:`sectorflow_aml.state`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from sectorflow import ConfigError

from .schema import Transaction
from .state import TransactionTable
from .thresholds import Threshold

if TYPE_CHECKING:  # pragma: no cover
    from .reports import ReportEngine

Direction = Literal["in", "out"]


@dataclass(slots=True)
class _Open:
    """State of one (customer, direction, rule, currency class, business day) aggregate."""

    threshold: Threshold
    customer: str
    direction: Direction
    business_date: date
    total: Decimal = Decimal(0)
    rows: list[tuple[Transaction, str, Decimal]] = field(default_factory=list)  # (transaction, account, amount)
    fired: bool = False
    seq: int = 0  # the engine's count of aggregates opened, this one included (open_reports' order)
    first_day: date | None = None  # local day of the earliest transaction, as the last draft or reference saw it


def report_state_dict(engine: ReportEngine, txns: TransactionTable) -> dict[str, Any]:
    """``ReportEngine.state_dict`` (see there)."""
    where = {id(t): i for i, t in enumerate(engine.thresholds)}
    index = txns.index

    def aggregate(state: _Open | tuple[Any, ...]) -> list[Any]:
        if state.__class__ is tuple:
            txn, account, amount, seq, threshold = state
            return ["row", index(txn), account, str(amount), seq, where[id(threshold)]]
        return ["open", where[id(state.threshold)], state.customer, state.direction,
                state.business_date.isoformat(), str(state.total),
                [[index(t), account, str(amount)] for t, account, amount in state.rows], state.fired, state.seq,
                None if state.first_day is None else state.first_day.isoformat()]

    return {
        "jurisdiction": engine.jurisdiction,
        "thresholds": [repr(t) for t in engine.thresholds],
        "slots": [list(key) for key in engine._slots],
        "latest": None if engine._latest is None else engine._latest.isoformat(),
        "seq": engine._seq,
        "days": [[day.isoformat(), [[[customer, aggregate(state)] for customer, state in slot.items()]
                                    for slot in slots]] for day, slots in engine._states.items()],
        "unshown": [[customer, slot, day.isoformat()] for customer, slot, day in engine._unshown],
        "dropped_warned": sorted(day.isoformat() for day in engine._dropped_warned),
    }


def load_report_state(engine: ReportEngine, state: dict[str, Any], txns: list[Transaction]) -> None:
    """``ReportEngine.load_state_dict`` (see there)."""
    if state.get("jurisdiction") != engine.jurisdiction or state.get("thresholds") != [repr(t) for t in
                                                                                      engine.thresholds]:
        raise ConfigError(f"The report state was made for jurisdiction {state.get('jurisdiction')!r} with other "
                          f"thresholds than this engine's ({engine.jurisdiction}): run with the options the state "
                          "was made with, or reset it.")
    thresholds = engine.thresholds
    day_of = date.fromisoformat

    def aggregate(row: list[Any]) -> _Open | tuple[Any, ...]:
        if row[0] == "row":
            _, t, account, amount, seq, threshold = row
            return (txns[t], account, Decimal(amount), seq, thresholds[threshold])
        _, threshold, customer, direction, day, total, rows, fired, seq, first_day = row
        return _Open(thresholds[threshold], customer, direction, day_of(day), Decimal(total),
                     [(txns[t], account, Decimal(amount)) for t, account, amount in rows], fired, seq,
                     None if first_day is None else day_of(first_day))

    try:
        engine.reset()
        engine._slots = {(d, r, a): i for i, (d, r, a) in enumerate(state["slots"])}
        engine._entries.clear()
        engine._plans.clear()
        engine._latest = None if state["latest"] is None else day_of(state["latest"])
        engine._seq = state["seq"]
        engine._states = {day_of(day): [{customer: aggregate(row) for customer, row in slot} for slot in slots]
                        for day, slots in state["days"]}
        engine._unshown = {(customer, slot, day_of(day)): None for customer, slot, day in state["unshown"]}
        engine._dropped_warned = {day_of(day) for day in state["dropped_warned"]}
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        engine.reset()
        raise ConfigError(f"The report state is damaged ({type(exc).__name__}: {exc}): reset the state.") from exc
