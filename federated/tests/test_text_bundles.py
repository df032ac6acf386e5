"""Issue 24, the text trainables: a real federated simulation of the medical_report span tagger (hospitals) and of the
customer_service intent head (branches) through `sectorflow federate ...` (`bundle = "DIR"` in the config, or
`--out DIR`) ends in a bundle of the shipped layout whose manifest carries the federation and the sha256 of its
files, and that `Taskflow(task, task_path=DIR)` serves with the run's weights (not the shipped ones), also after a
hot reload."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

from branch_messages import BANKING77, TEXTS, branch_files  # noqa: E402
from core_support import EventRecorder  # noqa: E402
from sectorflow.federated import model_sha256  # noqa: E402



def _app() -> typer.Typer:
    from sectorflow.federated.cli import federate_app

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    app.add_typer(federate_app, name="federate")
    return app


def _federate(tmp_path: Path, task: str, body: str, bundle_key: bool = False) -> tuple[dict, dict, dict, str]:
    """Run `sectorflow federate TASK -c ... --out ... --report ... --weights ...` (``bundle_key``: the bundle's
    folder as `bundle = ...` in the config instead of --out); (manifest, run report, kept weights by name,
    stderr)."""
    config = tmp_path / "federation.toml"
    out, report, weights = tmp_path / "bundle", tmp_path / "run.json", tmp_path / "kept.npz"
    head = f'task = "{task}"\n' + (f'bundle = "{out}"\n' if bundle_key else "")
    config.write_text(head + body, encoding="utf-8")
    where = [] if bundle_key else ["--out", str(out)]
    result = CliRunner().invoke(_app(), ["federate", task, "-c", str(config), *where, "--report", str(report),
                                         "--weights", str(weights)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    with np.load(weights) as kept:
        arrays = {k: kept[k] for k in kept.files}
    return json.loads((out / "manifest.json").read_text()), json.loads(report.read_text()), arrays, result.stderr


def _check_manifest(out: Path, manifest: dict, run: dict, arrays: dict[str, np.ndarray], recorder: EventRecorder,
                    institutions: list[str]) -> dict:
    """What both bundles must carry: every file's sha256, the federation with each institution's digest and example
    count, the run's audit event ids and the kept round's model hash (that of the weights --weights wrote)."""
    assert manifest["files"] and all(hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
                                     for name, digest in manifest["files"].items())
    federation = manifest["provenance"]["federation"]
    assert [i["institution"] for i in federation["institutions"]] == institutions
    assert all(len(i["data_sha256"]) == 64 and i["num_examples"] > 10 for i in federation["institutions"])
    assert len({i["data_sha256"] for i in federation["institutions"]}) == len(institutions)
    assert federation["institutions"] == run["institutions"]
    recorded = [e.details["event_id"] for e in recorder.events if e.kind.startswith("training_")]
    assert federation["audit_event_ids"] == recorded and len(recorded) == 2 + len(run["rounds"])
    kept = federation["selection"]
    assert kept["model_sha256"] == model_sha256([arrays[k] for k in sorted(arrays)])
    assert manifest["metrics"]["validation"]["round"] == kept["round"]
    return federation


def test_hospitals_federate_the_span_tagger_into_a_bundle_taskflow_serves(tmp_path, registry):
    """Two hospitals (one generated writing style each, 30 reports), one round: the bundle's program computes the
    tag probabilities of the run's weights (an eager tagger with them agrees), which differ from the shipped
    tagger's."""
    pytest.importorskip("sectorflow_medical_report")
    from sectorflow import Taskflow
    from sectorflow_medical_report import tagger

    recorder = EventRecorder()
    registry({"recorder": recorder}, installed=True)
    hospitals = "".join(f'[[institutions]]\npartition_id = {h}\nnum_partitions = 2\nn_reports = 30\nname = "h{h}"\n'
                        for h in range(2))
    manifest, run, arrays, stderr = _federate(
        tmp_path, "medical_report", 'rounds = 1\nlr = 0.01\nbatch_size = 16\n[strategy]\nmin_fit_clients = 2\n'
        f'min_available_clients = 2\n{hospitals}', bundle_key=True)  # `bundle =` in the config, as in deployment
    out = tmp_path / "bundle"
    assert "round 1/1: validation f1" in stderr and "the bundle holds the global model of round 1 of 1" in stderr
    assert manifest["format"] == "paddle-inference" and manifest["name"].endswith("-federated")
    _check_manifest(out, manifest, run, arrays, recorder, ["h0", "h1"])
    assert 0 < manifest["metrics"]["validation"]["f1"] <= 1

    text = "Chest CT: a 6 mm nodule in the left lower lobe. No pleural effusion."
    fed, shipped = Taskflow("medical_report", task_path=str(out)), Taskflow("medical_report")
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    ids = tagger.encode(text, {c: i for i, c in enumerate(vocab)})
    feed = {"chars": ids[None, :].astype(np.int64), "lengths": np.array([len(ids)], np.int64)}
    (served,) = fed.pipeline.pool.run(feed)
    (before,) = shipped.pipeline.pool.run(feed)
    from sectorflow import import_paddle

    paddle = import_paddle()
    layer = tagger.make_layer(len(vocab))
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in arrays.items()})
    layer.eval()
    eager = layer(paddle.to_tensor(feed["chars"]), paddle.to_tensor(feed["lengths"])).numpy()
    assert np.allclose(served, eager, atol=1e-5)  # the served program is the run's model ...
    assert np.abs(served - before).max() > 1e-3  # ... not the shipped one
    assert fed(text).findings and fed(text).meta.model_name == manifest["name"]
    shipped.reload(str(out))  # hot reload takes the federated bundle
    (reloaded,) = shipped.pipeline.pool.run(feed)
    assert np.allclose(reloaded, served, atol=1e-6)


