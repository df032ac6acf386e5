"""``sectorflow serve``: every registered task as a FastAPI endpoint (needs the ``serve`` extra).

Public API::

    from sectorflow.serving import create_app, load_config, ServeConfig, generate_key, hash_key, run_server
    from sectorflow.serving import WebHost, WebUser, web_app   # web pages of plugins (sectorflow_register_web)

The names load lazily, so that the built-in ``serve`` plugin (``sectorflow.serving.plugin``) imports without the
``serve`` extra and ``sectorflow`` works without FastAPI installed.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "create_app": ".app", "app_from_env": ".app", "generate_key": ".auth", "hash_key": ".auth",
    "ServeConfig": ".config", "load_config": ".config", "run_server": ".server", "WebHost": ".web",
    "WebUser": ".web", "web_app": ".web",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
