"""Command-line option values parsed into what the runtime takes: ``--column FIELD=COLUMN`` / ``--default
FIELD=VALUE`` pairs (:func:`field_pairs`) and ``-O KEY=VALUE`` task options (:func:`option_values`).

Used by ``sectorflow run`` and by plugin commands that read input files the same way (``sectorflow aml ...``); both
names are public (``sectorflow.field_pairs``, ``sectorflow.option_values``).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ConfigError


def field_pairs(flag: str, what: str, items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``{FIELD: text}`` from repeated ``FIELD=text`` command-line options (``--column FIELD=COLUMN``,
    ``--default FIELD=VALUE``): each item split at its first ``=``, both sides stripped. ``flag`` and ``what`` (e.g.
    ``"--column"``, ``"COLUMN"``) only word the error. For a plugin command that reads input files the way
    ``sectorflow run`` does; hand the result to a reader factory as ``mapping`` or ``defaults``.

    Raises:
        ConfigError: an item without ``=``, an empty side, or a FIELD given twice.
    """
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value:
            example = "transaction_id='Txn Ref'" if what == "COLUMN" else "currency=CNY"
            raise ConfigError(f"{flag} {item!r}: write FIELD={what}, e.g. {flag} {example} (quote a name or value "
                              "with spaces).")
        if key in pairs:
            raise ConfigError(f"{flag} gives {key!r} twice ({pairs[key]!r} and {value!r}); keep one.")
        pairs[key] = value
    return pairs


def option_values(items: list[str] | tuple[str, ...], flag: str = "--option") -> dict[str, Any]:
    """``{KEY: value}`` from repeated ``-O KEY=VALUE`` command-line options (task options, as ``sectorflow run``
    takes them): each item split at its first ``=``; the value is read as JSON when it is JSON (``true``, ``25``,
    ``["a", "b"]``, ``{"fan_in": false}``), else kept as text (``Asia/Shanghai``). A later KEY replaces an earlier one.
    A value that starts with ``[`` or ``{`` is meant as JSON: when it does not parse it is refused (a missing ``}]``
    would otherwise become a text value, e.g. a legal field literally named ``[{"甲方": ["地址"]``).

    Raises:
        ConfigError: an item without ``=`` (names ``flag`` and the item); a value that starts with ``[`` or ``{``
            and is not valid JSON (names the key, the parser's message and its position).
    """
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"{flag} {item!r}: write KEY=VALUE.")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError as exc:
            if value.lstrip()[:1] in ("[", "{"):
                raise ConfigError(f"{flag} {key}=...: the value starts like JSON but does not parse ({exc.msg} at "
                                  f"character {exc.pos} of {value!r}); fix the brackets and quotes (in a shell, "
                                  "put the whole KEY=VALUE in single quotes).") from exc
            options[key] = value
    return options


def complete_task_names(incomplete: str) -> list[str]:
    """Shell completion of a ``TASK`` argument (``sectorflow run a<TAB>``): the registered task names and aliases
    that start with ``incomplete``, sorted. Loads the plugins (entry points), never a model."""
    from .plugins import registered_tasks

    names: set[str] = set()
    for name, spec in registered_tasks().items():
        names.add(name)
        names.update(spec.aliases)
    return sorted(n for n in names if n.startswith(incomplete))
