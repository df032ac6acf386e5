"""The AML pipeline's state as one dict: the parts' own ``state_dict`` assembled around a shared transaction table
(:mod:`sectorflow_aml.state`), and the ``on_duplicate="refuse"`` check on the ids the state remembers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sectorflow import ConfigError, InvalidInputError

from .schema import Transaction
from .account_state import extractor_state_dict, load_extractor_state
from .state import TransactionTable, check_header, decode_transactions, state_header
from .typologies.flow_sums import load_memo_state, memo_state_dict

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import AMLPipeline


def pipeline_state_dict(pipeline: AMLPipeline) -> dict[str, Any]:
    """``AMLPipeline.state_dict``: the header, then the window, its accounts' flow-sum memos, the report engine,
    the scorer's features, the account model's features (:mod:`sectorflow_aml.account_state`), each rule's own state, the model-alert pairs (insertion order), the edge of the last
    clock scan (an index into the window's edges), the case book (:meth:`sectorflow_aml.cases.CaseBook.state_dict`)
    and the transaction table they all refer to."""
    txns = TransactionTable()
    window = pipeline.window
    edge_index = {id(e): i for i, e in enumerate(window.edges)}
    clock = pipeline._clock_edge
    return {
        **state_header(pipeline),
        "window": window.state_dict(txns),
        "memos": memo_state_dict(window),
        "reports": pipeline.reports_engine.state_dict(txns),
        "scorer": pipeline.scorer.state_dict() if pipeline.scorer is not None else None,
        "accounts": (extractor_state_dict(pipeline.account_scorer.extractor)
                     if pipeline.account_scorer is not None else None),
        "rules": {rule.name: rule.state_dict() for rule in pipeline.rules},
        "model_alerted": [[src, dst, ts] for (src, dst), ts in pipeline._model_alerted.items()],
        "clock_edge": edge_index.get(id(clock)) if clock is not None else None,
        "cases": pipeline.case_book.state_dict(),
        "transactions": txns.rows,
    }


def load_pipeline_state(pipeline: AMLPipeline, state: dict[str, Any]) -> None:
    """``AMLPipeline.load_state_dict`` (see there)."""
    check_header(pipeline, state)
    pipeline.reset_state()
    try:
        txns = decode_transactions(state["transactions"])
        pipeline.window.load_state_dict(state["window"], txns)
        load_memo_state(pipeline.window, state["memos"])
        pipeline.reports_engine.load_state_dict(state["reports"], txns)
        if pipeline.scorer is not None:
            pipeline.scorer.load_state_dict(state["scorer"])
        if pipeline.account_scorer is not None:
            load_extractor_state(pipeline.account_scorer.extractor, state["accounts"])
        rules = state["rules"]
        for rule in pipeline.rules:
            rule.load_state_dict(rules.get(rule.name, {}))
        pipeline._model_alerted = {(src, dst): ts for src, dst, ts in state["model_alerted"]}
        clock = state["clock_edge"]
        pipeline._clock_edge = pipeline.window.edges[clock] if clock is not None else None
        if state.get("cases") is not None:  # states written before the case book have none: it starts empty
            pipeline.case_book.load_state_dict(state["cases"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        pipeline.reset_state()
        raise ConfigError(f"The AML state is damaged ({type(exc).__name__}: {exc}): export it again or reset it "
                          "(sectorflow aml state reset).") from exc
    except ConfigError:
        pipeline.reset_state()
        raise


def refuse_duplicates(items: Sequence[Transaction], ids: dict[str, Any], lookback_days: float) -> None:
    """``on_duplicate="refuse"``: raise before any state changes when an id of ``items`` is in the window or
    repeats within the call.

    Raises:
        InvalidInputError: listing each repeated id with its row in the call (1-based) and where it was seen.
    """
    seen: dict[str, int] = {}
    problems = []
    for row, txn in enumerate(items, start=1):
        tid = txn.transaction_id
        if tid in ids:
            problems.append({"row": row, "field": "transaction_id", "reason": f"{tid} is already in the "
                             f"{lookback_days:g}-day window (applied by an earlier call)"})
        elif tid in seen:
            problems.append({"row": row, "field": "transaction_id", "reason": f"{tid} repeats row {seen[tid]}"})
        else:
            seen[tid] = row
    if problems:
        names = ", ".join(p["reason"].split(" ", 1)[0] for p in problems[:5])
        raise InvalidInputError(f"{len(problems)} transaction id(s) already applied (on_duplicate='refuse'): {names}"
                                f"{' ...' if len(problems) > 5 else ''}. Nothing of this call was counted; drop them "
                                "and send the rest, or use on_duplicate='skip'.", details=problems)
