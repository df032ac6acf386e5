"""The case page's account model contributions (TreeSHAP, LightGBM ``pred_contrib``) on the AMLSim slice: the
rebuilt row is the one the run scored, the contributions sum to its raw margin, the page lists the top features."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from sectorflow import Taskflow, load_bundle
from sectorflow.serving import ServeConfig, hash_key, web_app
from sectorflow_aml.account_features import ACCOUNT_FEATURES
from sectorflow_aml.account_mlp import TrainedMLP, transform, write_mlp_bundle
from sectorflow_aml.account_scorer import AccountScorer
from sectorflow_aml.loaders import load_transactions
from sectorflow_aml.workbench.contributions import FEATURE_DOCS, case_contributions, mlp_contributions
from sectorflow_aml.workbench.data import Source, TenantData

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wbc") / "results.jsonl"
    txns, _ = load_transactions(SAMPLE, format="amlsim")
    with out.open("w", encoding="utf-8") as handle:
        for r in Taskflow("aml")(txns):
            handle.write(r.model_dump_json() + "\n")
    return out


@pytest.fixture(scope="module")
def data(results) -> TenantData:
    return TenantData(Source(tenant="bank-1", results=results, transactions=SAMPLE, format="amlsim"))


def scored_cases(data: TenantData):
    return sorted((c for c in data.cases if c.model_score is not None), key=lambda c: (-c.model_score, c.case_id))


def test_every_feature_has_a_description_in_english_and_chinese():
    assert set(FEATURE_DOCS) == set(ACCOUNT_FEATURES)
    assert all(en and zh and en != zh for en, zh in FEATURE_DOCS.values())


def test_contributions_sum_to_the_raw_margin_of_the_row_the_run_scored(data):
    cases = scored_cases(data)[:3]
    assert cases
    booster = data.account_scorer().booster
    for case in cases:
        c = data.contributions(case)
        assert c["available"], c
        row = c["row"]
        margin = float(booster.predict(row.reshape(1, -1), raw_score=True, num_threads=1)[0])
        assert abs(c["margin"] - margin) <= 1e-6
        # the rebuilt row scores what the results say: it is the row the run scored (scores are rounded to 1e-6)
        assert abs(c["rebuilt_score"] - c["score"]) <= 1e-6
        assert c["score"] == case.model_score == max(data.account_scores[t].get(case.account, -1.0) for t in case.transaction_ids
                                 if t in data.account_scores)
        top = c["top"]
        assert len(top) == 5
        sizes = [abs(t["contribution"]) for t in top]
        assert sizes == sorted(sizes, reverse=True) and sizes[0] > 0
        for t in top:
            assert t["value"] == float(row[ACCOUNT_FEATURES.index(t["feature"])])


def test_the_case_page_lists_the_top_features(results, data, tmp_path):
    case = scored_cases(data)[0]
    c = data.contributions(case)
    cfg = ServeConfig.model_validate({
        "keys": [{"id": "ana", "sha256": hash_key("secret-ana"), "tenant": "bank-1", "scopes": ["role:analyst"]}],
        "web": {"aml": {"state_store": str(tmp_path / "state.sqlite"), "sources": [
            {"tenant": "bank-1", "results": str(results), "transactions": str(SAMPLE), "format": "amlsim"}]}}})
    client = TestClient(web_app(cfg))
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/login").text)[1]
    assert client.post("/ui/login", data={"key": "secret-ana", "csrf": token}, follow_redirects=False).status_code == 303
    page = client.get(f"/ui/cases/{case.case_id}")
    assert page.status_code == 200
    table = page.text.split('id="contributions"')[1].split("</table>")[0]
    names = re.findall(r"<code>([a-z_]+)</code>", table)
    assert names == [t["feature"] for t in c["top"]]
    for t in c["top"]:
        assert f"{t['contribution']:+.4f}" in table and FEATURE_DOCS[t["feature"]][1] in table
    assert f"{c['margin']:+.4f}" in page.text


def test_results_of_another_bundle_get_no_contributions(results, tmp_path):
    other = tmp_path / "other.jsonl"
    with results.open(encoding="utf-8") as src, other.open("w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            row = json.loads(line)
            if row.get("meta"):
                row["meta"]["bundle_sha256"] = "0" * 64
            dst.write(json.dumps(row) + "\n")
    data = TenantData(Source(tenant="bank-1", results=other, transactions=SAMPLE, format="amlsim"))
    c = data.contributions(scored_cases(data)[0])
    assert not c["available"] and "no account model" in c["why"]
    assert np.isfinite(scored_cases(data)[0].model_score)


def mlp_bundle(path: Path, data: TenantData) -> Path:
    """A real account-MLP bundle (write_mlp_bundle, loaded by AccountScorer) with seeded random weights and the
    slice's own feature moments: the attribution is checked, not the network's skill."""
    rng = np.random.default_rng(7)
    sizes = [len(ACCOUNT_FEATURES), 16, 8, 1]
    weights = {}
    for i in range(3):
        weights[f"l{i}.weight"] = rng.normal(0, 0.4, (sizes[i], sizes[i + 1])).astype(np.float32)
        weights[f"l{i}.bias"] = rng.normal(0, 0.1, sizes[i + 1]).astype(np.float32)
    rows = np.stack([data.contributions(c)["row"] for c in scored_cases(data)[:40]])
    t = transform(rows).astype(np.float64)
    trained = TrainedMLP(weights=weights, mean=t.mean(0).astype(np.float32), std=(t.std(0) + 1.0).astype(np.float32),
                         platt=(1.0, 0.0), metrics={}, params={"seed": 7})
    write_mlp_bundle(path, trained, lookback_days=data.account_scorer().lookback_days, datasets=[],
                     command="test_workbench_contributions.py", name="aml-mlp-test", version="0.0.1")
    return path


def test_mlp_gradient_x_input_sums_to_its_margin_and_matches_finite_differences(data, tmp_path):
    scorer = AccountScorer(load_bundle(mlp_bundle(tmp_path / "mlp", data)))
    case = scored_cases(data)[0]
    c = case_contributions(scorer, data.ordered, data.times, data.positions, data.account_scores, case.account,
                           case.transaction_ids)
    assert c["available"] and c["method"] == "gradient x input" and len(c["top"]) == 5
    row = c["row"]
    margin = scorer._margin
    assert abs(c["margin"] - float(margin(row.reshape(1, -1))[0])) <= 1e-4  # float64 vs the bundle's float32
    contrib = mlp_contributions(margin, row)
    z = ((transform(row.reshape(1, -1)) - margin.mean) / margin.std)[0].astype(np.float64)
    for j in np.argsort(-np.abs(contrib[:-1]))[:5]:  # d margin / d z_j by a central difference in z
        d = 1e-2
        rows = []
        for step in (d, -d):
            zz = z.copy()
            zz[j] += step
            tt = zz * margin.std + margin.mean
            rows.append(np.sign(tt) * np.expm1(np.abs(tt)))  # the inverse of transform
        f = margin(np.asarray(rows, dtype=np.float32))
        grad = (f[0] - f[1]) / (2 * d)
        assert abs(grad * z[j] - contrib[j]) <= 2e-3 * max(1.0, abs(contrib[j])), (j, grad, contrib[j] / z[j])


def test_the_row_is_where_the_case_score_was_read():
    """The highest-scored transaction (the earliest on a tie), or the latest when the case's model score is the
    latest score and not the highest (a book reading each period's close)."""
    from sectorflow_aml.workbench.contributions import scored_row

    positions = {"t1": 0, "t2": 1, "t3": 2, "t4": 3, "x": 4}
    scores = {"t1": {"A": 0.2}, "t2": {"A": 0.7, "B": 0.9}, "t3": {"A": 0.7}, "t4": {"A": 0.4}, "x": {"A": 0.99}}
    tids = ["t1", "t2", "t3", "t4", "gone"]  # "x" is not the case's; "gone" is not in the input
    assert scored_row(positions, scores, "A", tids) == ("t2", 0.7)  # the highest, the earliest of the tie
    assert scored_row(positions, scores, "A", tids, 0.7) == ("t2", 0.7)
    assert scored_row(positions, scores, "A", tids, 0.4) == ("t4", 0.4)  # the period-close score
    assert scored_row(positions, scores, "C", tids) is None
