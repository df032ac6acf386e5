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
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer

from sectorflow import ConfigError, InvalidInputError, __version__ as core_version, field_pairs, write_manifest

from . import __version__
from .account_features import ACCOUNT_FEATURES
from .account_scorer import ACCOUNT_CONFIG
from .account_training import DEFAULT_POINTS, POINTS, Replay, Trained, replay, train
from .labels import MIN_LABEL_OVERLAP, Labels, LabelsError, read_labels
from .loaders import READER_FACTORIES, _check_mapping, guess_format, load_transactions
from .outputs import SHIPPED_BUNDLE, check_out_folder

MODEL_FILE = "account_model.txt"

FITTED_ON = {"month_end": "validation account-month month-close scores (each account's last row of each UTC month)",
             "daily": "validation account-month maxima"}
"""What the bundle's Platt scaling was fitted on, by training points (``account_model.json`` ``calibration``)."""

TRAINING_ROWS = {
    "month_end": "one row per account per UTC calendar month it is active (its row after its last transaction of the "
                 "month, the month-close row), labelled with the account label",
    "daily": "one snapshot per account per UTC day it is active (its row after its last transaction that day), "
             "labelled with the account label"}
OWN_SUFFIX = "-own"
"""Added to the model kind for the default ``--name`` of a trained bundle (``aml-account-gbdt-own``), so that results
(``meta.model_name``) tell a bank's own bundle from the shipped one (``aml-account-gbdt`` in the shipped manifest)."""


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
                    version: str | None = None, options: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(name, version)`` of a trained bundle: ``name`` or ``aml-account-<model>-own``; ``version`` or
    ``<UTC date>+<first 12 hex of a sha256>`` (e.g. ``2026.12.02+3f0c2a9b51de``) of the training files' digests and,
    when given, the training ``options`` that change the model (:func:`training_options`: model kind, points,
    lookback, seed, validation share; as sorted JSON on a last line), so that results' ``meta.model_name`` /
    ``model_version`` tell it from the shipped bundle, from a bundle of other data and from a bundle of the same
    data trained otherwise (before 3 Dec 2026 two bundles of one file trained with ``--points daily`` and
    ``month_end`` had the same identity). ``sectorflow federate aml`` gives no ``options``: its digest is of the
    institutions' data digests alone, as before."""
    lines = [str(d.get("sha256_as_read")) for d in datasets]
    if options:
        lines.append(json.dumps(dict(options), sort_keys=True, separators=(",", ":")))
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return (name or f"aml-account-{model}{OWN_SUFFIX}",
            version or f"{datetime.now(timezone.utc):%Y.%m.%d}+{digest[:12]}")


def training_options(model: str, points: str | None, lookback_days: float, seed: int,
                     val_share: float) -> dict[str, Any]:
    """The options of ``aml train`` that change the model trained on the same data, as the bundle's identity
    (:func:`bundle_identity`) and its manifest (``provenance.training_options``) record them."""
    return {"model": model, "points": points or DEFAULT_POINTS, "lookback_days": float(lookback_days),
            "seed": int(seed), "val_share": float(val_share)}


def check_distinct_sources(sources: Sequence[str | Path]) -> None:
    """Refuse the same transaction file given twice (by resolved path, or by the SHA-256 of its bytes): its
    transactions would be trained on twice (a fresh user's ``aml train a.csv a.csv`` was accepted).

    Raises:
        ConfigError: naming both arguments.
    """
    seen: dict[Path, str] = {}
    for source in sources:
        path = Path(source)
        key = path.resolve()
        if key in seen:
            raise ConfigError(f"The transaction file {source} is given twice ({seen[key]} and {source}): its "
                              "transactions would be trained on twice. Give each file once.",
                              details={"files": [seen[key], str(source)]})
        seen[key] = str(source)
    digests: dict[str, str] = {}
    for key, source in seen.items():
        if not key.is_file():
            continue  # the reader says what is missing
        with key.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        if digest in digests:
            raise ConfigError(f"The transaction files {digests[digest]} and {source} have the same content (SHA-256 "
                              f"{digest[:12]}...): its transactions would be trained on twice. Give each file once.",
                              details={"files": [digests[digest], source], "sha256": digest})
        digests[digest] = source


