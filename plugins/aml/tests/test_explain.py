"""The fund-flow picture of an alert: graph content, the PNG itself, and ``sectorflow aml explain``."""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import typer
from matplotlib.image import imread
from typer.testing import CliRunner

from sectorflow import ConfigError, InvalidInputError, Taskflow
from sectorflow_aml.cli import register
from sectorflow_aml.results import explain_alert, iter_alerts
from sectorflow_aml.explain import draw_alert, flow_graph
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.schema import Alert, Reason, Transaction, TransactionAssessment

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"


@lru_cache(maxsize=1)
def _sample() -> tuple[Transaction, ...]:
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    return tuple(txns)


def _cycle_alert() -> tuple[Alert, list[Transaction]]:
    txns = list(_sample())
    with open(REPO / "samples" / "aml" / "patterns.csv", newline="") as handle:
        accounts = next(r["accounts"].split(";") for r in csv.DictReader(handle) if r["pattern"] == "cycle")
    members = set(accounts)
    inside = [t for t in txns if t.sender_account in members and t.receiver_account in members]
    alert = Alert(alert_id="cycle-sample", typology="cycle", accounts=accounts,
                  transaction_ids=[t.transaction_id for t in inside], score=0.8, fired_by="test",
                  time=inside[-1].timestamp,
                  reasons=[Reason(code="typology.cycle", en="funds return to their origin", zh="资金闭环",
                                  source="test")])
    return alert, txns


def test_flow_graph_has_every_transfer_of_the_alert() -> None:
    alert, txns = _cycle_alert()
    graph, chosen = flow_graph(alert, txns, max_lines=2)
    assert len(chosen) == len(alert.transaction_ids)
    assert set(graph.nodes) == set(alert.accounts)
    assert sum(len(d["transactions"]) for _, _, d in graph.edges(data=True)) == len(chosen)
    pairs = {(t.sender_account, t.receiver_account) for t in chosen}
    assert set(graph.edges) == pairs
    u, v, data = next(iter(graph.edges(data=True)))
    first = data["transactions"][0]
    assert data["label"].splitlines()[0] == f"{first.amount:,.2f} CNY · {first.timestamp:%Y-%m-%d}"


