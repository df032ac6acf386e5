"""Real federated runs on Flower's simulation engine (Ray): a few seconds of training each, plus Ray's start."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import toy_trainable  # noqa: E402
from core_support import EventRecorder  # noqa: E402
from sectorflow.federated import TRAINING_EVENT_KINDS, model_sha256, parse_config, simulate  # noqa: E402

pytest.importorskip("flwr", reason="the federated extra (flwr) is not installed")
pytest.importorskip("ray", reason="Flower's simulation engine needs ray (flwr[simulation])")

AMLSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "amlsim_sample"


def _training_events(recorder: EventRecorder) -> list:
    return [e for e in recorder.events if e.kind in TRAINING_EVENT_KINDS]


def test_an_institution_that_drops_out_mid_round_does_not_sink_the_run(registry, capfd):
    recorder = EventRecorder()
    registry({"toy": toy_trainable.ToyPlugin(), "recorder": recorder})
    cfg = parse_config({"task": "toy", "rounds": 3, "lr": 0.1,
                        "strategy": {"min_fit_clients": 2, "min_evaluate_clients": 2, "min_available_clients": 3},
                        "institutions": [{"partition_id": 0}, {"partition_id": 1},
                                         {"partition_id": 2, "fail_in_round": 2}]})
    report = simulate(cfg)
    # not verbose: none of Flower's per-round INFO lines or its run_simulation deprecation notice on the terminal
    printed = capfd.readouterr()
    assert "[ROUND 1]" not in printed.err + printed.out and "DEPRECATED" not in printed.err + printed.out
    assert [len(r.participants) for r in report.rounds] == [3, 2, 3]
    assert [r.failures for r in report.rounds] == [0, 1, 0]
    assert {p["institution"] for p in report.rounds[1].participants} == {"0", "1"}
    assert report.rounds[1].num_examples == 128
    losses = [r.eval_loss for r in report.rounds]
    assert losses[2] < losses[0]  # it kept learning
    assert report.model_sha256 == model_sha256(report.weights) == report.rounds[-1].model_sha256

    events = _training_events(recorder)
    assert [e.kind for e in events] == ["training_run_started"] + ["training_round"] * 3 + ["training_run_finished"]
    assert all(e.context.channel == "federated" and e.context.request_id == report.run_id for e in events)
    second = events[2]
    assert second.details["round"] == 2 and second.details["failures"] == 1
    assert second.meta.bundle_sha256 == report.rounds[1].model_sha256 and second.n_items == 128
    assert events[-1].meta.bundle_sha256 == report.model_sha256


def test_secagg_plus_aggregates_what_plain_fedavg_would():
    spec = toy_trainable.SPEC
    cfg = parse_config({"task": "toy", "rounds": 1, "lr": 0.1, "strategy": {"min_available_clients": 3,
                                                                             "fraction_evaluate": 0.0},
                        "secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2},
                        "institutions": [{"partition_id": i} for i in range(3)]})
    report = simulate(cfg, spec)
    # The same round computed here in the clear: every institution trains from the initial (zero) weights.
    trained = []
    for i in range(3):
        t = toy_trainable.ToyTrainable({"partition_id": i})
        t.fit(epochs=1, lr=0.1, server_round=1)
        trained.append(t.get_weights())
    expected = {k: np.mean([w[k] for w in trained], axis=0) for k in ("b", "w")}
    got = dict(zip(["b", "w"], report.weights))
    assert report.secagg and len(report.rounds) == 1 and len(report.rounds[0].participants) == 3
    assert got["w"].dtype == np.float32
    for k in ("b", "w"):  # SecAgg+ quantises each update (clipping range 8, 2**22 levels)
        assert np.allclose(got[k], expected[k], atol=1e-4), (k, got[k], expected[k])
    assert not np.allclose(got["w"], 0.0)


@pytest.mark.skipif(not (AMLSIM / "20K_cycle200").is_dir(), reason=f"AMLSim sample not found at {AMLSIM}")
def test_aml_banks_train_the_risk_scorer_with_fedprox_and_differential_privacy(tmp_path, registry):
    recorder = EventRecorder()
    registry({"recorder": recorder}, installed=True)  # the aml plugin offers its trainable through the hook
    banks = [{"data": str(AMLSIM), "bank": b, "num_banks": 3, "max_transactions": 2500, "cache_dir": str(tmp_path)}
             for b in range(3)]
    cfg = parse_config({"task": "aml", "model": "risk_mlp", "rounds": 2, "local_epochs": 1,
                        "strategy": {"name": "fedprox", "proximal_mu": 0.1, "min_available_clients": 3},
                        "dp": {"mode": "client_clipping", "clipping_norm": 5.0, "noise_multiplier": 0.3},
                        "institutions": banks})
    report = simulate(cfg)
    assert report.model == "risk_mlp" and report.privacy["mode"] == "client_clipping"
    assert 0 < report.privacy["epsilon"] < float("inf")
    assert [sorted(p["institution"] for p in r.participants) for r in report.rounds] == [["0", "1", "2"]] * 2
    assert all(r.num_examples > 100 for r in report.rounds)
    assert 0.0 <= report.rounds[-1].eval_metrics["f1"] <= 1.0 and report.rounds[-1].eval_loss > 0
    from sectorflow_aml.features import N_FEATURES  # the installed aml plugin's feature vector

    shapes = [w.shape for w in report.weights]
    assert (N_FEATURES, 64) in shapes and (32, 1) in shapes
    events = _training_events(recorder)
    assert events[0].task == "aml" and events[0].meta.plugin == "aml"
    assert events[0].details["privacy"]["epsilon"] == report.privacy["epsilon"]
    assert events[-1].kind == "training_run_finished"


def test_a_text_model_federates_too_medical_span_tagger_across_hospitals(registry):
    from sectorflow import ConfigError
    from sectorflow.federated import find_trainable

    registry({}, installed=True)
    try:
        spec = find_trainable("medical_report")
    except ConfigError:
        pytest.skip("the medical_report plugin (token classifier trainable) is not installed")
    before = spec.build({"partition_id": 0, "num_partitions": 3, "n_reports": 40}).get_weights()
    cfg = parse_config({"task": "medical_report", "rounds": 1, "local_epochs": 1, "lr": 0.003, "batch_size": 16,
                        "strategy": {"min_available_clients": 3},
                        "institutions": [{"partition_id": h, "num_partitions": 3, "n_reports": 40}
                                         for h in range(3)]})
    report = simulate(cfg, spec)
    (only,) = report.rounds
    assert sorted(p["institution"] for p in only.participants) == ["0", "1", "2"]
    assert only.num_examples == 120 and 0.0 <= only.eval_metrics["f1"] <= 1.0
    assert len(report.weights) == len(before)
    names = sorted(before)
    after = dict(zip(names, report.weights))
    assert all(after[k].shape == before[k].shape for k in names)
    assert any(not np.allclose(after[k], before[k]) for k in names)  # the hospitals' updates were averaged in


def test_local_differential_privacy_noises_each_update_under_secagg_plus(registry):
    recorder = EventRecorder()
    registry({"recorder": recorder})
    cfg = parse_config({"task": "toy", "rounds": 1, "lr": 0.1, "strategy": {"min_available_clients": 3,
                                                                             "fraction_evaluate": 0.0},
                        "secagg": {"enabled": True},
                        "dp": {"mode": "local", "clipping_norm": 100.0, "epsilon": 2.0, "delta": 1e-5},
                        "institutions": [{"partition_id": i} for i in range(3)]})
    report = simulate(cfg, toy_trainable.SPEC)
    assert report.privacy["mode"] == "local" and report.privacy["epsilon"] == 2.0
    clear = []
    for i in range(3):  # the same round without noise (clipping at 100 leaves these updates unchanged)
        t = toy_trainable.ToyTrainable({"partition_id": i})
        t.fit(epochs=1, lr=0.1, server_round=1)
        clear.append(t.get_weights()["w"])
    # LocalDpMod's Gaussian noise: sd = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon = 100 * 4.84 / 2 per weight,
    # averaged over 3 institutions (sd ~140): the aggregate must be far from the clear average.
    gap = np.abs(report.weights[1] - np.mean(clear, axis=0))
    assert gap.max() > 5.0
    started = [e for e in recorder.events if e.kind == "training_run_started"]
    assert started[0].details["privacy"]["per_round"] == {"epsilon": 2.0, "delta": 1e-5}



class _SilentGrid:
    """A grid whose nodes never answer (what Flower's in-memory grid is once the simulation engine has failed)."""

    pull_interval = 0.01

    def __init__(self, answer_after: int | None = None) -> None:
        self.pulls, self.answer_after = 0, answer_after

    def push_messages(self, messages):
        return ["m1", "m2"]

    def pull_messages(self, ids):
        self.pulls += 1
        if self.answer_after is not None and self.pulls >= self.answer_after:
            from types import SimpleNamespace
            return [SimpleNamespace(metadata=SimpleNamespace(reply_to_message_id=i)) for i in sorted(ids)]
        return []

    def get_node_ids(self):
        return [1, 2]


def test_the_server_app_grid_gives_up_once_the_simulation_engine_stopped():
    """Ray's node start can time out on 2 busy cores: Flower's ``run_simulation`` then raises and, before the fix,
    left its non-daemon ServerApp thread in ``send_and_receive`` pulling replies forever, so the process never exited
    (a fresh-clone CI's pytest hung after its summary, in exactly that frame). The grid the ServerApp gets now ends
    that wait once the caller sets ``stop``, and otherwise behaves as Flower's (replies, timeout, other attributes)."""
    import threading
    import time

    from sectorflow.federated.server import SimulationStopped, StoppableGrid

    stop = threading.Event()
    answering = StoppableGrid(_SilentGrid(answer_after=3), stop)
    assert [m.metadata.reply_to_message_id for m in answering.send_and_receive([object(), object()])] == ["m1", "m2"]
    assert answering.get_node_ids() == [1, 2]
    silent = StoppableGrid(_SilentGrid(), stop)
    started = time.monotonic()
    assert silent.send_and_receive([object()], timeout=0.2) == []
    assert 0.2 <= time.monotonic() - started < 5
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(SimulationStopped):
        silent.send_and_receive([object()])  # no timeout: before the fix this never returned


ENGINE_FAILURE = Path(__file__).resolve().parent / "engine_failure.py"


@pytest.mark.parametrize("scenario", ["before-nodes", "ray-timeout", "interrupt"])
def test_a_failed_engine_start_ends_the_server_app_and_the_process_exits(scenario):
    """Flower 1.42's run_simulation leaves its non-daemon ServerApp thread running when its engine fails. Before the
    fix a ServerApp still waiting for its first institutions (Flower's client manager waits up to a day) or a run
    interrupted with Ctrl-C (KeyboardInterrupt skipped the stop) kept that thread, so the process never exited.
    Each scenario runs in a child process (the failure is injected into Flower's own engine code; Ray never
    starts), which must exit by itself with the run recorded as failed and a typed error saying what to do."""
    import json
    import subprocess

    try:
        done = subprocess.run([sys.executable, str(ENGINE_FAILURE), scenario], capture_output=True, text=True,
                              timeout=240)
    except subprocess.TimeoutExpired as exc:  # the hang this test is about
        pytest.fail(f"the process did not exit: {scenario}\n{(exc.stderr or b'')[-3000:]!r}")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["threads"] == [] and out["closed"] is True
    assert out["recorded"].startswith("SimulationStopped: the simulation engine stopped")
    if scenario == "interrupt":
        assert out["error"] == "KeyboardInterrupt"
        return
    assert out["error"] == "FederatedEngineError" and out["sectorflow_error"] is True
    assert "Flower's simulation engine (Ray) failed" in out["message"] and "What to do:" in out["message"]
    if scenario == "before-nodes":
        assert "waited for 1 institution(s) to connect (0 had)" in out["recorded"]
        assert "injected: the simulation engine failed before registering its nodes" in out["message"]
    else:
        assert "timed out during startup" in out["message"] and "load is lower" in out["message"]


def test_an_engine_failure_through_the_cli_prints_the_typed_message_only(tmp_path):
    """Fresh-user report: ``sectorflow federate`` on an engine failure printed Flower's ERROR lines and traceback
    (and its INFO lines as the ServerApp ended) before the FederatedEngineError's message, without --verbose. Now
    only the message (and the run's failed event line); --verbose still shows Flower's log, traceback included."""
    import json
    import subprocess

    runs = {}
    for extra in ((), ("--verbose",)):
        done = subprocess.run([sys.executable, str(ENGINE_FAILURE), "cli", str(tmp_path), *extra], capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {"exit": 2}
        runs[extra] = done.stderr
    quiet, verbose = runs[()], runs[("--verbose",)]
    assert "error: Flower's simulation engine (Ray) failed" in quiet and "--verbose" in quiet
    assert "Traceback" not in quiet and "An exception occurred" not in quiet and "INFO" not in quiet, quiet
    assert "Traceback" in verbose and "error: Flower's simulation engine (Ray) failed" in verbose


def test_the_same_seed_and_data_give_the_same_global_model_twice():
    """Fresh-user report: the same federation run twice gave other round APs and another model_sha256. Flower drew
    the institution that sends the initial weights with the unseeded ``random`` module (here the institutions start
    from different weights, as the account MLP's standardisation moments do) and aggregated replies in arrival
    order. Now: institutions in configured order, seeded draws, replies sorted and summed in float64."""
    from sectorflow.federated.ordering import seeded_draw
    from sectorflow.federated.server import new_report

    n = 4
    cfg = parse_config({"task": "toy", "rounds": 2, "lr": 0.1, "seed": 7,
                        "strategy": {"min_fit_clients": n, "min_evaluate_clients": n, "min_available_clients": n},
                        "institutions": [{"partition_id": i, "n": 32, "init_scale": 0.5} for i in range(n)]})
    runs = []
    for _ in range(2):
        report, after_round = new_report(cfg, toy_trainable.SPEC), []
        simulate(cfg, toy_trainable.SPEC, report=report,
                 on_round=lambda record, report=report, kept=after_round: kept.append(list(report.weights)))
        runs.append((report, after_round))
    (first, first_rounds), (second, _) = runs
    assert first.model_sha256 == second.model_sha256
    assert [r.model_sha256 for r in first.rounds] == [r.model_sha256 for r in second.rounds]
    assert [r.eval_loss for r in first.rounds] == [r.eval_loss for r in second.rounds]
    # round 1 in the clear: every institution trains from the initial weights of the seeded draw's institution
    (starter,) = seeded_draw(cfg.seed, 1, list(range(n)), 1)
    init = toy_trainable.ToyTrainable(cfg.institutions[starter]).get_weights()
    trained = []
    for i in range(n):
        t = toy_trainable.ToyTrainable(cfg.institutions[i])
        t.set_weights(init)
        t.fit(epochs=1, lr=0.1, server_round=1)
        trained.append(t.get_weights())
    for got, name in zip(first_rounds[0], ("b", "w")):
        assert np.allclose(got, np.mean([w[name] for w in trained], axis=0), atol=1e-6), name
