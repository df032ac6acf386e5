"""The learned risk scorer: shipped bundle, predictor vs eager equality, feature semantics on a tiny graph."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from sectorflow import (BundleError, BundleIntegrityError, ConfigError, InvalidInputError, load_bundle,
                        load_pdparams, write_manifest)
from sectorflow_aml.features import FEATURE_NAMES, N_FEATURES, FeatureExtractor, find_cycle
from sectorflow_aml.schema import Transaction
from sectorflow_aml.scorer import RiskScorer
from sectorflow_aml.window import TransactionWindow

BUNDLE = Path(__file__).resolve().parents[1] / "src" / "sectorflow_aml" / "bundle"
DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlsim_sample"
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
IDX = {name: i for i, name in enumerate(FEATURE_NAMES)}


@pytest.fixture(scope="module")
def scorer() -> RiskScorer:
    return RiskScorer(load_bundle(BUNDLE, expected_task="aml"), None)


def txn(i: int, src: str, dst: str, amount: str, hours: float) -> Transaction:
    return Transaction(transaction_id=f"t{i}", timestamp=T0 + timedelta(hours=hours), sender_account=src,
                       receiver_account=dst, amount=Decimal(amount))


def replay(edges: list[tuple[str, str, str, float]]) -> list[dict[str, float]]:
    """Feature dicts of each transaction of ``edges`` (src, dst, amount, hours after T0)."""
    window = TransactionWindow(lookback_days=30.0)
    extractor = FeatureExtractor(window.lookback)
    out = []
    for i, (src, dst, amount, hours) in enumerate(edges):
        t = txn(i, src, dst, amount, hours)
        window.add(t)
        vec = extractor.vector(t, window)
        assert vec.dtype == np.float32 and vec.shape == (N_FEATURES,)
        out.append(dict(zip(FEATURE_NAMES, vec.tolist())))
    return out


def random_rows(n: int, seed: int = 0) -> np.ndarray:
    rows = replay([(f"a{i % 7}", f"a{(i * 3 + 1) % 7}", f"{100 + 37 * i}.50", 5.0 * i) for i in range(n)])
    return np.array([[r[k] for k in FEATURE_NAMES] for r in rows], dtype=np.float32)


def test_shipped_bundle_loads_and_records_its_training(scorer: RiskScorer) -> None:
    manifest = scorer.bundle.manifest
    assert manifest["task"] == "aml" and manifest["format"] == "paddle-inference"
    assert manifest["cpu_onednn"] is False  # batch-1 runs are several times faster without oneDNN (docs/aml.md)
    assert set(manifest["files"]) == {"model.json", "model.pdiparams", "model.pdparams", "scorer.json",
                                      "account_model.txt", "account_model.json"}  # the account model beside it
    account = manifest["account_model"]  # its own section: data, roles, metrics on a set never trained on
    roles = {d["name"]: d["role"] for d in account["provenance"]["datasets"]}
    assert roles["amlgentex_dev/dev_s303"].startswith("test") and roles["amlgentex_dev/dev_s101"].startswith("train")
    assert account["metrics"]["test_amlgentex_dev_s303"]["average_precision"] >= 0.70
    prov = manifest["provenance"]
    assert prov["licence"] == "Apache-2.0" and "Suzumura" in prov["citation"]
    roles = {d["name"].split("/")[1]: d["role"] for d in prov["datasets"]}
    test_runs = [name for name, role in roles.items() if role == "test"]
    assert len(test_runs) == 1 and test_runs[0] not in [n for n, r in roles.items() if r == "train"]
    assert test_runs[0] in manifest["metrics"]["account_level"]["test"]["split"]
    assert 0.0 < scorer.threshold < 1.0 and scorer.lookback_days == 30.0
    for split in ("validation", "test"):
        m = manifest["metrics"]["account_level"][split]
        p, r = m["tp"] / (m["tp"] + m["fp"]), m["tp"] / (m["tp"] + m["fn"])
        assert m["precision"] == pytest.approx(p, abs=1e-4) and m["recall"] == pytest.approx(r, abs=1e-4)
        assert m["f1"] == pytest.approx(2 * p * r / (p + r), abs=1e-4)


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/amlsim_sample not present")
def test_provenance_hashes_match_the_data_files() -> None:
    sums = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.removeprefix("./")] = digest
    for dataset in load_bundle(BUNDLE).manifest["provenance"]["datasets"]:
        assert dataset["files"] and all(sums[k] == v for k, v in dataset["files"].items())


def test_scores_are_probabilities_and_deterministic(scorer: RiskScorer) -> None:
    x = random_rows(40)
    first = scorer.score(x)
    assert first.shape == (40,) and first.dtype == np.float32
    assert ((first >= 0) & (first <= 1)).all()
    np.testing.assert_array_equal(first, scorer.score(x.copy()))
    np.testing.assert_array_equal(first[:5], scorer.score(x[:5]))  # see the next test
    assert scorer.score(np.zeros((0, N_FEATURES), np.float32)).shape == (0,)


def test_a_rows_score_does_not_depend_on_the_rows_scored_with_it(scorer: RiskScorer) -> None:
    # unpadded, the matrix kernels rounded a last partial block of rows differently, and model_score differed in the
    # 6th decimal between a one-at-a-time and a one-batch run (a fresh-user check); padded to ROW_BLOCK rows, equal
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((1000, N_FEATURES)) * rng.uniform(0.1, 30.0, N_FEATURES)).astype(np.float32)
    whole = scorer.score(x)
    for size in (1, 3, 7, 8, 13, 100, 333):
        parts = np.concatenate([scorer.score(x[i:i + size]) for i in range(0, 200 if size < 8 else 1000, size)])
        np.testing.assert_array_equal(parts, whole[:len(parts)], err_msg=f"batches of {size}")


def test_predictor_equals_eager_forward_of_the_same_weights(scorer: RiskScorer) -> None:
    from sectorflow_aml.scorer_model import RiskMLP, paddle

    state = load_pdparams(scorer.bundle.file("model.pdparams"))
    model = RiskMLP(np.zeros(N_FEATURES, np.float32), np.ones(N_FEATURES, np.float32))
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
    model.eval()
    x = random_rows(12)
    eager = model(paddle.to_tensor(x)).numpy().reshape(-1)
    np.testing.assert_allclose(scorer.score(x), eager, atol=1e-5)
    assert not np.allclose(eager, eager[0])  # the rows really differ


def test_bad_batches_are_refused(scorer: RiskScorer) -> None:
    with pytest.raises(InvalidInputError, match=rf"\[n, {N_FEATURES}\]"):
        scorer.score(np.zeros((3, 5), np.float32))
    bad = random_rows(2)
    bad[1, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        scorer.score(bad)


def test_degrees_pairs_and_pass_through_on_a_fan_in() -> None:
    f = replay([("A", "Z", "9000", 0), ("B", "Z", "9100", 1), ("C", "Z", "9200", 2), ("A", "Z", "9300", 3),
                ("Z", "Q", "36000", 4)])
    assert [r["r_in_deg"] for r in f[:4]] == [1, 2, 3, 3]          # distinct senders into Z
    assert [r["r_in_cnt"] for r in f[:4]] == [1, 2, 3, 4]          # edges into Z
    assert f[3]["pair_cnt"] == 2 and f[2]["pair_cnt"] == 1          # A -> Z twice
    assert f[3]["s_out_deg"] == 1 and f[3]["s_lifetime"] == 2
    last = f[4]                                                     # Z forwards the money at once
    assert last["s_in_deg"] == 3 and last["s_out_over_in"] == pytest.approx(36000 / 36600)  # pass-through ratio
    assert last["s_hours_since_in"] == pytest.approx(1.0)
    assert last["amount_over_last_in"] == pytest.approx(36000 / 9300)
    assert last["r_out_over_in"] == 0.0                             # Q received, never paid out
    assert f[0]["s_out_over_in"] == 10.0 and f[0]["r_out_over_in"] == 0.0  # A paid out, received nothing: the cap
    assert last["r_hours_since_prev"] == pytest.approx(30 * 24)     # Q never seen: capped at the lookback


def test_chain_is_not_a_cycle_but_closing_edge_is() -> None:
    f = replay([("A", "B", "500", 0), ("B", "C", "490", 1), ("C", "D", "480", 2)])
    assert all(r["cycle_closed"] == 0 and r["s_in_cycle"] == 0 for r in f)
    f = replay([("A", "B", "500", 0), ("B", "C", "490", 1), ("C", "D", "480", 2), ("D", "A", "470", 3),
                ("B", "X", "10", 4), ("Y", "Z", "10", 5)])
    assert [r["cycle_closed"] for r in f] == [0, 0, 0, 1, 0, 0]
    assert f[4]["s_in_cycle"] == 1 and f[5]["s_in_cycle"] == 0      # B lay on the closed loop, Y did not
    f = replay([("A", "B", "5", 0), ("B", "A", "5", 1)])
    assert f[1]["reverse_edge"] == 1 and f[1]["cycle_closed"] == 1


def test_cycle_search_stops_at_four_edges() -> None:
    window = TransactionWindow(lookback_days=30.0)
    for i, (s, d) in enumerate([("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]):
        window.add(txn(i, s, d, "100", i))
    assert find_cycle(window, "E", "A") is None                     # would be a 5-edge loop
    assert find_cycle(window, "D", "A") == ["A", "B", "C", "D"]


def test_window_lapse_expires_degrees_and_cycle_membership() -> None:
    f = replay([("A", "Z", "10", 0), ("B", "Z", "10", 1), ("Z", "A", "10", 2), ("C", "Z", "10", 24 * 40),
                ("A", "Q", "10", 24 * 40 + 1)])
    assert f[2]["cycle_closed"] == 1
    assert f[3]["r_in_deg"] == 1 and f[3]["r_in_cnt"] == 1          # A and B fell out of the 30-day window
    assert f[4]["s_in_cycle"] == 0                                  # membership older than the lookback


def test_features_need_window_add_first_and_the_same_lookback() -> None:
    window = TransactionWindow(lookback_days=30.0)
    extractor = FeatureExtractor(window.lookback)
    t = txn(0, "A", "B", "10", 0)
    with pytest.raises(ConfigError, match="window.add"):
        extractor.row(t, window)
    other = TransactionWindow(lookback_days=7.0)
    other.add(t)
    with pytest.raises(ConfigError, match="lookback"):
        extractor.row(t, other)


def test_reset_forgets_state(scorer: RiskScorer) -> None:
    window = TransactionWindow(lookback_days=scorer.lookback_days)
    t = txn(0, "A", "B", "10", 0)
    window.add(t)
    first = scorer.features(t, window)
    window.reset()
    scorer.reset()
    window.add(t)
    np.testing.assert_array_equal(first, scorer.features(t, window))


def test_bundle_from_other_features_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(BUNDLE, copy)
    config = json.loads((copy / "scorer.json").read_text())
    config["feature_names"] = config["feature_names"][:-1]
    (copy / "scorer.json").write_text(json.dumps(config))
    with pytest.raises(BundleIntegrityError):
        load_bundle(copy)                                           # edited without a new manifest
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]
    write_manifest(copy, **manifest)
    with pytest.raises(BundleError, match="trained on features"):
        RiskScorer(load_bundle(copy), None)


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/amlsim_sample not present")
def test_training_replay_builds_the_same_transactions_as_the_amlsim_reader(tmp_path: Path) -> None:
    """No train/serve skew in the input: the training script's fast AMLSim parser gives the transactions that
    ``load_transactions(..., "amlsim")`` (what ``sectorflow run aml --format amlsim`` uses) gives."""
    import gzip
    import itertools

    from sectorflow_aml.loaders import load_transactions
    from sectorflow_aml.training import amlsim_transactions, read_amlsim_csv

    folder = DATA / "20K_cycle200"
    head = tmp_path / "head.csv"
    with gzip.open(folder / "transactions.csv.gz", "rt") as src, open(head, "w") as out:
        out.writelines(itertools.islice(src, 3001))
    served, problems = load_transactions(head, "amlsim")
    src_ids, dst_ids, values, steps, _ = read_amlsim_csv(folder)
    assert not problems and len(served) == 3000
    trained = amlsim_transactions(src_ids[:3000], dst_ids[:3000], values[:3000], steps[:3000])
    for a, b in zip(served, trained):
        assert (a.timestamp, a.sender_account, a.receiver_account, a.amount, a.currency) == \
               (b.timestamp, b.sender_account, b.receiver_account, b.amount, b.currency)


def test_describe_states_the_notable_features(scorer: RiskScorer) -> None:
    f = replay([("A", "B", "500", 0), ("B", "C", "490", 1), ("C", "A", "480", 2)])
    codes = [code for code, en, zh in scorer.describe([f[2][k] for k in FEATURE_NAMES])]
    assert codes[0] == "model.feature.cycle_closed" and "model.feature.pass_through" in codes
    quiet = scorer.describe([f[0][k] for k in FEATURE_NAMES])  # nothing notable: the profile of both accounts
    assert [(code, en) for code, en, zh in quiet] == [("model.feature.profile", "within 30 days the sender paid 1 and "
                                                       "was paid by 0 distinct accounts, the receiver was paid by 1 "
                                                       "and paid 0")]


def test_no_feature_and_no_score_depends_on_the_scale_of_amounts(scorer: RiskScorer) -> None:
    # The same stream with every amount times 1,000 and times 1/100 (another currency unit, a bank of larger
    # customers): features equal to float rounding, scores equal. Bundle 1.0.0 used absolute amounts and scored a
    # lone 1 CNY transfer 1.0 (AMLSim's laundering transfers are 3-20 units among normal ones of 100-1,000).
    rng = np.random.default_rng(5)
    stream = [(f"a{rng.integers(12)}", f"a{rng.integers(12)}", f"{rng.integers(1, 10_000)}.{rng.integers(100):02d}",
               float(h)) for h in np.cumsum(rng.exponential(6.0, 300))]
    stream = [e for e in stream if e[0] != e[1]]
    base = np.array([[r[k] for k in FEATURE_NAMES] for r in replay(stream)], dtype=np.float64)
    for factor in ("1000", "0.01"):
        scaled = [(a, b, str(Decimal(v) * Decimal(factor)), h) for a, b, v, h in stream]
        other = np.array([[r[k] for k in FEATURE_NAMES] for r in replay(scaled)], dtype=np.float64)
        np.testing.assert_allclose(other, base, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scorer.score(other), scorer.score(base), rtol=0, atol=1e-5)
    assert len({round(float(v), 4) for v in scorer.score(base)}) > 50  # the scores really vary along the stream


def test_a_lone_transfer_scores_the_same_for_1_and_for_1_000_000() -> None:
    from sectorflow import Taskflow

    scores = []
    for amount in ("1", "1000000"):
        tf = Taskflow("aml")
        result = tf([{"transaction_id": "t1", "timestamp": "2026-01-05T10:00:00", "sender_account": "A",
                      "receiver_account": "B", "amount": amount, "currency": "CNY", "channel": "transfer"}])[0]
        scores.append(result.model_score)
        assert not any(a.typology == "model_risk" for a in result.alerts)
    assert scores[0] is not None and scores[0] == scores[1]


def test_a_self_transfer_updates_the_state_but_gets_no_model_score() -> None:
    from sectorflow import Taskflow

    tf = Taskflow("aml", transaction_model=True)  # the per-transaction scorer (the account model scores cash)
    out = tf([{"transaction_id": f"t{i}", "timestamp": f"2026-01-05T{9 + 2 * i:02d}:00:00", "sender_account": "ACC",
               "receiver_account": "ACC", "amount": amount, "currency": "CNY", "channel": "cash_deposit"}
              for i, amount in enumerate(("49900", "49800", "49950"))]
             + [{"transaction_id": "t9", "timestamp": "2026-01-05T18:00:00", "sender_account": "ACC",
                 "receiver_account": "X", "amount": "149000", "currency": "CNY", "channel": "transfer"}])
    assert [r.model_score is None for r in out] == [True, True, True, False]
    assert any(a.typology == "structuring" for r in out for a in r.alerts)
    # the deposits stay in the features' state: the transfer out forwards 149,000 / 149,650 of the cash received
    window = tf.pipeline.window
    assert window.get("ACC").self_sum == pytest.approx(149_650) and window.get("ACC").in_sum == pytest.approx(149_650)


def test_the_self_transfer_sum_leaves_the_window_with_its_edges() -> None:
    window = TransactionWindow(lookback_days=1.0)
    window.add(txn(0, "A", "A", "500", 0))
    window.add(txn(1, "B", "A", "300", 1))
    assert window.get("A").self_sum == 500 and window.get("A").in_sum == 800 and window.get("A").out_sum == 500
    window.add(txn(2, "C", "D", "1", 24.5))  # 24.5 h later: the self-transfer (0 h) has left the 1-day window
    a = window.get("A")
    assert a.self_sum == 0 and a.in_sum == 300 and a.out_sum == 0
