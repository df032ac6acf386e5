"""``sectorflow aml state show|export|reset`` read a store: a missing one is refused, naming the path, and not created
(fresh-user report, 3 Dec 2026: ``--state typo.sqlite`` showed "no AML state" and left an empty SQLite file); ``state
export`` names the bundle it was made with (``bundle_sha256`` was null when only the account model ran)."""

from __future__ import annotations

import json

import pytest
from sectorflow import Taskflow


@pytest.mark.parametrize("args", [["show"], ["export", "--tenant", "default"], ["reset", "--tenant", "default", "--yes"]])
def test_a_missing_store_is_refused_and_not_created(tmp_path, cli_main, capsys, args):
    typo = tmp_path / "typo.sqlite"
    assert cli_main(["aml", "state", *args, "--state", str(typo)]) == 2
    err = capsys.readouterr().err
    assert f"--state {typo}: no state store at {typo} (nothing was created)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no STATE.lock


def test_the_exported_state_names_the_bundle_of_the_account_model(tmp_path, cli_main, capsys):
    store = str(tmp_path / "state.sqlite")
    txn = {"transaction_id": "t1", "timestamp": "2017-01-05T00:00:00Z", "sender_account": "78",
           "receiver_account": "19972", "amount": "192.33", "currency": "CNY"}
    tf = Taskflow("aml", state_store=store)
    tf([txn])
    assert tf.pipeline.scorer is None and tf.pipeline.account_scorer is not None  # the default: account model only
    assert cli_main(["aml", "state", "export", "--state", store]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["bundle_sha256"] == tf.pipeline.bundle.sha256
    assert len(exported["bundle_sha256"]) == 64


def test_show_of_a_tenant_with_no_state_is_refused_naming_the_tenants(tmp_path, cli_main, capsys):
    """Fresh-user report, 3 Dec 2026: ``state show --tenant nobody`` printed a row of zeros, exit 0, as if that
    tenant's state were empty (``state export`` refused it)."""
    from sectorflow import CallContext

    store = str(tmp_path / "state.sqlite")
    txn = {"transaction_id": "t1", "timestamp": "2017-01-05T00:00:00Z", "sender_account": "78",
           "receiver_account": "19972", "amount": "192.33", "currency": "CNY"}
    Taskflow("aml", model=False, state_store=store)([txn], context=CallContext(tenant="bank-1"))
    capsys.readouterr()
    assert cli_main(["aml", "state", "show", "--state", store, "--tenant", "nobody"]) == 2
    assert "holds no aml state for tenant 'nobody'; tenants: bank-1, default." in " ".join(capsys.readouterr().err.split())
    assert cli_main(["aml", "state", "show", "--state", store, "--tenant", "bank-1"]) == 0
    assert capsys.readouterr().out.startswith("bank-1: at the last snapshot")
