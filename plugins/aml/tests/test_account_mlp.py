"""`sectorflow aml train --model mlp`: the account MLP trained on a slice of AMLGentex dev_s101 writes an
``account-mlp`` bundle (safetensors, no pickle) that Taskflow, `sectorflow run aml --task-path` and hot reload use;
the pipeline's scores are the NumPy network's on the training replay's rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from sectorflow import BundleError, Taskflow, write_manifest
from sectorflow_aml.account_mlp import WEIGHTS_FILE, load_margin, platt
from sectorflow_aml.account_training import replay
from sectorflow_aml.learn_cli import train_bundle
from sectorflow_aml.loaders import load_transactions

GENTEX = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlgentex_dev" / "dev_s101"
ROWS = 20_000

pytestmark = pytest.mark.skipif(not GENTEX.is_dir(), reason="AMLGentex dev data not present")


@pytest.fixture(scope="module")
def slice_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gentex") / "slice.csv"
    with gzip.open(GENTEX / "transactions.csv.gz", "rt") as src, out.open("w") as dst:
        for i, line in enumerate(src):
            if i > ROWS:
                break
            dst.write(line)
    return out


@pytest.fixture(scope="module")
def mlp_bundle(slice_file, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mlp") / "b"
    manifest = train_bundle([slice_file], [GENTEX / "accounts.csv.gz"], out, fmt="amlgentex", seed=5, model="mlp")
    assert manifest["format"] == "account-mlp" and set(manifest["files"]) == {"account_model.json", WEIGHTS_FILE}
    v = manifest["metrics"]["account_level"]["validation"]
    assert v["average_precision"] > 2 * v["base_rate"]
    assert v["epochs"] >= 1 and v["history"][0][0] == 1
    assert len(manifest["provenance"]["datasets"][0]["sha256_as_read"]) == 64
    assert manifest["provenance"]["params"]["hidden"] == [64, 32]
    return out


def test_pipeline_scores_are_the_networks_and_reload_accepts_it(mlp_bundle, slice_file):
    txns, _ = load_transactions(slice_file, format="amlgentex")
    txns = txns[:4000]
    flow = Taskflow("aml", task_path=str(mlp_bundle))
    batch = flow(txns)
    assert batch[0].meta.model_name == "aml-account-mlp-own"  # a trained bundle's default name
    config = json.loads((mlp_bundle / "account_model.json").read_text())
    margin = load_margin(mlp_bundle / WEIGHTS_FILE)
    rep = replay(txns)
    expected = platt(margin(rep.x), config["calibration"]["a"], config["calibration"]["b"])
    got = [s for r in batch for s in r.account_scores.values()]
    assert len(got) == rep.x.shape[0] and np.allclose(got, np.round(expected, 6), atol=2e-6)
    assert np.std(expected) > 0.01  # not a constant model
    again = Taskflow("aml", task_path=str(mlp_bundle))
    first = again(txns[:2100])
    again.reload(str(mlp_bundle))  # hot reload keeps the account state
    rest = again(txns[2100:])
    assert [r.account_scores for r in first + rest] == [r.account_scores for r in batch]


def test_cli_run_with_the_mlp_bundle_and_a_broken_weights_file(mlp_bundle, slice_file, tmp_path, cli_main):
    results = tmp_path / "r.jsonl"
    assert cli_main(["run", "aml", str(slice_file), "--format", "amlgentex", "--task-path", str(mlp_bundle),
                     "--output", str(results)]) == 0
    first = json.loads(results.read_text().splitlines()[0])
    assert first["account_scores"] and first["meta"]["model_name"] == "aml-account-mlp-own"
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(mlp_bundle, broken)
    (broken / WEIGHTS_FILE).write_bytes(b"not safetensors")
    manifest = json.loads((broken / "manifest.json").read_text())
    manifest.pop("files")
    write_manifest(broken, **manifest)
    with pytest.raises(BundleError, match="not a safetensors file"):
        Taskflow("aml", task_path=str(broken))


def test_a_real_server_hot_reloads_to_the_mlp_bundle_and_serves_its_scores(mlp_bundle, slice_file):
    """`sectorflow serve` (uvicorn) starts on the shipped bundle; POST /v1/admin/models/aml/reload with the MLP
    bundle swaps it in, and calls then carry the MLP's account scores (equal to Taskflow's)."""
    httpx = pytest.importorskip("httpx")
    uvicorn = pytest.importorskip("uvicorn")
    import socket
    import threading
    import time

    from sectorflow.serving import create_app, hash_key, load_config

    secret, admin = "sf_test_mlp_teller_secret_0123456789", "sf_test_mlp_admin_secret_0123456789"
    keys = [{"id": "teller", "sha256": hash_key(secret), "tenant": "bank-1", "scopes": ["task:aml"]},
            {"id": "ops", "sha256": hash_key(admin), "scopes": ["admin"]}]
    config = load_config(data={"serve": ["aml"], "keys": keys, "server": {"load_in_background": False}}, environ={})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        reload = httpx.post(f"{url}/v1/admin/models/aml/reload", headers={"Authorization": f"Bearer {admin}"},
                            json={"task_path": str(mlp_bundle)}, timeout=120)
        assert reload.status_code == 200, reload.text
        assert reload.json()["current"]["model_name"] == "aml-account-mlp-own"  # a trained bundle's default name
        txns, _ = load_transactions(slice_file, format="amlgentex")
        body = [json.loads(t.model_dump_json()) for t in txns[:300]]
        answer = httpx.post(f"{url}/v1/tasks/aml", headers={"Authorization": f"Bearer {secret}"},
                            json={"inputs": body}, timeout=120)
        assert answer.status_code == 200, answer.text
        served = [o["account_scores"] for o in answer.json()["outputs"]]
        assert served == [r.account_scores for r in Taskflow("aml", task_path=str(mlp_bundle))(txns[:300])]
    finally:
        server.should_exit = True
        thread.join(30)
