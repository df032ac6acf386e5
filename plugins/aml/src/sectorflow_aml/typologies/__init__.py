"""Typology rules, one module each, and :func:`build_rules`, which turns the ``rules=`` option into rule objects.

Each rule has ``check(window, edge) -> list[Alert]`` (see :mod:`.base`). The ``rules`` option of
``Taskflow("aml", rules=...)`` maps a typology name to ``False`` (off), ``True`` (defaults) or a dict of parameter
overrides; typologies not named run with their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectorflow import ConfigError

from .base import Rule, alert_id
from .cycle import CycleRule
from .dormant_reactivation import DormantReactivationRule
from .fan_in import FanInRule
from .fan_out import FanOutRule
from .gather_scatter import GatherScatterRule
from .high_risk_jurisdiction import HighRiskJurisdictionRule
from .rapid_pass_through import RapidPassThroughRule
from .scatter_gather import ScatterGatherRule
from .structuring import StructuringRule

RULES: dict[str, type[Rule]] = {cls.name: cls for cls in (
    StructuringRule, FanInRule, FanOutRule, CycleRule, ScatterGatherRule, GatherScatterRule, RapidPassThroughRule,
    DormantReactivationRule, HighRiskJurisdictionRule)}
"""Every typology rule by name."""


def build_rules(config: Mapping[str, Any] | None = None, defaults: Mapping[str, Mapping[str, Any]] | None = None,
                ) -> list[Rule]:
    """Rule objects for ``config`` (``{typology: False | True | {param: value}}``), in :data:`RULES` order.

    ``defaults`` are per-typology parameter overrides applied before ``config`` (the pipeline uses it for
    jurisdiction-dependent thresholds).

    Raises:
        ConfigError: an unknown typology or parameter, or a value of the wrong kind.
    """
    config = dict(config or {})
    unknown = sorted(set(config) - set(RULES))
    if unknown:
        raise ConfigError(f"Unknown typolog{'y' if len(unknown) == 1 else 'ies'} {unknown} in rules=; known: "
                          f"{', '.join(RULES)}.")
    rules: list[Rule] = []
    for name, cls in RULES.items():
        setting = config.get(name, True)
        if setting is False or setting is None:
            continue
        params = dict((defaults or {}).get(name, {}))
        if isinstance(setting, Mapping):
            params.update(setting)
        elif setting is not True:
            raise ConfigError(f"rules[{name!r}]={setting!r}: give True, False or a dict of parameters.")
        rules.append(cls(**params))
    return rules


__all__ = [
    "RULES",
    "CycleRule",
    "DormantReactivationRule",
    "FanInRule",
    "FanOutRule",
    "GatherScatterRule",
    "HighRiskJurisdictionRule",
    "RapidPassThroughRule",
    "Rule",
    "ScatterGatherRule",
    "StructuringRule",
    "alert_id",
    "build_rules",
]
