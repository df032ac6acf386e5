"""Times drawn in an alert picture: UTC by default, or the bank's zone, so the picture's days match the reports."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sectorflow import ConfigError, Taskflow
from sectorflow_aml import cli, explain
from sectorflow_aml.results import iter_alerts
from sectorflow_aml.explain import flow_graph
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.schema import Alert, Transaction


def _deposits() -> tuple[Alert, list[Transaction]]:
    # 00:30 and 01:00 on 3 November in Beijing are 16:30 and 17:00 UTC on 2 November
    txns = [Transaction(transaction_id=tid, timestamp=when, sender_account=till, receiver_account="C9",
                        amount=Decimal("45000"), currency="CNY", channel="cash_deposit")
            for tid, when, till in (("s1", "2026-11-02T16:30:00Z", "TILL1"), ("s2", "2026-11-02T17:00:00Z", "TILL2"))]
    alert = Alert(alert_id="structuring-t", typology="structuring", accounts=["C9"], transaction_ids=["s1", "s2"],
                  score=0.7, fired_by="test", time=datetime(2026, 11, 2, 17, tzinfo=timezone.utc), reasons=[])
    return alert, txns


def test_labels_are_utc_by_default_and_local_when_a_zone_is_given() -> None:
    alert, txns = _deposits()
    graph, _ = flow_graph(alert, txns)
    assert graph.edges["TILL1", "C9"]["label"] == "45,000.00 CNY · 2026-11-02 16:30"
    graph, _ = flow_graph(alert, txns, timezone="Asia/Shanghai")
    assert graph.edges["TILL1", "C9"]["label"] == "45,000.00 CNY · 2026-11-03 00:30"
    assert str(graph.graph["zone"]) == "Asia/Shanghai"
    graph, _ = flow_graph(alert, txns, timezone="+08:00")
    assert graph.edges["TILL2", "C9"]["label"] == "45,000.00 CNY · 2026-11-03 01:00"
    with pytest.raises(ConfigError, match=r"timezone='Mars/Base' \(the zone of the times drawn\)"):
        flow_graph(alert, txns, timezone="Mars/Base")


def test_explain_command_draws_in_the_input_timezone(tmp_path: Path, monkeypatch) -> None:
    source = tmp_path / "branch.csv"
    source.write_text("transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"
                      "s1,2026-11-03 00:30:00,TILL1,C9,45000,CNY,cash_deposit\n"
                      "s2,2026-11-03 01:00:00,TILL2,C9,45000,CNY,cash_deposit\n", encoding="utf-8")
    tf = Taskflow("aml", model=False)
    txns, _ = load_transactions(source, format="csv", input_timezone="Asia/Shanghai")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in tf(txns)), encoding="utf-8")
    (alert,) = list(iter_alerts(results))
    assert alert.typology == "structuring"
    seen: dict[str, object] = {}
    monkeypatch.setattr(cli, "draw_alert", lambda *a, **k: seen.update(k) or explain.draw_alert(*a, **k))
    app = typer.Typer()
    cli.register(app)
    out = CliRunner().invoke(app, ["aml", "explain", alert.alert_id, "--results", str(results), "--input", str(source),
                                   "--format", "csv", "--input-timezone", "Asia/Shanghai", "--png",
                                   str(tmp_path / "a.png")])
    assert out.exit_code == 0, out.output
    assert seen["timezone"] == "Asia/Shanghai" and (tmp_path / "a.png").stat().st_size > 10_000
    out = CliRunner().invoke(app, ["aml", "explain", alert.alert_id, "--results", str(results), "--input", str(source),
                                   "--format", "csv", "--input-timezone", "Asia/Shanghai", "--timezone", "UTC",
                                   "--png", str(tmp_path / "b.png")])
    assert out.exit_code == 0, out.output
    assert seen["timezone"] == "UTC"
