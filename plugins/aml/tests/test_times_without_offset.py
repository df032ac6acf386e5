"""A date alone is a time without a UTC offset: the reader says so, naming the right row (fresh-user pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sectorflow_aml.loaders import load_transactions

_HEADER = "transaction_id,timestamp,sender_account,receiver_account,amount,channel\n"
_DATES = "d1,2026-11-07,W,K,6000,cash_deposit\nd2,2026-11-09,W,K,4000.01,cash_deposit\n"


def _offset_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if "UTC offset" in r.getMessage()]


def _run(cli_main, source: Path, out: Path, *options: str) -> list[dict]:
    assert cli_main(["run", "aml", str(source), "--format", "csv", "--output", str(out), "--default",
                     "currency=USD", "-O", "jurisdiction=US", "-O", "model=false", *options]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_a_us_file_of_dates_only_is_warned_about_and_its_ctr_found_with_the_zone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, cli_main) -> None:
    source = tmp_path / "dates.csv"
    source.write_text(_HEADER + _DATES, encoding="utf-8")
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        rows = _run(cli_main, source, tmp_path / "utc.jsonl")
    # read as UTC: Saturday 7 Nov 00:00 UTC is Friday evening in New York, so the two deposits fall on two
    # business days and no CTR is drafted; the reader must say the dates were read as UTC
    assert [r["reports"] for r in rows] == [[], []]
    ((level, message),) = _offset_lines(caplog)
    assert level == "WARNING"
    assert message.startswith(f"{source}: 2 of 2 timestamps carry no UTC offset (e.g. row 2: '2026-11-07'): "
                              "read as UTC; if local, give -O input_timezone=ZONE (sectorflow run) or "
                              "--input-timezone ZONE (sectorflow aml commands), e.g. Asia/Shanghai.")
    caplog.clear()
    source = tmp_path / "dates_ny.csv"  # another file: the note is said once per file
    source.write_text(_HEADER + _DATES, encoding="utf-8")
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        rows = _run(cli_main, source, tmp_path / "ny.jsonl", "-O", "input_timezone=America/New_York")
    ((ctr,),) = [r["reports"] for r in rows if r["reports"]]
    assert (ctr["kind"], ctr["total_amount"], ctr["business_date"], ctr["transaction_ids"]) == (
        "ctr", "10000.01", "2026-11-09", ["d1", "d2"])  # Saturday's deposit rolls to Monday
    assert [level for level, _ in _offset_lines(caplog)] == ["INFO"]


@pytest.mark.parametrize("value, naive", [
    ("2026-11-07", True), ("2026-11-07T00:00", True), ("2026-11-07 09:10:00.25", True),
    ("2026-11-07T00:00Z", False), ("2026-11-07T00:00-05:00", False), ("2026-11-07T00:00+0800", False),
    ("1794009600", False),  # Unix seconds are UTC
    ("yesterday", False),  # not a time: validation refuses the row, the offset note does not count it
])
def test_which_values_count_as_times_without_an_offset(value: str, naive: bool) -> None:
    from sectorflow_aml.loaders import _without_offset

    assert _without_offset(value) is naive


def test_the_note_names_the_first_row_without_an_offset_not_an_unparsable_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    source = tmp_path / "mixed.csv"
    good = "".join(f"t{i},2026-11-0{i}T10:00:00Z,A,B,100,transfer\n" for i in range(1, 6))
    source.write_text(_HEADER + good + "t6,not a time,A,B,100,transfer\nt7,2026-11-07,A,B,100,transfer\n",
                      encoding="utf-8")
    with caplog.at_level("INFO", logger="sectorflow_aml"):
        txns, problems = load_transactions(source, "csv")
    assert [t.transaction_id for t in txns] == ["t1", "t2", "t3", "t4", "t5", "t7"]
    assert [(p["row"], p["field"]) for p in problems] == [(7, "timestamp")]  # the file's line 7
    ((level, message),) = _offset_lines(caplog)
    assert level == "WARNING"
    assert message.startswith(f"{source}: 1 of 7 timestamps carry no UTC offset (e.g. row 8: '2026-11-07')")
