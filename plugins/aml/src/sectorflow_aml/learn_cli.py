"""``sectorflow aml train`` and ``sectorflow aml evaluate``: the account risk model from the bank's own labels.

- :func:`train_bundle`: replay labelled transaction files through the serving window and account features
  (:mod:`sectorflow_aml.account_training`), train, calibrate, and write a ``lightgbm`` bundle (``account_model.txt``,
  ``account_model.json``, ``manifest.json`` with the feature list, validation metrics, the sha256 of the training
  data as read, the command and the versions). ``Taskflow("aml", task_path=BUNDLE)`` and ``sectorflow run aml
  --task-path BUNDLE`` use it; results then carry ``account_scores``.
- :func:`~sectorflow_aml.evaluation.evaluate_results`: account-level metrics of a run's results.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer

from sectorflow import ConfigError, __version__ as core_version, write_manifest

from . import __version__
from .account_features import ACCOUNT_FEATURES
from .account_scorer import ACCOUNT_CONFIG
from .account_training import DEFAULT_POINTS, POINTS, Replay, Trained, replay, train
from .labels import MIN_LABEL_OVERLAP, Labels, LabelsError, read_labels
from .loaders import guess_format, load_transactions

MODEL_FILE = "account_model.txt"

FITTED_ON = {"month_end": "validation account-month month-close scores (each account's last row of each UTC month)",
             "daily": "validation account-month maxima"}
"""What the bundle's Platt scaling was fitted on, by training points (``account_model.json`` ``calibration``)."""

TRAINING_ROWS = {
    "month_end": "one row per account per UTC calendar month it is active (its row after its last transaction of the "
                 "month, the month-close row), labelled with the account label",
    "daily": "one snapshot per account per UTC day it is active (its row after its last transaction that day), "
             "labelled with the account label"}
SHIPPED_BUNDLE = Path(__file__).resolve().parent / "bundle"
"""The plugin's shipped bundle folder (``plugin.BUNDLE_DIR``): ``aml train`` never writes there."""

OWN_SUFFIX = "-own"
"""Added to the model kind for the default ``--name`` of a trained bundle (``aml-account-gbdt-own``), so that results
(``meta.model_name``) tell a bank's own bundle from the shipped one (``aml-account-gbdt`` in the shipped manifest)."""


def check_out_folder(out: str | Path, force: bool = False) -> Path:
    """Refuse an ``--out`` that would overwrite something: the plugin's shipped bundle folder (:data:`SHIPPED_BUNDLE`, or
    a folder inside it) always; an existing folder that holds files unless ``force``; a file.

    Found by a fresh-user test: ``--out plugins/aml/src/sectorflow_aml/bundle`` replaced the shipped model without a
    word, and every later default run used the new one.

    Raises:
        ConfigError: what to give instead (a new or empty folder, ``--force``).
    """
    out = Path(out)
    target = out.resolve()
    shipped = SHIPPED_BUNDLE
    if target == shipped or shipped in target.parents:
        raise ConfigError(f"--out {out} is the bundle shipped with sectorflow-aml ({shipped}); it is never "
                          "overwritten, not even with --force: pick another folder (e.g. --out my-bundle) and run "
                          "with --task-path my-bundle.", details={"out": str(out), "shipped": str(shipped)})
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file: give a new or empty folder.", details={"out": str(out)})
    held = [p for p in out.iterdir()] if out.is_dir() else []
    if held and not force:
        raise ConfigError(f"--out {out} already holds {len(held)} file(s) or folder(s) (e.g. {held[0].name}): give a "
                          "new or empty folder, or add --force to replace the bundle in it.",
                          details={"out": str(out), "entries": len(held)})
    return out


