"""``sectorflow aml explain`` reads the input as the run did (``--column`` / ``--default``) and, when an input is
refused, names what changed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sectorflow import ConfigError, InvalidInputError, Taskflow, field_pairs
from sectorflow_aml.results import checked_alert, explain_alert, iter_alerts

BANK_COLUMNS = ["Txn Ref", "Value Date", "Debit Acct", "Credit Acct", "Amt"]  # no currency column: --default
MAPPING = {"transaction_id": "Txn Ref", "timestamp": "Value Date", "sender_account": "Debit Acct",
           "receiver_account": "Credit Acct", "amount": "Amt"}


def _bank_rows() -> list[dict[str, str]]:
    """A bank's export: three accounts passing money round a loop (a cycle alert) under its own column names."""
    loop = [("R1", "LOOP1", "LOOP2", "300000.00"), ("R2", "LOOP2", "LOOP3", "298000.00"),
            ("R3", "LOOP3", "LOOP1", "296000.00")]
    return [{"Txn Ref": tid, "Value Date": f"2026-11-07T0{i + 1}:00:00+08:00", "Debit Acct": a, "Credit Acct": b,
             "Amt": amount} for i, (tid, a, b, amount) in enumerate(loop)]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=BANK_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture()
def bank_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """The bank CSV, the results `sectorflow run aml FILE --column ... --default currency=CNY` writes (rules only)
    and the id of its cycle alert."""
    source = _write(tmp_path / "bank.csv", _bank_rows())
    txns = [{field: row[column] for field, column in MAPPING.items()} | {"currency": "CNY"} for row in _bank_rows()]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in Taskflow("aml", model=False)(txns)))
    cycle = next(a for a in iter_alerts(results) if a.typology == "cycle")
    return source, results, cycle.alert_id


def test_explain_reads_a_bank_csv_with_the_runs_column_and_default_options(
        bank_run: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_main) -> None:
    source, results, alert_id = bank_run
    main = cli_main
    base = ["aml", "explain", alert_id, "--results", str(results), "--input", str(source), "--format", "csv"]
    columns = [arg for field, column in MAPPING.items() for arg in ("--column", f"{field}={column}")]
    png = tmp_path / "bank.png"
    assert main(base + columns + ["--default", "currency=CNY", "--png", str(png)]) == 0, capsys.readouterr().err
    assert png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    # without the mapping the file cannot be read: a one-line error that says to pass --column
    assert main(base + ["--png", str(tmp_path / "no.png")]) == 2
    err = capsys.readouterr().err
    assert "--column" in err and "Traceback" not in err and not (tmp_path / "no.png").exists()
    # another currency than the run's default is another input: refused, not drawn
    assert main(base + columns + ["--default", "currency=USD", "--png", str(tmp_path / "usd.png")]) == 2
    err = capsys.readouterr().err
    assert "is not the input that produced alert" in err and not (tmp_path / "usd.png").exists()
    # a malformed pair says how to write it
    assert main(base + ["--column", "transaction_id", "--png", str(tmp_path / "bad.png")]) == 2
    assert "--column 'transaction_id': write FIELD=COLUMN" in capsys.readouterr().err


@pytest.mark.parametrize(("options", "message"), [
    (["--default", "currency=yen"], "--default currency=yen: "),
    (["--column", "receiver_account=Debit Acct"],
     "--column maps the column 'Debit Acct' to 2 fields (sender_account=Debit Acct, receiver_account=Debit Acct)"),
])
def test_explain_checks_column_and_default_options_as_run_does(
        bank_run: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_main,
        options: list[str], message: str) -> None:
    """Fresh-user report (3 Dec 2026): `sectorflow run` refuses these options up front (exit 2; an ISO 4217 hint for
    the currency), `aml explain` read the file with them (the alert's transactions then failed, or were taken for
    changed ones)."""
    source, results, alert_id = bank_run
    mapping = {**MAPPING, "receiver_account": "Credit Acct"}
    columns = [arg for field, column in mapping.items() if not (field == "receiver_account" and "--column" in options)
               for arg in ("--column", f"{field}={column}")]
    given = columns + (options if "--column" in options else [*options])
    if "--default" not in options:
        given += ["--default", "currency=CNY"]
    run = cli_main(["run", "aml", str(source), "--format", "csv", *given, "--output", str(tmp_path / "r.jsonl")])
    run_err = capsys.readouterr().err
    png = tmp_path / "x.png"
    assert cli_main(["aml", "explain", alert_id, "--results", str(results), "--input", str(source), "--format", "csv",
                     *given, "--png", str(png)]) == 2
    err = capsys.readouterr().err
    assert run == 2 and message in run_err and message in err, err
    if "yen" in message:
        assert "ISO 4217" in err
    assert not png.exists()


