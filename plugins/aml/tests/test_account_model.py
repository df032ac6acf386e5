"""The account risk model: metrics against scikit-learn, labels files, the AMLGentex reader, and a bundle trained by
`aml train` on a slice of AMLGentex dev_s101: pipeline scores equal the training replay's, one-at-a-time equals
batch, a run given lookback + 1 day of history equals a continuous run, amounts' scale does not matter, and the
training loop's validation history equals whole-model predictions."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from sectorflow import Taskflow
from sectorflow_aml.account_features import ACCOUNT_FEATURES, AccountFeatureExtractor
from sectorflow_aml.account_training import replay, score_replay
from sectorflow_aml.evaluation import evaluate_results
from sectorflow_aml.labels import LabelsError, read_labels
from sectorflow_aml.learn_cli import train_bundle
from sectorflow_aml.loaders import READERS, guess_format, load_transactions
from sectorflow_aml.metrics import average_precision, best_f1, precision_at_k, recall_at_fpr
from sectorflow_aml.schema import Channel
from sectorflow_aml.window import TransactionWindow

GENTEX = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlgentex_dev" / "dev_s101"
ROWS = 30_000
"""Rows of dev_s101 the bundle is trained on (about 10 days: enough for laundering accounts to transact)."""

needs_data = pytest.mark.skipif(not GENTEX.is_dir(), reason="AMLGentex dev data not present")


# --- metrics -----------------------------------------------------------------------------------------------------

def test_metrics_match_scikit_learn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    for n, ties in ((50, False), (400, True), (1000, True)):
        y = (rng.random(n) < 0.1).astype(int)
        y[0] = 1
        s = rng.random(n) + y * rng.random(n)
        if ties:
            s = np.round(s, 1)
        assert average_precision(s, y) == pytest.approx(sk.average_precision_score(y, s), abs=1e-12)
        fpr, tpr, _ = sk.roc_curve(y, s)
        assert recall_at_fpr(s, y, 0.01) == pytest.approx(tpr[fpr <= 0.01].max(), abs=1e-12)
        p, r, _ = sk.precision_recall_curve(y, s)
        f1 = np.max(np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-300), 0))
        assert best_f1(s, y)[0] == pytest.approx(f1, abs=1e-12)
    y = np.array([1, 0, 1, 0, 0])
    s = np.array([0.9, 0.8, 0.7, 0.1, 0.0])
    assert precision_at_k(s, y, 2) == 0.5
    assert average_precision(s, y) == pytest.approx((1 + 2 / 3) / 2)


# --- labels ------------------------------------------------------------------------------------------------------

def test_labels_files(tmp_path):
    good = tmp_path / "labels.csv"
    good.write_text("account_id,label,typology\nA,1,fan_in;cycle\nB,0,\nC,true,\n")
    lab = read_labels(good)
    assert lab.label == {"A": 1, "B": 0, "C": 1}
    assert lab.typologies["A"] == ("fan_in", "cycle") and lab.positives == 2
    for text, why in (("account_id,label\nA,2\n", "line 2: label '2'"), ("account_id,label\nA,1\nA,0\n", "twice"),
                      ("who,what\nA,1\n", "is not a labels file"), ("", "is empty"),
                      ("account_id,label\n,1\n", "empty account id")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(LabelsError, match=why):
            read_labels(bad)
    with pytest.raises(LabelsError, match="does not exist"):
        read_labels(tmp_path / "none.csv")


@needs_data
def test_amlgentex_accounts_labels():
    lab = read_labels(GENTEX / "accounts.csv.gz")
    assert len(lab) == 4000 and lab.positives == 248  # the README's table


# --- reader ------------------------------------------------------------------------------------------------------

HEADER = ("tx_id,step,type,amount,nameOrig,nameDest,bankOrig,bankDest,daysInBankOrig,phoneChangesOrig,"
          "oldbalanceOrig,newbalanceOrig,daysInBankDest,phoneChangesDest,oldbalanceDest,newbalanceDest,isSAR,"
          "patternID,modelType,typology\n")


def _gentex_file(path: Path, sar: str = "0") -> Path:
    rows = ["0,0,INITALBALANCE,100.00,-2,7,source,bank_a,0,0,0,0,0,0,0,0,0,-1,0,generic",
            "1,0,TRANSFER,50.00,-2,7,source,bank_a,0,0,0,0,0,0,0,0,0,-1,0,generic",
            f"2,0,TRANSFER,20.50,7,8,bank_a,bank_a,0,0,0,0,0,0,0,0,{sar},3,1,fan_in",
            "3,0,CASH,5.25,8,-1,bank_a,sink,0,0,0,0,0,0,0,0,0,-1,0,generic",
            "4,2,TRANSFER,9.00,8,-1,bank_a,sink,0,0,0,0,0,0,0,0,0,-1,0,generic"]
    with gzip.open(path, "wt") as handle:
        handle.write(HEADER + "\n".join(rows) + "\n")
    return path


def test_amlgentex_log_cut_into_files_keeps_every_time(tmp_path):
    """A bank's daily exports of one log (cut mid-day too) read as the whole log reads: the same transactions at
    the same times, so `sectorflow run --state` over the pieces sees no row out of time order."""
    whole, _ = load_transactions(_gentex_file(tmp_path / "t.csv.gz"), format="amlgentex")
    text = gzip.open(tmp_path / "t.csv.gz", "rt").read().splitlines()
    header, rows = text[0], text[1:]
    pieces = []
    for i, part in enumerate((rows[:3], rows[3:])):  # cut inside step 0
        path = tmp_path / f"part{i}.csv"
        path.write_text("\n".join([header, *part]) + "\n")
        pieces.extend(load_transactions(path, format="amlgentex")[0])
    assert pieces == whole


def test_amlgentex_reader(tmp_path):
    path = _gentex_file(tmp_path / "t.csv.gz")
    assert guess_format(path) == "amlgentex"
    txns, problems = load_transactions(path, format="amlgentex")
    assert problems == []
    assert [t.transaction_id for t in txns] == ["amlgentex-1", "amlgentex-2", "amlgentex-3", "amlgentex-4"]
    assert [(t.sender_account, t.receiver_account, t.channel) for t in txns] == [
        ("7", "7", Channel.cash_deposit), ("7", "8", Channel.transfer), ("8", "8", Channel.cash_withdrawal),
        ("8", "8", Channel.cash_withdrawal)]
    # tx_id microseconds past the step's midnight: the time of a row comes from the row, not its place in the file
    assert [t.timestamp.isoformat() for t in txns] == [
        "2023-01-01T00:00:00.000001+00:00", "2023-01-01T00:00:00.000002+00:00", "2023-01-01T00:00:00.000003+00:00",
        "2023-01-03T00:00:00.000004+00:00"]
    assert str(txns[1].amount) == "20.50"
    other, _ = load_transactions(_gentex_file(tmp_path / "u.csv.gz", sar="1"), format="amlgentex")
    assert other == txns  # the label columns are not read
    assert all(isinstance(t, type(txns[0])) for _, t in READERS["amlgentex"](path))


# --- features ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gentex_slice(tmp_path_factory) -> Path:
    if not GENTEX.is_dir():
        pytest.skip("AMLGentex dev data not present")
    out = tmp_path_factory.mktemp("gentex") / "slice.csv"
    with gzip.open(GENTEX / "transactions.csv.gz", "rt") as src, out.open("w") as dst:
        for i, line in enumerate(src):
            if i > ROWS:
                break
            dst.write(line)
    return out


@pytest.fixture(scope="module")
def bundle(gentex_slice, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "b"
    manifest = train_bundle([gentex_slice], [GENTEX / "accounts.csv.gz"], out, fmt="amlgentex", seed=5)
    assert manifest["format"] == "lightgbm" and manifest["features"] == list(ACCOUNT_FEATURES)
    v = manifest["metrics"]["account_level"]["validation"]
    assert v["average_precision"] > 2 * v["base_rate"]  # far better than chance even on 10 days
    assert len(manifest["provenance"]["datasets"][0]["sha256_as_read"]) == 64
    return out


def test_scale_free(gentex_slice):
    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    txns = txns[:6000]
    scaled = [t.model_copy(update={"amount": t.amount * 8}) for t in txns]
    a, b = replay(txns), replay(scaled)
    binned = [i for i, n in enumerate(ACCOUNT_FEATURES) if n.startswith("near_equal")]
    exact = [i for i in range(len(ACCOUNT_FEATURES)) if i not in binned]
    assert np.allclose(a.x[:, exact], b.x[:, exact], rtol=1e-5, atol=1e-5)
    # near-equal shares count amounts in 5 % log bins: scaling moves the bin edges, so only most rows agree
    assert np.mean(np.isclose(a.x[:, binned], b.x[:, binned])) > 0.9


def test_window_exact_with_history(gentex_slice):
    """A run that starts lookback + 1 day before day D computes, from D on, the rows of a run from the start."""
    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    days = sorted({t.timestamp.date() for t in txns})
    lookback = 3.0
    d = days[6]
    start = days[6 - 4]  # 3 + 1 days of history
    full, part = [], []
    for kept, out in ((txns, full), ([t for t in txns if t.timestamp.date() >= start], part)):
        window = TransactionWindow(lookback_days=lookback)
        ex = AccountFeatureExtractor(window.lookback)
        for t in kept:
            edge = window.add(t)
            rows = ex.rows(edge, window)
            if t.timestamp.date() >= d:
                out.append(rows)
    assert len(full) == len(part) > 1000
    assert full == part


@needs_data
def test_pipeline_scores_equal_training_replay_and_streaming(bundle, gentex_slice):
    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    txns = txns[:8000]
    flow = Taskflow("aml", task_path=str(bundle))
    batch = flow(txns)
    assert all(r.account_scores for r in batch)
    assert set(batch[100].account_scores) == {txns[100].sender_account, txns[100].receiver_account}
    # the training replay's rows give the same scores (same window, same feature code)
    from sectorflow_aml.account_scorer import AccountScorer
    from sectorflow import load_bundle
    scorer = AccountScorer(load_bundle(bundle))
    rep = replay(txns)
    expected = score_replay(scorer.booster.model_to_string(), (scorer.a, scorer.b), rep)
    got = [s for r in batch for s in r.account_scores.values()]
    assert np.allclose(got, np.round(expected, 6), atol=1e-6)
    # one at a time and in chunks: equal
    one = Taskflow("aml", task_path=str(bundle))
    streamed = [r for t in txns[:1500] for r in one([t])]
    assert [r.account_scores for r in streamed] == [r.account_scores for r in batch[:1500]]
    chunked = Taskflow("aml", task_path=str(bundle))
    parts = [r for i in range(0, 8000, 777) for r in chunked(txns[i:i + 777])]
    assert [r.account_scores for r in parts] == [r.account_scores for r in batch]


@needs_data
def test_train_and_evaluate_cli(bundle, gentex_slice, tmp_path, cli_main):
    results = tmp_path / "r.jsonl"
    assert cli_main(["run", "aml", str(gentex_slice), "--format", "amlgentex", "--task-path", str(bundle),
                     "--output", str(results)]) == 0
    metrics = evaluate_results(results, read_labels(GENTEX / "accounts.csv.gz"))
    assert metrics["labelled_accounts"] == 4000 and metrics["k"] == 248
    assert metrics["average_precision"] > 0.2  # base rate 0.062; trained on these accounts' first 10 days
    assert set(metrics["recall_by_typology"]) == {"bipartite", "cycle", "fan_in", "fan_out", "gather_scatter",
                                                  "scatter_gather", "stack"}
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli_main(["aml", "evaluate", "--results", str(results), "--labels", str(GENTEX / "accounts.csv.gz"),
                         "--json"])
    assert code == 0
    printed = json.loads(buf.getvalue())
    assert printed["average_precision"] == metrics["average_precision"]


@needs_data
def test_reload_keeps_account_state_and_refuses_other_features(bundle, gentex_slice, tmp_path):
    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    txns = txns[:3000]
    whole = Taskflow("aml", task_path=str(bundle))(txns)
    flow = Taskflow("aml", task_path=str(bundle))
    first = flow(txns[:1700])
    flow.reload(str(bundle))  # hot reload: the new pipeline adopts the window and the account features' state
    rest = flow(txns[1700:])
    assert [r.account_scores for r in first + rest] == [r.account_scores for r in whole]
    # a bundle trained on other features is refused with a BundleError naming both lists
    import shutil

    from sectorflow import BundleError, load_bundle, write_manifest
    from sectorflow_aml.account_scorer import AccountScorer
    other = tmp_path / "other"
    shutil.copytree(bundle, other)
    config = json.loads((other / "account_model.json").read_text())
    config["feature_names"] = config["feature_names"][:-1] + ["unknown"]
    (other / "account_model.json").write_text(json.dumps(config))
    manifest = json.loads((other / "manifest.json").read_text())
    manifest.pop("files")
    write_manifest(other, **manifest)
    with pytest.raises(BundleError, match="retrain it with `sectorflow aml train`"):
        AccountScorer(load_bundle(other))


def test_evaluate_scores_budget_and_typologies():
    from sectorflow_aml.evaluation import account_scores_of, evaluate_scores
    from sectorflow_aml.labels import Labels

    results = [  # month 0: 150 accounts active, month 1: 100; positives P1 (month 0 top) and P2 (month 1, 2nd)
        *({"transaction_id": f"a{i}", "account_scores": {f"N{i}": i / 1000}} for i in range(148)),
        {"transaction_id": "p1", "account_scores": {"P1": 0.9, "N0": 0.2}, "alert": True,
         "alerts": [{"accounts": ["P1", "X"]}]},
        *({"transaction_id": f"b{i}", "account_scores": {f"N{i}": 0.5 + i / 1000}} for i in range(99)),
        {"transaction_id": "p2", "account_scores": {"P2": 0.55}},
    ]
    months = {r["transaction_id"]: (0 if r["transaction_id"][0] in "ap" and r["transaction_id"] != "p2" else 1)
              for r in results}
    best, period, alerted = account_scores_of(results, months)
    labels = Labels(label={**{f"N{i}": 0 for i in range(148)}, "P1": 1, "P2": 1},
                    typologies={"P1": ("fan_in",), "P2": ("cycle", "fan_in")})
    m = evaluate_scores(best, period, alerted, labels, budget_share=0.01)
    assert m["budget"]["periods"] == 2
    # month 0: 149 active accounts -> top 1 (P1; 1 % rounded down, as the case book); month 1: 100 active -> top 1
    # (N98, 0.598 > P2's 0.55)
    assert m["budget"]["flagged_account_periods"] == 2 and m["budget"]["precision"] == pytest.approx(1 / 2, abs=1e-4)
    assert m["budget"]["recall"] == 0.5
    assert m["alert_rate"] == round(2 / 150, 4)  # P1 and N0 (the flagged result's accounts; X is not active)
    assert m["precision_at_k"] == 0.5 and m["k"] == 2  # P1 first; N98 (0.598) and N147 ... above P2
    assert m["recall_by_typology"] == {"cycle": {"recall_at_k": 0.0, "accounts": 1},
                                       "fan_in": {"recall_at_k": 0.5, "accounts": 2}}


def test_account_model_option():
    from sectorflow import ConfigError
    from sectorflow_aml.plugin import EXAMPLES

    on = Taskflow("aml")(list(EXAMPLES))
    off = Taskflow("aml", account_model=False)(list(EXAMPLES))
    assert all(set(r.account_scores) for r in on) and all(r.account_scores == {} for r in off)
    assert set(on[2].account_scores) == {"A100", "B200"}
    assert [r.model_score for r in on] == [max(r.account_scores.values()) for r in on]  # the account model's
    both = Taskflow("aml", transaction_model=True)(list(EXAMPLES))  # the per-transaction scorer, as account_model=False
    assert [r.model_score for r in both] == [r.model_score for r in off] == [None, None, 0.169676]
    assert [r.account_scores for r in both] == [r.account_scores for r in on]
    with pytest.raises(ConfigError, match="account_model"):
        Taskflow("aml", account_model="yes")(list(EXAMPLES))


def test_labels_of_another_dataset_are_refused_or_warned(caplog):
    from sectorflow_aml.labels import Labels, LabelsError, check_overlap

    labels = Labels(label={f"n{i}": int(i < 2) for i in range(10)}, source="nodes.csv.gz")
    with pytest.raises(LabelsError, match="None of the 10 accounts of nodes.csv.gz appears in run.jsonl"):
        check_overlap(labels, {"a", "b"}, "run.jsonl")
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        assert check_overlap(labels, {"n1", "n2", "x"}, "run.jsonl") == 2
    assert "only 2 of the 10 labelled accounts" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="sectorflow_aml"):
        assert check_overlap(labels, {f"n{i}" for i in range(6)}, "run.jsonl") == 6
    assert caplog.text == ""


def test_validation_history_equals_whole_model_predictions(gentex_slice):
    """The training loop grows the validation margins by the last 25 trees at each check: every AP it recorded equals
    the AP of a prediction with all the model's first trees (the model text's ``num_iteration``)."""
    import lightgbm as lgb
    from sectorflow_aml.account_training import _stack, account_max, labels_of, split_accounts, train

    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    labels = read_labels(GENTEX / "accounts.csv.gz")
    rep = replay(txns)
    trained = train([rep], [labels], seed=5, rounds=100, tree_tolerance=0.0)
    history = trained.metrics["history"]
    assert [it for it, _ in history] == [25, 50, 75, 100][:len(history)] and len(history) >= 2
    y = labels_of(rep, labels)
    assert trained.metrics["points"] == "daily"  # the default
    _, _, xv, av, _, yv_acc = _stack([rep], [y], [split_accounts(y, 0.25, 5)], 0.2)
    vmask = yv_acc >= 0
    booster = lgb.Booster(model_str=trained.model_text)
    checked = 0
    for it, ap in history:
        if it <= trained.num_trees:
            raw = booster.predict(xv, raw_score=True, num_iteration=it, num_threads=1)
            assert round(average_precision(account_max(raw, av, yv_acc.size)[vmask], yv_acc[vmask]), 6) == ap
            checked += 1
    assert checked >= 1 and trained.metrics["validation_ap_of_rounds"] == dict(history)[trained.num_trees]


# --- month-close points (training points "month_end", case_model_score "close") -----------------------------------

def test_month_end_rows_are_each_accounts_last_row_of_each_month():
    from sectorflow_aml.account_training import Replay, month_end_rows, scoring_rows

    account = np.array([0, 1, 0, 0, 1, 2, 0, 1])
    month = np.array([5, 5, 5, 6, 6, 6, 6, 6])
    rep = Replay("t", np.zeros((8, len(ACCOUNT_FEATURES)), np.float32), account, month * 30, month,
                 np.ones(8, bool), ["a", "b", "c"], 8, 0.0)
    assert month_end_rows(rep).tolist() == [False, True, True, False, False, True, True, True]
    assert scoring_rows(rep, "daily").all()
    with pytest.raises(ValueError, match="training points 'weekly'"):
        scoring_rows(rep, "weekly")


@needs_data
def test_month_end_training_is_read_at_each_periods_close_end_to_end(gentex_slice, tmp_path, cli_main):
    """A model trained on month-end rows: its validation history is the AP of the validation accounts' month-end rows;
    its bundle makes the case book read each case's latest score (``case_model_score="close"``), which is what
    ``aml evaluate --account-score close`` and the replay's month-close account scores read too."""
    import contextlib
    import io

    import lightgbm as lgb
    from sectorflow_aml.account_training import (_stack, account_max, account_scores, labels_of, month_end_rows,
                                                 split_accounts, train)
    from sectorflow_aml.cases import read_cases
    from sectorflow_aml.learn_cli import write_account_bundle

    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    labels = read_labels(GENTEX / "accounts.csv.gz")
    rep = replay(txns)
    # the slice's last 20 % of days would hold most month-end rows: train on every day (time_holdout 0)
    trained = train([rep], [labels], seed=5, rounds=50, points="month_end", time_holdout=0.0)
    assert trained.metrics["points"] == "month_end" and "month-end rows" in trained.metrics["split"]
    y = labels_of(rep, labels)
    val = split_accounts(y, 0.25, 5)
    _, yt, xv, av, _, yv_acc = _stack([rep], [y], [val], 0.0, "month_end")
    ends = month_end_rows(rep)
    assert yt.size == int(np.sum(ends & (y[rep.account] >= 0) & ~val[rep.account]))
    assert xv.shape[0] == int(np.sum(ends & val[rep.account] & (y[rep.account] >= 0)))
    booster = lgb.Booster(model_str=trained.model_text)
    raw = booster.predict(xv, raw_score=True, num_iteration=25, num_threads=1)
    vmask = yv_acc >= 0
    assert round(average_precision(account_max(raw, av, yv_acc.size)[vmask], yv_acc[vmask]), 6) == \
        dict(trained.metrics["history"])[25]
    out = tmp_path / "b"
    write_account_bundle(out, trained, lookback_days=30.0, datasets=[], command="test")
    config = json.loads((out / "account_model.json").read_text())
    assert config["training_points"] == "month_end" and "month-close" in config["calibration"]["fitted_on"]
    flow = Taskflow("aml", task_path=str(out), report_timezone="UTC")
    assert flow.pipeline.case_book.model_score == "close"
    assert Taskflow("aml", task_path=str(out), case_model_score="max").pipeline.case_book.model_score == "max"
    results = tmp_path / "r.jsonl"
    assert cli_main(["run", "aml", str(gentex_slice), "--format", "amlgentex", "--task-path", str(out),
                     "--output", str(results), "--option", "report_timezone=UTC"]) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    last: dict[tuple[str, str], float] = {}  # (case id, account) -> the account's latest score in a case update
    for row in rows:
        for u in row["cases"]:
            if u["account"] in row["account_scores"]:
                last[(u["case_id"], u["account"])] = row["account_scores"][u["account"]]
    cases = read_cases(results, everything=True)
    assert cases and all(c.model_score == last[(c.case_id, c.account)] for c in cases)
    # aml evaluate --account-score close: the replay's month-close account scores
    index = {a: i for i, a in enumerate(rep.accounts)}
    expected = account_scores(trained.model_text, trained.platt, rep, "month_end")
    months = {t.transaction_id: t.timestamp.year * 12 + t.timestamp.month - 1 for t in txns}
    from sectorflow_aml.evaluation import account_scores_of, read_results

    best, _, _ = account_scores_of(read_results(results), months, "close")
    assert all(abs(best[a] - expected[index[a]]) <= 1e-6 for a in best)
    high, _, _ = account_scores_of(read_results(results), months)
    assert all(high[a] >= best[a] for a in best) and any(high[a] > best[a] for a in best)
    metrics = evaluate_results(results, labels, months, account_score="close")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["aml", "evaluate", "--results", str(results), "--labels", str(GENTEX / "accounts.csv.gz"),
                         "--transactions", str(gentex_slice), "--format", "amlgentex", "--account-score", "close",
                         "--json"]) == 0
    assert json.loads(buf.getvalue())["average_precision"] == metrics["average_precision"]
    assert cli_main(["aml", "evaluate", "--results", str(results), "--labels", str(GENTEX / "accounts.csv.gz"),
                     "--account-score", "mean"]) == 2
    assert cli_main(["aml", "train", str(gentex_slice), "--labels", str(GENTEX / "accounts.csv.gz"), "--format",
                     "amlgentex", "--out", str(tmp_path / "c"), "--points", "weekly"]) == 2
    assert cli_main(["aml", "train", str(gentex_slice), "--labels", str(GENTEX / "accounts.csv.gz"), "--format",
                     "amlgentex", "--out", str(tmp_path / "c"), "--points", "month_end", "--model", "mlp"]) == 2
    assert not (tmp_path / "c").exists()