def shipped_identities() -> set[tuple[str, str]]:
    """``(name, version)`` of the models in the shipped bundle (:data:`SHIPPED_BUNDLE`): the manifest's own
    (``aml-risk-mlp`` ``2.1.0``) and its ``account_model`` section's (``aml-account-gbdt`` ``1.0.0``), as results'
    ``meta.model_name``/``model_version`` show them."""
    try:
        manifest = json.loads((SHIPPED_BUNDLE / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    out = {(str(manifest.get("name")), str(manifest.get("version")))}
    section = manifest.get("account_model")
    if isinstance(section, dict) and section.get("name"):
        out.add((str(section["name"]), str(section.get("version") or manifest.get("version"))))
    return out


def check_identity(name: str, version: str, option: str = "--name/--version") -> None:
    """Refuse a trained bundle's identity that is a shipped model's (:func:`shipped_identities`): its results would
    read as the shipped model's (fresh-user report: ``aml train --name aml-account-gbdt --version 1.0.0`` was
    accepted).

    Raises:
        ConfigError: naming the identity and what to give.
    """
    if (name, version) in shipped_identities():
        raise ConfigError(f"{option} {name} {version} is the identity of the model shipped with sectorflow-aml: "
                          "results of this bundle could not be told from the shipped model's (meta.model_name, "
                          "model_version). Give another --name or --version, or leave them out (default "
                          f"aml-account-<model>{OWN_SUFFIX} and the date with the training data's digest).",
                          details={"name": name, "version": version})


def bundle_identity(model: str, datasets: Sequence[dict[str, Any]], name: str | None = None,
                    version: str | None = None) -> tuple[str, str]:
    """``(name, version)`` of a trained bundle: ``name`` or ``aml-account-<model>-own``; ``version`` or
    ``<UTC date>+<first 12 hex of the sha256 of the training files' digests>`` (e.g. ``2026.12.02+3f0c2a9b51de``), so
    that results' ``meta.model_name``/``model_version`` tell it from the shipped bundle and from a bundle of other
    data."""
    digest = hashlib.sha256("\n".join(str(d.get("sha256_as_read")) for d in datasets).encode()).hexdigest()
    return (name or f"aml-account-{model}{OWN_SUFFIX}",
            version or f"{datetime.now(timezone.utc):%Y.%m.%d}+{digest[:12]}")


def check_label_overlap(labels: Labels, accounts: set[str], name: str, labels_name: str) -> None:
    """Refuse labels of which fewer than :data:`~sectorflow_aml.labels.MIN_LABEL_OVERLAP` (50 %) of the accounts
    transact in the training file(s) ``name`` (as ``aml evaluate`` refuses them for a run's results).

    Raises:
        LabelsError: with the counts and which files to give.
    """
    found = sum(1 for account in labels.label if account in accounts)
    if found < MIN_LABEL_OVERLAP * len(labels):
        raise LabelsError(
            f"Only {found:,} of the {len(labels):,} labelled accounts of {labels_name} "
            f"({100.0 * found / max(len(labels), 1):.0f} %; at least {MIN_LABEL_OVERLAP:.0%} needed) transact in "
            f"{name} ({len(accounts):,} accounts): are these the labels of another dataset? Give the labels of these "
            "transactions (AMLSim: the nodes.csv.gz, AMLGentex: the accounts.csv.gz of the same folder; one --labels "
            "per file when the files are separate runs).",
            details={"labelled": len(labels), "found": found, "transaction_accounts": len(accounts)})


def write_account_bundle(out: str | Path, trained: Trained, *, lookback_days: float, datasets: list[dict[str, Any]],
                         command: str, name: str = "aml-account-gbdt", version: str = "1.0.0",
                         extra: dict[str, Any] | None = None) -> Path:
    """Write a ``lightgbm`` bundle holding the account model; returns the manifest path.

    Raises:
        ConfigError: ``out`` exists and is not an empty folder or an account bundle (never overwrites other files).
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / ACCOUNT_CONFIG).is_file():
        raise ConfigError(f"--out {out} exists and is not an account model bundle: give a new or empty folder.")
    out.mkdir(parents=True, exist_ok=True)
    points = trained.metrics.get("points", "daily")
    (out / MODEL_FILE).write_text(trained.model_text, encoding="utf-8")
    config = {"feature_names": list(ACCOUNT_FEATURES), "lookback_days": float(lookback_days),
              "model_file": MODEL_FILE, "calibration": {"method": "platt", "a": trained.platt[0], "b": trained.platt[1],
                                                        "fitted_on": FITTED_ON[points]},
              "threshold": trained.metrics.get("threshold_best_f1"), "num_trees": trained.num_trees,
              "training_points": points}
    (out / ACCOUNT_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    try:
        import lightgbm

        lgb_version = lightgbm.__version__
    except ImportError:  # pragma: no cover
        lgb_version = None
    return write_manifest(
        out, task="aml", name=name, version=version, format="lightgbm", labels=["laundering_risk"],
        metrics={"account_level": {"validation": trained.metrics}},
        features=list(ACCOUNT_FEATURES),
        provenance={"command": command, "datasets": datasets, "lookback_days": float(lookback_days),
                    "params": {k: v for k, v in trained.params.items() if k != "verbose"},
                    "training_rows": TRAINING_ROWS[points],
                    "versions": {"sectorflow": core_version, "sectorflow_aml": __version__, "lightgbm": lgb_version,
                                 "python": platform.python_version()},
                    "trained_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                    **(extra or {})})


def train_bundle(sources: Sequence[str | Path], labels: Sequence[str | Path], out: str | Path, *,
                 fmt: str | None = None, lookback_days: float = 30.0, seed: int = 20211, val_share: float = 0.25,
                 command: str | None = None, log: Callable[[str], None] | None = None,
                 model: str = "gbdt", force: bool = False, name: str | None = None,
                 version: str | None = None, points: str | None = None) -> dict[str, Any]:
    """Train an account model on labelled transaction files and write its bundle; returns the manifest.

    ``model``: ``gbdt`` (LightGBM, a ``lightgbm`` bundle) or ``mlp`` (the network of
    :mod:`sectorflow_aml.account_mlp`, an ``account-mlp`` bundle): same rows, split and calibration.

    ``labels``: one file for all ``sources`` (one bank's files), or one per source (separate runs whose account ids
    may repeat). ``out``: checked first by :func:`check_out_folder` (``force`` replaces a bundle there). ``name`` and
    ``version``: the bundle's identity (:func:`bundle_identity`; default ``aml-account-<model>-own`` and the date with
    the training data's digest).

    Raises:
        ConfigError: neither one labels file nor one per source, an unknown ``model`` or ``points`` (``mlp``: daily
            only), an ``--out`` that :func:`check_out_folder` refuses, or ``name`` and ``version`` of a shipped model
            (:func:`check_identity`).
        LabelsError: a bad labels file, or labels of which fewer than 50 % of the accounts transact in their file(s)
            (:func:`check_label_overlap`).
        InvalidInputError: a split without both classes.
    """
    if points is not None and points not in POINTS:
        raise ConfigError(f"--points {points!r}: give {' or '.join(POINTS)}.", details={"points": points})
    if model == "mlp" and points not in (None, "daily"):
        raise ConfigError(f"--points {points}: the mlp model trains on daily snapshots only (give --points daily "
                          "or leave it out, or use --model gbdt).", details={"points": points})
    if model not in ("gbdt", "mlp"):
        raise ConfigError(f"--model {model!r}: give gbdt (LightGBM) or mlp (a network that federated training "
                          "can average).")
    if len(labels) not in (1, len(sources)):
        raise ConfigError(f"Give one --labels file for all transaction files or one per file ({len(sources)}); got "
                          f"{len(labels)}.")
    check_out_folder(out, force)
    if name is not None and version is not None:
        check_identity(name, version)
    read = [read_labels(p) for p in labels]
    if len(read) == 1 and len(sources) > 1:  # one bank's files: one replay of all of them, in the order given
        txns = []
        for source in sources:
            txns.extend(load_transactions(source, format=fmt or guess_format(source))[0])
        groups = [("+".join(str(s) for s in sources), txns, read[0])]
    else:
        groups = [(str(source), load_transactions(source, format=fmt or guess_format(source))[0], lab)
                  for source, lab in zip(sources, read)]
    for (group, txns, lab), path in zip(groups, labels):
        check_label_overlap(lab, {a for t in txns for a in (t.sender_account, t.receiver_account)}, group, str(path))
    reps: list[Replay] = []
    pairs = []
    for group, txns, lab in groups:
        rep = replay(txns, lookback_days, name=group)
        if log:
            log(f"{group}: {rep.n_transactions:,} transactions, {len(rep.accounts):,} accounts, "
                f"{rep.x.shape[0]:,} account rows ({rep.seconds:.1f} s)")
        reps.append(rep)
        pairs.append((group, lab))
    datasets = [{"file": str(source), "sha256_as_read": rep.digest, "transactions": rep.n_transactions,
                 "labelled_accounts": len(lab), "laundering_accounts": lab.positives,
                 "labels": lab.source} for (source, lab), rep in zip(pairs, reps)]
    command = command or " ".join(["sectorflow", "aml", "train", *map(str, sources)])
    name, version = bundle_identity(model, datasets, name, version)
    if model == "mlp":
        from .account_mlp import train_mlp, write_mlp_bundle


        mlp = train_mlp(reps, [lab for _, lab in pairs], seed=seed, val_share=val_share, log=log)
        manifest_path = write_mlp_bundle(out, mlp, lookback_days=lookback_days, datasets=datasets, command=command,
                                         name=name, version=version)
        return json.loads(manifest_path.read_text(encoding="utf-8"))
    trained = train(reps, [lab for _, lab in pairs], seed=seed, val_share=val_share, log=log,
                    points=points or DEFAULT_POINTS)
    manifest_path = write_account_bundle(out, trained, lookback_days=lookback_days, datasets=datasets,
                                         command=command, name=name, version=version)
    return json.loads(manifest_path.read_text(encoding="utf-8"))


def train_command(
        transactions: list[Path] = typer.Argument(..., help="Transaction files (read as `sectorflow run aml` does)."),
        labels: list[Path] = typer.Option(..., "--labels", "-l", help="Account labels: account_id,label[,typology] "
                                          "(or AMLGentex accounts.csv.gz / AMLSim nodes.csv.gz), or analysts' case "
                                          "dispositions (CSV case_id,account_id,period,disposition,reason,decided_by,"
                                          "decided_at or JSON lines with those keys); one for all files or one per "
                                          "file, repeatable."),
        out: Path = typer.Option(..., "--out", "-o", help="Folder of the bundle to write: new or empty (or --force); "
                                 "never the plugin's shipped bundle folder."),
        force: bool = typer.Option(False, "--force", help="Replace what --out already holds."),
        name: Optional[str] = typer.Option(None, "--name", help="The bundle's model name, as results' "
                                           "meta.model_name (default aml-account-gbdt-own, or -mlp-own)."),
        version: Optional[str] = typer.Option(None, "--version", help="The bundle's version, as results' "
                                              "meta.model_version (default: UTC date + the training data's digest)."),
        fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Input format (default: guessed)."),
        lookback_days: float = typer.Option(30.0, "--lookback-days", help="Window the features see (days)."),
        seed: int = typer.Option(20211, "--seed", help="Seed of the validation split and the trees."),
        model: str = typer.Option("gbdt", "--model", help="gbdt (LightGBM) or mlp (a network; the kind "
                                  "`sectorflow federate` averages across banks)."),
        points: Optional[str] = typer.Option(None, "--points", help="Training points of the gbdt: daily (default: "
                                             "daily snapshots) or month_end (each account's row at its last "
                                             "transaction of each UTC month; the bundle's cases are then read at "
                                             "each period's close)."),
) -> None:
    """Train the account risk model on labelled transactions and write a bundle (use it with --task-path)."""
    manifest = train_bundle(transactions, labels, out, fmt=fmt, lookback_days=lookback_days, seed=seed,
                            command=" ".join(["sectorflow aml train", *sys.argv[3:]]) if len(sys.argv) > 3 else None,
                            log=lambda m: typer.echo(m, err=True), model=model, force=force, name=name,
                            version=version, points=points)
    v = manifest["metrics"]["account_level"]["validation"]
    typer.echo(f"wrote {out} ({manifest['name']} {manifest['version']}): validation account AP {v['average_precision']}, precision at K {v['precision_at_k']} "
               f"(K={v['k']}), recall at 1% FPR {v['recall_at_1pct_fpr']} (base rate {v['base_rate']})")


def evaluate_command(
        results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
        labels: Path = typer.Option(..., "--labels", "-l", help="Account labels (as for `aml train`)."),
        transactions: Optional[Path] = typer.Option(None, "--transactions", "-t", help="The run's input: the "
                                                    "results are checked against it, and its months are the alert "
                                                    "budget's periods (without it the run is one period)."),
        fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Format of --transactions."),
        budget: str = typer.Option("1%", "--budget", help="Share of active accounts flagged per month: 1% or 0.01 "
                                   "(as `aml cases --budget` writes a share)."),
        as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
        account_score: str = typer.Option("max", "--account-score", help="An account's score: max (the highest of "
                                          "its scores, default) or close (the max over months of its month-close "
                                          "score, its score after its last transaction of the month: for a bundle "
                                          "trained with --points month_end)."),
) -> None:
    """Account-level average precision, precision at K, recall at 1% FPR, budget precision, alert rate."""
    from .evaluation import evaluate_results

    from .evaluation import transaction_index

    budget = _budget_share(budget)
    index = transaction_index(transactions, fmt) if transactions is not None else None
    if index is None:
        typer.echo("note: without --transactions the results are not checked against the run's input (results of "
                   "another AMLGentex bank have the same account ids) and the run is one budget period.", err=True)
    metrics = evaluate_results(results, read_labels(labels), None, budget, transactions=index,
                               transactions_name=str(transactions), account_score=account_score)
    if as_json:
        typer.echo(json.dumps(metrics, indent=2))
        return
    b = metrics["budget"]
    typer.echo(f"accounts: {metrics['labelled_accounts']:,} labelled, {metrics['laundering_accounts']:,} laundering "
               f"(base rate {metrics['base_rate']})")
    typer.echo(f"average precision {metrics['average_precision']}, precision at K={metrics['k']} "
               f"{metrics['precision_at_k']}, recall at 1% FPR {metrics['recall_at_1pct_fpr']}")
    typer.echo(f"budget {b['share']:.0%} of active accounts per period ({b['periods']} periods): precision "
               f"{b['precision']}, recall {b['recall']}; alert rate {metrics['alert_rate']} (share of active accounts named by "
               "any rule alert or flagged transaction, not by a case: the cases are what the budget keeps)")
    for t, v in metrics["recall_by_typology"].items():
        typer.echo(f"  {t}: recall at K {v['recall_at_k']} ({v['accounts']} accounts)")


def _budget_share(text: str) -> float:
    """``--budget`` of ``aml evaluate``: ``1%`` or ``0.01`` -> 0.01; anything else (a case count, a score
    threshold, a share outside (0, 1]) is a :class:`ConfigError` saying what to write."""
    raw = text.strip()
    try:
        share = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:
        raise ConfigError(f"--budget {text!r}: give a share of active accounts above 0 and at most 1, as 1% or 0.01 "
                          "(a case count or score threshold is a case book budget: `sectorflow aml cases --budget`).")
    return share


def register(app: typer.Typer) -> None:
    """Add ``train`` and ``evaluate`` to the ``aml`` command group."""
    app.command("train")(train_command)
    app.command("evaluate")(evaluate_command)