def _refuse_overlapping_file(txns: Sequence[Any], source: str, seen: dict[tuple, str]) -> None:
    """Refuse a file of the bank whose transactions are mostly (half or more, by timestamp, accounts, amount and
    currency) those of an earlier file (``seen``: key -> file): a ``.csv.gz`` and its decompressed copy, or a
    re-export, whose transactions would be trained on twice (fresh-user report, 3 Dec 2026: such a pair trained on
    7,153 of 2 x 3,814 transactions, exit 0; the byte check cannot see it). Ids are not compared: formats without a
    transaction id number rows per file. A few equal transactions (a standing order paid twice the same second) are
    not an overlap. Adds ``source``'s keys to ``seen``.

    Raises:
        ConfigError: naming both files and the share repeated.
    """
    keys = [(t.timestamp, t.sender_account, t.receiver_account, t.amount, t.currency) for t in txns]
    earlier = [seen[k] for k in keys if k in seen]
    if keys and len(earlier) * 2 >= len(keys):
        raise ConfigError(f"{len(earlier):,} of the {len(keys):,} transactions of {source} are in {earlier[0]} too "
                          "(same time, accounts, amount and currency): the files overlap and those transactions "
                          "would be trained on twice. Give each transaction once.",
                          details={"files": [earlier[0], source], "repeated": len(earlier)})
    seen.update((k, source) for k in keys if k not in seen)


def _read_training_file(source: str | Path, fmt: str | None, on_error: str, log: Callable[[str], None] | None,
                        mapping: Mapping[str, str] | None, defaults: Mapping[str, Any] | None,
                        input_timezone: str | None, skipped: dict[str, list[dict[str, Any]]] | None = None) -> list[Any]:
    """The transactions of one training file, validated as ``sectorflow run aml`` validates them: with ``on_error``
    ``reject`` a bad row raises (every bad row listed, each with its row and field), with ``skip`` the bad rows are
    left out and counted in ``log`` (and put in ``skipped[str(source)]``)."""
    fmt = fmt or guess_format(source)
    if (mapping or defaults) and fmt not in READER_FACTORIES:
        raise ConfigError(f"Format {fmt!r} has fixed columns: it takes no --column/--default. Formats that do: "
                          f"{', '.join(sorted(READER_FACTORIES))}.")
    options: dict[str, Any] = {}
    if defaults:
        options["defaults"] = dict(defaults)
    txns, problems = load_transactions(source, format=fmt,
                                       mapping=dict(mapping) if mapping else None, on_error="skip",
                                       input_timezone=input_timezone, **options)
    rows = sorted({p["row"] for p in problems if p.get("row") is not None})
    if problems and on_error == "reject":  # worded as `sectorflow run` words a rejected input
        raise InvalidInputError(f"{len(rows) or len(problems)} bad row(s) in {source}"
                                + (f" (first: row {rows[0]})" if rows else "") + "; nothing was trained. Fix them, "
                                "or pass --on-error skip to train on the good rows.", details=problems)
    if skipped is not None:
        skipped[str(source)] = problems
    if problems and log:
        first = problems[0]
        log(f"{source}: skipped {len(rows) or len(problems):,} bad row(s) (--on-error skip; first: row "
            f"{first.get('row')}: " + (f"{first['field']}: " if first.get("field") else "") + f"{first['reason']})")
    return txns


