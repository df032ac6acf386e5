"""Draw an alert's fund flow: accounts as nodes, transfers as arrows labelled with amount and time.

:func:`draw_alert` is the Python entry point (:func:`case_alert` makes a case drawable); ``sectorflow aml explain`` (:mod:`sectorflow_aml.cli`) finds the alert
in a results file and the transactions in the input file, then calls it. Parallel transfers between the same two
accounts share one arrow whose label lists them (earliest first, at most ``max_lines`` lines). The alert's own
accounts are drawn in red, counterparties in grey. Layout: a ring for cycles; columns from left to right (senders,
intermediaries, receivers) when the flow has no loop; otherwise the hub in the middle, or a seeded spring layout (the
same picture every time).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from datetime import time, timezone as dt_timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import Any

from sectorflow import ConfigError, InvalidInputError

from .cases import Case
from .schema import Alert, Reason, Transaction, parse_zone

ALERT_COLOUR = "#d62728"
OTHER_COLOUR = "#bbbbbb"


def _layout(graph: Any, typology: str) -> dict[str, Any]:
    import networkx as nx

    nodes = list(graph.nodes)
    if len(nodes) <= 2:
        return nx.circular_layout(graph)
    if typology == "cycle":
        try:
            ring = nx.find_cycle(graph)
            order = [u for u, _ in ring]
            rest = [n for n in nodes if n not in order]
            return nx.shell_layout(graph, [order, rest] if rest else [order])
        except nx.NetworkXNoCycle:
            pass
    if nx.is_directed_acyclic_graph(graph):
        layers = list(nx.topological_generations(graph))
        if 2 <= len(layers) <= 6:  # money flows left to right: senders, intermediaries, receivers
            pos = {}
            for depth, layer in enumerate(layers):
                ordered = sorted(layer, key=lambda n: (len(str(n)), str(n)))
                for i, node in enumerate(ordered):
                    pos[node] = (float(depth), (len(ordered) - 1) / 2 - i)
            return pos
    degrees = dict(graph.degree())
    hub = max(nodes, key=lambda n: (degrees[n], str(n)))
    if degrees[hub] >= max(3, len(nodes) - 1) or typology in ("fan_in", "fan_out"):
        return nx.shell_layout(graph, [[hub], [n for n in nodes if n != hub]])
    return nx.spring_layout(graph, seed=0, k=1.5 / max(len(nodes), 1) ** 0.5)


def _amount(txn: Transaction) -> str:
    return f"{txn.amount:,.2f} {txn.currency}"


def _zone(timezone: str | tzinfo | None) -> tzinfo:
    """The zone times are drawn in: ``None`` is UTC; a name or offset as :func:`~sectorflow_aml.schema.parse_zone`
    takes it (raises ConfigError otherwise)."""
    if timezone is None:
        return dt_timezone.utc
    if isinstance(timezone, tzinfo):
        return timezone
    try:
        return parse_zone(timezone)
    except ConfigError as exc:
        raise ConfigError(f"timezone={timezone!r} (the zone of the times drawn): give an IANA time zone such as "
                          "'Asia/Shanghai' or 'America/New_York', 'UTC', or a fixed offset such as '+08:00'.") from exc


def zone_label(zone: tzinfo) -> str:
    """``UTC``, an IANA name (``Asia/Shanghai``) or a fixed offset (``UTC+08:00``), as the picture names it."""
    return "UTC" if zone is dt_timezone.utc else str(zone)


def flow_graph(alert: Alert, transactions: Iterable[Transaction], *, max_lines: int = 3,
               timezone: str | tzinfo | None = None) -> tuple[Any, list[Transaction]]:
    """The fund-flow graph of ``alert``: a ``networkx.DiGraph`` with one edge per (sender, receiver) pair.

    Edge attributes: ``transactions`` (the transfers, earliest first), ``label`` (amount, currency and time per
    transfer in ``timezone``, default UTC; at most ``max_lines`` then "+N more"). Graph attributes: ``clock`` (the
    time format) and ``zone``. Also returns the alert's transactions found, in time order.

    Raises:
        InvalidInputError: none of the alert's transactions is among ``transactions``.
        ConfigError: ``timezone`` is not a time zone.
    """
    zone = _zone(timezone)
    import networkx as nx

    wanted = set(alert.transaction_ids)
    chosen = sorted((t for t in transactions if t.transaction_id in wanted),
                    key=lambda t: (t.timestamp, t.transaction_id))
    if not chosen:
        raise InvalidInputError(f"None of the {len(wanted)} transactions of alert {alert.alert_id} was supplied; "
                                f"pass the input file the results were computed from.",
                                details=[{"row": None, "field": "transaction_ids", "reason": "not found"}])
    clock = "%Y-%m-%d" if all(t.timestamp.astimezone(zone).time() == time(0) for t in chosen) else "%Y-%m-%d %H:%M"
    graph = nx.DiGraph(clock=clock, zone=zone)
    graph.add_nodes_from(alert.accounts)
    for t in chosen:
        if not graph.has_edge(t.sender_account, t.receiver_account):
            graph.add_edge(t.sender_account, t.receiver_account, transactions=[])
        graph.edges[t.sender_account, t.receiver_account]["transactions"].append(t)
    for _, _, data in graph.edges(data=True):
        items = data["transactions"]
        lines = [f"{_amount(t)} · {t.timestamp.astimezone(zone):{clock}}" for t in items[:max_lines]]
        if len(items) > max_lines:
            lines.append(f"+{len(items) - max_lines} more")
        data["label"] = "\n".join(lines)
    return graph, chosen


_NOUNS = {"cash_deposit": ("cash deposit", "cash deposits"),
          "cash_withdrawal": ("cash withdrawal", "cash withdrawals"),
          "transfer": ("transfer", "transfers"), "wire": ("transfer", "transfers"), "ach": ("transfer", "transfers"),
          "mobile": ("transfer", "transfers"), "card": ("card payment", "card payments"),
          "cheque": ("cheque", "cheques")}
_MIXED = ("transaction", "transactions")


def count_text(transactions: Sequence[Transaction]) -> str:
    """How many ``transactions`` there are, named by their channel: ``"2 cash deposits"``, ``"1 cash withdrawal"``,
    ``"3 transfers"`` (transfer, wire, ACH and mobile are all transfers), ``"2 card payments"``, ``"1 cheque"``;
    ``"N transactions"`` when the channels differ in kind (deposits and transfers) or are ``other``."""
    nouns = {_NOUNS.get(t.channel, _MIXED) for t in transactions}  # Channel is a str enum: its value is the key
    singular, plural = nouns.pop() if len(nouns) == 1 else _MIXED
    return f"1 {singular}" if len(transactions) == 1 else f"{len(transactions)} {plural}"


def title_text(alert: Alert, summary: str, reasons: str, width: int) -> str:
    """The picture's title: alert, summary and reasons, each wrapped at ``width`` characters (at 10 pt about 12
    characters per inch of figure), so a long reason on a small picture is not cut at its edges."""
    lines = [f"{alert.typology} alert {alert.alert_id}  (score {alert.score:.2f}, by {alert.fired_by})", summary]
    if reasons:
        lines.append(reasons)
    return "\n".join(textwrap.fill(line, width) for line in lines)


def draw_alert(alert: Alert, transactions: Iterable[Transaction], path: str | Path, *, max_lines: int = 3,
               dpi: int = 150, note: str | None = None, timezone: str | tzinfo | None = None) -> Path:
    """Write a PNG of ``alert``'s fund flow to ``path`` and return the path.

    Args:
        alert: the alert (its ``transaction_ids`` choose the transactions and ``accounts`` are highlighted).
        transactions: any transactions; those named by the alert are drawn.
        path: the PNG file to write (parent folders are created).
        max_lines: transfers listed per arrow before "+N more".
        dpi: resolution.
        note: a line written under the picture (e.g. what could not be checked against the results).
        timezone: zone of the times drawn (IANA name, offset or tzinfo; default UTC), named in the title: a bank's
            local zone puts each transfer on the day its reports count it.

    Raises:
        InvalidInputError: none of the alert's transactions is among ``transactions``.
        ConfigError: ``path`` does not end in ``.png``, or ``timezone`` is not a time zone.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ConfigError(f"The picture is written as PNG; give a path ending in .png, not {path.name!r}.")
    graph, chosen = flow_graph(alert, transactions, max_lines=max_lines, timezone=timezone)
    zone = graph.graph["zone"]
    wanted = set(alert.transaction_ids)
    clock = graph.graph["clock"]
    labels = {(u, v): data["label"] for u, v, data in graph.edges(data=True)}

    n = graph.number_of_nodes()
    size = min(6 + 0.6 * n, 18)
    fig, ax = plt.subplots(figsize=(size, size * 0.8))
    pos = _layout(graph, alert.typology)
    highlighted = set(alert.accounts)
    colours = [ALERT_COLOUR if node in highlighted else OTHER_COLOUR for node in graph.nodes]
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colours, node_size=1400, edgecolors="black")
    nx.draw_networkx_labels(graph, pos, ax=ax, font_size=9, font_weight="bold")
    both_ways = {(u, v) for u, v in graph.edges if graph.has_edge(v, u)}
    style = {True: "arc3,rad=0.15", False: "arc3,rad=0.0"}
    for curved in (False, True):
        edges = [e for e in graph.edges if (e in both_ways) == curved]
        if not edges:
            continue
        nx.draw_networkx_edges(graph, pos, edgelist=edges, ax=ax, arrows=True, arrowstyle="-|>", arrowsize=22,
                               width=1.6, node_size=1400, connectionstyle=style[curved])
        degree = dict(graph.degree())
        for edge in edges:  # label nearer the end with fewer edges, where arrows do not converge
            tail, head = degree[edge[0]], degree[edge[1]]
            where = 0.3 if head > tail else 0.7 if tail > head else 0.5  # fraction of the way from the sender
            nx.draw_networkx_edge_labels(graph, pos, edge_labels={edge: labels[edge]}, ax=ax, font_size=7,
                                         label_pos=where, connectionstyle=style[curved], rotate=False,
                                         bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#888888",
                                               "alpha": 0.9})
    first, last = chosen[0].timestamp.astimezone(zone), chosen[-1].timestamp.astimezone(zone)
    total: dict[str, Decimal] = {}
    for t in chosen:
        total[t.currency] = total.get(t.currency, Decimal(0)) + t.amount
    sums = ", ".join(f"{v:,.2f} {k}" for k, v in sorted(total.items()))
    reasons = "; ".join(r.en for r in alert.reasons[:2])
    ax.set_title(title_text(alert, f"{count_text(chosen)}, {sums}, {first:{clock}} to {last:{clock}} ({zone_label(zone)})",
                            reasons, width=int(size * 12)), fontsize=10)
    missing = len(wanted) - len(chosen)
    footer = ([f"{missing} transaction(s) of the alert were not in the input supplied."] if missing else []) \
        + ([note] if note else [])
    if footer:
        fig.text(0.01, 0.01, "\n".join(footer), fontsize=8, wrap=True)
    ax.set_axis_off()
    ax.margins(0.12)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def case_alert(case: Case, alerts: Iterable[Alert] = ()) -> Alert:
    """An :class:`Alert` that stands for ``case`` in :func:`~sectorflow_aml.explain.draw_alert`: typology ``case``,
    the account first (drawn in red), the case's transactions, its score and a reason naming its typologies, rank and
    budget; ``alerts`` (the case's own, if read) add their reasons."""
    reasons = [Reason(code="case", source="sectorflow_aml.cases",
                      en=f"{case.account} in {case.period}: rank {case.rank} of {case.cases_in_period} "
                         f"({'within' if case.within_budget else 'outside'} budget {case.budget}); typologies "
                         f"{', '.join(case.typologies) or 'none'}; model score "
                         f"{'-' if case.model_score is None else f'{case.model_score:.3f}'}; counterparties in the "
                         f"period {case.counterparties_in_period}, {case.risky_counterparties} scoring at least 0.5, "
                         f"highest {'-' if case.counterparty_score is None else f'>= {case.counterparty_score:.1f}'}",
                      zh=f"{case.account}（{case.period}）：本期排名 {case.rank}/{case.cases_in_period}"
                         f"（{'在' if case.within_budget else '不在'}预警额度 {case.budget} 内）；类型 "
                         f"{', '.join(case.typologies) or '无'}；本期交易对手 {case.counterparties_in_period} 个，其中 "
                         f"{case.risky_counterparties} 个评分不低于 0.5，最高 "
                         f"{'-' if case.counterparty_score is None else f'≥ {case.counterparty_score:.1f}'}")]
    for alert in alerts:
        reasons.extend(alert.reasons)
    return Alert(alert_id=case.case_id, typology="case", accounts=[case.account], transaction_ids=case.transaction_ids,
                 score=case.score, reasons=reasons, fired_by="sectorflow_aml.cases", time=case.updated_at)