def test_explain_alert_takes_mapping_and_defaults(bank_run: tuple[Path, Path, str], tmp_path: Path) -> None:
    source, results, alert_id = bank_run
    png = explain_alert(alert_id, results, source, tmp_path / "py.png", "csv", mapping=MAPPING,
                        defaults={"currency": "CNY"})
    assert png.read_bytes()[:4] == b"\x89PNG"
    _, txns, note = checked_alert(alert_id, results, source, "csv", mapping=MAPPING, defaults={"currency": "CNY"})
    assert note is None and sorted((t.transaction_id, str(t.amount), t.currency) for t in txns) == [
        ("R1", "300000.00", "CNY"), ("R2", "298000.00", "CNY"), ("R3", "296000.00", "CNY")]
    with pytest.raises(ConfigError, match="fixed columns"):
        explain_alert(alert_id, results, source, tmp_path / "x.png", "amlsim", mapping=MAPPING)
    with pytest.raises(ConfigError, match="unknown: colour"):
        explain_alert(alert_id, results, source, tmp_path / "x.png", "csv", mapping={**MAPPING, "colour": "Amt"})


def test_field_pairs_is_the_public_parser_of_field_options() -> None:
    assert field_pairs("--column", "COLUMN", ["transaction_id = Txn Ref", "amount=Amt=x"]) == {
        "transaction_id": "Txn Ref", "amount": "Amt=x"}
    with pytest.raises(ConfigError, match="gives 'amount' twice"):
        field_pairs("--default", "VALUE", ["amount=1", "amount=2"])
    with pytest.raises(ConfigError, match="write FIELD=VALUE"):
        field_pairs("--default", "VALUE", ["currency="])


FLOW_COLUMNS = ["transaction_id", "timestamp", "sender_account", "receiver_account", "amount", "currency", "channel"]


def _flow_rows(**edits: dict[str, str]) -> list[dict[str, str]]:
    """Twelve payroll transfers (a fan-out alert below the report threshold: no draft records them) and a loop of
    three (a cycle alert whose suspicious-report draft records each transfer); ``edits`` change rows by id."""
    rows = [{"transaction_id": f"P{e:02d}", "timestamp": f"2026-10-10T02:{e:02d}:00", "sender_account": "CORP",
             "receiver_account": f"EMP{e:02d}", "amount": f"{10000 + 7 * e}.00", "currency": "CNY",
             "channel": "transfer"} for e in range(12)]
    loop = [("L1", "LOOP1", "LOOP2", "300000.00"), ("L2", "LOOP2", "LOOP3", "298000.00"),
            ("L3", "LOOP3", "LOOP1", "296000.00")]
    rows += [{"transaction_id": tid, "timestamp": f"2026-11-07T0{i + 1}:00:00", "sender_account": a,
              "receiver_account": b, "amount": amount, "currency": "CNY", "channel": "transfer"}
             for i, (tid, a, b, amount) in enumerate(loop)]
    return [dict(r, **edits.get(r["transaction_id"], {})) for r in rows]


def _flow_csv(path: Path, **edits: dict[str, str]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FLOW_COLUMNS)
        writer.writeheader()
        writer.writerows(_flow_rows(**edits))
    return path


@pytest.fixture()
def flow_run(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in Taskflow("aml", model=False)(_flow_rows())))
    return results, {a.typology: a.alert_id for a in iter_alerts(results)}


def _refusal(alert_id: str, results: Path, source: Path) -> str:
    with pytest.raises(InvalidInputError, match="is not the input that produced alert") as caught:
        checked_alert(alert_id, results, source, "csv")
    return str(caught.value)


def test_a_digest_refusal_does_not_call_every_transaction_changed(flow_run: tuple[Path, dict[str, str]],
                                                                  tmp_path: Path) -> None:
    """One payroll amount edited, and no draft records the fan-out's amounts: the message says one or more of the
    10 it holds differ, and does not list the first five ids as the ones that differ (it said 'P00, P01, ... differ')."""
    results, alerts = flow_run
    message = _refusal(alerts["fan_out"], results, _flow_csv(tmp_path / "e.csv", P03={"amount": "10021.50"}))
    assert "one or more of the alert's 10 transactions differ from what the run read" in message
    assert "record no values of them to tell which" in message and "transactions_sha256 does not match" in message
    assert "P00" not in message and "P01" not in message


def test_a_digest_refusal_names_the_one_transaction_the_results_do_not_record(
        flow_run: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The drafts record two of the loop's three transfers (L3's row removed from the results): an edit to L3 is
    named as L3, the two recorded ones are said to match."""
    results, alerts = flow_run
    lines = []
    for line in results.read_text().splitlines():
        record = json.loads(line)
        for draft in record["reports"]:
            rows = draft["elements"].get("transactions") or []
            draft["elements"]["transactions"] = [r for r in rows if r.get("transaction_id") != "L3"]
        lines.append(json.dumps(record))
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines) + "\n")
    message = _refusal(alerts["cycle"], partial, _flow_csv(tmp_path / "l3.csv", L3={"amount": "296500.00"}))
    assert "its transaction L3 differs from what the run read" in message
    assert "the other 2 match what the results' report drafts record" in message
    assert "L1" not in message and "L2" not in message


def test_a_recorded_transaction_with_another_channel_is_named_with_the_field(
        flow_run: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The suspicious-report draft records each loop transfer's channel: an edited channel is named exactly (it was
    caught only by the digest, which listed all three ids as differing)."""
    results, alerts = flow_run
    message = _refusal(alerts["cycle"], results, _flow_csv(tmp_path / "ch.csv", L2={"channel": "wire"}))
    assert "L2 has channel wire there, transfer in the results" in message
    assert "L1" not in message and "L3" not in message
