"""Readers: AMLSim on the real shared sample, AMLworld on rows in its exact header format, mapped CSV/JSONL/Parquet,
and bad rows reported by row number (Python API and ``sectorflow run aml --on-error skip|reject``)."""

from __future__ import annotations

import csv
import gzip
import itertools
import json
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from sectorflow import ConfigError, InvalidInputError, Pipeline, TaskResult, TaskSpec, hookimpl, input_formats
from sectorflow_aml.loaders import READERS, amlsim_reader, guess_format, load_transactions
from sectorflow_aml.schema import Channel, Transaction

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200" / "transactions.csv.gz"
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"

AMLWORLD = """Timestamp,From Bank,Account,To Bank,Account,Amount Received,Receiving Currency,Amount Paid,Payment Currency,Payment Format,Is Laundering
2022/09/01 00:20,010,8000EBD30,010,8000EBD30,3697.34,US Dollar,3697.34,US Dollar,Reinvestment,0
2022/09/01 00:20,3208,8000F4580,001,8000F5340,0.01,US Dollar,0.01,US Dollar,Cheque,0
2022/09/01 00:02,1124,800825340,1124,800825340,1.56,Bitcoin,1.56,Bitcoin,Bitcoin,0
2022/09/01 09:15,0119,8006AD4E0,0048,80007A1E0,12880.00,Yuan,12880.00,Yuan,Cash,1
2022/13/01 09:15,0119,8006AD4E0,0048,80007A1E0,500.00,Euro,500.00,Euro,Wire,0
2022/09/02 10:00,0119,8006AD4E0,0048,80007A1E0,-5.00,UK Pound,-5.00,UK Pound,ACH,0
2022/09/02 11:30,0070,1004286A8,0070,1004286A8,2210.05,Euro,2210.05,Euro,Credit Card,0
"""


def test_amlsim_reader_on_real_rows() -> None:
    if not SHARED.is_file():
        pytest.skip(f"{SHARED} is not present (CI keeps ../shared beside the clone)")
    with gzip.open(SHARED, "rt", newline="") as handle:
        raw = list(itertools.islice(csv.DictReader(handle), 500))
    rows = list(itertools.islice(READERS["amlsim"](SHARED), 500))
    assert [r for r, _ in rows] == list(range(1, 501))
    txns = [Transaction.model_validate(record) for _, record in rows]
    for source, t, (row, _) in zip(raw, txns, rows):
        assert t.transaction_id == f"amlsim-{row}"
        assert (t.sender_account, t.receiver_account) == (source["sourceNodeId"], source["targetNodeId"])
        assert t.amount == Decimal(source["value"]) and t.currency == "CNY" and t.channel is Channel.transfer
        step = int(source["time"])
        assert t.timestamp == datetime(2017, 1, 1 + step, tzinfo=timezone.utc)  # first rows are early steps


def test_amlsim_options_and_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "tx.csv"
    path.write_text("sourceNodeId,targetNodeId,value,time\n1,2,100.5,0\n2,3,-4,1\n3,1,7,soon\n4,5,8,2\n")
    reader = amlsim_reader(base_date=datetime(2020, 2, 28).date(), currency="usd")
    records = dict(reader(path))
    assert records[4]["timestamp"] == "2020-03-01T00:00:00+00:00" and records[4]["currency"] == "usd"
    assert guess_format(path) == "amlsim"
    txns, problems = load_transactions(path)
    assert [t.transaction_id for t in txns] == ["amlsim-1", "amlsim-4"]
    assert [(p["row"], p["field"]) for p in problems] == [(2, "amount"), (3, "timestamp")]
    with pytest.raises(InvalidInputError) as info:
        load_transactions(path, format="amlsim", on_error="reject")
    assert [d["row"] for d in info.value.details] == [2, 3]
    with pytest.raises(ConfigError, match="--format amlsim"):
        list(READERS["csv"](path))
    path.write_text("from,to,amount,step\n1,2,3,4\n")
    with pytest.raises(ConfigError, match="not an AMLSim"):
        load_transactions(path, format="amlsim")


