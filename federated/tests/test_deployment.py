"""Flower's deployment engine on 127.0.0.1: a real SuperLink with TLS (certificates from `sectorflow federate
certs`) and SuperNode authentication, recorded in a real audit log (SQLite).

- risk_mlp (AMLSim folders): two registered banks, one unregistered node that is refused, one round of `flwr run`
  with the app `sectorflow federate app` writes.
- account_mlp (issue 24): two banks, each SuperNode naming only its own transaction and labels files, two rounds,
  ending in the bundle the coordinator's ServerApp writes, served by Taskflow.

Few rounds: each message starts a `flwr-clientapp` process that imports Paddle (stack-facts.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr", reason="the federated extra (flwr) is not installed")
pytest.importorskip("cryptography", reason="cryptography is not installed")

REPO = Path(__file__).resolve().parents[2]
AMLSIM = REPO.parent / "shared" / "data" / "amlsim_sample"
GENTEX = REPO.parent / "shared" / "data" / "amlgentex_dev" / "dev3b_s404"
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.skipif(not (AMLSIM / "20K_cycle200").is_dir(), reason=f"AMLSim sample not at {AMLSIM}"),
              pytest.mark.skipif(not (BIN / "flower-superlink").exists(), reason="flower-superlink not installed")]


def _whole_log(streamed: str, env: dict[str, str], audit_db: Path, timeout: float = 300) -> str:
    """The run's whole log from ``flwr log RUN_ID federation --show``, once the ServerApp has recorded the run's end
    in the audit log. ``flwr run --stream`` returns 0 when its log stream ends, which can happen before the run does
    (the stream stopped after "Starting logstream" once in CI; ``flwr log`` also ends quietly on a gRPC deadline).
    Empty when the run id is not in ``streamed`` or the run does not finish within ``timeout`` seconds."""
    found = re.search(r"Successfully started run (\d+)", streamed)
    if not found:
        return ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:  # never create the file here: the ServerApp's audit sink makes it
            with sqlite3.connect(f"file:{audit_db}?mode=ro", uri=True) as db:
                if db.execute("SELECT 1 FROM records WHERE event = 'task.training_run_finished'").fetchone():
                    break
        except sqlite3.OperationalError:  # no file or no table yet
            pass
        time.sleep(2)
    text = ""
    for _ in range(5):  # the SuperLink may answer the first request late
        shown = subprocess.run([str(BIN / "flwr"), "log", found.group(1), "federation", "--show"], env=env,
                               capture_output=True, text=True, timeout=120)
        text = shown.stdout + shown.stderr
        if "Run finished" in text:
            break
        time.sleep(2)
    return "\n" + text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"exited early: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"port {port} never opened: {log.read_text()[-2000:]}")


class Daemons:
    """Processes this test starts, each in its own session so that it and its children (SuperExec, app
    processes) are stopped together by process-group id."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder, self.procs = env, folder, []

    def start(self, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = self.folder / f"{name}.log"
        proc = subprocess.Popen([str(BIN / args[0]), *args[1:]], env=self.env, stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc, log

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:  # children the leader left behind in its group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Federation:
    """A SuperLink on 127.0.0.1 with TLS and SuperNode authentication (certificates from `sectorflow federate
    certs`), the SuperNode keys of ``names`` registered (``extra`` get keys but stay unregistered), the audit log
    (SQLite) of its ServerApp under ``folder``."""

    def __init__(self, folder: Path, names: list[str], extra: tuple[str, ...] = ()) -> None:
        from sectorflow.compliance.keys import generate_key_file
        from sectorflow.federated.certs import make_all

        self.folder, self.certs = folder, folder / "certs"
        make_all(self.certs, ["127.0.0.1"], [*names, *extra])
        generate_key_file(folder / "audit.key")
        self.port = _free_port()
        home = folder / "flwr"
        home.mkdir()
        (home / "config.toml").write_text(f'[superlink]\ndefault = "federation"\n\n[superlink.federation]\n'
                                          f'address = "127.0.0.1:{self.port}"\nroot-certificates = '
                                          f'"{self.certs / "ca.crt"}"\n')
        self.audit_db = folder / "audit.db"
        self.env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "FLWR_HOME": str(home),
                    "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "OMP_NUM_THREADS": "1",
                    "SECTORFLOW_AUDIT_DB": str(self.audit_db), "SECTORFLOW_AUDIT_KEY": str(folder / "audit.key")}
        self.env.pop("SECTORFLOW_LOAD_PLUGINS", None)
        self.daemons = Daemons(self.env, folder)
        self.names = names

    def start(self) -> None:
        certs = self.certs
        link, link_log = self.daemons.start(
            "superlink", "flower-superlink", "--ssl-ca-certfile", str(certs / "ca.crt"), "--ssl-certfile",
            str(certs / "server.pem"), "--ssl-keyfile", str(certs / "server.key"), "--enable-supernode-auth",
            "--disable-runtime-dependency-installation", "--host", "127.0.0.1", "--port", str(self.port),
            "--database", str(self.folder / "superlink.db"))
        _wait_port(self.port, link, link_log)
        for name in self.names:
            registered = subprocess.run([str(BIN / "flwr"), "supernode", "register",
                                         str(certs / "supernodes" / f"{name}.pub"), "federation"],
                                        env=self.env, capture_output=True, text=True, timeout=120)
            assert registered.returncode == 0, registered.stdout + registered.stderr

    def supernode(self, name: str, node_config: str, *extra: str) -> tuple[subprocess.Popen, Path]:
        """Start SuperNode ``name`` with its own ``--node-config`` (the partition its trainable is built on)."""
        return self.daemons.start(name, "flower-supernode", "--root-certificates", str(self.certs / "ca.crt"),
                                  "--superlink", f"127.0.0.1:{self.port}", "--auth-supernode-private-key",
                                  str(self.certs / "supernodes" / name), "--port", str(_free_port()),
                                  "--node-config", node_config, *extra)

    def run(self, app: Path, rounds: int) -> str:
        """``flwr run APP federation --stream``; the whole log of the finished run."""
        run = subprocess.run([str(BIN / "flwr"), "run", str(app), "federation", "--stream"], env=self.env,
                             capture_output=True, text=True, timeout=400)
        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-3000:]
        if f"Run finished {rounds} round(s)" not in output:  # the log stream can end early (seen in CI)
            output += _whole_log(output, self.env, self.audit_db)
        assert f"Run finished {rounds} round(s)" in output, output[-3000:]
        return output

    def records(self) -> list[tuple[str, dict]]:
        """The run's ``task.training_*`` audit records, in order."""
        with sqlite3.connect(self.audit_db) as db:
            return [(event, json.loads(body)) for event, body in
                    db.execute("SELECT event, body FROM records ORDER BY seq") if event.startswith("task.training_")]