@pytest.mark.skipif(not (BANKING77 / "train.csv").is_file(), reason=f"banking77 not at {BANKING77}")
def test_branches_federate_the_intent_head_into_a_bundle_the_pipeline_serves(tmp_path, registry):
    """Two branches (48 messages each), two rounds from the shipped head: the bundle is the shipped layout with the
    run's banking77 head (float16), and the pipeline's intent probabilities are softmax(pooled @ weight + bias) of
    that head (MiniLM head alone: english_ensemble=False), not the shipped head's."""
    pytest.importorskip("sectorflow_customer_service")
    from sectorflow import Taskflow, load_bundle
    from sectorflow_customer_service.trainable import PooledEncoder, _softmax

    recorder = EventRecorder()
    registry({"recorder": recorder}, installed=True)
    branches = "".join(f'[[institutions]]\ndata = "{p}"\nname = "branch{b}"\n'
                       for b, p in enumerate(branch_files(tmp_path)))
    manifest, run, arrays, stderr = _federate(
        tmp_path, "customer_service", 'rounds = 2\nlr = 0.02\nbatch_size = 16\n[strategy]\nmin_fit_clients = 2\n'
        f'min_available_clients = 2\n{branches}')
    out = tmp_path / "bundle"
    assert "round 2/2: validation accuracy" in stderr
    assert manifest["format"] == "sectorflow-cs-int8" and manifest["name"].endswith("-federated")
    federation = _check_manifest(out, manifest, run, arrays, recorder, ["branch0", "branch1"])
    assert federation["strategy"]["name"] == "fedavg" and federation["secagg"]["enabled"] is False
    from safetensors.numpy import load_file

    stored = load_file(str(out / "weights.safetensors"))
    assert np.array_equal(stored["heads.0.weight.f16"], arrays["weight"].astype(np.float16))
    assert "heads.0.weight.q8" not in stored and "heads.1.weight.q8" in stored  # the CLINC150 head as shipped

    texts = TEXTS
    fed = Taskflow("customer_service", task_path=str(out), english_ensemble=False)
    got = fed(texts)
    pooled = PooledEncoder(load_bundle(out, expected_task="customer_service")).encode(texts)
    expected = _softmax(pooled.astype(np.float64) @ stored["heads.0.weight.f16"].astype(np.float64)
                        + stored["heads.0.bias.f16"].astype(np.float64))
    labels = json.loads((out / "labels.json").read_text())["banking77"]
    for row, result in zip(expected, got):
        assert [c.label for c in result.top_k] == [labels[j] for j in np.argsort(-row)[:3]]
        assert result.top_k[0].probability == pytest.approx(row.max(), abs=2e-4)
    shipped = Taskflow("customer_service", english_ensemble=False)
    before = [r.top_k[0].probability for r in shipped(texts)]
    assert max(abs(b - r.top_k[0].probability) for b, r in zip(before, got)) > 1e-3
    shipped.reload(str(out))  # hot reload takes the federated bundle: the same answers as loading it
    assert [r.top_k for r in shipped(texts)] == [r.top_k for r in got]