@needs_data
def test_month_close_cases_do_not_depend_on_how_the_stream_is_cut_or_resumed(gentex_slice, tmp_path):
    """With a bundle trained on month-end rows (``case_model_score="close"``): one at a time, in chunks and in one
    batch give the same results, and a run resumed from a JSON state equals the uninterrupted one, byte for byte."""
    from sectorflow_aml.account_training import train
    from sectorflow_aml.learn_cli import write_account_bundle

    txns, _ = load_transactions(gentex_slice, format="amlgentex")
    rep = replay(txns)
    trained = train([rep], [read_labels(GENTEX / "accounts.csv.gz")], seed=5, rounds=25, points="month_end",
                    time_holdout=0.0)
    out = tmp_path / "b"
    write_account_bundle(out, trained, lookback_days=30.0, datasets=[], command="test")
    part = txns[:4000]
    flow = Taskflow("aml", task_path=str(out), batch_size=64)
    assert flow.pipeline.case_book.model_score == "close"
    full = [r.model_dump_json() for r in flow(part)]
    assert sum(bool(json.loads(r)["cases"]) for r in full) > 100
    one = Taskflow("aml", task_path=str(out), batch_size=64)
    assert [r.model_dump_json() for t in part[:1200] for r in one([t])] == full[:1200]
    chunked = Taskflow("aml", task_path=str(out), batch_size=64)
    assert [r.model_dump_json() for i in range(0, 4000, 333) for r in chunked(part[i:i + 333])] == full
    first = Taskflow("aml", task_path=str(out), batch_size=64)
    head = [r.model_dump_json() for r in first(part[:2500])]
    text = json.dumps(first.pipeline.state_dict(), allow_nan=False)
    fresh = Taskflow("aml", task_path=str(out), batch_size=64)
    fresh.pipeline.load_state_dict(json.loads(text))
    assert head + [r.model_dump_json() for r in fresh(part[2500:])] == full
