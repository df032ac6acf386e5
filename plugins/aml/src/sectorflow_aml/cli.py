"""``sectorflow aml ...`` commands: list the alerts of a results file and draw one of them.

The flow (alerts live in the results that ``sectorflow run`` writes, amounts in the input file)::

    sectorflow run aml samples/aml/transactions.csv.gz --format amlsim --output results.jsonl
    sectorflow aml alerts --results results.jsonl
    sectorflow aml reports --results results.jsonl --kind large_value
    sectorflow aml explain ALERT_ID --results results.jsonl --input samples/aml/transactions.csv.gz \\
        --format amlsim --png alert.png

``cli.register(app)`` adds the ``aml`` sub-app to the ``sectorflow`` typer app (called from the plugin's
``sectorflow_register_commands`` hook).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError

from sectorflow import ConfigError, InvalidInputError, open_text

from .explain import draw_alert
from .loaders import READERS, guess_format
from .schema import Alert, ReportDraft, Transaction

aml_app = typer.Typer(help="Anti-money-laundering tools: list alerts, draw an alert's fund flow.",
                      no_args_is_help=True)


def iter_alerts(results: str | Path) -> Iterator[Alert]:
    """Every alert in a ``sectorflow run aml`` results file (JSON lines of ``TransactionAssessment``).

    Raises:
        ConfigError: the file is missing. InvalidInputError: a line that is not a result object (names the line).
    """
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                alerts = [Alert.model_validate(a) for a in record.get("alerts", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "alerts", "reason": str(exc)}]) from exc
            yield from alerts


def iter_reports(results: str | Path) -> Iterator[ReportDraft]:
    """Every report draft in a ``sectorflow run aml`` results file (same errors as :func:`iter_alerts`)."""
    with open_text(results) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                drafts = [ReportDraft.model_validate(r) for r in json.loads(line).get("reports", [])]
            except (json.JSONDecodeError, AttributeError, ValidationError) as exc:
                raise InvalidInputError(f"{results}, line {line_no}: not a sectorflow aml result ({exc}).",
                                        details=[{"row": line_no, "field": "reports", "reason": str(exc)}]) from exc
            yield from drafts


def find_alert(results: str | Path, alert_id: str) -> Alert:
    """The alert ``alert_id`` in ``results``. Raises ConfigError naming a few known ids when it is not there."""
    known: list[str] = []
    for alert in iter_alerts(results):
        if alert.alert_id == alert_id:
            return alert
        known.append(alert.alert_id)
    sample = ", ".join(known[:5]) or "none"
    raise ConfigError(f"No alert {alert_id!r} in {results} ({len(known)} alerts; e.g. {sample}). "
                      f"List them with `sectorflow aml alerts --results {results}`.")


def load_alert_transactions(source: str | Path, fmt: str | None, ids: set[str]) -> list[Transaction]:
    """The transactions of ``source`` whose ids are in ``ids`` (other rows are not validated)."""
    fmt = fmt or guess_format(source)
    if fmt not in READERS:
        raise ConfigError(f"Unknown format {fmt!r}; use one of {', '.join(sorted(READERS))}.")
    found = []
    for _, record in READERS[fmt](source):
        if isinstance(record, Transaction):  # a typed reader's row, already checked
            if record.transaction_id in ids:
                found.append(record)
        elif isinstance(record, dict) and record.get("transaction_id") in ids:
            found.append(Transaction.model_validate(record))
    return found


def explain_alert(alert_id: str, results: str | Path, source: str | Path, png: str | Path,
                  fmt: str | None = None) -> Path:
    """Python equivalent of ``sectorflow aml explain``: find the alert, read its transactions, draw the PNG."""
    alert = find_alert(results, alert_id)
    transactions = load_alert_transactions(source, fmt, set(alert.transaction_ids))
    check_input_matches(alert, transactions, source)
    return draw_alert(alert, transactions, png)


def check_input_matches(alert: Alert, transactions: list[Transaction], source: str | Path) -> None:
    """Refuse to draw from an input file that is not the one the results came from.

    Transaction ids alone do not prove it (the AMLSim reader numbers rows, so every AMLSim file has the same ids):
    every transaction of the alert must be in the file, and each must involve one of the alert's accounts.

    Raises:
        InvalidInputError: ids missing from the file, or transactions between accounts the alert does not name.
    """
    found = {t.transaction_id for t in transactions}
    missing = [tid for tid in alert.transaction_ids if tid not in found]
    accounts = set(alert.accounts)
    foreign = [t.transaction_id for t in transactions
               if t.sender_account not in accounts and t.receiver_account not in accounts]
    if missing or foreign:
        what = (f"{len(missing)} of the alert's {len(alert.transaction_ids)} transactions are not in it"
                if missing else f"transactions {', '.join(foreign[:5])} there involve none of the alert's accounts")
        raise InvalidInputError(f"{source} is not the input that produced alert {alert.alert_id}: {what}. Pass the "
                                f"same --input (and --format) that `sectorflow run aml` read.",
                                details={"missing": missing[:20], "foreign": foreign[:20]})


@aml_app.command("alerts")
def alerts_command(results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
                   as_json: bool = typer.Option(False, "--json", help="One JSON alert per line.")) -> None:
    """List the alerts in a results file (id, typology, score, accounts, number of transactions)."""
    for alert in iter_alerts(results):
        if as_json:
            typer.echo(alert.model_dump_json())
        else:
            accounts = ",".join(alert.accounts[:6]) + ("..." if len(alert.accounts) > 6 else "")
            typer.echo(f"{alert.alert_id}\t{alert.typology}\t{alert.score:.2f}\t{len(alert.transaction_ids)} tx"
                       f"\t{accounts}")


@aml_app.command("reports")
def reports_command(results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
                    kind: Optional[str] = typer.Option(None, help="Only large_value, ctr or suspicious."),
                    as_json: bool = typer.Option(False, "--json", help="One JSON draft per line.")) -> None:
    """List the report drafts in a results file (id, kind, regulation, customer, total, business date, due date)."""
    kinds = ("large_value", "ctr", "suspicious")
    if kind is not None and kind not in kinds:
        raise typer.BadParameter(f"--kind {kind!r}: use one of {', '.join(kinds)}.")
    for draft in iter_reports(results):
        if kind and draft.kind != kind:
            continue
        if as_json:
            typer.echo(draft.model_dump_json())
        else:
            typer.echo(f"{draft.report_id}\t{draft.kind}\t{draft.regulation}\t{draft.customer_account}\t"
                       f"{draft.total_amount} {draft.currency}\t{draft.business_date}\tdue {_due_text(draft)}")


def _due_text(draft: ReportDraft) -> str:
    """``due_by``, or for a suspicious report not yet confirmed its rule and the date if confirmed on detection."""
    if draft.due_by:
        return draft.due_by
    if draft.kind == "suspicious" and draft.elements.get("due_if_confirmed_on_detection"):
        return (f"{draft.elements['due_if_confirmed_on_detection']} if confirmed on the detection day "
                f"({draft.elements.get('due_rule', 'after confirmation')})")
    return "-"


@aml_app.command("explain")
def explain_command(
    alert_id: str = typer.Argument(..., help="Alert id, as listed by `sectorflow aml alerts`."),
    results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
    source: str = typer.Option(..., "--input", "-i", help="The transaction file the results came from."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Input format: amlsim, amlworld, csv, jsonl, "
                                                                   "parquet (default: guessed)."),
    png: Path = typer.Option(..., "--png", help="PNG file to write."),
) -> None:
    """Draw ALERT_ID's fund flow (accounts as nodes, transfers as arrows with amount and time) as a PNG."""
    path = explain_alert(alert_id, results, source, png, fmt)
    typer.echo(str(path))


def register(app: Any) -> None:
    """Add the ``aml`` command group to the ``sectorflow`` typer app."""
    app.add_typer(aml_app, name="aml")
