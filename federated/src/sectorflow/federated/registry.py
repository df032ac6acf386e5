"""Finding a plugin's trainable model by task (and name) through the core's ``sectorflow_register_trainables`` hook,
and checking a partition's keys against the ones it declares (``TrainableSpec.keys``)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from sectorflow import ConfigError, TrainableSpec

ALWAYS_ACCEPTED = ("institution", "name", "num_partitions", "partition_id")
"""Partition keys every trainable accepts: the simulation sets ``partition_id`` / ``num_partitions``; ``name`` (or
``institution``) is the institution's name in the run's records."""


def unknown_partition_keys(spec: TrainableSpec, partition: Mapping[str, Any]) -> list[str]:
    """The keys of ``partition`` that ``spec`` does not declare (none when it declares no ``keys``)."""
    if spec.keys is None:
        return []
    exact = set(spec.keys) | set(ALWAYS_ACCEPTED)
    prefixes = tuple(k[:-1] for k in spec.keys if k.endswith("*"))
    return sorted(str(k) for k in partition if k not in exact and not (prefixes and str(k).startswith(prefixes)))


def check_partition_keys(spec: TrainableSpec, partition: Mapping[str, Any], where: str) -> None:
    """Refuse a partition holding a key ``spec`` does not declare.

    Raises:
        ConfigError: naming the key, ``where`` it is (``institution 2 of 3 in the federation config``), the
            closest accepted key (difflib) and every accepted key.
    """
    unknown = unknown_partition_keys(spec, partition)
    if not unknown:
        return
    accepted = sorted({*(spec.keys or ()), *ALWAYS_ACCEPTED})
    plain = [k.replace("-", "_") for k in accepted if not k.endswith("*")]
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key.replace("-", "_"), plain, n=1, cutoff=0.6)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"Unknown key{'s' if len(unknown) > 1 else ''} {', '.join(hints)} in {where}, for "
                      f"{spec.task}/{spec.name}, which would ignore {'them' if len(unknown) > 1 else 'it'}. "
                      f"Accepted keys: {', '.join(accepted)}.",
                      details={"unknown": unknown, "accepted": accepted, "where": where})


def find_trainable(task: str, name: str = "") -> TrainableSpec:
    """The trainable a plugin offers for ``task`` (and ``name`` when the task offers several).

    Raises:
        ConfigError: no plugin offers one (lists what is offered), or several do and ``name`` is empty.
    """
    from sectorflow import host  # the core registry

    offered = host.registered_trainables()
    matches = [s for s in offered if s.task == task and (not name or s.name == name)]
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(f"{s.task}/{s.name} ({s.plugin})" for s in offered) or "none (install a plugin that offers one)"
    if not matches:
        raise ConfigError(f"No trainable model for task {task!r}{f' named {name!r}' if name else ''}. Offered: "
                          f"{listing}.", details={"task": task, "name": name})
    raise ConfigError(f"Task {task!r} offers several trainable models; choose one with model = \"...\" in the "
                      f"federation config. Offered: {listing}.", details={"task": task})
