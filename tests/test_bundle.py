"""Model bundles: hash checks on load, paths that escape the bundle, and the restricted .pdparams reader."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from core_support import ECHO_BUNDLE, echo_plugin
from sectorflow import (
    BundleError,
    BundleIntegrityError,
    Taskflow,
    UnsafePickleError,
    load_bundle,
    load_pdparams,
    sha256_file,
    write_manifest,
)
from sectorflow._paddle import import_paddle

LISTED = ["model.json", "model.pdiparams", "weights.pdparams"]


def rewrite_manifest(bundle: Path, **changes) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.update(changes)
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def test_load_bundle_reads_the_manifest_and_names_the_bundle_by_its_hash():
    bundle = load_bundle(ECHO_BUNDLE, expected_task="echo")
    assert (bundle.name, bundle.version, bundle.format) == ("echo-linear", "1.0.0", "paddle-inference")
    assert bundle.labels == ["low", "mid", "high"]
    assert sorted(bundle.manifest["files"]) == LISTED
    assert bundle.sha256 == hashlib.sha256((ECHO_BUNDLE / "manifest.json").read_bytes()).hexdigest()
    for name, digest in bundle.manifest["files"].items():
        assert digest == hashlib.sha256((ECHO_BUNDLE / name).read_bytes()).hexdigest()


@pytest.mark.parametrize("name", LISTED)
def test_one_changed_byte_is_an_integrity_error_naming_the_file(echo_bundle, name):
    path = echo_bundle / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleIntegrityError) as info:
        load_bundle(echo_bundle)
    assert f"file {name!r} has SHA-256" in str(info.value)
    assert info.value.details == {"file": name, "expected": load_bundle(ECHO_BUNDLE).manifest["files"][name],
                                  "actual": sha256_file(path)}


def test_missing_file_is_an_integrity_error_naming_it(echo_bundle):
    (echo_bundle / "model.pdiparams").unlink()
    with pytest.raises(BundleIntegrityError, match=r"file 'model.pdiparams' listed in the manifest is missing"):
        load_bundle(echo_bundle)


def test_taskflow_refuses_a_tampered_user_bundle_and_reports_it(echo_registry, echo_bundle):
    with (echo_bundle / "model.json").open("ab") as handle:
        handle.write(b" ")
    with pytest.raises(BundleIntegrityError, match="model.json"):
        Taskflow("echo", task_path=echo_bundle)
    (event,) = echo_registry.events
    assert event.kind == "model_load_failed"
    assert event.details["task_path"] == str(echo_bundle)
    assert event.error.startswith("BundleIntegrityError: ") and "model.json" in event.error


def test_listed_path_outside_the_bundle_is_refused(echo_bundle, tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"not a model")
    rewrite_manifest(echo_bundle, files={"../outside.bin": sha256_file(outside)})
    with pytest.raises(BundleError, match=r"file '../outside.bin' points outside the bundle"):
        load_bundle(echo_bundle)
    rewrite_manifest(echo_bundle, files={str(outside): sha256_file(outside)})
    with pytest.raises(BundleError, match="points outside the bundle"):
        load_bundle(echo_bundle)


def test_symlink_out_of_the_bundle_is_refused(echo_bundle, tmp_path):
    outside = tmp_path / "elsewhere.pdiparams"
    shutil.copy(echo_bundle / "model.pdiparams", outside)
    (echo_bundle / "model.pdiparams").unlink()
    os.symlink(outside, echo_bundle / "model.pdiparams")
    with pytest.raises(BundleError, match=r"file 'model.pdiparams' points outside the bundle"):
        load_bundle(echo_bundle)


def test_unlisted_files_are_never_read(echo_bundle):
    (echo_bundle / "extra.txt").write_text("smuggled")
    bundle = load_bundle(echo_bundle)
    with pytest.raises(BundleError, match=r"has no file 'extra.txt' in its manifest"):
        bundle.file("extra.txt")
    assert bundle.file("model.json") == echo_bundle / "model.json"


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [("delete", "is not a model bundle: it has no manifest.json"),
     ("garble", "is not valid JSON"),
     ("drop_fields", "lacks the fields ['version', 'files']"),
     ("other_task", "is for task 'aml', not 'echo'")],
)
def test_unreadable_manifest_is_a_bundle_error(echo_bundle, damage, fragment):
    manifest = echo_bundle / "manifest.json"
    if damage == "delete":
        manifest.unlink()
    elif damage == "garble":
        manifest.write_text("{not json")
    elif damage == "drop_fields":
        data = json.loads(manifest.read_text())
        del data["version"], data["files"]
        manifest.write_text(json.dumps(data))
    else:
        rewrite_manifest(echo_bundle, task="aml")
    with pytest.raises(BundleError) as info:
        load_bundle(echo_bundle, expected_task="echo")
    assert fragment in str(info.value)
    assert not isinstance(info.value, BundleIntegrityError)


def test_write_manifest_hashes_every_file_but_itself(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "table.json").write_text('{"threshold": 0.5}')
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"\0")
    path = write_manifest(tmp_path, task="t", name="n", version="1", format="json")
    manifest = json.loads(path.read_text())
    assert manifest["files"] == {"sub/table.json": hashlib.sha256(b'{"threshold": 0.5}').hexdigest()}
    assert load_bundle(tmp_path).read_json("sub/table.json") == {"threshold": 0.5}
    with pytest.raises(BundleError, match=r"write_manifest needs \['version'\]"):
        write_manifest(tmp_path, task="t", name="n", format="json")


# --- load_pdparams -------------------------------------------------------------------------------------------------

def test_paddle_save_output_reads_back_equal(tmp_path):
    paddle = import_paddle()
    paddle.seed(7)
    layer = paddle.nn.Sequential(paddle.nn.Linear(5, 3), paddle.nn.LayerNorm(3))
    path = tmp_path / "model_state.pdparams"
    paddle.save(layer.state_dict(), str(path))
    loaded = load_pdparams(path)
    expected = {name: tensor.numpy() for name, tensor in layer.state_dict().items()}
    assert sorted(loaded) == sorted(expected) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    for name, array in expected.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
        np.testing.assert_array_equal(loaded[name], array)


class RunsAShellCommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


def test_pickle_with_os_system_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps({"weight": np.ones(2, np.float32), "payload": RunsAShellCommand(marker)}))
    assert pickle.loads(path.read_bytes())["payload"] == 0 and marker.exists()  # the payload is real ...
    marker.unlink()
    with pytest.raises(UnsafePickleError, match=r"Refusing to unpickle (posix|os|nt)\.system"):
        load_pdparams(path)
    assert not marker.exists()  # ... and load_pdparams did not run it


def test_pickle_calling_eval_is_refused(tmp_path):
    path = tmp_path / "eval.pdparams"
    path.write_bytes(pickle.dumps(CallsEval()))
    with pytest.raises(UnsafePickleError, match=r"builtins\.eval"):
        load_pdparams(path)


@pytest.mark.parametrize(("payload", "fragment"),
                         [(pickle.dumps([np.zeros(2)]), "holds a list, not a state dict"),
                          (b"\x80\x04garbage", "is not a readable .pdparams file")])
def test_non_state_dict_files_are_bundle_errors(tmp_path, payload, fragment):
    path = tmp_path / "odd.pdparams"
    path.write_bytes(payload)
    with pytest.raises(BundleError) as info:
        load_pdparams(path)
    assert fragment in str(info.value) and not isinstance(info.value, UnsafePickleError)


def test_predictor_output_equals_the_bundle_weights_in_numpy(echo_registry):
    """The paddle.inference predictor computes softmax(x W + b) with the bundle's weights."""
    weights = load_pdparams(ECHO_BUNDLE / "weights.pdparams")
    texts = ["hello world", "Ship 42 crates to Rotterdam", "   ", "x" * 100]
    x = np.stack([echo_plugin().features(t) for t in texts])
    logits = x @ weights["linear.weight"] + weights["linear.bias"]
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    results = Taskflow("echo", batch_size=3)([{"text": t} for t in texts])
    np.testing.assert_allclose([r.scores for r in results], expected, rtol=1e-5, atol=1e-6)
    assert [r.label for r in results] == [["low", "mid", "high"][i] for i in expected.argmax(axis=1)]


