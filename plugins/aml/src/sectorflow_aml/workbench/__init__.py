"""The AML analyst workbench: a web page to review cases, decide them with four eyes, and teach the model.

Served by ``sectorflow serve`` under ``/ui/`` and by ``sectorflow workbench`` alone, through the core's
``sectorflow_register_web`` hook (:func:`register_web`). Modules: :mod:`.data` (a tenant's cases and transactions
from a results file and its input), :mod:`.queue` (filter and sort), :mod:`.decisions` (dispositions in the state
store, the four-eyes rule, the labels file), :mod:`.sessions` (sign-in with a key, cookie, CSRF, roles),
:mod:`.routes` (the pages), :mod:`.audit_view` (the audit page), :mod:`.cli` (``sectorflow workbench``,
``sectorflow aml dispositions export``). See docs/workbench.md.

Configuration (``[web.aml]`` of the server configuration)::

    [web.aml]
    state_store = "/srv/sectorflow/state.sqlite"   # where decisions live (default: [server] state_store, else
                                                   # $SECTORFLOW_HOME/state.sqlite; a postgresql:// URL works)
    [[web.aml.sources]]                            # one per tenant: a `sectorflow run aml` results file and its input
    tenant = "bank-1"
    results = "results.jsonl"
    transactions = "transactions.csv.gz"
    format = "amlsim"
"""

from __future__ import annotations

from typing import Any


def register_web(app: Any, host: Any) -> None:
    """Mount the workbench on ``app`` (the ``sectorflow_register_web`` hook); nothing when ``[web.aml]`` is absent
    from the server configuration."""
    if not host.settings("aml"):
        return
    from .routes import mount

    mount(app, host)