def test_draw_alert_writes_a_readable_png(tmp_path: Path) -> None:
    alert, txns = _cycle_alert()
    path = draw_alert(alert, txns, tmp_path / "out" / "cycle.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = imread(path)[..., :3]
    assert image.shape[0] >= 800 and image.shape[1] >= 1000
    red = np.all(np.abs(image - np.array([0xD6, 0x27, 0x28]) / 255) < 0.02, axis=-1)
    assert red.sum() > 5 * 2000  # five account discs drawn in the alert colour


def test_errors_name_what_to_fix(tmp_path: Path) -> None:
    alert, txns = _cycle_alert()
    with pytest.raises(InvalidInputError, match="None of the"):
        draw_alert(alert, txns[:1], tmp_path / "x.png")
    with pytest.raises(ConfigError, match=r"\.png"):
        draw_alert(alert, txns, tmp_path / "x.svg")


def test_cli_explain_from_a_results_file(tmp_path: Path) -> None:
    alert, _ = _cycle_alert()
    results = tmp_path / "results.jsonl"
    other = TransactionAssessment(transaction_id="amlsim-1", risk_score=0.1, alert=False)
    hit = TransactionAssessment(transaction_id=alert.transaction_ids[-1], risk_score=0.8, alert=True,
                                typologies=["cycle"], alerts=[alert])
    results.write_text(other.model_dump_json() + "\n" + hit.model_dump_json() + "\n")
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    listed = runner.invoke(app, ["aml", "alerts", "--results", str(results)])
    assert listed.exit_code == 0 and listed.stdout.startswith("cycle-sample\tcycle\t0.80")
    assert listed.stderr == "1 alert(s) in 2 results\n"  # every listing ends with its count
    png = tmp_path / "alert.png"
    done = runner.invoke(app, ["aml", "explain", "cycle-sample", "--results", str(results), "--input", str(SAMPLE),
                               "--format", "amlsim", "--png", str(png)])
    assert done.exit_code == 0, done.output
    assert png.read_bytes()[:4] == b"\x89PNG"
    drafts = runner.invoke(app, ["aml", "reports", "--results", str(results)])
    assert drafts.exit_code == 0 and drafts.stdout == ""  # these results carry no report drafts
    assert drafts.stderr == "0 report draft(s) in 2 results\n"
    with pytest.raises(ConfigError, match="No alert 'nope'.*cycle-sample"):
        explain_alert("nope", results, SAMPLE, tmp_path / "n.png", "amlsim")


def test_explain_refuses_an_input_file_the_results_did_not_come_from(tmp_path: Path) -> None:
    """AMLSim ids are row numbers, so another AMLSim file has the same ids: the accounts must match too."""
    alert, _ = _cycle_alert()
    results = tmp_path / "results.jsonl"
    results.write_text(TransactionAssessment(transaction_id=alert.transaction_ids[-1], risk_score=0.8, alert=True,
                                             typologies=["cycle"], alerts=[alert]).model_dump_json() + "\n")
    other_run = tmp_path / "other.csv"
    with other_run.open("w", newline="") as handle:  # same row numbers, other accounts
        writer = csv.writer(handle)
        writer.writerow(["sourceNodeId", "targetNodeId", "value", "time"])
        for row in range(1, 4000):
            writer.writerow([900000 + row, 800000 + row, "100.0", 1])
    with pytest.raises(InvalidInputError, match="is not the input that produced alert cycle-sample"):
        explain_alert("cycle-sample", results, other_run, tmp_path / "x.png", "amlsim")
    assert not (tmp_path / "x.png").exists()
    explain_alert("cycle-sample", results, SAMPLE, tmp_path / "ok.png", "amlsim")  # the right input still draws


def test_cli_explain_with_the_wrong_input_exits_2_with_one_message(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   cli_main) -> None:
    main = cli_main
    alert, _ = _cycle_alert()
    results = tmp_path / "results.jsonl"
    results.write_text(TransactionAssessment(transaction_id=alert.transaction_ids[-1], risk_score=0.8, alert=True,
                                             typologies=["cycle"], alerts=[alert]).model_dump_json() + "\n")
    other_run = tmp_path / "other.csv"
    other_run.write_text("sourceNodeId,targetNodeId,value,time\n" +
                         "".join(f"{900000 + r},{800000 + r},100.0,1\n" for r in range(1, 4000)))
    code = main(["aml", "explain", "cycle-sample", "--results", str(results), "--input", str(other_run),
                 "--format", "amlsim", "--png", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert code == 2 and "is not the input that produced alert cycle-sample" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err  # one message, no per-id noise


_FLOW_COLUMNS = ["transaction_id", "timestamp", "sender_account", "receiver_account", "amount", "currency"]


def _flow_rows() -> list[dict[str, str]]:
    """Twelve payroll transfers (a fan-out alert, score 0.6: no report draft) and a three-account loop (a cycle alert,
    score 0.8: a suspicious-report draft that lists its transfers)."""
    rows = [{"transaction_id": f"P{e:02d}", "timestamp": f"2026-10-10T02:{e:02d}:00", "sender_account": "CORP",
             "receiver_account": f"EMP{e:02d}", "amount": f"{10000 + 7 * e}.00", "currency": "CNY"} for e in range(12)]
    loop = [("L1", "LOOP1", "LOOP2", "300000.00"), ("L2", "LOOP2", "LOOP3", "298000.00"),
            ("L3", "LOOP3", "LOOP1", "296000.00")]
    rows += [{"transaction_id": tid, "timestamp": f"2026-11-07T0{i + 1}:00:00", "sender_account": a,
              "receiver_account": b, "amount": amount, "currency": "CNY"} for i, (tid, a, b, amount) in enumerate(loop)]
    return rows


def _write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_FLOW_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _flow_results(tmp_path: Path) -> tuple[Path, Path, dict[str, Alert]]:
    """The input CSV, the results file ``sectorflow run aml`` would write for it (rules only) and its alerts."""
    from sectorflow import Taskflow

    rows = _flow_rows()
    source = _write_csv(tmp_path / "in.csv", rows)
    results = Taskflow("aml", model=False)([dict(r) for r in rows])
    out = tmp_path / "results.jsonl"
    out.write_text("".join(r.model_dump_json() + "\n" for r in results))
    alerts = {a.typology: a for r in results for a in r.alerts}
    return source, out, alerts


def _edited(tmp_path: Path, tid: str, **changes: str) -> Path:
    rows = [dict(r, **changes) if r["transaction_id"] == tid else r for r in _flow_rows()]
    return _write_csv(tmp_path / f"edited-{tid}.csv", rows)


def test_explain_refuses_an_input_whose_amounts_or_times_were_edited(tmp_path: Path) -> None:
    """Ids and accounts are unchanged by an edited amount: what the results record of the transfers must match."""
    source, results, alerts = _flow_results(tmp_path)
    cycle = alerts["cycle"]
    assert sorted(cycle.transaction_ids) == ["L1", "L2", "L3"]
    explain_alert(cycle.alert_id, results, source, tmp_path / "ok.png", "csv")  # the unedited input draws
    with pytest.raises(InvalidInputError, match=r"L2 has amount 298001\.00 there, 298000\.00 in the results"):
        explain_alert(cycle.alert_id, results, _edited(tmp_path, "L2", amount="298001.00"), tmp_path / "a.png", "csv")
    with pytest.raises(InvalidInputError, match=r"L1 has time 2026-11-07T01:30:00\+00:00 there"):
        explain_alert(cycle.alert_id, results, _edited(tmp_path, "L1", timestamp="2026-11-07T01:30:00"),
                      tmp_path / "t.png", "csv")
    with pytest.raises(InvalidInputError, match=r"L1 has currency USD there, CNY in the results"):
        explain_alert(cycle.alert_id, results, _edited(tmp_path, "L1", currency="USD"), tmp_path / "c.png", "csv")
    with pytest.raises(InvalidInputError, match=r"receiver_account LOOP9 there, LOOP2 in the results"):
        explain_alert(cycle.alert_id, results, _edited(tmp_path, "L1", receiver_account="LOOP9"),
                      tmp_path / "r.png", "csv")
    assert not any((tmp_path / f"{n}.png").exists() for n in "atcr")


def test_explain_checks_the_completing_time_and_says_what_the_results_cannot_confirm(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A fan-out alert below the report threshold has no draft listing its amounts: its completing transfer's time
    is still checked, and the unchecked amounts are named on stderr and under the picture."""
    from sectorflow_aml.results import checked_alert

    source, results, alerts = _flow_results(tmp_path)
    fan_out = alerts["fan_out"]
    last = fan_out.transaction_ids[-1]  # the transfer that completed the pattern (its result carries the alert)
    with pytest.raises(InvalidInputError, match=rf"{last} has time 2026-10-10T03:00:00\+00:00 there, but the alert"):
        explain_alert(fan_out.alert_id, results, _edited(tmp_path, last, timestamp="2026-10-10T03:00:00"),
                      tmp_path / "x.png", "csv")
    edited = _edited(tmp_path, "P00", amount="99999.00")
    # results carry each alert's transactions_sha256: the edited amount is refused although no draft records it
    with pytest.raises(InvalidInputError, match="transactions_sha256 does not match"):
        checked_alert(fan_out.alert_id, results, edited, "csv")
    assert checked_alert(fan_out.alert_id, results, source, "csv")[2] is None  # the unedited input: no note
    # results written before the digest existed: the amounts no draft records are named as unchecked
    old = tmp_path / "old-results.jsonl"
    old.write_text(results.read_text().replace(f'"transactions_sha256":"{fan_out.transactions_sha256}"',
                                               '"transactions_sha256":null'))
    results = old
    _, txns, note = checked_alert(fan_out.alert_id, results, edited, "csv")
    n = len(fan_out.transaction_ids)
    assert note is not None and note.startswith(f"Amounts of {n} of the alert's {n} transfers were not checked")
    assert next(t.amount for t in txns if t.transaction_id == "P00") == 99999
    assert checked_alert(alerts["cycle"].alert_id, results, source, "csv")[2] is None  # all recorded: no note
    app = typer.Typer()
    register(app)
    done = CliRunner().invoke(app, ["aml", "explain", fan_out.alert_id, "--results", str(results), "--input",
                                    str(edited), "--format", "csv", "--png", str(tmp_path / "f.png")])
    assert done.exit_code == 0 and f"note: Amounts of {n} of the alert's {n}" in done.output
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        explain_alert(fan_out.alert_id, results, edited, tmp_path / "g.png", "csv")
    assert any("were not checked" in r.getMessage() for r in caplog.records)


def test_explain_reads_the_first_row_of_a_reused_id_as_the_run_did(tmp_path: Path) -> None:
    """The pipeline counts the first row of an id and only notes a later reuse: explain compares and draws that
    first row, so a correct input with a reused id later on is not refused."""
    from sectorflow_aml.results import checked_alert

    rows = _flow_rows()
    source = _write_csv(tmp_path / "in.csv", rows + [dict(rows[-2], amount="5.00")])  # L2 again, another amount
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n"
                               for r in Taskflow("aml", model=False)([dict(r) for r in rows])))
    cycle = next(a for a in iter_alerts(results) if a.typology == "cycle")
    _, txns, note = checked_alert(cycle.alert_id, results, source, "csv")
    assert note is None and sorted((t.transaction_id, str(t.amount)) for t in txns) == [
        ("L1", "300000.00"), ("L2", "298000.00"), ("L3", "296000.00")]


def test_every_alert_carries_the_digest_of_its_transactions_as_read(tmp_path: Path) -> None:
    from decimal import Decimal

    from sectorflow_aml.schema import transactions_digest

    _, _, alerts = _flow_results(tmp_path)
    by_id = {r["transaction_id"]: Transaction.model_validate(r) for r in _flow_rows()}
    for alert in alerts.values():
        assert alert.transactions_sha256 == transactions_digest(by_id[t] for t in alert.transaction_ids)
    a, b = by_id["L1"], by_id["L2"]
    assert transactions_digest([a, b]) != transactions_digest([b, a])  # order is part of it
    assert transactions_digest([a]) == transactions_digest([a.model_copy(update={"amount": Decimal("300000")})])
    assert transactions_digest([a]) != transactions_digest([a.model_copy(update={"amount": Decimal("300000.01")})])


def test_a_long_title_is_wrapped_to_the_picture_width() -> None:
    from sectorflow_aml.explain import title_text

    alert, _ = _cycle_alert()
    reasons = "2 cash deposits by account ACC on one day just under the 50,000.00 CNY reporting threshold " * 3
    text = title_text(alert, "2 transfers, 99,700.00 CNY, 2026-11-04 09:10 to 13:20 (UTC)", reasons, width=79)
    lines = text.split("\n")
    assert len(lines) > 3 and max(map(len, lines)) <= 79
    assert " ".join(lines).replace("  ", " ").count("reporting threshold") == 3  # nothing cut, only wrapped


def test_the_digest_covers_channel_and_countries_too() -> None:
    from sectorflow_aml.schema import transactions_digest

    t = Transaction.model_validate({"transaction_id": "h1", "timestamp": "2026-11-02T09:00:00", "sender_account": "A",
                                   "receiver_account": "B", "amount": "9000", "channel": "cash_withdrawal",
                                   "receiver_country": "IR"})
    base = transactions_digest([t])
    for change in ({"channel": "transfer"}, {"receiver_country": "DE"}, {"sender_country": "CN"}):
        assert transactions_digest([t.model_copy(update=change)]) != base, change


def test_messages_count_in_the_singular_where_there_is_one(tmp_path: Path) -> None:
    source, results, alerts = _flow_results(tmp_path)
    cycle = alerts["cycle"]
    rows = [r for r in _flow_rows() if r["transaction_id"] != "L2"]
    with pytest.raises(InvalidInputError, match="1 of the alert's 3 transactions is not in it"):
        explain_alert(cycle.alert_id, results, _write_csv(tmp_path / "no-l2.csv", rows), tmp_path / "m.png", "csv")
    one = _sample()[0]
    alert = Alert(alert_id="model_risk-1", typology="model_risk", accounts=[one.sender_account, one.receiver_account],
                  transaction_ids=[one.transaction_id], score=0.9, reasons=[], fired_by="model:test",
                  time=one.timestamp)
    import matplotlib.pyplot as plt

    titles: list[str] = []
    original = plt.Axes.set_title
    try:
        plt.Axes.set_title = lambda self, text, **kw: titles.append(text) or original(self, text, **kw)
        draw_alert(alert, [one], tmp_path / "one.png")
    finally:
        plt.Axes.set_title = original
    assert "\n1 transfer, " in titles[0]
