"""The account MLP's federated partition on a bank's own files: any reader with the column options of `sectorflow
run aml`, the simulated bank view (transactions touching the bank's accounts, cross-bank transfers at both ends, only
its own labels), and the checks made before Flower starts."""

from __future__ import annotations

import pytest
from sectorflow import ConfigError
from sectorflow_aml.account_federated import check, load_view
from sectorflow_aml.labels import LabelsError

ROWS = [  # a bank export with its own column names: A1, A2 at bank_a; B1 at bank_b; C1 at bank_c
    ("t1", "2026-01-05T09:00:00Z", "A1", "A2", "100.00"),
    ("t2", "2026-01-05T10:00:00Z", "A1", "B1", "250.00"),   # cross-bank: in both bank_a's and bank_b's view
    ("t3", "2026-01-06T11:00:00Z", "B1", "C1", "75.50"),    # neither end at bank_a
    ("t4", "2026-01-07T12:00:00Z", "C1", "A2", "20.00"),    # cross-bank: bank_c and bank_a
]


@pytest.fixture()
def bank_files(tmp_path):
    tx = tmp_path / "export.csv"
    tx.write_text("ref,booked,from_acct,to_acct,amt\n" + "".join(",".join(r) + "\n" for r in ROWS))
    labels = tmp_path / "labels.csv"
    labels.write_text("account_id,label\nA1,1\nA2,0\nB1,0\nC1,1\n")
    banks = tmp_path / "banks.csv"
    banks.write_text("ACCOUNT_ID,BANK_ID\nA1,bank_a\nA2,bank_a\nB1,bank_b\nC1,bank_c\n")
    columns = {"column_transaction_id": "ref", "column_timestamp": "booked", "column_sender_account": "from_acct",
               "column_receiver_account": "to_acct", "column_amount": "amt"}
    return {"transactions": str(tx), "labels": str(labels), "format": "csv", "bank_accounts": str(banks),
            "cache_dir": str(tmp_path / "cache"), **columns}


def test_a_bank_sees_the_transactions_touching_its_accounts_and_only_its_labels(bank_files):
    rep, labels = load_view(dict(bank_files, bank="bank_a"))
    assert rep.n_transactions == 3  # t1, t2, t4: t3 touches no bank_a account
    assert set(rep.accounts) == {"A1", "A2", "B1", "C1"}  # counterparties at other banks appear, unlabelled
    assert labels.label == {"A1": 1, "A2": 0}
    other, other_labels = load_view(dict(bank_files, bank="bank_b"))
    assert other.n_transactions == 2 and other_labels.label == {"B1": 0}  # t2 (both ends) and t3
    assert len(rep.digest) == 64 and rep.digest != other.digest
    cached, _ = load_view(dict(bank_files, bank="bank_a"))  # the second read comes from the cache, equal
    assert cached.digest == rep.digest and (cached.x == rep.x).all()
    whole, whole_labels = load_view({k: v for k, v in bank_files.items() if k != "bank_accounts"})
    assert whole.n_transactions == 4 and len(whole_labels) == 4  # no bank: the file is the bank's own export


def test_checks_name_what_is_wrong(bank_files, tmp_path):
    with pytest.raises(ConfigError, match="needs 'labels'"):
        check({"transactions": bank_files["transactions"]})
    with pytest.raises(ConfigError, match="transactions file .*missing.csv not found"):
        check(dict(bank_files, transactions=str(tmp_path / "missing.csv")))
    with pytest.raises(ConfigError, match="format 'xls'"):
        check(dict(bank_files, format="xls"))
    with pytest.raises(ConfigError, match="No account of bank 'bank_z'"):
        check(dict(bank_files, bank="bank_z"))
    check(dict(bank_files, bank="bank_c"))  # passes


def test_labels_of_another_dataset_are_refused_before_flower_starts(bank_files, tmp_path):
    """`sectorflow federate aml` took labels of which no account transacts in the institution's file (fresh-user
    report); refused in `check` (run before any Flower process) with `aml train`'s own check and message."""
    other = tmp_path / "other-labels.csv"
    other.write_text("account_id,label\nX1,1\nX2,0\nX3,0\n")
    with pytest.raises(LabelsError, match=r"^Only 0 of the 3 labelled accounts of .*other-labels\.csv \(0 %; at "
                                          r"least 50% needed\) transact in .*export\.csv \(4 accounts\): are these "
                                          r"the labels of another dataset\?") as got:
        check({k: v for k, v in dict(bank_files, labels=str(other)).items() if k != "bank_accounts"})
    assert got.value.details == {"labelled": 3, "found": 0, "transaction_accounts": 4}


def test_a_federated_bundle_has_its_own_identity(bank_files, tmp_path):
    """The bundle `federate aml` writes is named aml-account-mlp-federated with a version of its data (date +
    digest), never the shipped model's identity nor a fixed 1.0.0."""
    import json
    import re

    import numpy as np
    from sectorflow_aml.account_federated import export, names
    from sectorflow_aml.account_mlp import N_ACCOUNT_FEATURES, make_net, net_weights
    from sectorflow_aml.learn_cli import shipped_identities

    weights = {**net_weights(make_net()), "input.mean": np.zeros(N_ACCOUNT_FEATURES, np.float32),
               "input.sq": np.full(N_ACCOUNT_FEATURES, 0.1, np.float32)}
    counts = {"count.pos.3": 2, "count.neg.1": 3, "count.accounts": 4, "count.laundering": 2}
    run = {"rounds": [{"round": 1, "eval_metrics": {"average_precision": 0.5, **counts}}],
           "institutions": [{"institution": "a", "data_sha256": "ab" * 32, "num_examples": 4}], "seed": 1}
    manifest = json.loads(export([weights[n] for n in names()], run, tmp_path / "fed").read_text())
    assert manifest["name"] == "aml-account-mlp-federated"
    assert re.fullmatch(r"\d{4}\.\d{2}\.\d{2}\+[0-9a-f]{12}", manifest["version"]), manifest["version"]
    assert (manifest["name"], manifest["version"]) not in shipped_identities()
