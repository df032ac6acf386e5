"""``sectorflow aml state show|export|reset``: an operator's view of the stored AML state, each action an audited
task event (``state_shown``, ``state_exported``, ``state_reset``) carrying the tenant."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from sectorflow import CallContext, Taskflow, hookimpl, plugins
from sectorflow_aml.loaders import READERS

RUN = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"


class Recorder:
    def __init__(self) -> None:
        self.events = []

    @hookimpl
    def sectorflow_task_event(self, event) -> None:
        if event.kind.startswith("state_"):
            self.events.append(event)


@pytest.fixture()
def recorder():
    pm = plugins.get_plugin_manager()
    rec = Recorder()
    pm.register(rec, name="state-recorder")
    yield rec
    pm.unregister(name="state-recorder")


def test_show_export_and_reset_one_tenant_each_audited(tmp_path, cli_main, capsys, recorder):
    if not RUN.is_dir():
        pytest.skip(f"AMLSim sample not found at {RUN}")
    txns = [t for _, t in itertools.islice(READERS["amlsim"](RUN / "transactions.csv.gz"), 3_000)]
    store = str(tmp_path / "state.sqlite")
    tf = Taskflow("aml", model=False, state_store=store)
    tf(txns[:2_000], context=CallContext(tenant="bank-a"))
    tf(txns[2_000:], context=CallContext(tenant="bank-b"))
    tf.save_state("bank-a")

    assert cli_main(["aml", "state", "show", "--state", store, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["tenant"] for r in rows] == ["bank-a", "bank-b", "default"]  # default: the loaded pipeline, empty
    assert rows[0]["window_transactions"] == 2_000 and rows[0]["journal_items"] == 0  # in the snapshot
    assert rows[1]["journal_items"] == 1_000 and rows[1]["journal_calls"] == 1 and rows[1]["bytes"] > 50_000

    assert cli_main(["aml", "state", "export", "--tenant", "bank-b", "--state", store, "-O", "model=false"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported == json.loads(json.dumps(tf._tenant_pipeline("bank-b")[0].state_dict()))  # snapshot + journal

    assert cli_main(["aml", "state", "reset", "--tenant", "bank-a", "--state", store, "--yes"]) == 0
    assert "state forgotten" in capsys.readouterr().out
    assert cli_main(["aml", "state", "show", "--state", store, "--json"]) == 0
    assert [json.loads(line)["tenant"] for line in capsys.readouterr().out.splitlines()] == ["bank-b", "default"]
    restarted = Taskflow("aml", model=False, state_store=store)  # a new process: each tenant restored on first use
    assert len(restarted._tenant_pipeline("bank-a")[0].window) == 0
    assert len(restarted._tenant_pipeline("bank-b")[0].window) == 1_000
    assert len(restarted.pipeline.window) == 0

    kinds = [(e.kind, e.context.tenant, e.context.channel) for e in recorder.events]
    assert kinds == [("state_shown", None, "cli"), ("state_exported", "bank-b", "cli"),
                     ("state_reset", "bank-a", "cli"), ("state_shown", None, "cli")]
    assert recorder.events[2].details["had_state"] is True


def test_export_with_other_options_than_the_state_says_which(tmp_path, cli_main, capsys):
    store = str(tmp_path / "state.sqlite")
    tf = Taskflow("aml", model=False, state_store=store)
    tf([{"transaction_id": "t1", "timestamp": "2024-01-02T10:00:00Z", "sender_account": "A",
         "receiver_account": "B", "amount": "10"}])
    assert cli_main(["aml", "state", "export", "--state", store]) != 0
    # the per-transaction scorer is off by default now: what differs is the account model, and the message names it
    assert "made without an account model (model=False or account_model=False)" in capsys.readouterr().err
    assert cli_main(["aml", "state", "export", "--tenant", "nobody", "--state", store, "-O", "model=false"]) != 0
    assert "no aml state for tenant 'nobody'; tenants: default" in capsys.readouterr().err