def test_one_round_over_tls_with_node_authentication_refusing_an_unregistered_node(tmp_path):
    from sectorflow.federated import parse_config
    from sectorflow.federated.deploy import write_app
    from sectorflow_aml.trainable import load_bank

    cache = tmp_path / "cache"
    bank = {"bank_a": 0, "bank_b": 1}
    for b in bank.values():  # each bank's features, replayed once here (the app processes read the cache)
        load_bank(AMLSIM, b, 2, max_transactions=1500, cache_dir=cache)
    fed = Federation(tmp_path, list(bank), extra=("intruder",))
    try:
        fed.start()

        def supernode(name: str, b: int, *extra: str) -> tuple[subprocess.Popen, Path]:
            return fed.supernode(name, f'data="{AMLSIM}" bank={b} num-banks=2 max-transactions=1500 '
                                       f'cache-dir="{cache}"', *extra)

        for name, b in bank.items():
            supernode(name, b)
        intruder, intruder_log = supernode("intruder", 1, "--max-retries", "1", "--max-wait-time", "30")
        assert intruder.wait(timeout=120) != 0  # its key was never registered: the SuperLink refuses it
        assert "Failed to activate SuperNode" in intruder_log.read_text()

        cfg = parse_config({"task": "aml", "model": "risk_mlp", "rounds": 1,
                            "strategy": {"fraction_evaluate": 0.0, "min_available_clients": 2}})
        output = fed.run(write_app(cfg, tmp_path / "app"), rounds=1)
        assert "aggregate_fit: received 2 results and 0 failures" in output, output[-3000:]
    finally:
        fed.daemons.stop()

    rows = fed.records()
    assert [event for event, _ in rows] == ["task.training_run_started", "task.training_round",
                                            "task.training_run_finished"]
    round_record = rows[1][1]
    assert round_record["channel"] == "federated" and round_record["object"]["task"] == "aml"
    assert len(round_record["details"]["participants"]) == 2 and round_record["details"]["failures"] == 0
    assert round_record["object"]["weights_sha256"] == rows[2][1]["object"]["weights_sha256"]
    assert len(round_record["object"]["weights_sha256"]) == 64


