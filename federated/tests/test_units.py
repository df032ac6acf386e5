"""Federated layer without Flower's engines: config, weights, privacy budget, the client wrapper, the audited
strategy (real Flower strategy objects fed real FitRes/EvaluateRes), trainable lookup."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from sectorflow import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parent))

import toy_trainable  # noqa: E402
from sectorflow.federated import (RunReport, find_trainable, load_config, model_sha256, parse_config,  # noqa: E402
                                  privacy_budget)
from sectorflow.federated.client import make_numpy_client, partition_for  # noqa: E402
from sectorflow.federated.config import DPConfig  # noqa: E402
from sectorflow.federated.strategy import make_audited_strategy, weighted_metrics  # noqa: E402
from sectorflow.federated.weights import to_list, to_named  # noqa: E402

pytest.importorskip("flwr", reason="the federated extra (flwr) is not installed")


def test_config_file_round_trip_and_errors_name_the_key(tmp_path):
    path = tmp_path / "federation.toml"
    path.write_text('task = "toy"\nrounds = 4\n[strategy]\nname = "fedprox"\nproximal_mu = 0.1\n'
                    '[[institutions]]\npartition_id = 0\n[[institutions]]\npartition_id = 1\n')
    cfg = load_config(path)
    assert (cfg.rounds, cfg.strategy.name, len(cfg.institutions)) == (4, "fedprox", 2)
    assert cfg.fit_config(2)["proximal_mu"] == 0.1 and cfg.fit_config(2)["server_round"] == 2
    assert "proximal_mu" not in parse_config({"task": "toy"}).fit_config(1)
    with pytest.raises(ConfigError, match="strategy.name"):
        parse_config({"task": "toy", "strategy": {"name": "fedsgd"}})
    with pytest.raises(ConfigError, match="reconstruction_threshold"):
        parse_config({"task": "toy", "secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 4}})
    with pytest.raises(ConfigError, match="rounds"):
        parse_config({"task": "toy", "rounds": 0})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    path.write_text("task = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_weights_travel_in_name_order_as_float32_and_hash_is_stable():
    named = {"b": np.ones(2, dtype=np.float32), "a": np.arange(6, dtype=np.float32).reshape(2, 3)}
    arrays = to_list(named)
    assert [a.shape for a in arrays] == [(2, 3), (2,)]
    back = to_named(named, [a.astype(np.float64) for a in arrays])  # SecAgg+ hands back float64
    assert all(back[k].dtype == np.float32 and np.array_equal(back[k], named[k]) for k in named)
    assert model_sha256(arrays) == model_sha256([a.astype(np.float64) for a in arrays])
    changed = [arrays[0].copy(), arrays[1].copy()]
    changed[1][0] = 1.0000001
    assert model_sha256(changed) != model_sha256(arrays)
    with pytest.raises(ValueError):
        to_named(named, arrays[:1])


def test_privacy_budget():
    assert privacy_budget(DPConfig(), 5) is None
    local = privacy_budget(DPConfig(mode="local", epsilon=2.0, delta=1e-6), 5)
    assert local["epsilon"] == 10.0 and local["delta"] == pytest.approx(5e-6)
    low = privacy_budget(DPConfig(mode="client_clipping", noise_multiplier=0.8), 5)["epsilon"]
    high = privacy_budget(DPConfig(mode="client_clipping", noise_multiplier=2.0), 5)["epsilon"]
    more_rounds = privacy_budget(DPConfig(mode="client_clipping", noise_multiplier=2.0), 20)["epsilon"]
    sampled = privacy_budget(DPConfig(mode="client_clipping", noise_multiplier=2.0), 5, fraction_fit=0.1)["epsilon"]
    assert 0 < sampled < high < low and high < more_rounds
    assert math.isinf(privacy_budget(DPConfig(mode="client_clipping", noise_multiplier=0.0), 5)["epsilon"])


def test_partition_of_a_simulated_node_and_of_a_deployed_node():
    cfg = parse_config({"task": "toy", "institutions": [{"n": 10}, {"n": 20}]})
    assert partition_for({"partition-id": 1, "num-partitions": 2}, cfg) == {"n": 20, "partition_id": 1,
                                                                            "num_partitions": 2}
    with pytest.raises(ConfigError, match="partition-id 2"):
        partition_for({"partition-id": 2}, cfg)
    assert partition_for({"data": "/srv/bank", "num-banks": 3}, parse_config({"task": "toy"})) == {
        "data": "/srv/bank", "num_banks": 3}


def test_numpy_client_trains_the_trainable_and_names_its_institution():
    trainable = toy_trainable.ToyTrainable({"partition_id": 3})
    client = make_numpy_client(trainable, "bank-3")
    start = client.get_parameters({})
    assert [a.dtype for a in start] == [np.float32, np.float32]
    weights, n, metrics = client.fit([a.astype(np.float64) for a in start], {"local_epochs": 2, "lr": 0.1})
    assert n == 64 and metrics["institution"] == "bank-3" and metrics["mse"] < 5.0
    loss, n_eval, eval_metrics = client.evaluate(weights, {})
    assert n_eval == 64 and loss == pytest.approx(eval_metrics["mse"]) and loss < 5.0


def _fit_res(weights: list[np.ndarray], n: int, institution: str):
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters

    return FitRes(status=Status(code=Code.OK, message=""), parameters=ndarrays_to_parameters(weights),
                  num_examples=n, metrics={"mse": float(n), "institution": institution})


class _Proxy:
    def __init__(self, cid: str) -> None:
        self.cid = cid


@pytest.mark.parametrize("name", ["fedavg", "fedprox"])
def test_audited_strategy_records_each_round(name):
    from flwr.common import Code, EvaluateRes, Status, parameters_to_ndarrays

    cfg = parse_config({"task": "toy", "strategy": {"name": name}})
    report = RunReport(run_id="r1", task="toy", model="linear", strategy=name)
    emitted = []
    strategy = make_audited_strategy(cfg, report, lambda kind, **kw: emitted.append((kind, kw)))
    a = [np.zeros(2, dtype=np.float32), np.full(3, 1.0, dtype=np.float32)]
    b = [np.ones(2, dtype=np.float32), np.full(3, 4.0, dtype=np.float32)]
    results = [(_Proxy("11"), _fit_res(a, 10, "bank_a")), (_Proxy("22"), _fit_res(b, 30, "bank_b"))]
    params, metrics = strategy.aggregate_fit(1, results, [RuntimeError("node 33 went away")])
    agg = parameters_to_ndarrays(params)
    assert np.allclose(agg[0], 0.75) and np.allclose(agg[1], 3.25)  # sample-weighted mean (FedAvg)
    assert metrics == {"mse": pytest.approx(25.0)}
    assert emitted == []  # recorded once the round's evaluation is in
    ok = Status(code=Code.OK, message="")
    strategy.aggregate_evaluate(1, [(_Proxy("11"), EvaluateRes(ok, 2.0, 10, {"mse": 2.0})),
                                    (_Proxy("22"), EvaluateRes(ok, 1.0, 30, {"mse": 1.0}))], [])
    (kind, kw), = emitted
    assert kind == "training_round" and kw["n_items"] == 40
    details = kw["details"]
    assert details["participants"] == [{"node_id": "11", "institution": "bank_a", "num_examples": 10},
                                       {"node_id": "22", "institution": "bank_b", "num_examples": 30}]
    assert details["failures"] == 1 and details["eval_loss"] == pytest.approx(1.25)
    assert kw["model_sha256"] == model_sha256(agg) == report.model_sha256 == report.rounds[0].model_sha256
    assert all(np.array_equal(x, y) for x, y in zip(report.weights, agg))


def test_fedadam_takes_its_initial_weights_from_the_first_round():
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

    cfg = parse_config({"task": "toy", "strategy": {"name": "fedadam", "server_lr": 0.1}, "rounds": 1})
    report = RunReport(run_id="r2", task="toy", model="linear", strategy="fedadam")
    strategy = make_audited_strategy(cfg, report, lambda kind, **kw: None)
    assert strategy.initialize_parameters(None) is None  # ask an institution, like FedAvg does

    class _Manager:
        def num_available(self):
            return 2

        def wait_for(self, *args, **kwargs):
            return True

        def sample(self, num_clients, min_num_clients=None, criterion=None):
            return [_Proxy("1"), _Proxy("2")][:num_clients]

    start = [np.zeros(3, dtype=np.float32)]
    strategy.configure_fit(1, ndarrays_to_parameters(start), _Manager())
    params, _ = strategy.aggregate_fit(1, [(_Proxy("1"), _fit_res([np.ones(3, dtype=np.float32)], 5, "x"))], [])
    step = parameters_to_ndarrays(params)[0]
    assert np.all(step > 0) and np.all(step < 1)  # an Adam step of size ~eta towards the clients' mean


def test_weighted_metrics_drop_strings_and_weight_by_samples():
    assert weighted_metrics([(1, {"f1": 0.0, "institution": "a"}), (3, {"f1": 1.0, "institution": "b"})]) == {
        "f1": 0.75}


def test_find_trainable_through_the_hook(registry):
    registry({"toy": toy_trainable.ToyPlugin()})
    spec = find_trainable("toy")
    assert (spec.task, spec.name, spec.plugin) == ("toy", "linear", "toy")
    with pytest.raises(ConfigError, match="toy/linear"):
        find_trainable("aml")
    with pytest.raises(ConfigError, match="named 'other'"):
        find_trainable("toy", "other")


def test_the_federation_toml_of_the_docs_parses_and_can_run_in_simulation():
    import re
    import tomllib

    doc = (Path(__file__).resolve().parents[2] / "docs" / "federated.md").read_text(encoding="utf-8")
    block = re.search(r"## federation\.toml\s+```toml\n(.*?)```", doc, re.S).group(1)
    cfg = parse_config(tomllib.loads(block))
    # simulate() refuses fewer institutions than min_available_clients (a fresh user copied a one-bank example)
    assert len(cfg.institutions) >= cfg.strategy.min_available_clients == 3
    assert cfg.secagg.enabled and cfg.dp.mode == "local" and cfg.model == "account_mlp"
    assert cfg.secagg.max_weight >= 200_000  # above each bank's training rows: example-weighted averaging


def test_a_simulation_without_a_global_model_names_the_institution_that_cannot_be_built(monkeypatch):
    """Fresh-user finding: an [[institutions]] entry with a missing data folder (or a bank out of range) failed in
    every simulated institution, inside Ray actors; the run ended after ~45 s and 1,500 log lines with a traceback
    and "no round produced a global model (too few institutions answered: check min_available_clients ...)". Now
    the coordinating process builds each institution's trainable and names the first that cannot be built."""
    import flwr.simulation

    from sectorflow.federated import simulate
    from sectorflow.federated.simulation import check_institutions

    cfg = parse_config({"task": "toy", "strategy": {"min_fit_clients": 2, "min_available_clients": 2},
                        "institutions": [{"n": 8}, {"n": -1}]})

    def server_app_failed(**kwargs):  # what Flower's run_simulation does when the ServerApp raises
        raise RuntimeError("no round produced a global model")

    monkeypatch.setattr(flwr.simulation, "run_simulation", server_app_failed)
    with pytest.raises(ConfigError, match=r"^Institution 2 of 2 in the federation config \(n=-1\) cannot be used by "
                                          r"toy/linear: ValueError: negative dimensions") as info:
        simulate(cfg, toy_trainable.SPEC)
    assert isinstance(info.value.__cause__, RuntimeError)  # the run's own failure stays attached
    check_institutions(parse_config({"task": "toy", "institutions": [{"n": 8}, {"n": 4}]}), toy_trainable.SPEC)


