"""``sectorflow aml ...`` commands: list the alerts of a results file and draw one of them.

The flow (alerts live in the results that ``sectorflow run`` writes, amounts in the input file)::

    sectorflow run aml samples/aml/transactions.csv.gz --format amlsim --output results.jsonl
    sectorflow aml cases --results results.jsonl          # ranked cases within the alert budget
    sectorflow aml alerts --results results.jsonl
    sectorflow aml reports --results results.jsonl --kind large_value
    sectorflow aml explain ALERT_ID --results results.jsonl --input samples/aml/transactions.csv.gz \\
        --format amlsim --png alert.png

The reading and checking of results files is :mod:`.results`. ``cli.register(app)`` adds the ``aml`` sub-app to the
``sectorflow`` typer app (called from the plugin's ``sectorflow_register_commands`` hook).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from sectorflow import field_pairs, writable_file

from .cases import read_cases
from .explain import draw_alert
from .results import checked_alert, explain_case, iter_alerts, iter_reports, require_aml_results
from .schema import ReportDraft

CASE_COLUMNS = ("case_id", "period", "rank", "score", "account", "typologies", "transactions", "budget")
"""The header line of the plain ``sectorflow aml cases`` listing (its columns, tab-separated; "budget" also says
"mandatory" and "outside budget" where they apply)."""

aml_app = typer.Typer(help="Anti-money-laundering tools: ranked cases, evaluation against labels, training on "
                           "the bank's own labels, alerts, report drafts, a case's or alert's fund flow, the stored "
                           "state.", no_args_is_help=True)


@aml_app.command("alerts")
def alerts_command(results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
                   as_json: bool = typer.Option(False, "--json", help="One JSON alert per line.")) -> None:
    """List the typology and model alerts in a results file (id, typology, score, number of transactions,
    accounts): the rule hits, evidence of the cases; `sectorflow aml cases` lists what the alert budget keeps."""
    total, n = require_aml_results(results), 0
    for n, alert in enumerate(iter_alerts(results), start=1):
        if as_json:
            typer.echo(alert.model_dump_json())
        else:
            accounts = ",".join(alert.accounts[:6]) + ("..." if len(alert.accounts) > 6 else "")
            typer.echo(f"{alert.alert_id}\t{alert.typology}\t{alert.score:.2f}\t{len(alert.transaction_ids)} tx"
                       f"\t{accounts}")
    typer.echo(f"{n:,} alert(s) in {total:,} results", err=True)


@aml_app.command("cases")
def cases_command(results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
                  as_json: bool = typer.Option(False, "--json", help="One JSON case per line."),
                  period: Optional[str] = typer.Option(None, "--period", "-p", help="Only this review period, e.g. "
                                                       "2023-01 (month), 2023-W05 (week), 2023-01-15 (day)."),
                  everything: bool = typer.Option(False, "--all", help="Every case, not only those within the alert "
                                                  "budget."),
                  budget: Optional[str] = typer.Option(None, "--budget", help="Re-rank under another alert budget: "
                                                       "25 (cases per period), 0.01 or 1% (share of active "
                                                       "accounts), score>=0.7.")) -> None:
    """List the cases (one per account and review period) within the alert budget, by period then rank: case id,
    period, rank, score, account, typologies, transactions, budget (sectorflow_aml.cases). The plain listing starts
    with a header line (CASE_COLUMNS, tab-separated like the rows); --json prints the cases alone."""
    total = require_aml_results(results)
    cases = read_cases(results, period=period, everything=everything, alert_budget=budget)
    if not as_json and cases:
        typer.echo("\t".join(CASE_COLUMNS))
    for case in cases:
        if as_json:
            typer.echo(case.model_dump_json())
        else:
            flag = "" if case.within_budget else "\toutside budget"
            typer.echo(f"{case.case_id}\t{case.period}\t#{case.rank}/{case.cases_in_period}\t{case.score:.3f}\t"
                       f"{case.account}\t{','.join(case.typologies) or '-'}\t{case.transactions} tx\t"
                       f"{case.budget}{' mandatory' if case.mandatory else ''}{flag}")
    typer.echo(f"{len(cases):,} case(s){'' if everything else ' within the alert budget'} in {total:,} results",
               err=True)


@aml_app.command("reports")
def reports_command(results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
                    kind: Optional[str] = typer.Option(None, help="Only large_value, ctr or suspicious."),
                    as_json: bool = typer.Option(False, "--json", help="One JSON draft per line.")) -> None:
    """List the report drafts in a results file (id, kind, regulation, customer, total, business date, due date):
    the latest snapshot of each report id (a same-day aggregate's draft is updated by later transactions, and in full
    by the first transaction of a later business day: docs/aml-data-and-reports.md, "Once per key"), with the
    transactions of later references to it added (``elements.snapshot`` "reference": a transaction that joined past
    200 transactions carries only its own row, id and the report's new total)."""
    kinds = ("large_value", "ctr", "suspicious")
    if kind is not None and kind not in kinds:
        raise typer.BadParameter(f"--kind {kind!r}: use one of {', '.join(kinds)}.")
    total = require_aml_results(results)
    latest: dict[str, ReportDraft] = {}
    for draft in iter_reports(results):
        if draft.elements.get("snapshot") == "reference" and draft.report_id in latest:
            draft = _joined(latest[draft.report_id], draft)
        latest.pop(draft.report_id, None)  # re-inserted: listed in the order of each report's latest update
        latest[draft.report_id] = draft
    for draft in latest.values():
        if kind and draft.kind != kind:
            continue
        if as_json:
            typer.echo(draft.model_dump_json())
        else:
            typer.echo(f"{draft.report_id}\t{draft.kind}\t{draft.regulation}\t{draft.customer_account}\t"
                       f"{draft.total_amount} {draft.currency}\t{draft.business_date}\tdue {_due_text(draft)}")
    shown = sum(1 for d in latest.values() if not kind or d.kind == kind)
    typer.echo(f"{shown:,} report draft(s) in {total:,} results", err=True)


def _joined(snapshot: ReportDraft, reference: ReportDraft) -> ReportDraft:
    """``snapshot`` (read from the results file, owned by the caller) with the transaction ``reference`` names added in
    place: its id and row, the report's new total and due date."""
    snapshot.transaction_ids.extend(reference.transaction_ids)
    rows = snapshot.elements.get("transactions")
    if isinstance(rows, list):
        rows.extend(reference.elements.get("transactions") or [])  # type: ignore[arg-type]
    snapshot.elements["aggregation"] = "cumulative"
    snapshot.total_amount = reference.total_amount
    snapshot.due_by = reference.due_by
    return snapshot


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
    alert_id: str = typer.Argument(..., help="Alert id, as listed by `sectorflow aml alerts`, or case id (case-...), "
                                   "as listed by `sectorflow aml cases`."),
    results: Path = typer.Option(..., "--results", "-r", help="JSON lines from `sectorflow run aml`."),
    source: str = typer.Option(..., "--input", "-i", help="The transaction file the results came from."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Input format: amlgentex, amlsim, amlworld, "
                                                                   "csv, jsonl, parquet (default: guessed)."),
    png: Path = typer.Option(..., "--png", help="PNG file to write."),
    column: list[str] = typer.Option([], "--column", help="As for `sectorflow run aml`: read field FIELD from the "
                                     "file's column COLUMN, FIELD=COLUMN, repeatable (csv, jsonl, parquet)."),
    default: list[str] = typer.Option([], "--default", help="As for `sectorflow run aml`: value of FIELD where the "
                                      "file has no such column or the cell is empty, FIELD=VALUE, repeatable."),
    input_timezone: Optional[str] = typer.Option(None, "--input-timezone", help="As the run's -O input_timezone=ZONE: "
                                                 "the time zone of timestamps without a UTC offset (default UTC)."),
    history: list[Path] = typer.Option([], "--history", help="As for `sectorflow run aml`: the earlier files the run "
                                       "was given with --history (an alert can reach back into them), repeatable, "
                                       "oldest first."),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="Time zone of the times drawn, e.g. Asia/Shanghai "
                                           "(default: --input-timezone when given, else UTC)."),
) -> None:
    """Draw ALERT_ID's fund flow (accounts as nodes, transfers as arrows with amount and time) as a PNG; for a case id,
    the case's transactions with its account in red.

    Read the input as the run did: the same --format, --column, --default, input time zone and --history files."""
    writable_file(png, what="PNG file", setting="--png")  # before the read: a bad path is a typed error
    if alert_id.startswith("case-"):
        typer.echo(str(explain_case(alert_id, results, source, png, fmt,
                                    mapping=field_pairs("--column", "COLUMN", column),
                                    defaults=field_pairs("--default", "VALUE", default),
                                    input_timezone=input_timezone, history=[str(h) for h in history],
                                    timezone=timezone)))
        return
    alert, transactions, note = checked_alert(alert_id, results, source, fmt,
                                              mapping=field_pairs("--column", "COLUMN", column),
                                              defaults=field_pairs("--default", "VALUE", default),
                                              input_timezone=input_timezone, history=[str(h) for h in history])
    if note:
        typer.echo(f"note: {note}", err=True)
    typer.echo(str(draw_alert(alert, transactions, png, note=note, timezone=timezone or input_timezone)))


def register(app: Any) -> None:
    """Add the ``aml`` command group to the ``sectorflow`` typer app."""
    from .cli_state import state_app

    if not any(group.name == "state" for group in aml_app.registered_groups):
        aml_app.add_typer(state_app, name="state")
    from .learn_cli import register as register_learning

    register_learning(aml_app)
    from .workbench.cli import register as register_workbench

    register_workbench(app, aml_app)
    app.add_typer(aml_app, name="aml")
