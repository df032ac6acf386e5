"""``sectorflow serve``: every registered task as a FastAPI endpoint (needs the ``serve`` extra).

Public API::

    from sectorflow.serving import create_app, load_config, ServeConfig, generate_key, hash_key
"""

from __future__ import annotations

from .app import app_from_env, create_app
from .auth import generate_key, hash_key
from .config import ServeConfig, load_config

__all__ = ["ServeConfig", "app_from_env", "create_app", "generate_key", "hash_key", "load_config"]