@pytest.mark.parametrize(("keep", "metric", "rounds", "kept"), [
    ("best", "", [0.5, 0.8, 0.7], 2),            # highest validation average_precision
    ("best", "", [0.5, 0.8, 0.8], 3),            # a tie goes to the later round
    ("best", "mse", [0.5, 0.2, 0.3], 2),         # a cost: lowest
    ("last", "", [0.5, 0.8, 0.7], 3)])
def test_the_run_keeps_the_round_with_the_best_validation_metric(keep, metric, rounds, kept):
    from flwr.common import Code, EvaluateRes, Status

    from sectorflow.federated.runner import run_record

    cfg = parse_config({"task": "toy", "keep": keep, "metric": metric, "rounds": len(rounds)})
    report = RunReport(run_id="r3", task="toy", model="linear", strategy="fedavg")
    strategy = make_audited_strategy(cfg, report, lambda kind, **kw: None)
    ok = Status(code=Code.OK, message="")
    for rnd, value in enumerate(rounds, start=1):
        w = [np.full(2, float(rnd), dtype=np.float32)]
        strategy.aggregate_fit(rnd, [(_Proxy("1"), _fit_res(w, 10, "bank_a"))], [])
        name = metric or "average_precision"
        strategy.aggregate_evaluate(rnd, [(_Proxy("1"), EvaluateRes(ok, 1.0, 10, {name: value,
                                                                                 "count.pos.3": rnd}))], [])
    assert report.selection["round"] == kept and report.selection["last_round"] == len(rounds)
    assert report.selection["value"] == pytest.approx(rounds[kept - 1])
    assert np.all(report.kept_weights()[0] == kept) and np.all(report.weights[0] == len(rounds))
    assert report.selection["model_sha256"] == report.rounds[kept - 1].model_sha256
    record = run_record(cfg, report)
    assert record["selection"] == report.selection and record["counts"] == {"count.pos.3": float(kept)}
    assert report.summary()["selection"]["round"] == kept


