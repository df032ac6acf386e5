"""Analysts' case dispositions as labels for `sectorflow aml train` (CSV and JSON lines, as the workbench exports
them): confirmed and STR-approved cases are laundering, false positives legitimate, escalated ones no label; a bad
file names its line; `aml train` writes a bundle from them."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest
from sectorflow_aml.cases import case_id
from sectorflow_aml.labels import DISPOSITION_COLUMNS, LabelsError, read_labels

HEADER = ",".join(DISPOSITION_COLUMNS)
GENTEX = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlgentex_dev" / "dev_s101"


def row(account: str, period: str, disposition: str, at: str = "2024-02-03T10:15:00+00:00",
        reason: str = "reviewed", by: str = "analyst-1") -> str:
    return f"{case_id(account, period)},{account},{period},{disposition},{reason},{by},{at}"


def test_dispositions_csv_give_account_labels(tmp_path, caplog):
    path = tmp_path / "dispositions.csv"
    path.write_text("\n".join([
        HEADER,
        row("A", "2024-01", "true_positive"),
        row("B", "2024-01", "false_positive"),
        row("C", "2024-01", "str_approved", reason='"structuring, three tills"'),  # a quoted comma
        row("D", "2024-01", "escalated"),
        row("E", "2024-01", "escalated"),
        row("E", "2024-01", "false_positive", at="2024-02-05T09:00:00Z"),  # escalated, then decided: the latest
        row("F", "2024-W05", "false_positive"),
        row("F", "2024-03", "true_positive"),  # any positive case makes the account positive
        row("G", "2024-01-31", "escalated", at="2024-03-01T00:00:00+08:00"),
        row("G", "2024-01-31", "str_approved", at="2024-02-29T17:00:00+00:00"),  # later than 16:00 UTC above
        "",
    ]) + "\n")
    with caplog.at_level(logging.WARNING, logger="sectorflow_aml"):
        labels = read_labels(path)
    assert labels.label == {"A": 1, "B": 0, "C": 1, "E": 0, "F": 1, "G": 1}
    assert labels.skipped == 1 and labels.positives == 4 and "D" not in labels.label
    assert "1 escalated case(s) skipped" in caplog.text


def test_dispositions_json_lines_read_as_the_csv(tmp_path):
    rows = [dict(zip(DISPOSITION_COLUMNS, r.split(","))) for r in (
        row("A", "2024-01", "true_positive"), row("B", "2024-01", "false_positive"), row("D", "2024-01", "escalated"))]
    path = tmp_path / "dispositions.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
    labels = read_labels(path)
    assert labels.label == {"A": 1, "B": 0} and labels.skipped == 1


@pytest.mark.parametrize(("lines", "why"), [
    ([row("A", "2024-01", "confirmed")], "line 2: disposition 'confirmed' is not one of true_positive"),
    ([row("A", "2024-01", "true_positive"), row("B", "Jan 2024", "false_positive")], "line 3: period 'Jan 2024'"),
    ([row("A", "2024-01", "true_positive", at="yesterday")], "line 2: decided_at 'yesterday' is not an ISO 8601"),
    ([row("A", "2024-01", "true_positive", at="2024-02-03T10:15:00")], "line 2: decided_at .* has no UTC offset"),
    ([row("", "2024-01", "true_positive")], "line 2: empty account_id"),
    ([",A,2024-01,true_positive,x,y,2024-02-03T10:15:00Z"], "line 2: empty case_id"),
    (["c1,A,2024-01,true_positive,x,y,2024-02-03T10:15:00Z", "c1,B,2024-01,true_positive,x,y,2024-02-04T10:15:00Z"],
     "line 3: case c1 is of account A on line 2, not B"),
    ([row("A", "2024-01", "true_positive") + ",extra"], "line 2: 8 cells, the header has 7"),
    ([row("A", "2024-01", "escalated")], "labels no account: every case is escalated"),
    ([], "holds no case"),
])
def test_bad_dispositions_name_the_line(tmp_path, lines, why):
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    with pytest.raises(LabelsError, match=why):
        read_labels(path)


def test_bad_json_dispositions_name_the_line(tmp_path):
    good = json.dumps(dict(zip(DISPOSITION_COLUMNS, row("A", "2024-01", "true_positive").split(","))))
    for text, why in ((good + "\n[1, 2]\n", "line 2"), (good + "\n{not json\n", "line 2 is not valid JSON"),
                      ('{"case_id": "c1", "account_id": "A"}\n', "line 1: no period, disposition, reason")):
        path = tmp_path / "bad.jsonl"
        path.write_text(text)
        with pytest.raises(LabelsError, match=why):
            read_labels(path)


@pytest.mark.skipif(not GENTEX.is_dir(), reason="AMLGentex dev data not present")
def test_train_on_dispositions_equals_training_on_their_account_labels(tmp_path, cli_main):
    """dev_s101's first 8,000 rows; the accounts' IS_SAR written as the workbench would (positives confirmed or
    STR-approved, some negatives escalated first, one in ten escalated and never decided) read as the account labels
    they stand for, and `aml train --labels` writes a bundle from them."""
    src = tmp_path / "slice.csv"
    with gzip.open(GENTEX / "transactions.csv.gz", "rt") as f, src.open("w") as out:
        for i, line in enumerate(f):
            if i > 8_000:
                break
            out.write(line)
    truth = read_labels(GENTEX / "accounts.csv.gz")
    lines, plain = [HEADER], ["account_id,label"]
    for k, (account, value) in enumerate(sorted(truth.label.items())):
        if k % 10 == 9:
            lines.append(row(account, "2023-01", "escalated"))
            continue
        if value:
            lines.append(row(account, "2023-01", "true_positive" if k % 2 else "str_approved"))
        else:
            if k % 3 == 0:
                lines.append(row(account, "2023-01", "escalated", at="2023-02-01T00:00:00Z"))
            lines.append(row(account, "2023-01", "false_positive", at="2023-02-02T00:00:00Z"))
        plain.append(f"{account},{value}")
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "a.csv").write_text("\n".join(plain) + "\n")
    assert read_labels(tmp_path / "d.csv").label == read_labels(tmp_path / "a.csv").label
    # the same labels, so the same training (its rows and split depend on the labels alone): train once, on the
    # dispositions, through the command line
    assert cli_main(["aml", "train", str(src), "--format", "amlgentex", "--labels", str(tmp_path / "d.csv"),
                     "--out", str(tmp_path / "bundle"), "--seed", "3"]) == 0
    assert "Tree=" in (tmp_path / "bundle" / "account_model.txt").read_text()
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert manifest["provenance"]["datasets"][0]["laundering_accounts"] == sum(
        v for k, (_, v) in enumerate(sorted(truth.label.items())) if k % 10 != 9)


def test_the_workbench_export_reads_as_labels(tmp_path):
    """What `sectorflow aml dispositions export` writes (workbench.decisions.write_labels) is this format."""
    from sectorflow_aml.workbench.decisions import LABEL_HEADER, write_labels

    assert LABEL_HEADER == DISPOSITION_COLUMNS
    rows = [{"case_id": case_id(a, "2024-01"), "account_id": a, "period": "2024-01", "disposition": d,
             "reason": "payroll, reviewed", "decided_by": "analyst-1", "decided_at": "2024-02-03T10:15:00+00:00"}
            for a, d in (("A", "str_approved"), ("B", "false_positive"), ("C", "escalated"))]
    assert write_labels(rows, tmp_path / "labels.csv") == 3
    labels = read_labels(tmp_path / "labels.csv")
    assert labels.label == {"A": 1, "B": 0} and labels.skipped == 1