def _own_files(folder: Path, bank: str) -> tuple[Path, Path]:
    """Bank ``bank``'s own export of a small slice of dev3b_s404 (12,000 transactions, about 3 days, after the
    6,000 opening balances): the transactions touching one of its accounts, and its own accounts' labels."""
    import csv
    import gzip

    tx, labels = folder / f"{bank}_transactions.csv", folder / f"{bank}_labels.csv"
    with gzip.open(GENTEX / "transactions.csv.gz", "rt", newline="") as src, tx.open("w", newline="") as dst:
        reader, writer = csv.reader(src), csv.writer(dst)
        header = next(reader)
        writer.writerow(header)
        orig, dest = header.index("bankOrig"), header.index("bankDest")
        for i, row in enumerate(reader, start=1):
            if i > 18_000:
                break
            if i > 6000 and bank in (row[orig], row[dest]):
                writer.writerow(row)
    with gzip.open(GENTEX / "accounts.csv.gz", "rt", newline="") as src, labels.open("w") as dst:
        dst.write("account_id,label\n")
        dst.writelines(f"{r['ACCOUNT_ID']},{int(r['IS_SAR'] == 'True')}\n" for r in csv.DictReader(src)
                       if r["BANK_ID"] == bank)
    return tx, labels


@pytest.mark.skipif(not GENTEX.is_dir(), reason=f"AMLGentex dev3b_s404 not at {GENTEX}")
def test_two_banks_on_their_own_files_over_tls_end_in_a_bundle_that_taskflow_serves(tmp_path):
    """account_mlp on the deployment engine: each SuperNode's --node-config names only its own bank's transaction
    and labels files; two rounds; the coordinator's ServerApp writes the bundle (`bundle =`), which Taskflow
    serves."""
    from sectorflow import Taskflow
    from sectorflow.federated import parse_config
    from sectorflow.federated.deploy import write_app
    from sectorflow_aml.account_federated import load_view
    from sectorflow_aml.loaders import load_transactions

    cache, banks = tmp_path / "cache", ["bank_a", "bank_b"]
    configs = {}
    for name in banks:
        tx, labels = _own_files(tmp_path, name)
        partition = {"transactions": str(tx), "labels": str(labels), "format": "amlgentex", "name": name,
                     "cache_dir": str(cache)}
        load_view(partition)  # replayed once here: the bank's app processes read the cache
        configs[name] = " ".join(f'{k.replace("_", "-")}="{v}"' for k, v in partition.items())
    bundle = tmp_path / "bundle"
    fed = Federation(tmp_path, banks)
    try:
        fed.start()
        for name in banks:
            fed.supernode(name, configs[name])
        cfg = parse_config({"task": "aml", "model": "account_mlp", "rounds": 2, "bundle": str(bundle),
                            "strategy": {"min_fit_clients": 2, "min_evaluate_clients": 2,
                                         "min_available_clients": 2}})
        output = fed.run(write_app(cfg, tmp_path / "app"), rounds=2)
        assert "aggregate_evaluate: received 2 results and 0 failures" in output, output[-3000:]
    finally:
        fed.daemons.stop()

    rows = fed.records()
    assert [event for event, _ in rows] == ["task.training_run_started", "task.training_round",
                                            "task.training_round", "task.training_run_finished"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    federation = manifest["provenance"]["federation"]
    assert manifest["format"] == "account-mlp" and federation["engine"] == "deployment"
    assert [i["institution"] for i in federation["institutions"]] == banks
    assert all(len(i["data_sha256"]) == 64 and i["num_examples"] > 100 for i in federation["institutions"])
    assert federation["audit_event_ids"] == [body["details"]["event_id"] for _, body in rows]
    history = manifest["metrics"]["account_level"]["validation"]["history"]
    assert [r for r, _ in history] == [1, 2]
    chosen = federation["selection"]
    assert chosen["keep"] == "best" and chosen["round"] in (1, 2) and chosen["last_round"] == 2
    assert chosen["value"] == pytest.approx(max(v for _, v in history), abs=1e-4)  # the best round's AP
    assert chosen["value"] == pytest.approx(dict(history)[chosen["round"]], abs=1e-4)
    assert manifest["metrics"]["account_level"]["validation"]["round"] == chosen["round"]
    assert str(tmp_path) not in json.dumps(federation["institutions"])
    txns, _ = load_transactions(tmp_path / "bank_a_transactions.csv", format="amlgentex")
    scored = Taskflow("aml", task_path=str(bundle))(txns[:300])
    assert scored[0].meta.model_name == "aml-account-mlp-federated" and all(r.account_scores for r in scored)


@pytest.mark.skipif(not (REPO.parent / "shared" / "data" / "banking77" / "train.csv").is_file(),
                    reason="banking77 not in ../shared/data")
def test_two_branches_with_secagg_plus_end_in_an_intent_bundle_the_pipeline_serves(tmp_path):
    """customer_service/intent-head on the deployment engine with SecAgg+ on: two SuperNodes, each naming only its own
    messages file; one round from the shipped head; the coordinator's ServerApp writes the bundle. The bundle's head
    is what the two branches' updates average to, computed here in the clear (so SecAgg+ aggregated them right
    across real processes), and the pipeline serves it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hashlib

    import numpy as np
    from branch_messages import TEXTS, branch_files
    from safetensors.numpy import load_file

    from sectorflow import Taskflow, load_bundle
    from sectorflow.federated import parse_config
    from sectorflow.federated.deploy import write_app
    from sectorflow_customer_service.plugin import BUNDLE_DIR
    from sectorflow_customer_service.trainable import IntentHeadTrainable, PooledEncoder, _softmax, shipped_head

    paths, names = branch_files(tmp_path), ["branch0", "branch1"]
    bundle = tmp_path / "bundle"
    fed = Federation(tmp_path, names)
    cfg = parse_config({"task": "customer_service", "rounds": 1, "local_epochs": 2, "lr": 0.1, "batch_size": 16,
                        "bundle": str(bundle),
                        "secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2, "max_weight": 100},
                        "strategy": {"min_fit_clients": 2, "min_evaluate_clients": 2, "min_available_clients": 2}})
    try:
        fed.start()
        for name, path in zip(names, paths):
            fed.supernode(name, f'data="{path}" name="{name}"')
        output = fed.run(write_app(cfg, tmp_path / "app"), rounds=1)
        assert "aggregate_evaluate: received 2 results and 0 failures" in output, output[-3000:]
    finally:
        fed.daemons.stop()

    rows = fed.records()
    assert [event for event, _ in rows] == ["task.training_run_started", "task.training_round",
                                            "task.training_run_finished"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    federation = manifest["provenance"]["federation"]
    assert manifest["format"] == "sectorflow-cs-int8" and federation["engine"] == "deployment"
    assert federation["secagg"]["enabled"] is True and federation["secagg"]["max_weight"] == 100
    assert [i["institution"] for i in federation["institutions"]] == names
    assert [i["data_sha256"] for i in federation["institutions"]] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    assert federation["audit_event_ids"] == [body["details"]["event_id"] for _, body in rows]
    assert all(hashlib.sha256((bundle / n).read_bytes()).hexdigest() == d for n, d in manifest["files"].items())
    clear = []  # each branch's round in the clear: same split, same start (the shipped head), same seed
    for path in paths:
        branch = IntentHeadTrainable({"data": str(path)})
        branch.fit(epochs=cfg.local_epochs, **{k: v for k, v in cfg.fit_config(1).items() if k != "local_epochs"})
        clear.append(branch.get_weights())
    stored = load_file(str(bundle / "weights.safetensors"))
    head = {"weight": stored["heads.0.weight.f16"].astype(np.float32), "bias": stored["heads.0.bias.f16"].astype(
        np.float32)}
    average = {k: np.mean([c[k] for c in clear], axis=0) for k in ("weight", "bias")}
    for k in ("weight", "bias"):  # equal weights (38 examples each); SecAgg+ quantisation (~1e-5 here), then float16
        assert np.allclose(head[k], average[k], atol=3e-4), (k, np.abs(head[k] - average[k]).max())
    shipped_weight, _ = shipped_head(load_bundle(BUNDLE_DIR, expected_task="customer_service"))
    assert np.abs(average["weight"] - shipped_weight).max() > 0.01  # the round moved the head well beyond that
    got = Taskflow("customer_service", task_path=str(bundle), english_ensemble=False)(TEXTS)
    pooled = PooledEncoder(load_bundle(bundle, expected_task="customer_service")).encode(TEXTS)
    expected = _softmax(pooled.astype(np.float64) @ head["weight"] + head["bias"])
    assert [r.top_k[0].probability for r in got] == pytest.approx(expected.max(axis=1), abs=2e-4)
