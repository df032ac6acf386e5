"""Validation of a task's raw input items against its pydantic input model, with messages that say what to fix.

:func:`validate_items` is what :class:`~sectorflow.Taskflow` and the file readers (:mod:`sectorflow.batch`) run on
every item before a pipeline sees it.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import InvalidInputError

log = logging.getLogger("sectorflow.taskflow")
"""The logger of :class:`~sectorflow.Taskflow` (documented name), which ignored-key warnings have always used."""


# pydantic's wording where it does not say what to fix: a file reader leaves a blank cell out, so "Field required"
# was what a user with an empty CSV cell saw.
_REASONS = {"missing": "missing or empty: a value is required",
            # pydantic: "unable to parse raw data as a unicode string", for a lone surrogate such as "\udcff"
            # (bytes decoded with errors="surrogateescape", a broken \ud83d escape in JSON): it cannot be UTF-8
            "string_unicode": "contains an unpaired surrogate (e.g. '\\udcff', left by decoding bytes with "
                              "errors='surrogateescape' or by a broken \\u escape): decode the source as UTF-8, or "
                              "replace those characters"}


def _reason(err: Any, model: type[BaseModel]) -> str:
    """What to fix, for one pydantic error of ``model``: pydantic's own message unless it does not say it."""
    kind = err["type"]
    if kind in _REASONS:
        return _REASONS[kind]
    if kind == "value_error" and "error" in err.get("ctx", {}):  # without pydantic's "Value error, " prefix
        return str(err["ctx"]["error"])
    if kind in ("model_type", "model_attributes_type", "dict_type") and not err["loc"]:
        got = type(err["input"]).__name__
        return f"got {got}: give a dict of {model.__name__}'s fields or an instance of {model.__name__}"
    return str(err["msg"])


_warned: set[tuple[type[BaseModel], str]] = set()


def _known_keys(model: type[BaseModel]) -> frozenset[str] | None:
    """The keys ``model`` reads (field names and aliases), or ``None`` when it keeps or refuses other keys itself
    (``extra="allow"`` / ``"forbid"``)."""
    if model.model_config.get("extra") in ("allow", "forbid"):
        return None
    names: set[str] = set()
    for name, info in model.model_fields.items():
        names.add(name)
        for alias in (info.alias, info.validation_alias):
            if isinstance(alias, str):
                names.add(alias)
    return frozenset(names)


def _warn_ignored(model: type[BaseModel], unknown: dict[str, None]) -> None:
    """One warning per model and key: a key that is no field of a model that ignores extra keys (aml's
    ``Transaction``) is dropped by pydantic without a word, so a misspelt optional field (``sender_contry``) lost what
    it said (there: a high-risk-jurisdiction alert)."""
    keys = tuple(key for key in sorted(map(str, unknown)) if (model, key) not in _warned)
    if not keys or len(_warned) > 1000:
        return
    _warned.update((model, key) for key in keys)
    fields = list(model.model_fields)
    hints = [f"{key!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(key, fields, n=1,
                                                                                              cutoff=0.75))
             else repr(key) for key in keys]
    log.warning("%s: %s %s not %s and %s ignored; its fields: %s.", model.__name__, ", ".join(hints),
                "is" if len(keys) == 1 else "are", "a field" if len(keys) == 1 else "fields",
                "was" if len(keys) == 1 else "were", ", ".join(fields))


def validate_items(model: type[BaseModel], items: Sequence[Any], *, first_row: int = 1,
                   context: dict[str, Any] | None = None) -> list[BaseModel]:
    """Validate raw items (dicts or model instances) against ``model``; ``context`` is the pydantic validation
    context (:meth:`TaskSpec.input_context`, as :attr:`Taskflow.input_context` holds it). Instances of ``model`` are
    taken as they are.

    A dict key that is no field of a model that ignores unknown keys (pydantic's default) is logged once per model
    and key (``sectorflow.taskflow`` logger, WARNING, with the closest field), since pydantic drops it silently.

    Raises:
        InvalidInputError: with ``details`` listing every bad item as ``{"row", "field", "reason"}`` (rows 1-based,
            counted from ``first_row``).
    """
    out: list[BaseModel] = []
    problems: list[dict[str, Any]] = []
    known: frozenset[str] | None = None
    looked = False  # the model's keys are looked up at the first item that is no instance: ``sectorflow run``
    # validates each row alone, and a typed reader's rows are instances already (the lookup was 3 % of a run)
    unknown: dict[str, None] = {}
    for offset, item in enumerate(items):
        if isinstance(item, model):
            out.append(item)
            continue
        if not looked:
            known, looked = _known_keys(model), True
        if known is not None and isinstance(item, dict) and not known.issuperset(item):
            unknown.update(dict.fromkeys(key for key in item if key not in known))
        try:
            out.append(model.model_validate(item, context=context))
        except ValidationError as exc:
            for err in exc.errors():
                problems.append({"row": first_row + offset, "field": ".".join(str(p) for p in err["loc"]) or None,
                                 "reason": _reason(err, model)})
    if unknown:
        _warn_ignored(model, unknown)
    if problems:
        shown = "; ".join(f"row {p['row']}: {p['field'] + ': ' if p['field'] else ''}{p['reason']}"
                          for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InvalidInputError(f"Invalid input for {model.__name__}: {shown}{more}.", details=problems)
    return out
