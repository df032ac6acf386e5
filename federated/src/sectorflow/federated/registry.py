"""Finding a plugin's trainable model by task (and name) through the core's ``sectorflow_register_trainables`` hook."""

from __future__ import annotations

from sectorflow import ConfigError, TrainableSpec


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