def test_amlworld_reads_accounts_by_position_and_maps_names(tmp_path: Path) -> None:
    path = tmp_path / "HI-Small_Trans.csv"
    path.write_text(AMLWORLD, encoding="utf-8")
    assert guess_format(path) == "amlworld"
    txns, problems = load_transactions(path, format="amlworld")
    by_id = {t.transaction_id: t for t in txns}
    cheque = by_id["amlworld-2"]
    assert (cheque.sender_account, cheque.receiver_account) == ("3208:8000F4580", "001:8000F5340")
    assert (cheque.sender_bank, cheque.receiver_bank) == ("3208", "001")
    assert cheque.amount == Decimal("0.01") and cheque.currency == "USD" and cheque.channel is Channel.cheque
    cash = by_id["amlworld-4"]
    assert cash.currency == "CNY" and cash.channel is Channel.cash_deposit and cash.amount == Decimal("12880.00")
    assert cash.timestamp == datetime(2022, 9, 1, 9, 15, tzinfo=timezone.utc)
    assert by_id["amlworld-1"].channel is Channel.transfer  # Reinvestment
    assert by_id["amlworld-7"].channel is Channel.card and by_id["amlworld-7"].currency == "EUR"
    # Bitcoin (no ISO 4217 code), month 13, a negative amount: reported by row, never dropped silently.
    assert sorted((p["row"], p["field"]) for p in problems) == [(3, "currency"), (5, "timestamp"), (6, "amount")]
    bitcoin = next(p for p in problems if p["field"] == "currency")  # the ISO 4217 message, not a regex pattern
    assert "'Bitcoin' is not an ISO 4217 currency code (three letters such as CNY" in bitcoin["reason"], bitcoin
    assert len(txns) + len({p["row"] for p in problems}) == 7
    bare, _ = load_transactions(path, format="amlworld", qualify_accounts=False)
    assert bare[0].sender_account == "8000EBD30"


