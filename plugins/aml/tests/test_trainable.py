"""The AML risk scorer as a federated trainable: banks with disjoint accounts and different typology mixes, the
Trainable contract (named float32 weights, fit, evaluate), FedProx's proximal term, the feature cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sectorflow import ConfigError, Trainable
from sectorflow_aml.features import N_FEATURES
from sectorflow_aml.trainable import AMLTrainable, bank_of_accounts, build, load_bank, merge_banks, trainable_spec

AMLSIM = Path(__file__).resolve().parents[4] / "shared" / "data" / "amlsim_sample"
needs_data = pytest.mark.skipif(not (AMLSIM / "20K_cycle200").is_dir(), reason=f"AMLSim sample not at {AMLSIM}")


def test_banks_own_disjoint_accounts_with_different_typology_mixes():
    owners = [bank_of_accounts(20000, run, 3, 3, seed=7) for run in range(3)]
    for run, owner in enumerate(owners):
        share = np.bincount(owner, minlength=3) / len(owner)
        assert share.argmax() == run and share[run] > 0.6  # each run (typology) dominated by a different bank
    assert np.array_equal(owners[0], bank_of_accounts(20000, 0, 3, 3, seed=7))  # seeded
    with pytest.raises(ConfigError, match="bank must be"):
        load_bank(AMLSIM, 3, 3)
    with pytest.raises(ConfigError, match="partition\\['data'\\]"):
        build({"bank": 0})


@pytest.fixture(scope="module")
def banks(tmp_path_factory):
    if not (AMLSIM / "20K_cycle200").is_dir():
        pytest.skip(f"AMLSim sample not at {AMLSIM}")
    cache = tmp_path_factory.mktemp("aml-banks")
    return [load_bank(AMLSIM, b, 2, max_transactions=1500, cache_dir=cache) for b in range(2)], cache


@needs_data
def test_bank_views_are_disjoint_and_cached(banks):
    (a, b), cache = banks
    assert not (a.own & b.own).any()
    assert a.own[a.src].all() and b.own[b.src].all()  # a bank sees what its own accounts send
    assert len(a.src) + len(b.src) == 3 * 1500
    again = load_bank(AMLSIM, 0, 2, max_transactions=1500, cache_dir=cache)
    assert np.array_equal(again.x, a.x) and len(list(cache.glob("bank-*.npz"))) == 2
    pooled = merge_banks([a, b])
    assert len(pooled.src) == 4500 and (pooled.own == (a.own | b.own)).all()


@needs_data
def test_the_trainable_contract(banks):
    (a, _), _ = banks
    t = AMLTrainable(a, seed=3)
    assert isinstance(t, Trainable) and trainable_spec().task == "aml"
    w = t.get_weights()
    assert sorted(w) == ["mlp.0.bias", "mlp.0.weight", "mlp.2.bias", "mlp.2.weight", "mlp.4.bias", "mlp.4.weight"]
    assert all(v.dtype == np.float32 for v in w.values()) and w["mlp.0.weight"].shape == (N_FEATURES, 64)
    n, metrics = t.fit(epochs=2, lr=5e-3)
    assert n == len(t.train_rows) > 0 and metrics["loss"] > 0
    assert not np.allclose(t.get_weights()["mlp.0.weight"], w["mlp.0.weight"])
    n_val, loss, m = t.evaluate()
    assert n_val == int(((a.split == 1) & a.own).sum()) and loss > 0 and 0 <= m["f1"] <= 1
    t.set_weights({k: v.astype(np.float64) for k, v in w.items()})
    assert np.array_equal(t.get_weights()["mlp.0.weight"], w["mlp.0.weight"])
    with pytest.raises(ValueError, match="do not match"):
        t.set_weights({"mlp.0.weight": w["mlp.0.weight"]})
    with pytest.raises(ValueError, match="shape"):
        t.set_weights({**w, "mlp.4.bias": np.zeros(2, dtype=np.float32)})


@needs_data
def test_fedprox_term_keeps_the_update_near_the_global_weights(banks):
    (a, _), _ = banks
    start = AMLTrainable(a, seed=3).get_weights()
    drift = {}
    for mu in (0.0, 5.0):
        t = AMLTrainable(a, seed=3)
        t.set_weights(start)
        t.fit(epochs=3, lr=1e-2, proximal_mu=mu)
        drift[mu] = sum(float(np.sum((t.get_weights()[k] - start[k]) ** 2)) for k in start)
    assert drift[5.0] < drift[0.0]