def test_an_unevaluated_run_keeps_its_last_round():
    cfg = parse_config({"task": "toy", "strategy": {"fraction_evaluate": 0.0}})
    report = RunReport(run_id="r4", task="toy", model="linear", strategy="fedavg")
    strategy = make_audited_strategy(cfg, report, lambda kind, **kw: None)
    for rnd in (1, 2):
        strategy.aggregate_fit(rnd, [(_Proxy("1"), _fit_res([np.full(2, rnd, dtype=np.float32)], 5, "a"))], [])
    assert report.selection["round"] == 2 and "no round was evaluated" in report.selection["why"]
    assert np.all(report.kept_weights()[0] == 2)


def test_a_misspelt_key_is_refused_naming_where_it_is_the_closest_key_and_the_accepted_ones():
    """Fresh-user finding: unknown keys inside [[institutions]] were ignored (a typo'd ``max_transaction`` trained on
    every row). Each trainable now declares its partition keys; the tables of the config name the closest key."""
    from sectorflow.federated.registry import check_partition_keys
    from sectorflow.federated.runner import preflight
    from sectorflow_aml.account_federated import trainable_spec

    cfg = parse_config({"task": "aml", "institutions": [
        {"transactions": "/srv/a.csv", "labels": "/srv/a_labels.csv", "column_sender_account": "from"},
        {"transactions": "/srv/b.csv", "labels": "/srv/b_labels.csv", "max_transaction": 500}]})
    with pytest.raises(ConfigError, match=r"^Unknown key 'max_transaction' \(did you mean 'max_transactions'\?\) in "
                                          r"institution 2 of 2 in the federation config .* for aml/account_mlp") as info:
        preflight(cfg, trainable_spec())  # before any file is read: the first institution's paths do not exist
    assert "Accepted keys: bank, bank_accounts, cache_dir, column_*, columns," in str(info.value)
    assert info.value.details["unknown"] == ["max_transaction"]
    with pytest.raises(ConfigError, match=r"'fail_in_rnd' \(did you mean 'fail_in_round'\?\) in this SuperNode's"):
        check_partition_keys(toy_trainable.SPEC, partition_for({"fail-in-rnd": 2, "n": 3}, parse_config(
            {"task": "toy"})), "this SuperNode's --node-config")
    check_partition_keys(toy_trainable.SPEC, {"n": 3, "partition_id": 0, "num_partitions": 2, "name": "b"}, "x")
    with pytest.raises(ConfigError, match=r"strategy\.min_fit_client: unknown key 'min_fit_client' in the strategy "
                                          r"table \(did you mean 'min_fit_clients'\?\); accepted keys: "
                                          r"fraction_evaluate, fraction_fit, min_available_clients"):
        parse_config({"task": "toy", "strategy": {"min_fit_client": 2}})
    with pytest.raises(ConfigError, match=r"unknown key 'institution' at the top level \(did you mean "
                                          r"'institutions'\?\)"):
        parse_config({"task": "toy", "institution": [{"n": 3}]})


