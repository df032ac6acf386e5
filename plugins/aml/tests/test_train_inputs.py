"""``sectorflow aml train`` reads its files as ``sectorflow run aml`` does (fresh-user report, 3 Dec 2026):

- bad rows (an amount ``notanumber`` or ``-7``, a cut last row) were dropped without a word; now ``--on-error``
  reject (default) names the file, row and field of each, ``skip`` leaves them out and says so;
- the same file given twice (by path, or a copy) was trained on twice; now refused;
- ``--out FOLDER --force`` on a folder holding other files was refused only after the training;
- two bundles of the same file trained with ``--points daily`` and ``month_end`` had the same identity;
- ``--column`` / ``--default`` are checked before any row is read, as ``sectorflow run`` checks them.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from sectorflow import ConfigError

import pytest

from sectorflow_aml.learn_cli import train_bundle

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
NODES = REPO / "samples" / "aml" / "nodes.csv.gz"
SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))


def sectorflow(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SECTORFLOW, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """The AMLSim sample with an amount ``notanumber`` (row 9), an amount ``-7`` (row 11) and a cut last row."""
    lines = gzip.decompress(SAMPLE.read_bytes()).decode().splitlines(keepends=True)
    for index, amount in ((9, "notanumber"), (11, "-7")):
        cells = lines[index].split(",")
        cells[2] = amount
        lines[index] = ",".join(cells)
    path = tmp_path_factory.mktemp("damaged") / "damaged.csv"
    path.write_text("".join(lines)[:-8])
    return path


def test_bad_rows_are_refused_as_run_refuses_them(damaged, tmp_path):
    run = sectorflow("run", "aml", str(damaged), "--format", "amlsim", "--output", str(tmp_path / "r.jsonl"))
    done = sectorflow("aml", "train", str(damaged), "--format", "amlsim", "--labels", str(NODES), "--out",
                      str(tmp_path / "b"))
    assert run.returncode == 2 and done.returncode == 2, done.stderr
    rows = ["row 9: amount: Input should be a valid decimal", "row 11: amount: Input should be greater than 0",
            "row 3814: timestamp: Input should be a valid datetime or date, input is too short"]
    for line in rows:
        assert line in run.stderr and line in done.stderr
    assert f"3 bad row(s) in {damaged} (first: row 9); nothing was trained" in done.stderr
    assert "--on-error skip" in done.stderr
    assert not (tmp_path / "b").exists()


def test_on_error_skip_leaves_the_bad_rows_out_and_says_so(damaged, tmp_path):
    out = tmp_path / "b"
    done = sectorflow("aml", "train", str(damaged), "--format", "amlsim", "--labels", str(NODES), "--out", str(out),
                      "--on-error", "skip")
    assert done.returncode == 0, done.stderr
    assert f"{damaged}: skipped 3 bad row(s) (--on-error skip; first: row 9: amount:" in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["provenance"]["datasets"][0]["transactions"] == 3_814 - 3


def test_the_same_file_twice_is_refused(tmp_path):
    copy = tmp_path / "copy.csv.gz"
    copy.write_bytes(SAMPLE.read_bytes())
    with pytest.raises(ConfigError, match="is given twice"):
        train_bundle([SAMPLE, SAMPLE.parent / ".." / "aml" / SAMPLE.name], [NODES], tmp_path / "b", fmt="amlsim")
    with pytest.raises(ConfigError, match="have the same content"):
        train_bundle([SAMPLE, copy], [NODES], tmp_path / "b", fmt="amlsim")
    assert not (tmp_path / "b").exists()


def _read(path):
    from sectorflow_aml.learn_cli import _read_training_file

    return _read_training_file(path, "amlsim", "reject", None, None, None, None)


def test_a_decompressed_copy_or_overlapping_files_are_refused(tmp_path):
    """The .csv.gz and its decompressed copy differ in bytes but hold the same transactions (fresh-user report, 3
    Dec 2026: trained on 7,153 of 2 x 3,814, exit 0); so do two exports sharing some days."""
    plain = tmp_path / "sample.csv"
    text = gzip.decompress(SAMPLE.read_bytes()).decode()
    plain.write_text(text)
    with pytest.raises(ConfigError, match=r"^3,814 of the 3,814 transactions of .*sample\.csv are in "
                                          r".*transactions\.csv\.gz too \(same time, accounts, amount and "
                                          r"currency\): the files overlap"):
        train_bundle([SAMPLE, plain], [NODES], tmp_path / "b", fmt="amlsim")
    lines = text.splitlines(keepends=True)
    head, rows = lines[0], lines[1:]
    (tmp_path / "a.csv").write_text(head + "".join(rows[:2000]))
    (tmp_path / "b.csv").write_text(head + "".join(rows[500:2500]))  # 1,500 of its 2,000 rows repeated: refused
    with pytest.raises(ConfigError, match=r"^1,500 of the 2,000 transactions of .*b\.csv are in .*a\.csv too"):
        train_bundle([tmp_path / "a.csv", tmp_path / "b.csv"], [NODES], tmp_path / "b", fmt="amlsim")
    assert not (tmp_path / "b").exists()
    from sectorflow_aml.learn_cli import _refuse_overlapping_file

    seen: dict = {}
    _refuse_overlapping_file(_read(tmp_path / "a.csv"), "a.csv", seen)
    _refuse_overlapping_file(_read(tmp_path / "b.csv")[1500:], "b-rest.csv", seen)  # disjoint rows: accepted
    assert set(seen.values()) == {"a.csv", "b-rest.csv"}  # AMLSim repeats some (day, accounts, amount): not refused


def test_force_on_a_folder_without_a_bundle_is_refused_before_reading(tmp_path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    missing = tmp_path / "not-there.csv"  # nothing is read: the refusal comes before the (missing) input
    with pytest.raises(ConfigError, match=r"no account model bundle \(no account_model.json\): --force replaces a "
                                          "bundle, never other files"):
        train_bundle([missing], [NODES], out, fmt="amlsim", force=True)
    assert (out / "notes.txt").read_text() == "keep me"


def test_points_change_the_identity(tmp_path):
    daily = train_bundle([SAMPLE], [NODES], tmp_path / "daily", fmt="amlsim", points="daily")
    month_end = train_bundle([SAMPLE], [NODES], tmp_path / "month_end", fmt="amlsim", points="month_end")
    data = [m["provenance"]["datasets"][0]["sha256_as_read"] for m in (daily, month_end)]
    assert data[0] == data[1]  # the same transactions as read
    assert daily["name"] == month_end["name"] == "aml-account-gbdt-own"
    assert daily["version"] != month_end["version"]
    assert [m["provenance"]["training_options"]["points"] for m in (daily, month_end)] == ["daily", "month_end"]


@pytest.mark.parametrize(("options", "message"), [
    (["--default", "currency=yen"], "--default currency=yen: "),
    (["--column", "sender_account=src", "--column", "receiver_account=src"],
     "--column maps the column 'src' to 2 fields (sender_account=src, receiver_account=src)"),
])
def test_column_and_default_options_are_checked_before_reading(tmp_path, options, message):
    csv = tmp_path / "t.csv"
    csv.write_text("transaction_id,timestamp,src,dst,amount\nt1,2023-01-01T00:00:00Z,A,B,10\n")
    run = sectorflow("run", "aml", str(csv), *options, "--output", str(tmp_path / "r.jsonl"))
    done = sectorflow("aml", "train", str(csv), "--labels", str(NODES), "--out", str(tmp_path / "b"), *options)
    assert run.returncode == 2 and done.returncode == 2, done.stderr
    assert message in run.stderr and message in done.stderr
    if "yen" in message:
        assert "ISO 4217" in done.stderr


def test_column_and_default_options_for_a_fixed_format_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="Format 'amlsim' has fixed columns: it takes no --column/--default"):
        train_bundle([SAMPLE], [NODES], tmp_path / "b", fmt="amlsim", defaults={"currency": "USD"})
    assert not (tmp_path / "b").exists()


def test_an_empty_training_set_says_what_happened(tmp_path):
    """Fresh-user report: a file whose every row --on-error skip left out, or a header-only file, was answered
    "0 of the 3 labelled accounts ... are these the labels of another dataset?". Now the error says no transaction
    was left, how many rows were skipped and in which fields, and what to do; nothing is written."""
    header = "transaction_id,timestamp,sender_account,receiver_account,amount\n"
    bad = tmp_path / "bad.csv"
    bad.write_text(header + "t1,2024-01-02T09:00:00Z,A,B,abc\nt2,nope,A,C,-5\nt3,2024-01-02T10:00:00Z,B,C,x\n")
    empty = tmp_path / "empty.csv"
    empty.write_text(header)
    labels = tmp_path / "labels.csv"
    labels.write_text("account_id,label\nA,1\nB,0\nC,0\n")
    done = sectorflow("aml", "train", str(bad), "--labels", str(labels), "--out", str(tmp_path / "b1"),
                      "--on-error", "skip")
    err = " ".join(done.stderr.split())
    assert done.returncode == 2, err
    assert "No transactions left to train on in" in err and "skipped all 3 of its row(s) as bad" in err
    assert "fields: amount (3), timestamp (1)" in err and "--column FIELD=COLUMN" in err
    assert "labels of another dataset" not in err
    assert not (tmp_path / "b1").exists()
    done = sectorflow("aml", "train", str(empty), "--labels", str(labels), "--out", str(tmp_path / "b2"))
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "No transactions to train on in" in err and "only a header" in err, err
    assert "labels of another dataset" not in err
    # one bank's two files: the error is about the two together (a good file among them trains)
    done = sectorflow("aml", "train", str(empty), str(bad), "--labels", str(labels), "--out", str(tmp_path / "b3"),
                      "--on-error", "skip")
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "skipped all 3 of its row(s)" in err and "labels of another dataset" not in err