def test_csv_jsonl_parquet_with_a_column_mapping(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    mapping = {"transaction_id": "id", "timestamp": "ts", "sender_account": "from", "receiver_account": "to",
               "amount": "amt", "currency": "ccy"}
    rows = [{"id": "a1", "ts": "2024-05-01T10:00:00", "from": "X", "to": "Y", "amt": "49999.99", "ccy": "CNY",
             "channel": "cash_deposit", "note": "ignored"},
            {"id": "a2", "ts": "2024-05-01T11:00:00+08:00", "from": "Y", "to": "Z", "amt": "12.5", "ccy": "usd"}]
    (tmp_path / "t.csv").write_text("id,ts,from,to,amt,ccy,channel,note\n" + "\n".join(
        ",".join(str(r.get(k, "")) for k in ("id", "ts", "from", "to", "amt", "ccy", "channel", "note"))
        for r in rows) + "\n")
    with gzip.open(tmp_path / "t.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows) + "\n")
    table = pa.table({"id": ["a1", "a2"], "ts": [datetime(2024, 5, 1, 10), datetime(2024, 5, 1, 3)],
                      "from": ["X", "Y"], "to": ["Y", "Z"], "amt": [49999.99, 12.5], "ccy": ["CNY", "USD"],
                      "channel": ["cash_deposit", None]})
    pq.write_table(table, tmp_path / "t.parquet")
    for name in ("t.csv", "t.jsonl.gz", "t.parquet"):
        txns, problems = load_transactions(tmp_path / name, mapping=mapping)
        assert problems == [], name
        assert [(t.transaction_id, t.amount, t.currency) for t in txns] == [
            ("a1", Decimal("49999.99"), "CNY"), ("a2", Decimal("12.5"), "USD")], name
        assert txns[0].channel is Channel.cash_deposit and txns[1].channel is Channel.transfer
        assert txns[1].timestamp == datetime(2024, 5, 1, 3, tzinfo=timezone.utc), name
    with pytest.raises(ConfigError, match="unknown: amount_cny"):
        load_transactions(tmp_path / "t.csv", mapping={"amount_cny": "amt"})


class _ProbeResult(TaskResult):
    transaction_id: str
    amount: Decimal
    currency: str


class _ProbePipeline(Pipeline):
    """Echoes each validated transaction: the task exists only to run the core's file path over these readers."""

    def forward(self, batch):  # type: ignore[no-untyped-def]
        return list(batch)

    def postprocess(self, items, raw):  # type: ignore[no-untyped-def]
        return [_ProbeResult(transaction_id=t.transaction_id, amount=t.amount, currency=t.currency) for t in raw]


class _ProbePlugin:
    @hookimpl
    def sectorflow_register_tasks(self, register):  # type: ignore[no-untyped-def]
        register(TaskSpec(name="aml_io_probe", input_model=Transaction, output_model=_ProbeResult,
                          pipeline=_ProbePipeline, formats=input_formats(READERS)))


def test_core_run_skips_or_rejects_bad_rows_from_these_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from sectorflow import plugins
    from sectorflow.cli import main

    monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "")
    plugins.reset()
    try:
        plugins.get_plugin_manager().register(_ProbePlugin(), name="aml_io_probe")
        world = tmp_path / "trans.csv"
        world.write_text(AMLWORLD, encoding="utf-8")
        out = tmp_path / "out.jsonl"
        assert main(["run", "aml_io_probe", str(world), "--format", "amlworld", "--on-error", "skip",
                     "--output", str(out)]) == 0
        results = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["transaction_id"] for r in results] == ["amlworld-1", "amlworld-2", "amlworld-4", "amlworld-7"]
        assert results[2]["currency"] == "CNY" and Decimal(results[2]["amount"]) == Decimal("12880.00")
        err = capsys.readouterr().err
        assert all(f"skipped row {n}" in err for n in (3, 5, 6)) and "3 row(s) skipped" in err
        out.unlink()
        assert main(["run", "aml_io_probe", str(world), "--format", "amlworld", "--on-error", "reject",
                     "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert "row 3: currency" in err  # the core stops at the first bad row when rejecting
        assert not out.exists() or out.read_text() == ""
    finally:
        plugins.reset()


def test_cli_run_reports_bad_rows_by_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sectorflow import Taskflow
    from sectorflow.cli import main

    if "aml" not in {row["task"] for row in Taskflow.tasks()}:
        pytest.skip("the aml task is not registered yet (plugin.py)")
    path = tmp_path / "tx.csv"
    path.write_text("sourceNodeId,targetNodeId,value,time\n1,2,100.5,0\n2,3,-4,1\n3,1,7,soon\n4,5,8,2\n")
    out = tmp_path / "out.jsonl"
    assert main(["run", "aml", str(path), "--format", "amlsim", "--on-error", "skip", "--output", str(out)]) == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["transaction_id"] for r in results] == ["amlsim-1", "amlsim-4"]
    err = capsys.readouterr().err
    assert "skipped row 2" in err and "skipped row 3" in err and "2 row(s) skipped" in err
    out.unlink()
    assert main(["run", "aml", str(path), "--format", "amlsim", "--on-error", "reject", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "row 2: amount" in err
    assert not out.exists() or out.read_text() == ""


def test_committed_sample_slice_loads_cleanly() -> None:
    txns, problems = load_transactions(SAMPLE, format="amlsim", on_error="reject")
    assert problems == [] and len(txns) == 3814
    accounts = {a for t in txns for a in (t.sender_account, t.receiver_account)}
    with open(REPO / "samples" / "aml" / "patterns.csv", newline="") as handle:
        groups = [row["accounts"].split(";") for row in csv.DictReader(handle)]
    assert len(groups) == 8 and all(set(g) <= accounts for g in groups)
    assert "Apache License" in (REPO / "samples" / "aml" / "LICENSE").read_text()[:200]


def test_jsonl_skip_mode_skips_a_malformed_line_and_keeps_the_rest(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The aml jsonl reader yields a bad line as (row, InvalidInputError), so skip mode goes on (was: whole file
    rejected); load_transactions reports it as a problem."""
    from sectorflow.cli import main

    good = {"transaction_id": "j1", "timestamp": "2026-03-02T10:00:00", "sender_account": "A",
            "receiver_account": "B", "amount": "100"}
    source = tmp_path / "t.jsonl"
    source.write_text("\n".join([json.dumps(good), "this is not json", "[1, 2]",
                                 json.dumps({**good, "transaction_id": "j4"})]) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["run", "aml", str(source), "--format", "jsonl", "--on-error", "skip", "-o", str(out),
                 "-O", "model=false"]) == 0
    assert [json.loads(line)["transaction_id"] for line in out.read_text().splitlines()] == ["j1", "j4"]
    err = capsys.readouterr().err
    assert "skipped row 2" in err and "skipped row 3" in err
    txns, problems = load_transactions(source, format="jsonl", on_error="skip")
    assert [t.transaction_id for t in txns] == ["j1", "j4"] and [p["row"] for p in problems] == [2, 3]
    assert main(["run", "aml", str(source), "--format", "jsonl", "-o", str(tmp_path / "r.jsonl")]) == 2


def test_a_csv_header_without_the_required_columns_is_one_error_that_names_them(tmp_path: Path) -> None:
    from sectorflow import ConfigError
    from sectorflow_aml.loaders import csv_reader

    semi = tmp_path / "semi.csv"
    semi.write_text("transaction_id;timestamp;sender_account;receiver_account;amount\nt1;2024-01-01;A;B;100\n")
    with pytest.raises(ConfigError, match="separated by semicolons") as raised:
        list(csv_reader()(semi))
    assert raised.value.details["missing"] == ["transaction_id", "timestamp", "sender_account", "receiver_account",
                                               "amount"]
    other = tmp_path / "other.csv"
    other.write_text("id,when,from,to,value\nt1,2024-01-01,A,B,100\n")
    with pytest.raises(ConfigError, match="lacks the column"):
        list(csv_reader()(other))
    mapped = csv_reader(mapping={"transaction_id": "id", "timestamp": "when", "sender_account": "from",
                                 "receiver_account": "to", "amount": "value"})
    assert [r for _, r in mapped(other)] == [{"transaction_id": "t1", "timestamp": "2024-01-01",
                                              "sender_account": "A", "receiver_account": "B", "amount": "100"}]


def test_a_csv_row_with_more_cells_than_the_header_is_a_bad_row(tmp_path: Path) -> None:
    from sectorflow import InvalidInputError
    from sectorflow_aml.loaders import csv_reader

    path = tmp_path / "extra.csv"
    path.write_text("transaction_id,timestamp,sender_account,receiver_account,amount\n"
                    "t1,2024-01-01,A,B,100,extra\nt2,2024-01-01,A,B,100\n")
    rows = list(csv_reader()(path))
    assert isinstance(rows[0][1], InvalidInputError) and "surplus: 'extra'" in str(rows[0][1])
    assert rows[1] == (3, {"transaction_id": "t2", "timestamp": "2024-01-01", "sender_account": "A",
                           "receiver_account": "B", "amount": "100"})


def test_a_malformed_jsonl_line_is_reported_with_its_line_number_position_and_what_to_write(tmp_path: Path) -> None:
    """A bad line's problem names the line (blank lines counted), where the JSON breaks and the shape a line needs,
    not only the decoder's 'Expecting value'; the reject message has no 'None:' for the missing field."""
    good = {"transaction_id": "j1", "timestamp": "2026-03-02T10:00:00", "sender_account": "A",
            "receiver_account": "B", "amount": "100"}
    source = tmp_path / "t.jsonl"
    source.write_text("\n".join([json.dumps(good), "", "not json", '{"transaction_id": "j2", "amount": 5,}',
                                 "[1, 2]", "7"]) + "\n")
    txns, problems = load_transactions(source, format="jsonl", on_error="skip")
    assert [t.transaction_id for t in txns] == ["j1"] and [p["row"] for p in problems] == [3, 4, 5, 6]
    reasons = [p["reason"] for p in problems]
    assert reasons[0].startswith("line 3 is not valid JSON (Expecting value at column 1: 'not json'); each line "
                                 "must hold one JSON object, e.g. {\"transaction_id\": \"T1\"")
    assert reasons[1].startswith("line 4 is not valid JSON (Expecting property name enclosed in double quotes at "
                                 "column 38: ...'\", \"amount\": 5,}')")
    assert reasons[2].startswith("line 5 holds an array ('[1, 2]'), not a JSON object; each line must hold")
    assert reasons[3].startswith("line 6 holds a single value ('7'), not a JSON object")
    assert all(r.endswith("fix the line or delete it") for r in reasons)
    with pytest.raises(InvalidInputError, match=r"row 3: line 3 is not valid JSON \(Expecting value") as raised:
        load_transactions(source, format="jsonl", on_error="reject")
    assert "None:" not in str(raised.value)


def test_timestamps_without_an_offset_are_named_once_per_file(tmp_path, caplog):
    # bank exports often hold local times without an offset; they are read as UTC (the schema's rule), and the
    # reader says so once, naming a row, so a Chinese bank does not lose 17:00 deposits to the next day unawares
    from sectorflow_aml.loaders import READERS

    path = tmp_path / "local.csv"
    path.write_text("transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"
                    "a,2026-11-03T09:00:00,C,C,30000,CNY,cash_deposit\n"
                    "b,2026-11-03T17:00:00+08:00,C,C,30000,CNY,cash_deposit\n"
                    "c,2026-11-03 17:30:00,C,C,100,CNY,cash_deposit\n")
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        rows = list(READERS["csv"](path))
    assert len(rows) == 3
    (message,) = [r.getMessage() for r in caplog.records if "UTC offset" in r.getMessage()]
    assert "2 of 3 timestamps carry no UTC offset (e.g. row 2: '2026-11-03T09:00:00')" in message
    caplog.clear()
    path.write_text("transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n"
                    "a,2026-11-03T09:00:00Z,C,C,30000,CNY,cash_deposit\n")
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        list(READERS["csv"](path))
    assert not [r for r in caplog.records if "UTC offset" in r.getMessage()]


def test_amlsim_and_amlworld_names_stay_importable_from_loaders():
    """The AMLSim and AMLworld readers live in ``sectorflow_aml.formats`` (loaders.py had grown past 600 lines);
    code and docs import them from ``sectorflow_aml.loaders``, which must hand out the same objects."""
    from sectorflow_aml import formats, loaders

    names = ("amlsim_reader", "amlworld_reader", "AMLSIM_HEADER", "AMLSIM_BASE_DATE", "AMLWORLD_HEADER",
             "AMLWORLD_CURRENCIES", "AMLWORLD_CHANNELS", "Reader", "Record")
    assert [name for name in names if getattr(loaders, name, None) is not getattr(formats, name)] == []
    assert loaders.AMLWORLD_CURRENCIES["Yuan"] == "CNY" and str(loaders.AMLSIM_BASE_DATE) == "2017-01-01"