class _NodeProxy:
    def __init__(self, node_id: int) -> None:
        self.node_id, self.cid = node_id, str(node_id)


class _LinkState:
    def __init__(self, node_ids):
        from types import SimpleNamespace

        self.nodes = [SimpleNamespace(node_id=i) for i in node_ids]

    def get_node_info(self):
        return self.nodes


def test_institutions_are_ordered_as_configured_sampled_with_the_seed_and_aggregated_whatever_the_arrival():
    """Flower's client manager samples with the unseeded ``random`` module over random node ids, and FedAvg sums
    replies in arrival order (float32): the same federation gave another model run to run."""
    import threading
    from types import SimpleNamespace

    from flwr.common import parameters_to_ndarrays

    from sectorflow.federated.errors import SimulationStopped
    from sectorflow.federated.ordering import make_client_manager, node_order

    registered = [9_000_000_123, 17, 4_400_000_001, 250]  # registration order = the institutions' order
    grid = SimpleNamespace(state=_LinkState(registered))
    draws = []
    for _ in range(2):
        manager = make_client_manager(node_order(grid), seed=3)
        for node_id in sorted(registered):  # registered with the manager in another order
            manager.register(_NodeProxy(node_id))
        assert [p.node_id for p in manager.sample(4)] == registered
        draws.append([[p.node_id for p in manager.sample(2)] for _ in range(5)])
    assert draws[0] == draws[1] and len({tuple(d) for d in draws[0]}) > 1  # seeded, and still a draw

    stop = threading.Event()
    waiting = make_client_manager(node_order(grid), seed=3, stop=stop)
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(SimulationStopped, match="waited for 2 institution"):
        waiting.wait_for(2)  # Flower's waits up to a day

    rng = np.random.default_rng(0)
    updates = [([rng.normal(size=1000).astype(np.float32)], n, f"bank_{i}") for i, n in enumerate((7, 11, 13))]
    aggregated = []
    for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        cfg = parse_config({"task": "toy"})
        report = RunReport(run_id="r5", task="toy", model="linear", strategy="fedavg")
        strategy = make_audited_strategy(cfg, report, lambda kind, **kw: None)
        results = [(_Proxy(str(i)), _fit_res(*updates[i])) for i in order]
        params, _ = strategy.aggregate_fit(1, results, [])
        aggregated.append(parameters_to_ndarrays(params)[0])
        assert aggregated[-1].dtype == np.float32
    assert all(np.array_equal(aggregated[0], a) for a in aggregated[1:])
    exact = sum(np.float64(n) * w[0].astype(np.float64) for w, n, _ in updates) / 31
    assert np.array_equal(aggregated[0], exact.astype(np.float32))


