"""Peer-group choices of ``typologies/peers.py``: what each candidate test keeps of the fan-in and fan-out alerts that
the rules raise with the peer test off, on the everyday banks (every alert a false alarm) and AMLGentex dev sets.

For each alert (subject outside AMLGentex's external source and sink), the hub's peer group is its activity band
(:func:`sectorflow_aml.typologies.peers.band_of`, groups of at least 30 accounts) and two statistics are compared:

- ``day``: distinct counterparties on the counted side within the last day (the shipped statistic; the peers'
  figures from :func:`~sectorflow_aml.typologies.peers.peer_groups`);
- ``window``: distinct counterparties in the whole window (``len(senders)``; the peers' recounted here).

A test keeps an alert when the hub's figure is more than the peers' ``q`` quantile and at least ``ratio`` times it
(the hub left out of its group); ``new only`` applies it only where the hub has no own level (the evidence
``own_baseline`` is -1 or 0, as the rules do), ``every`` to every alert. Printed: alerts kept / of them on labelled
accounts, and distinct subjects / labelled subjects. Data and loaders as ``aml_cases_eval.py`` (dev_s303 refused).

Usage::

    .venv/bin/python benchmarks/aml_peer_groups.py [--sets everyday101 everyday102 dev_s101 dev_s202]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aml_cases_eval as ev  # noqa: E402  (the shared loaders)

from sectorflow_aml.typologies import build_rules  # noqa: E402
from sectorflow_aml.typologies.peers import MIN_GROUP, band_of, peer_groups  # noqa: E402
from sectorflow_aml.window import TransactionWindow  # noqa: E402

QS = (0.9, 0.95, 0.99)
TESTS = [("day", "new only", 0.99, 2.0), ("day", "new only", 0.99, 1.0), ("day", "new only", 0.95, 1.0),
         ("day", "every", 0.9, 1.0), ("window", "new only", 0.99, 1.0), ("window", "every", 0.9, 1.0),
         ("window", "every", 0.95, 1.0)]


def window_quantiles(window: TransactionWindow, hub: str, incoming: bool) -> tuple[int, dict[float, int]]:
    """The hub's distinct counterparties in the window and its peers' quantiles of the same (recounted)."""
    bands: dict[int, list[int]] = {}
    for name, s in window.accounts.items():
        if (s.incoming or s.outgoing) and name != hub:
            bands.setdefault(band_of(len(s.incoming) + len(s.outgoing)), []).append(
                len(s.senders if incoming else s.receivers))
    st = window.accounts[hub]
    band = band_of(len(st.incoming) + len(st.outgoing))
    values = list(bands.get(band, []))
    top, step = max(bands, default=0), 1
    while len(values) < MIN_GROUP and (band - step >= 1 or band + step <= top):
        for b in (band - step, band + step):
            values.extend(bands.get(b, []))
        step += 1
    values.sort()
    out = {}
    for q in QS:
        need, i = q * len(values), 0
        while i < len(values) and i + 1 < need:
            i += 1
        out[q] = values[i] if values else 0
    return len(st.senders if incoming else st.receivers), out


def probe(name: str) -> list[tuple]:
    txns, sar, _ = ev.amlsim() if name == "amlsim" else ev.everyday(name) if name.startswith("everyday") \
        else ev.gentex(name)
    window = TransactionWindow(30.0)
    rules = [r for r in build_rules({"fan_in": {"peer_quantile": 1.0}, "fan_out": {"peer_quantile": 1.0}})
             if r.name in ("fan_in", "fan_out")]
    rows = []
    for txn in txns:
        edge = window.add(txn)
        for rule in rules:
            for alert in rule.check(window, edge):
                hub = alert.accounts[0]
                if hub.startswith("EXT-"):
                    continue
                incoming = rule.name == "fan_in"
                groups = peer_groups(window)
                band, s_in, s_out = groups.registered()[hub]
                day = s_in if incoming else s_out
                day_q = {q: groups.quantile(band, incoming, q, exclude=day)[0] for q in QS}
                whole, whole_q = window_quantiles(window, hub, incoming)
                new = not (alert.evidence.get("own_baseline") or 0) > 0
                rows.append((rule.name, hub, hub in sar, new, {"day": (day, day_q), "window": (whole, whole_q)}))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["everyday101", "everyday102", "dev_s101", "dev_s202"])
    args = parser.parse_args(argv)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for name in args.sets:
        rows = probe(name)
        for typology in ("fan_in", "fan_out"):
            mine = [r for r in rows if r[0] == typology]

            def fig(kept: list[tuple]) -> str:
                return (f"{len(kept)}/{sum(r[2] for r in kept)} alerts, {len({r[1] for r in kept})}/"
                        f"{len({r[1] for r in kept if r[2]})} subjects")

            print(f"\n== {name} {typology}: peer test off {fig(mine)} ({sum(r[3] for r in mine)} alerts on hubs "
                  f"with no own level)")
            for statistic, scope, q, ratio in TESTS:
                kept = [r for r in mine if (scope == "new only" and not r[3]) or (
                    r[4][statistic][0] > r[4][statistic][1][q] and r[4][statistic][0] >= ratio * r[4][statistic][1][q])]
                print(f"   {statistic:6s} {scope:8s} q {q:<4g} ratio {ratio:g}: {fig(kept)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