def refuse_empty_training_set(txns: Sequence[Any], group: str, sources: Sequence[str | Path],
                              skipped: Mapping[str, list[dict[str, Any]]]) -> None:
    """Refuse a training set with no transaction, saying why (fresh-user report, 3 Dec 2026: an empty file, or one
    whose every row ``--on-error skip`` left out, was answered "0 of the N labelled accounts transact in it: are
    these the labels of another dataset?").

    Raises:
        InvalidInputError: naming the file(s), how many rows were skipped and in which fields, and what to do.
    """
    if txns:
        return
    problems = [p for source in sources for p in skipped.get(str(source), [])]
    rows = {(str(source), p.get("row")) for source in sources for p in skipped.get(str(source), [])}
    if not problems:
        raise InvalidInputError(f"No transactions to train on in {group}: no rows (the file is empty or has only a "
                                "header). Give the transaction file(s) the labels belong to.",
                                details={"files": [str(s) for s in sources], "skipped": 0})
    fields: dict[str, int] = {}
    for problem in problems:
        key = str(problem.get("field") or "the row")
        fields[key] = fields.get(key, 0) + 1
    first = problems[0]
    named = ", ".join(f"{field} ({n:,})" for field, n in sorted(fields.items(), key=lambda kv: (-kv[1], kv[0])))
    raise InvalidInputError(
        f"No transactions left to train on in {group}: --on-error skip skipped all {len(rows):,} of its row(s) as "
        f"bad (fields: {named}; first: row {first.get('row')}: "
        + (f"{first['field']}: " if first.get("field") else "") + f"{first.get('reason')}). Fix those rows, or map "
        "the file's columns to the fields (--column FIELD=COLUMN, --default FIELD=VALUE), and train again (the "
        "labels were not compared with anything: no transaction was read).",
        details=problems)


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
                 version: str | None = None, points: str | None = None, on_error: str = "reject",
                 mapping: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
                 input_timezone: str | None = None) -> dict[str, Any]:
    """Train an account model on labelled transaction files and write its bundle; returns the manifest.

    ``model``: ``gbdt`` (LightGBM, a ``lightgbm`` bundle) or ``mlp`` (the network of
    :mod:`sectorflow_aml.account_mlp`, an ``account-mlp`` bundle): same rows, split and calibration.

    ``labels``: one file for all ``sources`` (one bank's files), or one per source (separate runs whose account ids
    may repeat). ``out``: checked first by :func:`check_out_folder` (``force`` replaces a bundle there, never other
    files). ``name`` and ``version``: the bundle's identity (:func:`bundle_identity`; default
    ``aml-account-<model>-own`` and the date with a digest of the training data and :func:`training_options`).

    The files are read and validated as ``sectorflow run aml`` reads them: ``mapping`` / ``defaults`` are its
    ``--column`` / ``--default`` (checked before any row is read), ``input_timezone`` its ``-O input_timezone``, and
    ``on_error`` its ``--on-error``: ``reject`` (default) raises on a bad row, ``skip`` leaves bad rows out and says
    how many (``log``). Before 3 Dec 2026 bad rows (an amount ``notanumber`` or ``-7``, a cut last row) were left out
    without a word.

    Raises:
        ConfigError: neither one labels file nor one per source, the same file twice (:func:`check_distinct_sources`),
            an unknown ``model``, ``points`` or ``on_error`` (``mlp``: daily only), an ``--out`` that
            :func:`check_out_folder` refuses, ``name`` and ``version`` of a shipped model (:func:`check_identity`),
            a bad ``mapping`` or ``defaults``.
        LabelsError: a bad labels file, or labels of which fewer than 50 % of the accounts transact in their file(s)
            (:func:`check_label_overlap`).
        InvalidInputError: a bad row (with ``on_error="reject"``: every bad row, naming the file, row and field); a
            file with no transaction left (:func:`refuse_empty_training_set`); a split without both classes.
    """
    if points is not None and points not in POINTS:
        raise ConfigError(f"--points {points!r}: give {' or '.join(POINTS)}.", details={"points": points})
    if model == "mlp" and points not in (None, "daily"):
        raise ConfigError(f"--points {points}: the mlp model trains on daily snapshots only (give --points daily "
                          "or leave it out, or use --model gbdt).", details={"points": points})
    if model not in ("gbdt", "mlp"):
        raise ConfigError(f"--model {model!r}: give gbdt (LightGBM) or mlp (a network that federated training "
                          "can average).")
    if on_error not in ("reject", "skip"):
        raise ConfigError(f"--on-error {on_error!r}: give reject (a bad row stops the training) or skip.")
    if len(labels) not in (1, len(sources)):
        raise ConfigError(f"Give one --labels file for all transaction files or one per file ({len(sources)}); got "
                          f"{len(labels)}.")
    check_out_folder(out, force)
    if name is not None and version is not None:
        check_identity(name, version)
    check_distinct_sources(sources)
    _check_mapping(mapping, defaults)  # before any file is read, as `sectorflow run` checks them

    skipped: dict[str, list[dict[str, Any]]] = {}

    def read_file(source: str | Path) -> list[Any]:
        return _read_training_file(source, fmt, on_error, log, mapping, defaults, input_timezone, skipped)

    read = [read_labels(p) for p in labels]
    if len(read) == 1 and len(sources) > 1:  # one bank's files: one replay of all of them, in the order given
        txns = []
        seen: dict[tuple, str] = {}  # a transaction's time, accounts, amount, currency -> the file it came from
        for source in sources:
            got = read_file(source)
            _refuse_overlapping_file(got, str(source), seen)
            txns.extend(got)
        groups = [("+".join(str(s) for s in sources), txns, read[0])]
        refuse_empty_training_set(txns, groups[0][0], sources, skipped)
    else:
        groups = [(str(source), read_file(source), lab) for source, lab in zip(sources, read)]
        for (group, txns, _), source in zip(groups, sources):
            refuse_empty_training_set(txns, group, [source], skipped)
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
    options = training_options(model, points, lookback_days, seed, val_share)
    name, version = bundle_identity(model, datasets, name, version, options)
    if model == "mlp":
        from .account_mlp import train_mlp, write_mlp_bundle

        mlp = train_mlp(reps, [lab for _, lab in pairs], seed=seed, val_share=val_share, log=log)
        manifest_path = write_mlp_bundle(out, mlp, lookback_days=lookback_days, datasets=datasets, command=command,
                                         name=name, version=version, extra={"training_options": options})
        return json.loads(manifest_path.read_text(encoding="utf-8"))
    trained = train(reps, [lab for _, lab in pairs], seed=seed, val_share=val_share, log=log,
                    points=points or DEFAULT_POINTS)
    manifest_path = write_account_bundle(out, trained, lookback_days=lookback_days, datasets=datasets,
                                         command=command, name=name, version=version,
                                         extra={"training_options": options})
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
        on_error: str = typer.Option("reject", "--on-error", help="Bad rows, as for `sectorflow run aml`: reject "
                                     "(default: the training stops, naming the file, row and field of every bad row) "
                                     "or skip (left out, and counted on stderr)."),
        column: list[str] = typer.Option([], "--column", help="As for `sectorflow run aml`: read field FIELD from the "
                                         "file's column COLUMN, FIELD=COLUMN, repeatable (csv, jsonl, parquet)."),
        default: list[str] = typer.Option([], "--default", help="As for `sectorflow run aml`: value of FIELD where "
                                          "the file has no such column or the cell is empty, FIELD=VALUE, "
                                          "repeatable."),
        input_timezone: Optional[str] = typer.Option(None, "--input-timezone", help="As the run's -O "
                                                     "input_timezone=ZONE: the time zone of timestamps without a "
                                                     "UTC offset (default UTC)."),
) -> None:
    """Train the account risk model on labelled transactions and write a bundle (use it with --task-path).

    The files are read and validated as `sectorflow run aml` reads them (--format, --column, --default,
    --input-timezone, --on-error); each file once (the same path or content twice is refused). --out is checked
    before anything is read: a new or empty folder, or with --force a folder holding an account model bundle."""
    manifest = train_bundle(transactions, labels, out, fmt=fmt, lookback_days=lookback_days, seed=seed,
                            command=" ".join(["sectorflow aml train", *sys.argv[3:]]) if len(sys.argv) > 3 else None,
                            log=lambda m: typer.echo(m, err=True), model=model, force=force, name=name,
                            version=version, points=points, on_error=on_error,
                            mapping=field_pairs("--column", "COLUMN", column),
                            defaults=field_pairs("--default", "VALUE", default), input_timezone=input_timezone)
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
        account_score: Optional[str] = typer.Option(None, "--account-score", help="An account's score: max (the "
                                                    "highest of its scores) or close (the max over months of its "
                                                    "month-close score, its score after its last transaction of the "
                                                    "month; needs --transactions for the months). Default: as the "
                                                    "run's cases read the scores (close for a bundle trained with "
                                                    "--points month_end, else max)."),
) -> None:
    """Account-level average precision, precision at K, recall at 1% FPR, budget precision, alert rate."""
    from .evaluation import case_reading, evaluate_results, read_results, transaction_index

    budget = _budget_share(budget)
    chosen = account_score
    if account_score is None:
        account_score = case_reading(read_results(results)) or "max"
    if account_score == "close" and transactions is None:
        why = ("--account-score close" if chosen else
               f"{results} are of a run whose cases read each account's score at the period's close (a bundle trained "
               "with --points month_end), so the default is --account-score close, which")
        raise ConfigError(f"{why} reads each account's score at the close of each month: give the run's input with "
                          "--transactions (and --format) for the months, or --account-score max for the highest "
                          "score. Without the months the whole run would be one period and an account's score its "
                          "last one.", details={"account_score": "close"})
    if chosen is None and account_score == "close":
        typer.echo("note: --account-score close (the run's cases read each account's score at the period's close); "
                   "give --account-score max for the highest score.", err=True)
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
    typer.echo(f"budget {b['share']:.0%} of active accounts per period ({b['periods']} period{'' if b['periods'] == 1 else 's'}): precision "
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
