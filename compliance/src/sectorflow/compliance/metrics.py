"""Prometheus metrics of the audit log's replica (issue: off-site backup whose lag is a metric).

:class:`ReplicaCollector` is registered in the server's registry through the ``sectorflow_register_metrics`` hook
(:mod:`sectorflow.compliance.plugin`); it reads the open log's :class:`~sectorflow.compliance.replica.Replica` at
every scrape:

- ``sectorflow_audit_replica_lag_records``: records the replica is behind the log (``Replica.lag()["records"]``);
- ``sectorflow_audit_replica_up``: 1 while the replica is written, 0 since a write to it failed (the log then holds
  an ``audit.replica_failed`` alarm record: never a silent gap);
- ``sectorflow_audit_replica_last_sync_timestamp_seconds``: UNIX time of the last copy that reached it (absent
  before the first).

Each carries the label ``replica`` (the replica's URL without a password). No family is reported while the log is
not open or has no replica. ``prometheus_client`` is the serve extra's: this module is imported only by the server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any


class ReplicaCollector:
    """A ``prometheus_client`` collector of the replica of ``get_log()`` (a callable returning the open
    :class:`~sectorflow.compliance.log.AuditLog` or ``None``)."""

    def __init__(self, get_log: Callable[[], Any]) -> None:
        self._get_log = get_log

    def describe(self) -> list[Any]:
        return []  # families depend on whether a replica is configured: nothing to check at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from .admin import _safe_url

        audit_log = self._get_log()
        replica = getattr(audit_log, "replica", None) if audit_log is not None else None
        if replica is None:
            return
        label = [_safe_url(replica.url)]
        lag = replica.lag()
        families = [
            ("sectorflow_audit_replica_lag_records", "Audit records the replica is behind the log.",
             float(lag["records"])),
            ("sectorflow_audit_replica_up", "1 while the audit replica is written, 0 since a write to it failed.",
             0.0 if lag["down_since"] else 1.0),
        ]
        if lag["last_sync"]:
            families.append(("sectorflow_audit_replica_last_sync_timestamp_seconds",
                             "UNIX time of the last copy that reached the audit replica.",
                             datetime.fromisoformat(str(lag["last_sync"]).replace("Z", "+00:00")).timestamp()))
        for name, help_text, value in families:
            family = GaugeMetricFamily(name, help_text, labels=["replica"])
            family.add_metric(label, value)
            yield family
