"""``input_timezone``: timestamps without a UTC offset (bank exports in local time) read in the bank's zone, in
``Taskflow`` records, ``sectorflow run aml -O input_timezone=...``, ``load_transactions`` and ``aml explain``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sectorflow import ConfigError, Taskflow
from sectorflow_aml.results import checked_alert, iter_alerts
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.schema import Transaction, input_context, parse_zone

UTC = timezone.utc


def _cash(tid: str, when: str, amount: str, account: str = "A") -> dict[str, str]:
    return {"transaction_id": tid, "timestamp": when, "sender_account": "WALKIN", "receiver_account": account,
            "amount": amount, "currency": "CNY", "channel": "cash_deposit"}


def _large_value(results) -> list:
    """Large-value (China) and currency transaction (US) report drafts, the latest per id."""
    return list({d.report_id: d for r in results for d in r.reports if d.kind in ("large_value", "ctr")}.values())


def test_beijing_local_times_keep_a_same_day_cumulative_large_value_report_together() -> None:
    # 08:00 and 17:00 on 3 Nov, Beijing time, written without an offset: 30,000 + 25,000 CNY in cash the same day
    day = [_cash("m", "2026-11-03T08:00:00", "30000"), _cash("e", "2026-11-03T17:00:00", "25000")]
    local = Taskflow("aml", model=False, input_timezone="Asia/Shanghai")(day)
    (draft,) = _large_value(local)
    assert draft.business_date == "2026-11-03" and draft.total_amount == 55000
    assert draft.transaction_ids == ["m", "e"] and local[1].reports == [draft]
    times = [t["time"] for t in draft.elements["transactions"]]
    assert times == ["2026-11-03T00:00:00+00:00", "2026-11-03T09:00:00+00:00"]
    # read as UTC (the default), 17:00 is 01:00 on 4 Nov in Beijing: two days of under 50,000, no report
    assert _large_value(Taskflow("aml", model=False)(day)) == []


def test_a_us_date_only_column_is_the_local_day_not_the_evening_before() -> None:
    # a US export with dates only: 6,000 + 5,000 USD cash on 3 Nov is a CTR (more than 10,000) of 3 Nov
    day = [_cash(tid, "2026-11-03", amount) | {"currency": "USD"} for tid, amount in (("a", "6000"), ("b", "5000"))]
    local = _large_value(Taskflow("aml", model=False, jurisdiction="US", input_timezone="America/New_York")(day))
    assert [(d.business_date, d.total_amount) for d in local] == [("2026-11-03", 11000)]
    utc = _large_value(Taskflow("aml", model=False, jurisdiction="US")(day))
    assert [d.business_date for d in utc] == ["2026-11-02"]  # midnight UTC is 19:00 the day before


@pytest.mark.parametrize(("text", "offset_hours"), [("+08:00", 8), ("-0500", -5), ("UTC+08:00", 8), ("UTC", 0)])
def test_fixed_offsets_and_utc_parse(text: str, offset_hours: int) -> None:
    assert parse_zone(text).utcoffset(datetime(2026, 7, 1)) == timedelta(hours=offset_hours)


@pytest.mark.parametrize("bad", ["Mars/Olympus", "+25:00", "", "../etc/passwd", 8, None])
def test_a_bad_zone_is_a_config_error_with_examples(bad: object) -> None:
    with pytest.raises(ConfigError, match="give an IANA time zone such as 'Asia/Shanghai'"):
        parse_zone(bad)
    if bad is not None:
        with pytest.raises(ConfigError, match="input_timezone="):
            Taskflow("aml", model=False, input_timezone=bad)


def test_daylight_saving_gaps_and_repeats_take_the_offset_before_the_change() -> None:
    context = input_context({"input_timezone": "America/New_York"})

    def utc(when: str) -> datetime:
        return Transaction.model_validate(_cash("t", when, "1"), context=context).timestamp

    assert utc("2026-03-08T02:30:00") == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)  # skipped hour: EST (-05:00)
    assert utc("2026-11-01T01:30:00") == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # repeated hour: EDT, the first
    assert utc("2026-07-01T12:00:00") == datetime(2026, 7, 1, 16, 0, tzinfo=UTC)
    # an explicit offset wins over the option; no context keeps the schema's rule (UTC)
    assert utc("2026-07-01T12:00:00+08:00") == datetime(2026, 7, 1, 4, 0, tzinfo=UTC)
    assert Transaction.model_validate(_cash("t", "2026-07-01T12:00:00", "1")).timestamp == datetime(
        2026, 7, 1, 12, 0, tzinfo=UTC)
    assert input_context({}) == {}


def test_run_and_explain_read_a_local_time_csv_with_the_same_zone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_main) -> None:
    source = tmp_path / "branch.csv"
    source.write_text("transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"
                      "d1,2026-11-03 09:10:00,WALKIN,C9,49900,CNY,cash_deposit\n"
                      "d2,2026-11-03 16:55:00,WALKIN,C9,49800,CNY,cash_deposit\n", encoding="utf-8")
    results = tmp_path / "out.jsonl"
    main = cli_main
    assert main(["run", "aml", str(source), "--output", str(results), "-O", "model=false",
                 "-O", "input_timezone=Asia/Shanghai"]) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    (structuring,) = [a for a in iter_alerts(results) if a.typology == "structuring"]
    assert structuring.transaction_ids == ["d1", "d2"]
    assert {d["business_date"] for r in rows for d in r["reports"]} == {"2026-11-03"}
    # explain reads the file with the run's zone; read as UTC the times differ and the file is refused
    alert, txns, _ = checked_alert(structuring.alert_id, results, source, input_timezone="Asia/Shanghai")
    assert [t.timestamp for t in txns] == [datetime(2026, 11, 3, 1, 10, tzinfo=UTC),
                                            datetime(2026, 11, 3, 8, 55, tzinfo=UTC)]
    png = tmp_path / "s.png"
    base = ["aml", "explain", structuring.alert_id, "--results", str(results), "--input", str(source)]
    assert main(base + ["--png", str(png), "--input-timezone", "Asia/Shanghai"]) == 0, capsys.readouterr().err
    assert png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert main(base + ["--png", str(tmp_path / "utc.png")]) == 2
    err = capsys.readouterr().err
    assert "is not the input that produced alert" in err and "--input-timezone" in err
    txns, problems = load_transactions(source, "csv", input_timezone="+08:00")
    assert not problems and [t.timestamp.hour for t in txns] == [1, 8]


_HEADER = "transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"


def _offset_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if "UTC offset" in r.getMessage()]


def test_a_given_zone_silences_the_read_as_utc_warning_in_run_load_and_explain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, cli_main) -> None:
    # the reader is not told input_timezone; it used to warn on every naive file, whatever the caller gave
    rows = ("d1,2026-11-03 09:10:00,WALKIN,C9,49900,CNY,cash_deposit\n"
            "d2,2026-11-03 16:55:00,WALKIN,C9,49800,CNY,cash_deposit\n")
    local, plain = tmp_path / "local.csv", tmp_path / "plain.csv"
    for path in (local, plain):
        path.write_text(_HEADER + rows, encoding="utf-8")
    results = tmp_path / "out.jsonl"
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        assert cli_main(["run", "aml", str(local), "--format", "csv", "--output", str(results), "-O", "model=false",
                         "-O", "input_timezone=Asia/Shanghai"]) == 0
    assert "UTC offset" not in capsys.readouterr().err
    assert _offset_lines(caplog) == [("INFO", f"{local}: 2 of 2 timestamps carry no UTC offset (e.g. row 2: "
                                              "'2026-11-03 09:10:00'): read as local times in Asia/Shanghai "
                                              "(input_timezone).")]
    caplog.clear()
    with caplog.at_level("INFO", logger="sectorflow_aml"):  # the same file without the option: read as UTC, said so
        assert cli_main(["run", "aml", str(plain), "--format", "csv", "--output", str(tmp_path / "utc.jsonl"),
                         "-O", "model=false"]) == 0
    ((level, message),) = _offset_lines(caplog)
    assert level == "WARNING" and message == (f"{plain}: 2 of 2 timestamps carry no UTC offset (e.g. row 2: "
                                              "'2026-11-03 09:10:00'): read as UTC; if local, give -O "
                                              "input_timezone=ZONE (sectorflow run) or --input-timezone ZONE "
                                              "(sectorflow aml commands), e.g. Asia/Shanghai.")
    capsys.readouterr()
    caplog.clear()
    # aml explain with the run's zone (a new file identity: the message is once per file)
    explained = tmp_path / "explained.csv"
    explained.write_text(_HEADER + rows, encoding="utf-8")
    (structuring,) = [a for a in iter_alerts(results) if a.typology == "structuring"]
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        _, txns, _ = checked_alert(structuring.alert_id, results, local, input_timezone="Asia/Shanghai")
        assert [t.timestamp.hour for t in txns] == [1, 8]
        assert cli_main(["aml", "explain", structuring.alert_id, "--results", str(results), "--input",
                         str(explained), "--png", str(tmp_path / "a.png"), "--input-timezone", "Asia/Shanghai"]) == 0
    assert "UTC offset" not in capsys.readouterr().err
    assert [level for level, _ in _offset_lines(caplog)] == ["INFO"]
    caplog.clear()
    loaded = tmp_path / "loaded.csv"
    loaded.write_text(_HEADER + rows, encoding="utf-8")
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        txns, problems = load_transactions(loaded, "csv", input_timezone="+08:00")
    assert not problems and [t.timestamp.hour for t in txns] == [1, 8]
    ((level, message),) = _offset_lines(caplog)
    assert level == "INFO" and message.endswith("read as local times in UTC+08:00 (input_timezone).")


def test_the_reader_words_its_note_from_the_context_it_is_given_not_from_validation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, cli_main) -> None:
    # the factories take the caller's input context (the core hands it over): the note is right even when no row is
    # validated while the file is read, and the --history files of a run get the same context as its input
    from sectorflow_aml.loaders import csv_reader, jsonl_reader

    rows = "d1,2026-11-03 09:10:00,WALKIN,C9,49900,CNY,cash_deposit\n"
    files = {name: tmp_path / f"{name}.csv" for name in ("zoned", "utc", "bare", "earlier", "today")}
    for path in files.values():
        path.write_text(_HEADER + rows, encoding="utf-8")
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        list(csv_reader(context=input_context({"input_timezone": "Asia/Shanghai"}))(files["zoned"]))
        list(csv_reader(context={})(files["utc"]))
        list(csv_reader()(files["bare"]))
    lines = _offset_lines(caplog)
    assert [level for level, _ in lines] == ["INFO", "WARNING", "WARNING"]
    assert lines[0][1].endswith("read as local times in Asia/Shanghai (input_timezone).")
    assert lines[1][1].endswith("read as UTC; if local, give -O input_timezone=ZONE (sectorflow run) or "
                                "--input-timezone ZONE (sectorflow aml commands), e.g. Asia/Shanghai.")
    assert lines[2][1].endswith("read in the zone input_timezone names, else UTC; if local, give input_timezone=ZONE "
                                "(e.g. Asia/Shanghai).")
    caplog.clear()
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        assert cli_main(["run", "aml", str(files["today"]), "--history", str(files["earlier"]), "--output",
                         str(tmp_path / "out.jsonl"), "-O", "model=false", "-O", "input_timezone=+08:00"]) == 0
    assert _offset_lines(caplog) == [
        ("INFO", (f"{files[name]}: 1 of 1 timestamps carry no UTC offset (e.g. row 2: '2026-11-03 09:10:00'): "
                  "read as local times in UTC+08:00 (input_timezone).")) for name in ("earlier", "today")]
    capsys.readouterr()
    jsonl = tmp_path / "naive.jsonl"
    jsonl.write_text(json.dumps(_cash("j", "2026-11-03T09:10:00", "1")) + "\n", encoding="utf-8")
    caplog.clear()
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        list(jsonl_reader(context=input_context({"input_timezone": "America/New_York"}))(jsonl))
    assert [level for level, _ in _offset_lines(caplog)] == ["INFO"]