def test_more_cpus_per_client_than_the_machine_has_is_refused_before_ray(monkeypatch):
    """Fresh-user report, 3 Dec 2026: ``num_cpus_per_client = 64`` on 2 cores was an engine error with Ray's
    tracebacks that said nothing in the config was wrong."""
    from sectorflow.federated import simulation

    monkeypatch.setattr(simulation.os, "cpu_count", lambda: 2)
    institutions = [{"n": 3}, {"n": 3}]
    with pytest.raises(ConfigError, match=r"^num_cpus_per_client = 64 exceeds the 2 CPU\(s\) of this machine: Ray "
                                          r"could place no institution\. Give at most 2"):
        simulation.check_simulation_config(parse_config({"task": "toy", "num_cpus_per_client": 64,
                                                         "institutions": institutions}))
    simulation.check_simulation_config(parse_config({"task": "toy", "num_cpus_per_client": 2,
                                                     "institutions": institutions}))


def test_relative_paths_in_a_federation_toml_are_taken_relative_to_its_folder(tmp_path, monkeypatch):
    """Fresh-user report: the paths of a federation.toml were taken relative to the current directory, so the same
    file named other data (or none) when run from another folder. Now ``bundle`` and the trainable's path keys
    (:attr:`TrainableSpec.path_keys`) are relative to the file's folder; absolute and ``~`` paths, other keys and a
    config given as a mapping are left as they are."""
    import dataclasses

    from sectorflow.federated.runner import preflight

    folder = tmp_path / "fed"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "bank_a.csv").write_text("x\n")
    config = folder / "federation.toml"
    config.write_text('task = "toy"\nbundle = "out/bundle"\n[[institutions]]\ndata = "data/bank_a.csv"\nn = 8\n'
                      'name = "data/not-a-path"\n[[institutions]]\ndata = "/srv/bank_b.csv"\n'
                      '[[institutions]]\ndata = "~/bank_c.csv"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    seen = []
    spec = dataclasses.replace(toy_trainable.SPEC, keys=("data", "n"), path_keys=("data",),
                               check=lambda partition: seen.append(partition["data"]))
    cfg = load_config(Path("..") / "fed" / "federation.toml")
    assert Path(cfg.bundle) == (folder / "out" / "bundle").absolute()
    preflight(cfg, spec)
    assert [Path(p) for p in seen] == [folder / "data" / "bank_a.csv", Path("/srv/bank_b.csv"),
                                       Path("~/bank_c.csv").expanduser()]
    assert Path(seen[0]).read_text() == "x\n"
    assert cfg.institutions[0]["name"] == "data/not-a-path" and cfg.institutions[0]["n"] == 8
    preflight(cfg, spec)  # a second time: the same paths
    assert seen[3:] == seen[:3]
    mapping = parse_config({"task": "toy", "bundle": "b", "institutions": [{"data": "d.csv"}]})
    preflight(mapping, spec)
    assert seen[-1] == "d.csv" and mapping.bundle == "b"