def test_the_committed_echo_bundle_is_what_its_script_makes(tmp_path):
    """Provenance: tests/plugins/sectorflow-echo/make_bundle.py (seed 0) reproduces the committed bundle byte for byte."""
    from core_support import load_make_bundle

    import numpy as np

    from sectorflow import load_pdparams

    made = load_make_bundle().make_bundle(tmp_path / "bundle", task="echo", seed=0)
    for name in [*LISTED, "manifest.json"]:
        if name.endswith(".pdparams") and np.__version__ >= "2":
            # NumPy 2 pickles its arrays under numpy._core (1.x: numpy.core): the same weights, other bytes
            made_weights, committed = load_pdparams(made / name), load_pdparams(ECHO_BUNDLE / name)
            assert made_weights.keys() == committed.keys()
            for key, value in committed.items():
                assert made_weights[key].dtype == value.dtype and np.array_equal(made_weights[key], value), key
            continue
        if name == "manifest.json" and np.__version__ >= "2":  # equal but for that file's sha256
            made_manifest, committed = (json.loads((folder / name).read_text()) for folder in (made, ECHO_BUNDLE))
            made_manifest["files"].pop("weights.pdparams"), committed["files"].pop("weights.pdparams")
            assert made_manifest == committed
            continue
        assert (made / name).read_bytes() == (ECHO_BUNDLE / name).read_bytes(), name


def test_a_predictor_pool_makes_at_most_max_size_predictors_and_callers_beyond_wait():
    """8 threads on one pool made one predictor each (Paddle's oneDNN state is per thread and predictor: 14.2 GB for
    a customer_service Taskflow, 9.0 GB with 2 predictors); the pool now stops at max_size and the others wait."""
    import threading

    from sectorflow import Device, PredictorPool
    from sectorflow.bundle import default_pool_size, make_predictor_config

    config = lambda: make_predictor_config(load_bundle(ECHO_BUNDLE), Device("cpu"))  # noqa: E731
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert PredictorPool(config()).max_size == default_pool_size() == cpus
    pool = PredictorPool(config(), max_size=2)
    rng = np.random.default_rng(0)
    batches = [rng.random((3, 4), dtype=np.float32) for _ in range(8)]
    serial = [pool.run({"x": b})[0] for b in batches]
    start = threading.Barrier(8)
    results: dict[int, list[np.ndarray]] = {}

    def call(k: int) -> None:
        start.wait()
        results[k] = [pool.run({"x": batches[k]})[0] for _ in range(10)]

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= pool._made <= 2 and len(pool._free) == pool._made
    for k in range(8):
        assert all(np.array_equal(out, serial[k]) for out in results[k])
    # both predictors taken: a third caller waits (it cannot finish while they are held), then runs on a free one
    with pool.predictor() as first, pool.predictor() as second:
        assert first is not second and pool._made == 2
        waiting = threading.Thread(target=call, args=(0,))
        results.pop(0)
        start = threading.Barrier(1)
        waiting.start()
        waiting.join(timeout=0.5)
        assert waiting.is_alive() and 0 not in results
    waiting.join()
    assert pool._made == 2 and all(np.array_equal(out, serial[0]) for out in results[0])
    assert PredictorPool(config(), max_size=0).max_size == 1
