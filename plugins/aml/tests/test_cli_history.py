"""``sectorflow run aml TODAY --history EARLIER``: a daily CLI run rebuilds the state a continuous run would have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

HEADER = "transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"


def _reports(path: Path) -> list[dict]:
    return [d for line in path.read_text(encoding="utf-8").splitlines() for d in json.loads(line)["reports"]]


def test_history_rebuilds_same_day_totals_and_updates_the_earlier_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_main) -> None:
    main = cli_main
    morning = tmp_path / "morning.csv"
    morning.write_text(HEADER + "m1,2026-11-03T09:00:00+08:00,W,ACC,30000,CNY,cash_deposit\n"
                                "m2,2026-11-03T11:00:00+08:00,W,ACC,21000,CNY,cash_deposit\n", encoding="utf-8")
    evening = tmp_path / "evening.csv"
    evening.write_text(HEADER + "e1,2026-11-03T16:00:00+08:00,W,ACC,9000,CNY,cash_deposit\n"
                                "e2,2026-11-03T17:00:00+08:00,W,OTHER,30000,CNY,cash_deposit\n", encoding="utf-8")
    run = ["run", "aml", "-O", "model=false"]
    first = tmp_path / "morning.jsonl"
    assert main(run + [str(morning), "--output", str(first)]) == 0, capsys.readouterr().err
    (fired,) = _reports(first)  # 51,000 in cash on 3 Nov: the large-value report fires on m2
    assert fired["transaction_ids"] == ["m1", "m2"]
    # the evening file alone: 9,000 is nothing on its own (the day's total is lost)
    alone = tmp_path / "alone.jsonl"
    assert main(run + [str(evening), "--output", str(alone)]) == 0
    assert _reports(alone) == []
    # with the morning as history: e1 joins the fired report, same report_id, updated total; m1/m2 are not written
    capsys.readouterr()
    joined = tmp_path / "joined.jsonl"
    assert main(run + [str(evening), "--history", str(morning), "--output", str(joined)]) == 0
    err = capsys.readouterr().err.replace("\n", "")
    assert f"history {morning}: 2 item(s) replayed (results not written)." in err
    rows = [json.loads(line) for line in joined.read_text(encoding="utf-8").splitlines()]
    assert [r["transaction_id"] for r in rows] == ["e1", "e2"]
    (update,) = _reports(joined)
    assert update["report_id"] == fired["report_id"] and update["transaction_ids"] == ["m1", "m2", "e1"]
    assert update["total_amount"] == "60000.00"


def test_history_is_refused_when_it_cannot_help(tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_main) -> None:
    main = cli_main
    today = tmp_path / "today.csv"
    today.write_text(HEADER + "t1,2026-11-03T09:00:00Z,A,B,100,CNY,transfer\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["run", "aml", str(today), "--history", str(tmp_path / "nope.csv"), "--output", str(out)]) == 2
    assert "--history" in capsys.readouterr().err and not out.exists()
    assert main(["run", "aml", str(today), "--history", str(today), "--output", str(out)]) == 2
    assert "is the input file itself" in capsys.readouterr().err
    # a bad row in a history file rejects the run before anything is written (default --on-error reject)
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "b1,2026-11-02T09:00:00Z,A,B,-5,CNY,transfer\n", encoding="utf-8")
    assert main(["run", "aml", str(today), "--history", str(bad), "--output", str(out), "-O", "model=false"]) == 2
    assert "bad row(s) in " + str(bad) in capsys.readouterr().err.replace("\n", "") and not out.exists()


def test_explain_reads_the_history_files_of_a_daily_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        cli_main) -> None:
    """An alert of a ``--history`` run reaches back into the earlier files: ``aml explain --history`` reads them
    (before, explain took one --input and refused every such alert as 'not the input'; fresh-user check)."""
    main = cli_main
    earlier = tmp_path / "monday.csv"
    earlier.write_text(HEADER + "".join(f"h{i},2026-11-02T1{i}:00:00+08:00,S{i},HUB,9000,CNY,transfer\n"
                                        for i in range(8)), encoding="utf-8")
    today = tmp_path / "tuesday.csv"
    today.write_text(HEADER + "t8,2026-11-03T10:00:00+08:00,S8,HUB,9000,CNY,transfer\n"
                              "t9,2026-11-03T11:00:00+08:00,S9,HUB,9000,CNY,transfer\n", encoding="utf-8")
    results = tmp_path / "tuesday.jsonl"
    assert main(["run", "aml", str(today), "--history", str(earlier), "-O", "model=false",
                 "--output", str(results)]) == 0, capsys.readouterr().err
    (alert,) = [a for line in results.read_text(encoding="utf-8").splitlines() for a in json.loads(line)["alerts"]]
    assert alert["typology"] == "fan_in" and len(alert["transaction_ids"]) == 10
    capsys.readouterr()
    png = tmp_path / "a.png"
    explain = ["aml", "explain", alert["alert_id"], "--results", str(results), "--input", str(today), "--png", str(png)]
    assert main(explain) == 2 and not png.exists()
    err = capsys.readouterr().err.replace("\n", "")
    assert "8 of the alert's 10 transactions are not in it" in err and "--history too" in err
    assert main(explain + ["--history", str(earlier)]) == 0, capsys.readouterr().err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a history file that is not the run's is still refused
    other = tmp_path / "other.csv"
    other.write_text(earlier.read_text(encoding="utf-8").replace(",9000,", ",9100,"), encoding="utf-8")
    assert main(explain + ["--history", str(other)]) == 2
    assert "(with 1 --history file) is not the input" in capsys.readouterr().err.replace("\n", "")
