"""``sectorflow aml train``: what ``--out`` may be, the labels it takes, and the identity of the bundle it writes.

Found by a fresh-user test: ``--out plugins/aml/src/sectorflow_aml/bundle`` replaced the shipped model without a
word; a trained bundle was named ``aml-account-gbdt`` 1.0.0 as the shipped one, so results could not tell them apart;
labels of another dataset (11 % of the labelled accounts in the transactions) only gave a warning and a bundle.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sectorflow import Taskflow

import sectorflow_aml

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
NODES = REPO / "samples" / "aml" / "nodes.csv.gz"
SHIPPED = Path(sectorflow_aml.__file__).resolve().parent / "bundle"
SECTORFLOW = str(Path(sys.executable).with_name("sectorflow"))


def train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SECTORFLOW, "aml", "train", str(SAMPLE), "--format", "amlsim", "--labels", *args],
                          capture_output=True, text=True, timeout=600)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("extra", [[], ["--force"]])
def test_the_shipped_bundle_folder_is_never_written(extra):
    before = digests(SHIPPED)
    done = train(str(NODES), "--out", str(SHIPPED), *extra)
    assert done.returncode == 2, done.stderr
    assert "is the bundle shipped with sectorflow-aml" in done.stderr and "pick another folder" in done.stderr
    assert digests(SHIPPED) == before


def test_an_out_folder_with_files_needs_force(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    done = train(str(NODES), "--out", str(tmp_path))
    assert done.returncode == 2
    assert f"--out {tmp_path} already holds 1 file(s) or folder(s) (e.g. notes.txt)" in done.stderr
    assert "--force" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_labels_of_another_dataset_are_refused_with_counts(tmp_path):
    labels = tmp_path / "labels.csv"
    absent = [f"other-{i}" for i in range(8)]
    labels.write_text("account_id,label\n" + "".join(f"{a},{int(i < 3)}\n" for i, a in enumerate(["78", "19972"]
                                                                                                 + absent)))
    out = tmp_path / "b"
    done = train(str(labels), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert f"Only 2 of the 10 labelled accounts of {labels} (20 %; at least 50% needed) transact in {SAMPLE}" \
        in done.stderr
    assert "nodes.csv.gz" in done.stderr and "scored 0" not in done.stderr
    assert not out.exists()


def test_a_trained_bundle_has_its_own_name_and_version_in_results(tmp_path):
    out = tmp_path / "own"
    done = train(str(NODES), "--out", str(out), "--seed", "3")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    data = manifest["provenance"]["datasets"][0]["sha256_as_read"]
    assert manifest["name"] == "aml-account-gbdt-own"
    options = manifest["provenance"]["training_options"]
    assert options == {"model": "gbdt", "points": "daily", "lookback_days": 30.0, "seed": 3, "val_share": 0.25}
    identity = data + "\n" + json.dumps(options, sort_keys=True, separators=(",", ":"))
    assert manifest["version"].endswith("+" + hashlib.sha256(identity.encode()).hexdigest()[:12])
    txn = {"transaction_id": "t1", "timestamp": "2017-01-05T00:00:00Z", "sender_account": "78",
           "receiver_account": "19972", "amount": "192.33", "currency": "CNY"}
    (own,) = Taskflow("aml", task_path=str(out))([txn])
    (shipped,) = Taskflow("aml")([txn])
    assert (own.meta.model_name, own.meta.model_version) == (manifest["name"], manifest["version"])
    assert (shipped.meta.model_name, shipped.meta.model_version) == ("aml-account-gbdt", "1.0.0")
    again = train(str(NODES), "--out", str(out), "--seed", "3", "--name", "bank-a-model", "--version", "7")
    assert again.returncode == 2 and "--force" in again.stderr
    forced = train(str(NODES), "--out", str(out), "--seed", "3", "--name", "bank-a-model", "--version", "7", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "wrote " + str(out) + " (bank-a-model 7)" in forced.stdout
    (named,) = Taskflow("aml", task_path=str(out))([txn])
    assert (named.meta.model_name, named.meta.model_version) == ("bank-a-model", "7")


@pytest.mark.parametrize(("name", "version"), [("aml-account-gbdt", "1.0.0"), ("aml-risk-mlp", "2.1.0")])
def test_the_shipped_identity_is_refused_before_anything_is_read(tmp_path, name, version):
    """`aml train --name aml-account-gbdt --version 1.0.0` was accepted (fresh-user report): its results read as the
    shipped model's. Refused, exit 2, before the files are read; another version of that name is fine."""
    out = tmp_path / "b"
    done = train(str(tmp_path / "no-labels.csv"), "--out", str(out), "--name", name, "--version", version)
    assert done.returncode == 2, done.stderr
    assert f"--name/--version {name} {version} is the identity of the model shipped with sectorflow-aml" in done.stderr
    assert "no-labels.csv" not in done.stderr and not out.exists()
